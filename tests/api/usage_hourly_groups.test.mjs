// Hour steps by a dimension and the hour-of-week heatmap read the hourly
// group sums (usage_groups_hourly) that the rollup job keeps beside the
// per-GPU hourly rows. Checked against a hand-computed fixture (a pod on
// 2 GPUs for 90 minutes, an ownership change mid-day, a GPU with no team),
// against the per-GPU hours, and after late data and a re-attribution.
//
// Every GPU has this file's own model, and every query filters on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const H = 3600;
const MODEL = 'NVIDIA HG' + Math.floor(Math.random() * 1e9);
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);
const FIELDS = ['owned', 'allocated', 'busy', 'allocated_idle', 'idle', 'unknown'];

const A = 'GPU-e0000000-0000-4000-8000-000000000001';
const B = 'GPU-e0000000-0000-4000-8000-000000000002';
const N = 'GPU-e0000000-0000-4000-8000-000000000003';

async function pusher(source, extra = {}) {
  return ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + source, role: 'pusher', source, ...extra } }), 201).token;
}
const gpu = (uuid, index) => ({ uuid, index, name: MODEL, serial: 'S-' + uuid.slice(-6) });
async function push(token, body) {
  const r = await h.s.api('POST', '/api/v1/ingest', { body, auth: token });
  assert.equal(r.status, 201, r.text);
}
function every(uuid, from, to, fields) {
  const out = [];
  for (let t = from; t <= to; t += 60) out.push({ time: t, gpu: uuid, ...fields });
  return out;
}
async function rollup() {
  const r = await rollupAll(h.s);
  assert.equal(r.dirty_left, 0);
  assert.equal(r.redo_left, 0);
}
async function usage(q) {
  return ok(await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ model: MODEL, ...q })));
}
/** Items of a report as {"group start": gpu_hours}. */
const cells = (rep) => Object.fromEntries(rep.items.map((x) => [`${x.group} ${x.start}`, x.gpu_hours]));

/** The hourly team report folded from the per-GPU hours: the same figures. */
async function teamHoursFromGpus(from, to) {
  const byGpu = await usage({ group_by: 'gpu', step: 'hour', from: iso(from), to: iso(to), limit: 1000 });
  const team = {};
  const rows = await dbQuery(h.s.db, `SELECT g.uuid, u.hour, COALESCE(u.team, 'null') FROM usage_hourly u ` +
    `JOIN gpus g ON g.id = u.gpu_id WHERE u.model = '${MODEL}' AND u.hour >= ${from} AND u.hour < ${to}`);
  for (const line of rows.trim().split('\n').filter(Boolean)) {
    const [uuid, hour, t] = line.split('|');
    team[`${uuid} ${iso(Number(hour))}`] = t;
  }
  const out = {};
  for (const it of byGpu.items) {
    const k = `${team[`${it.group} ${it.start}`]} ${it.start}`;
    const o = (out[k] ??= Object.fromEntries(FIELDS.map((f) => [f, 0])));
    for (const f of FIELDS) o[f] += it.gpu_hours[f];
  }
  return out;
}

async function assertHoursMatchGpus(from, to, what) {
  const rep = await usage({ group_by: 'team', step: 'hour', from: iso(from), to: iso(to) });
  assert.equal(rep.source, 'usage_hourly');
  const folded = await teamHoursFromGpus(from, to);
  const got = cells(rep);
  assert.deepEqual(Object.keys(got).sort(), Object.keys(folded).sort(), `${what}: the same team-hours`);
  for (const [k, v] of Object.entries(got)) {
    for (const f of FIELDS) close(v[f], folded[k][f], `${what}: ${k} ${f}`);
  }
  return got;
}

/** The group rows of the hours hold usage_hourly's sums, group by group. */
async function assertGroupRowsAreSums(from, to) {
  const q = (table, what) => dbQuery(h.s.db, `SELECT hour, COALESCE(team, '-'), ${what} FROM ${table} ` +
    `WHERE model = '${MODEL}' AND hour >= ${from} AND hour < ${to} GROUP BY hour, COALESCE(team, '-') ORDER BY 1, 2`);
  const per = await q('usage_hourly', 'COUNT(*), ROUND(SUM(owned_s * fraction)), ROUND(SUM(busy_s * fraction)), ' +
    'ROUND(SUM(unknown_s * fraction)), ROUND(SUM(util_sum * fraction))');
  const groups = await q('usage_groups_hourly', 'SUM(gpus), ROUND(SUM(owned_s)), ROUND(SUM(busy_s)), ' +
    'ROUND(SUM(unknown_s)), ROUND(SUM(util_sum))');
  assert.ok(per.trim().length > 0);
  assert.equal(groups, per);
}

let tok;

