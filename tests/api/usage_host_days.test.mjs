// A paged report by host with no filter ranks its hosts from the owned
// seconds per host and day (usage_host_days), which the rollup keeps
// beside the daily rows: checked against hand-computed rows after the
// first rollup, after late data adds a host to a past day and after an
// ownership change mid-day, and the report's bytes against the path over
// the daily rows (a filter on the model every GPU has takes it); the trends
// by host and by GPU likewise. The hour-step team report likewise against
// the one a model filter answers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const H = 3600;
const MODEL = 'NVIDIA HD' + Math.floor(Math.random() * 1e9);
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const RANGE = { from: iso(D0 - 86400), to: iso(D0 + 2 * 86400) };

// 6 GPUs on 3 hosts; GPU i reads from 10:00 + i x 30 min to 14:00 and is
// owned from its first reading to the end of the day (then unknown).
const uuid = (i) => `GPU-e0000000-0000-4000-8000-00000000000${i}`;
const START = [0, 1, 2, 3, 4, 5].map((k) => T0 + k * 1800);
const HOST = ['hd-a', 'hd-b', 'hd-b', 'hd-c', 'hd-c', 'hd-c'];

async function push(host, idx, from, to, batch) {
  const tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + batch, role: 'pusher', source: host, team: 'hd-team' } }), 201).token;
  const samples = [];
  for (const i of idx) for (let t = from(i); t <= to; t += 60) samples.push({ time: t, gpu: uuid(i), util_avg: 10 * i });
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: batch,
    host: { hostname: host }, gpus: idx.map((i, k) => ({ uuid: uuid(i), index: k, name: MODEL })), samples } });
  assert.equal(r.status, 201, r.text);
}

/** usage_host_days of day D0 as {host: [owned seconds, gpus]}. */
async function hostDays() {
  const out = await dbQuery(h.s.db, `SELECT host || ':' || CAST(CAST(owned_s AS BIGINT) AS TEXT) || ':' ||
    CAST(gpus AS TEXT) FROM usage_host_days WHERE day = ${D0} ORDER BY host`);
  return Object.fromEntries(out.trim().split('\n').filter(Boolean).map((l) => {
    const [k, o, g] = l.trim().split(':');
    return [k, [Number(o), Number(g)]];
  }));
}
/** The owned seconds of D0 of GPUs idx, each from its first reading. */
const owned = (idx) => idx.reduce((s, i) => s + (D0 + 86400 - START[i]), 0);

async function text(q) {
  const r = await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams(q));
  assert.equal(r.status, 200, r.text);
  return r.text;
}
/** Every page, every limit: the same bytes with no filter and with the model's. */
async function assertSame(extra = {}) {
  for (const limit of [1, 2, 5]) {
    for (let offset = 0; offset <= 4; offset += limit) {
      const q = { ...RANGE, group_by: 'host', step: 'day', limit, offset, ...extra };
      assert.equal(await text(q), await text({ ...q, model: MODEL }), `limit ${limit} offset ${offset}`);
    }
  }
}

/** Trends by host and by GPU, to at midnight and now, a week and a month,
 * several limits: the same bytes with no filter (the host days, the GPU
 * blocks) and with the model's (usage_daily). */
async function assertSameTrend() {
  for (const by of ['host', 'gpu']) {
    for (const period of ['week', 'month']) {
      for (const to of [`&to=${iso(D0 + 86400)}`, `&to=${iso(D0 + 13 * H)}`, '']) {
        for (const limit of [1, 2, 5]) {
          const qs = `/api/v1/usage/trend?group_by=${by}&period=${period}&limit=${limit}${to}`;
          const a = await h.s.api('GET', qs);
          const b = await h.s.api('GET', `${qs}&model=${encodeURIComponent(MODEL)}`);
          assert.equal(a.status, 200, a.text);
          assert.equal(a.text, b.text, qs);
        }
      }
    }
  }
}

test('the host days after the first rollup, and the report that ranks from them', async () => {
  await push('hd-a', [0], (i) => START[i], T0 + 4 * H, 'hd-a-1');
  await push('hd-b', [1, 2], (i) => START[i], T0 + 4 * H, 'hd-b-1');
  assert.equal((await rollupAll(h.s)).dirty_left, 0);
  assert.deepEqual(await hostDays(), { 'hd-a': [owned([0]), 1], 'hd-b': [owned([1, 2]), 2] });
  const r = JSON.parse(await text({ ...RANGE, group_by: 'host', step: 'day', limit: 1 }));
  assert.deepEqual([r.groups_total, r.next_offset, r.items[0].group], [2, 1, 'hd-b']);
  await assertSame();
  await assertSameTrend();
});

test('late data adds a host to a past day; an ownership change mid-day moves no host', async () => {
  await push('hd-c', [3, 4, 5], (i) => START[i], T0 + 4 * H, 'hd-c-1');
  assert.equal((await rollupAll(h.s)).dirty_left, 0);
  const want = { 'hd-a': [owned([0]), 1], 'hd-b': [owned([1, 2]), 2], 'hd-c': [owned([3, 4, 5]), 3] };
  assert.deepEqual(await hostDays(), want);
  const r = JSON.parse(await text({ ...RANGE, group_by: 'host', step: 'day', limit: 5 }));
  assert.deepEqual([...new Set(r.items.map((x) => x.group))], ['hd-c', 'hd-b', 'hd-a']);
  await assertSame();
  await assertSameTrend();

  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'hd-other' } }), 201);
  ok(await h.s.api('PUT', `/api/v1/gpus/${uuid(4)}/owner`,
    { body: { team: 'hd-other', effective_from: iso(T0 + 2 * H) } }));
  assert.equal((await rollupAll(h.s)).dirty_left, 0);
  assert.deepEqual(await hostDays(), want);
  await assertSame();
  await assertSameTrend();
  await assertSame({ team: 'hd-other' });
  const other = JSON.parse(await text({ ...RANGE, group_by: 'host', step: 'hour', team: 'hd-other', limit: 5 }));
  assert.deepEqual([other.groups_total, [...new Set(other.items.map((x) => x.group))]], [1, ['hd-c']]);
});

test('the hour-step team report answers what the model filter answers', async () => {
  for (const q of [{ group_by: 'team', step: 'hour' }, { group_by: 'team', step: 'hour', team: 'hd-team' }]) {
    const a = await text({ ...RANGE, ...q });
    assert.equal(a, await text({ ...RANGE, ...q, model: MODEL }));
    const teams = new Set(JSON.parse(a).items.map((x) => x.group));
    assert.deepEqual([...teams].sort(), q.team ? ['hd-team'] : ['hd-other', 'hd-team']);
  }
});
