// The host and GPU usage reports are paged: groups ordered by owned
// GPU-hours over the range (descending, then key), limit and offset,
// groups_total and next_offset, the total over every group; CSV answers
// every group. Every GPU has this file's own model, and every query
// filters on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, dbQuery, parseCsv, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const H = 3600;
const MODEL = 'NVIDIA PG' + Math.floor(Math.random() * 1e9);
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
// Figures are rounded to 6 decimals each: sums of them differ by a few 1e-6.
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-5, `${msg}: ${a} != ${b}`);
const FIELDS = ['owned', 'allocated', 'busy', 'allocated_idle', 'idle', 'unknown'];
const DAY = { from: iso(D0), to: iso(D0 + 86400), model: MODEL };

// 7 GPUs on 3 hosts; GPU i reads from 10:00 + i x 20 min, so the earlier
// ones own more of the day (owned runs from the first reading on). GPUs 5
// and 6 start together: equal owned hours, ordered by UUID.
const uuid = (i) => `GPU-f0000000-0000-4000-8000-00000000000${i}`;
const START = [0, 1, 2, 3, 4, 5, 5].map((k) => T0 + k * 1200);
const HOST = ['pg-h1', 'pg-h1', 'pg-h2', 'pg-h2', 'pg-h2', 'pg-h3', 'pg-h3'];

async function usage(q) {
  return ok(await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams(q)));
}
/** Every page of a report, with the limit given. */
async function pages(q, limit) {
  const out = [];
  let offset = 0;
  for (;;) {
    const r = await usage({ ...q, limit, offset });
    assert.equal(r.limit, limit);
    assert.equal(r.offset, offset);
    out.push(r);
    if (r.next_offset === null) break;
    assert.equal(r.next_offset, offset + limit);
    offset = r.next_offset;
    assert.ok(out.length < 50, 'pages end');
  }
  return out;
}
/** Items folded per group, in the order met. */
function groups(items) {
  const m = new Map();
  for (const it of items) {
    const o = m.get(it.group) ?? Object.fromEntries(FIELDS.map((f) => [f, 0]));
    for (const f of FIELDS) o[f] += it.gpu_hours[f];
    m.set(it.group, o);
  }
  return m;
}

test('the fleet: 7 GPUs on 3 hosts, rolled up', async () => {
  const byHost = {};
  for (let i = 0; i < 7; i++) (byHost[HOST[i]] ??= []).push(i);
  for (const [host, idx] of Object.entries(byHost)) {
    const tok = ok(await h.s.api('POST', '/api/v1/tokens',
      { body: { name: 'tok-' + host, role: 'pusher', source: host, team: 'pg-team' } }), 201).token;
    const samples = [];
    for (const i of idx) {
      for (let t = START[i]; t <= T0 + 4 * H; t += 60) samples.push({ time: t, gpu: uuid(i), util_avg: 10 * i });
    }
    const r = await h.s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: 'pg-' + host,
      host: { hostname: host }, gpus: idx.map((i, k) => ({ uuid: uuid(i), index: k, name: MODEL })), samples } });
    assert.equal(r.status, 201, r.text);
  }
  const run = await rollupAll(h.s);
  assert.equal(run.dirty_left, 0);
});

for (const [what, step] of [['whole days (daily rows)', 'day'], ['hour steps (hourly rows)', 'hour']]) {
  test(`group_by=gpu, ${what}: every group exactly once, in order, totals over every page`, async () => {
    const q = { ...DAY, group_by: 'gpu', step };
    const all = await pages(q, 3);
    assert.equal(all.length, 3);
    assert.deepEqual(all.map((r) => r.groups_total), [7, 7, 7]);
    assert.deepEqual(all.map((r) => r.items.length > 0), [true, true, true]);
    const seen = all.flatMap((r) => [...groups(r.items).keys()]);
    // Ordered by owned GPU-hours descending; GPUs 5 and 6 tie, then by UUID.
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6].map(uuid));
    const owned = all.flatMap((r) => [...groups(r.items).values()].map((g) => g.owned));
    for (let i = 1; i < owned.length; i++) assert.ok(owned[i - 1] >= owned[i] - 1e-9, `owned descending at ${i}`);
    close(owned[0], (D0 + 86400 - START[0]) / H, 'GPU 0 owns the day from 10:00');
    // The total is over every group, on every page, and the items of
    // every page add up to it.
    for (const r of all) assert.deepEqual(r.total, all[0].total);
    for (const f of FIELDS) {
      const sum = all.reduce((s, r) => s + r.items.reduce((t, it) => t + it.gpu_hours[f], 0), 0);
      close(sum, all[0].total.gpu_hours[f], `total ${f} = the items of every page`);
    }
    const unpaged = await usage({ ...q, group_by: 'model' });
    for (const f of FIELDS) close(all[0].total.gpu_hours[f], unpaged.total.gpu_hours[f], `total ${f} = the model report's`);
    // The default page holds them all, and the last page says so.
    const one = await usage(q);
    assert.equal(one.limit, 100);
    assert.equal(one.offset, 0);
    assert.equal(one.next_offset, null);
    assert.equal(groups(one.items).size, 7);
    const past = await usage({ ...q, limit: 5, offset: 10 });
    assert.deepEqual([past.items.length, past.groups_total, past.next_offset], [0, 7, null]);
  });
}