test('hour steps by team come from the hourly groups and equal the per-GPU hours', async () => {
  tok = await pusher('ug-pod', { team: 'ug-a' });
  const anon = await pusher('ug-anon');
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'ug-a' } }), 201);
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'ug-b' } }), 201);
  // A and B: a pod on both from 10:00 to 11:30 at 50 %; N (no team) idle 10:00-12:00.
  const processes = [];
  for (let t = T0 + 60; t <= T0 + 5400; t += 60) {
    for (const [u, pid] of [[A, 100], [B, 101]]) {
      processes.push({ gpu: u, pid, name: 'python', time: t, namespace: 'ml', pod: 'p-1', container: 'main' });
    }
  }
  await push(tok, { batch_id: 'ug-1', host: { hostname: 'ug-node' }, gpus: [gpu(A, 0), gpu(B, 1)],
    samples: [...every(A, T0, T0 + 5400, { util_avg: 50 }), ...every(B, T0, T0 + 5400, { util_avg: 50 })], processes });
  await push(anon, { batch_id: 'ug-2', host: { hostname: 'ug-anon' }, gpus: [gpu(N, 0)],
    samples: every(N, T0, T0 + 2 * H, { util_avg: 0 }) });
  // B changes hands at 10:20: the change takes effect from 11:00.
  ok(await h.s.api('PUT', `/api/v1/gpus/${B}/owner`, { body: { team: 'ug-b', effective_from: iso(T0 + 1200) } }));
  await rollup();

  const got = await assertHoursMatchGpus(T0, T0 + 2 * H, 'after the first rollup');
  // Hand-computed: 10:00 A and B busy for ug-a; 11:00 A for ug-a, B for
  // ug-b, each busy 30 min and unknown 30 min; N idle both hours.
  assert.deepEqual(got[`ug-a ${iso(T0)}`], { owned: 2, allocated: 2, busy: 2, allocated_idle: 0, idle: 0, unknown: 0 });
  assert.deepEqual(got[`ug-a ${iso(T0 + H)}`], { owned: 1, allocated: 0.5, busy: 0.5, allocated_idle: 0, idle: 0, unknown: 0.5 });
  assert.deepEqual(got[`ug-b ${iso(T0 + H)}`], { owned: 1, allocated: 0.5, busy: 0.5, allocated_idle: 0, idle: 0, unknown: 0.5 });
  assert.deepEqual(got[`null ${iso(T0)}`], { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 1, unknown: 0 });
  assert.deepEqual(got[`null ${iso(T0 + H)}`], { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 1, unknown: 0 });
  await assertGroupRowsAreSums(T0, T0 + 2 * H);

  // The pod's 3 allocated GPU-hours; the heatmap's cells from the same sums.
  const all = await usage({ group_by: 'model', step: 'hour', from: iso(T0), to: iso(T0 + 2 * H) });
  close(all.total.gpu_hours.allocated, 3, 'a pod on 2 GPUs for 90 minutes');
  const hm = ok(await h.s.api('GET', '/api/v1/usage/heatmap?' + new URLSearchParams(
    { model: MODEL, from: iso(T0), to: iso(T0 + 2 * H), metric: 'allocation' })));
  const how = (t) => ((new Date(t * 1000).getUTCDay() + 6) % 7) * 24 + new Date(t * 1000).getUTCHours();
  const items = hm.items ?? hm;
  const c10 = items.find((x) => x.hour_of_week === how(T0));
  const c11 = items.find((x) => x.hour_of_week === how(T0 + H));
  close(c10.gpu_hours.owned, 3, '10:00 owned');
  close(c10.gpu_hours.allocated, 2, '10:00 allocated');
  close(c11.gpu_hours.allocated, 1, '11:00 allocated');
  close(c10.util_avg, 100 / 3, '10:00 utilization: 50, 50 and 0');

  // A range that is not whole days reads the hourly groups for step=day too.
  const part = await usage({ group_by: 'team', step: 'day', from: iso(T0), to: iso(T0 + 2 * H) });
  assert.equal(part.source, 'usage_hourly');
  close(cells(part)[`ug-a ${iso(D0)}`].owned, 3, 'ug-a: 2 + 1 owned GPU-hours');
});

test('late data and an owner change re-apply to the hourly groups', async () => {
  // Readings of A for 11:30-12:00 arrive late, from the same source: the
  // 11:00 hour is done again.
  await push(tok, { batch_id: 'ug-3', host: { hostname: 'ug-node' }, gpus: [gpu(A, 0)],
    samples: every(A, T0 + 5460, T0 + 2 * H, { util_avg: 2 }) });
  await rollup();
  let got = await assertHoursMatchGpus(T0, T0 + 2 * H, 'after late data');
  const a11 = got[`ug-a ${iso(T0 + H)}`];
  close(a11.unknown, 0, 'A measured all of 11:00 now');
  close(a11.busy, 0.5, 'A busy until 11:30');
  close(a11.idle + a11.allocated_idle, 0.5, 'A below the threshold after 11:30');
  await assertGroupRowsAreSums(T0, T0 + 2 * H);

  // N gets a team from 11:00: its 11:00 hour moves from the null group to ug-b.
  ok(await h.s.api('PUT', `/api/v1/gpus/${N}/owner`, { body: { team: 'ug-b', effective_from: iso(T0 + H) } }));
  await rollup();
  got = await assertHoursMatchGpus(T0, T0 + 2 * H, 'after the re-attribution');
  assert.deepEqual(got[`null ${iso(T0)}`], { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 1, unknown: 0 });
  assert.equal(got[`null ${iso(T0 + H)}`], undefined, 'N belongs to ug-b from 11:00');
  close(got[`ug-b ${iso(T0 + H)}`].owned, 2, 'B and N');
  close(got[`ug-b ${iso(T0 + H)}`].idle, 1, 'N idle');
  await assertGroupRowsAreSums(T0, T0 + 2 * H);
  const onlyB = await usage({ group_by: 'team', step: 'hour', team: 'ug-b', from: iso(T0), to: iso(T0 + 2 * H) });
  assert.deepEqual(onlyB.items.map((x) => [x.group, x.start]), [['ug-b', iso(T0 + H)]]);
});