test('group_by=host pages the hosts; a team filter pages its own groups', async () => {
  const all = await pages({ ...DAY, group_by: 'host', step: 'day' }, 2);
  assert.deepEqual(all.map((r) => r.groups_total), [3, 3]);
  const seen = all.flatMap((r) => [...groups(r.items).entries()]);
  // pg-h2 has 3 GPUs (the most GPU-hours), then pg-h1 and pg-h3.
  assert.deepEqual(seen.map(([k]) => k), ['pg-h2', 'pg-h1', 'pg-h3']);
  const byGpu = groups((await usage({ ...DAY, group_by: 'gpu', step: 'day' })).items);
  for (const [host, g] of seen) {
    const mine = [0, 1, 2, 3, 4, 5, 6].filter((i) => HOST[i] === host);
    close(g.owned, mine.reduce((s, i) => s + byGpu.get(uuid(i)).owned, 0), `${host}: its GPUs' owned hours`);
  }
  const team = await usage({ ...DAY, group_by: 'gpu', step: 'day', team: 'pg-team', limit: 4 });
  assert.deepEqual([team.groups_total, team.next_offset, groups(team.items).size], [7, 4, 4]);
  const none = await usage({ ...DAY, group_by: 'gpu', step: 'day', team: 'pg-nobody' });
  assert.deepEqual([none.groups_total, none.items.length, none.next_offset, none.total.gpu_hours.owned], [0, 0, null, 0]);
});

test('a GPU-day without a host is the null group, last among equals', async () => {
  // A row as the rollup would leave it for a GPU whose host is unknown.
  const id = (await dbQuery(h.s.db, `SELECT id FROM gpus WHERE uuid = '${uuid(6)}'`)).trim();
  const d = D0 - 86400;
  await dbQuery(h.s.db, `INSERT INTO usage_daily (gpu_id, day, team, model, host, owned_s, allocated_s,
    busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, updated_at)
    VALUES (${id}, ${d}, 'pg-team', '${MODEL}', NULL, 3600, 0, 0, 0, 0, 3600, 0, 0, 0, 0, 1, 1)`);
  const r = await usage({ from: iso(d), to: iso(d + 86400), model: MODEL, group_by: 'host', step: 'day' });
  assert.equal(r.groups_total, 1);
  assert.deepEqual(r.items.map((x) => [x.group, x.gpu_hours.unknown]), [[null, 1]]);
});

test('CSV answers every group unless a limit is given; bad paging parameters name themselves', async () => {
  const csv = await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...DAY, group_by: 'gpu', step: 'hour', format: 'csv' }));
  assert.equal(csv.status, 200);
  const rows = parseCsv(csv.text);
  const col = rows[0].indexOf('group');
  assert.equal(new Set(rows.slice(1).map((r) => r[col])).size, 7);
  const json = await usage({ ...DAY, group_by: 'gpu', step: 'hour', limit: 1000 });
  assert.equal(rows.length - 1, json.items.length, 'one CSV row per item');
  const two = await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...DAY, group_by: 'gpu', format: 'csv', limit: 2 }));
  assert.equal(new Set(parseCsv(two.text).slice(1).map((r) => r[col])).size, 2);

  assertError(await h.s.api('GET', '/api/v1/usage?group_by=gpu&limit=0'), 400, { field: 'limit' });
  assertError(await h.s.api('GET', '/api/v1/usage?group_by=gpu&limit=1001'), 400, { field: 'limit' });
  assertError(await h.s.api('GET', '/api/v1/usage?group_by=host&offset=-1'), 400, { field: 'offset' });
  assertError(await h.s.api('GET', '/api/v1/usage?group_by=team&limit=5'), 400, { field: 'limit' });
  const byc = await usage({ ...DAY, group_by: 'consumer', limit: 10, offset: 0 });
  assert.ok(Array.isArray(byc.items), 'consumer accepts limit and offset');
});
