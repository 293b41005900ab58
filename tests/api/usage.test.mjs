// Usage over time against hand-computed fixtures: batches pushed with
// explicit past timestamps, the rollup run on demand, then GET
// /api/v1/usage and the GPU timeline checked figure by figure.
//
// Every fixture lives three days back, from 10:00 UTC, so that its hours
// are closed; each has its own team (the pushing source's default), and
// every query filters on it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkDc, mkRes, dbQuery, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);

async function pusher(source, extra = {}) {
  return ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + source, role: 'pusher', source, ...extra } }), 201).token;
}
const gpu = (uuid, index) => ({ uuid, index, name: 'NVIDIA H100 80GB HBM3', serial: 'S-' + uuid.slice(-6) });
async function push(token, body) {
  const r = await h.s.api('POST', '/api/v1/ingest', { body, auth: token });
  assert.equal(r.status, 201, r.text);
  return r.json;
}
/** Samples of one GPU every 60 s from `from` to `to` inclusive. */
function every(uuid, from, to, fields) {
  const out = [];
  for (let t = from; t <= to; t += 60) out.push({ time: t, gpu: uuid, ...(typeof fields === 'function' ? fields(t) : fields) });
  return out;
}
async function rollup() {
  const r = await rollupAll(h.s);
  assert.equal(r.dirty_left, 0, 'the rollup on demand works off every dirty hour');
  return r;
}
async function usage(q) {
  return ok(await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams(q)));
}
function assertAddsUp(x, where) {
  const g = x.gpu_hours;
  close(g.owned, g.busy + g.allocated_idle + g.idle + g.unknown, `${where}: owned = busy + allocated_idle + idle + unknown`);
  close(g.allocated, g.busy + g.allocated_idle, `${where}: allocated = busy + allocated_idle`);
}
function assertTotal(rep) {
  for (const it of rep.items) assertAddsUp(it, `${it.group} ${it.start}`);
  assertAddsUp(rep.total, 'total');
  for (const k of ['owned', 'allocated', 'busy', 'allocated_idle', 'idle', 'unknown']) {
    close(rep.items.reduce((s, it) => s + it.gpu_hours[k], 0), rep.total.gpu_hours[k], `total ${k} is the sum of the items`);
  }
}

test('a pod on 2 GPUs for 90 minutes is 3.0 allocated GPU-hours', async () => {
  const tok = await pusher('u-pod', { team: 'u-pod' });
  const a = 'GPU-a0000000-0000-4000-8000-000000000001';
  const b = 'GPU-a0000000-0000-4000-8000-000000000002';
  // Readings every minute from 10:00 to 11:30; the pod's process on both
  // GPUs from 10:01 on (the first reading covers nothing before itself).
  const samples = [...every(a, T0, T0 + 5400, { util_avg: 50, power_avg_w: 200 }),
    ...every(b, T0, T0 + 5400, { util_avg: 50, power_avg_w: 200 })];
  const processes = [];
  for (let t = T0 + 60; t <= T0 + 5400; t += 60) {
    for (const [u, pid] of [[a, 100], [b, 101]]) {
      processes.push({ gpu: u, pid, name: 'python', time: t, namespace: 'ml', pod: 'train-1', container: 'main' });
    }
  }
  await push(tok, { batch_id: 'pod-1', host: { hostname: 'u-pod-node' }, gpus: [gpu(a, 0), gpu(b, 1)], samples, processes });
  const run = await rollup();
  assert.ok(run.hours >= 4, JSON.stringify(run));

  const rep = await usage({ group_by: 'team', team: 'u-pod', from: iso(T0), to: iso(T0 + 7200), step: 'hour' });
  assert.equal(rep.source, 'usage_hourly');
  assert.deepEqual(rep.items.map((x) => [x.group, x.start]), [['u-pod', iso(T0)], ['u-pod', iso(T0 + 3600)]]);
  // 10:00-11:00: both GPUs busy all hour; 11:00-12:00: busy until 11:30,
  // then nothing measured (unknown, still owned).
  assert.deepEqual(rep.items[0].gpu_hours, { owned: 2, allocated: 2, busy: 2, allocated_idle: 0, idle: 0, unknown: 0 });
  assert.deepEqual(rep.items[1].gpu_hours, { owned: 2, allocated: 1, busy: 1, allocated_idle: 0, idle: 0, unknown: 1 });
  assert.deepEqual(rep.total.gpu_hours, { owned: 4, allocated: 3, busy: 3, allocated_idle: 0, idle: 0, unknown: 1 });
  assert.equal(rep.total.util_avg, 50);
  close(rep.total.energy_kwh, 0.6, '2 GPUs x 200 W x 1.5 h');
  // Priced at the shipped estimate for the model: owned GPU-hours x rate.
  const r = ok(await h.s.api('GET', '/api/v1/prices/rate?' + new URLSearchParams({ model: 'NVIDIA H100 80GB HBM3' })));
  assert.equal(rep.total.cost.method, 'catalog');
  assert.equal(rep.total.cost.currency, r.currency);
  assert.equal(rep.total.cost.amount, (4 * Number(r.hourly)).toFixed(2), '4 owned GPU-hours at the catalog rate');
  assertTotal(rep);

  // By consumer: the pod holds the 3 GPU-hours; the rest is unknown time.
  const byc = await usage({ group_by: 'consumer', team: 'u-pod', from: iso(T0), to: iso(T0 + 7200), step: 'day' });
  const pod = byc.items.filter((x) => x.kind === 'k8s');
  assert.deepEqual(pod.map((x) => x.group), ['ml/train-1/main']);
  assert.deepEqual(pod[0].gpu_hours, { owned: 3, allocated: 3, busy: 3, allocated_idle: 0, idle: 0, unknown: 0 });
  const rest = byc.items.filter((x) => x.kind === 'none');
  assert.equal(rest.length, 1);
  assert.equal(rest[0].group, null);
  assert.deepEqual(rest[0].gpu_hours, { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 0, unknown: 1 });
  assert.deepEqual(byc.total.gpu_hours, rep.total.gpu_hours, 'the consumer view adds up to the same total');
  assertTotal(byc);

  // The timeline: who (the pod, 10:00 to 11:30), raw samples for a
  // 2-hour range, and the owner then.
  const tl = ok(await h.s.api('GET', `/api/v1/gpus/${a}/timeline?from=${iso(T0)}&to=${iso(T0 + 7200)}`));
  assert.equal(tl.telemetry_source, 'samples');
  assert.equal(tl.samples.length, 91);
  assert.deepEqual(tl.intervals.map((x) => [x.kind, x.consumer, x.namespace, x.pod, x.started_at, x.ended_at]),
    [['k8s', 'ml/train-1/main', 'ml', 'train-1', iso(T0), iso(T0 + 5400)]]);
  assert.deepEqual(tl.owners, [{ at: iso(T0), team: 'u-pod', env: null, pool: null, cluster: null, cloud: null }]);
  const day = ok(await h.s.api('GET', `/api/v1/gpus/${a}/timeline?from=${iso(D0)}&to=${iso(D0 + 86400)}`));
  assert.equal(day.telemetry_source, 'usage_hourly');
  assert.deepEqual(day.hours.slice(0, 2).map((x) => [x.start, x.busy_s, x.unknown_s, x.util_avg, x.power_avg_w]),
    [[iso(T0), 3600, 0, 50, 200], [iso(T0 + 3600), 1800, 1800, 50, 200]]);
  assertError(await h.s.api('GET', '/api/v1/gpus/GPU-nope/timeline'), 404);
});

test('busy at the threshold, allocated-idle below it, busy with nobody known, a gap is unknown, late data corrects', async () => {
  const tok = await pusher('u-split', { team: 'u-split' });
  const g = 'GPU-b0000000-0000-4000-8000-000000000001';
  const free = 'GPU-b0000000-0000-4000-8000-000000000002';
  const gpus = [gpu(g, 0), gpu(free, 1)];
  // g: alice's python all hour; 5.0 % (busy: the threshold counts) for the
  // first 30 minutes, 4.9 % (allocated-idle) for the rest. free: 80 % with
  // no process at all (busy, consumer unknown).
  const samples = [...every(g, T0, T0 + 3600, (t) => ({ util_avg: t <= T0 + 1800 ? 5.0 : 4.9 })),
    ...every(free, T0, T0 + 3600, { util_avg: 80 })];
  const processes = [];
  for (let t = T0 + 60; t <= T0 + 3600; t += 60) processes.push({ gpu: g, pid: 7, name: 'python', user: 'alice', time: t });
  await push(tok, { batch_id: 'split-1', host: { hostname: 'u-split-node' }, gpus, samples, processes });
  await rollup();

  const q = { group_by: 'gpu', team: 'u-split', from: iso(T0), to: iso(T0 + 3 * 3600), step: 'hour' };
  let rep = await usage(q);
  const cell = (r, u, t) => r.items.find((x) => x.group === u && x.start === iso(t));
  assert.deepEqual(cell(rep, g, T0).gpu_hours, { owned: 1, allocated: 1, busy: 0.5, allocated_idle: 0.5, idle: 0, unknown: 0 });
  assert.deepEqual(cell(rep, free, T0).gpu_hours, { owned: 1, allocated: 1, busy: 1, allocated_idle: 0, idle: 0, unknown: 0 });
  // No data from 11:00 on: owned and unknown, never idle.
  assert.deepEqual(cell(rep, g, T0 + 3600).gpu_hours, { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 0, unknown: 1 });
  assertTotal(rep);
  const byc = await usage({ ...q, group_by: 'consumer', to: iso(T0 + 3600) });
  assert.deepEqual(byc.items.map((x) => [x.kind, x.group, x.gpu_hours.allocated]),
    [['process', 'alice/python', 1], ['unknown', 'unknown', 1]]);
  assert.deepEqual(byc.items[0].gpu_hours, { owned: 1, allocated: 1, busy: 0.5, allocated_idle: 0.5, idle: 0, unknown: 0 });

  // A spooled batch arrives late: 11:01-12:00 idle readings, then one at
  // 12:30 after a 30-minute silence (it covers only the 10 minutes before
  // it: the rest of the gap stays unknown).
  const late = [...every(g, T0 + 3660, T0 + 7200, { util_avg: 0 }), { time: T0 + 9000, gpu: g, util_avg: 0 }];
  await push(tok, { batch_id: 'split-2', host: { hostname: 'u-split-node' }, gpus, samples: late });
  await rollup();
  rep = await usage(q);
  assert.deepEqual(cell(rep, g, T0).gpu_hours, { owned: 1, allocated: 1, busy: 0.5, allocated_idle: 0.5, idle: 0, unknown: 0 },
    'the hour before is recomputed the same');
  assert.deepEqual(cell(rep, g, T0 + 3600).gpu_hours, { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 1, unknown: 0 });
  const noon = cell(rep, g, T0 + 7200).gpu_hours;
  close(noon.idle, 600 / 3600, '12:20-12:30 idle');
  close(noon.unknown, 3000 / 3600, 'the rest of 12:00-13:00 unknown');
  close(noon.owned, 1, 'owned');
  assertTotal(rep);

  // CSV: the same rows, flattened.
  const csv = await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...q, format: 'csv' }), {});
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type'), /^text\/csv/);
  const lines = csv.text.trim().split(/\r\n/);
  const head = lines[0].split(',');
  assert.deepEqual(head.slice(0, 8), ['group', 'start', 'gpu_hours_owned', 'gpu_hours_allocated', 'gpu_hours_busy',
    'gpu_hours_allocated_idle', 'gpu_hours_idle', 'gpu_hours_unknown']);
  assert.equal(lines.length - 1, rep.items.length);
  lines.slice(1).forEach((line, i) => {
    const cells = line.split(',');
    const it = rep.items[i];
    assert.equal(cells[0], it.group);
    assert.equal(cells[1], it.start);
    ['owned', 'allocated', 'busy', 'allocated_idle', 'idle', 'unknown'].forEach((k, j) => close(Number(cells[2 + j]), it.gpu_hours[k], `CSV row ${i} ${k}`));
  });
});

test('an inventory allocation of a server whose GPUs are idle is allocated-idle', async () => {
  const dc = await mkDc(h.s);
  const res = await mkRes(h.s, dc.id, { name: 'u-inv-node', gpu_model: 'H100', gpu_count: 2 });
  ok(await h.s.api('POST', `/api/v1/resources/${res.id}/allocate`, { body: { tenant: 'acme', project: 'llm' } }));
  // The allocation began before the readings (it is made now; moved back).
  await dbQuery(h.s.db, `UPDATE allocations SET started_at = ${T0 - 3600} WHERE resource_id = ${res.id}`);
  const tok = await pusher('u-inv', { team: 'u-inv' });
  const a = 'GPU-c0000000-0000-4000-8000-000000000001';
  const b = 'GPU-c0000000-0000-4000-8000-000000000002';
  await push(tok, { batch_id: 'inv-1', host: { hostname: 'u-inv-node' }, gpus: [gpu(a, 0), gpu(b, 1)],
    samples: [...every(a, T0, T0 + 3600, { util_avg: 0 }), ...every(b, T0, T0 + 3600, { util_avg: 1 })] });
  await rollup();
  const rep = await usage({ group_by: 'team', team: 'u-inv', from: iso(T0), to: iso(T0 + 3600), step: 'hour' });
  assert.deepEqual(rep.total.gpu_hours, { owned: 2, allocated: 2, busy: 0, allocated_idle: 2, idle: 0, unknown: 0 });
  const byc = await usage({ group_by: 'consumer', team: 'u-inv', from: iso(T0), to: iso(T0 + 3600), step: 'hour' });
  assert.deepEqual(byc.items.map((x) => [x.kind, x.group, x.gpu_hours.allocated_idle]), [['inventory', 'acme/llm', 2]]);
  // The host took the server's data center: grouped and filtered by its name.
  const bydc = await usage({ group_by: 'datacenter', team: 'u-inv', from: iso(T0), to: iso(T0 + 3600), step: 'hour' });
  assert.deepEqual(bydc.items.map((x) => [x.group, x.gpu_hours.owned]), [[dc.name, 2]]);
  const indc = await usage({ group_by: 'host', datacenter: dc.name, from: iso(T0), to: iso(T0 + 3600), step: 'hour' });
  assert.deepEqual(indc.items.map((x) => [x.group, x.gpu_hours.allocated_idle]), [['u-inv-node', 2]]);
  const nodc = await usage({ group_by: 'host', datacenter: 'no-such-dc', from: iso(T0), to: iso(T0 + 3600) });
  assert.deepEqual(nodc.items, []);
  const tl = ok(await h.s.api('GET', `/api/v1/gpus/${a}/timeline?from=${iso(T0)}&to=${iso(T0 + 3600)}`));
  assert.deepEqual(tl.intervals.map((x) => [x.kind, x.tenant, x.project, x.started_at, x.ended_at]),
    [['inventory', 'acme', 'llm', iso(T0), iso(T0 + 3600)]]);
});

test('each hour keeps the owner it had, and the daily rollup sums the hours', async () => {
  const tok = await pusher('u-own', { team: 'u-own-a' });
  const g = 'GPU-d0000000-0000-4000-8000-000000000001';
  await push(tok, { batch_id: 'own-1', host: { hostname: 'u-own-node' }, gpus: [gpu(g, 0)],
    samples: every(g, T0, T0 + 3600, { util_avg: 30 }) });
  await rollup();
  // The GPU changes hands at 11:00; the readings of 11:20-12:00 arrive after.
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'u-own-b' } }), 201);
  ok(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: 'u-own-b', effective_from: iso(T0 + 3600) } }));
  await push(tok, { batch_id: 'own-2', host: { hostname: 'u-own-node' }, gpus: [gpu(g, 0)],
    samples: every(g, T0 + 4800, T0 + 7200, { util_avg: 30 }) });
  await rollup();
  const q = { group_by: 'team', from: iso(T0), to: iso(T0 + 7200), step: 'hour' };
  const a = await usage({ ...q, team: 'u-own-a' });
  const b = await usage({ ...q, team: 'u-own-b' });
  assert.deepEqual(a.items.map((x) => [x.start, x.gpu_hours.busy]), [[iso(T0), 1]]);
  // 11:20's reading follows 11:00's after 20 minutes: it covers 11:10-11:20.
  assert.deepEqual(b.items.map((x) => x.start), [iso(T0 + 3600)]);
  close(b.items[0].gpu_hours.busy, 3000 / 3600, '11:10-12:00 busy');
  close(b.items[0].gpu_hours.unknown, 600 / 3600, '11:00-11:10 without data');

  // Whole days read the daily rollup; its figures are the hours' sums.
  const days = await usage({ group_by: 'gpu', from: iso(D0), to: iso(D0 + 86400), step: 'day', model: 'NVIDIA H100 80GB HBM3' });
  const hours = await usage({ group_by: 'gpu', from: iso(D0), to: iso(D0 + 86400), step: 'hour', model: 'NVIDIA H100 80GB HBM3' });
  assert.equal(days.source, 'usage_daily');
  assert.equal(hours.source, 'usage_hourly');
  for (const k of ['owned', 'allocated', 'busy', 'allocated_idle', 'idle', 'unknown']) {
    close(days.total.gpu_hours[k], hours.total.gpu_hours[k], `daily ${k} = sum of hourly ${k}`);
  }
  const mine = days.items.find((x) => x.group === g);
  close(mine.gpu_hours.busy, 1 + 3000 / 3600, 'the day of GPU d..1');
  const week = await usage({ group_by: 'gpu', from: iso(D0), to: iso(D0 + 86400), step: 'week', model: 'NVIDIA H100 80GB HBM3' });
  const monday = D0 - ((new Date(D0 * 1000).getUTCDay() + 6) % 7) * 86400;
  assert.equal(week.items.find((x) => x.group === g).start, iso(monday), 'weeks start on Monday');
});

test('bad parameters name themselves; the rollup needs an admin', async () => {
  assertError(await h.s.api('GET', '/api/v1/usage?group_by=colour'), 400, { field: 'group_by' });
  assertError(await h.s.api('GET', '/api/v1/usage?step=fortnight'), 400, { field: 'step' });
  assertError(await h.s.api('GET', '/api/v1/usage?from=yesterday'), 400, { field: 'from' });
  assertError(await h.s.api('GET', `/api/v1/usage?from=${iso(T0)}&to=${iso(T0 - 3600)}`), 400, { field: 'to' });
  assertError(await h.s.api('GET', `/api/v1/usage?step=hour&from=${iso(T0 - 400 * 86400)}&to=${iso(T0)}`), 400, { field: 'step' });
  const viewer = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'u-viewer', role: 'viewer' } }), 201).token;
  assertError(await h.s.api('POST', '/api/v1/usage/rollup', { auth: viewer }), 403);
  ok(await h.s.api('GET', '/api/v1/usage', { auth: viewer }));
  const audit = ok(await h.s.api('GET', '/api/v1/audit?entity=usage'));
  assert.ok(audit.items.some((x) => x.action === 'rollup'), 'a rollup on demand is audited');
});

test('the busy threshold and the longest gap are serve options', async () => {
  const { startServer } = await import('../lib/server.mjs');
  const { stopClean, runCli } = await import('./helpers.mjs');
  const bad = await runCli(['serve', '--busy-threshold-pct', '101']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--busy-threshold-pct must be 0\.\.100/);
  assert.equal((await runCli(['serve', '--max-gap-s', '0'])).code, 2);
  // Every whole-number option refuses a value past either end, naming its range.
  const ranges = [['threads', 1, 256], ['max-body', 1024, 1073741824], ['session-ttl', 60, 7776000],
    ['freshness', 1, 2592000], ['max-connections', 1, 1000000], ['per-ip-connections', 0, 1000000],
    ['idle-timeout', 1, 3600], ['retain-samples-days', 1, 3650], ['owner-refresh-s', 1, 3600],
    ['max-gap-s', 1, 86400], ['retain-hourly-days', 1, 36500], ['retain-daily-days', 1, 36500],
    ['asset-missing-days', 1, 3650], ['webhook-backoff-s', 1, 86400], ['rules-interval-s', 1, 604800],
    ['health-settle-s', 0, 3600], ['health-interval-s', 1, 3600]];
  for (const [name, min, max] of ranges) {
    for (const v of [String(min - 1), String(max + 1), '7x']) {
      const r = await runCli(['serve', '--' + name, v]);
      assert.equal(r.code, 2, `--${name} ${v}`);
      assert.match(r.stderr, new RegExp(`--${name} must be ${min}\\.\\.${max}\\b`), `--${name} ${v}`);
    }
  }
  const s = await startServer({ args: ['--busy-threshold-pct', '60', '--max-gap-s', '120', '--retain-hourly-days', '30'] });
  try {
    const tok = ok(await s.api('POST', '/api/v1/tokens', { body: { name: 'tok-opt', role: 'pusher', source: 'u-opt', team: 'u-opt' } }), 201).token;
    const g = 'GPU-e0000000-0000-4000-8000-000000000001';
    // 50 % for an hour (idle under a 60 % threshold), then a reading at
    // 11:10 after ten silent minutes: it covers only the 2 minutes before.
    const samples = [...every(g, T0, T0 + 3600, { util_avg: 50 }), { time: T0 + 4200, gpu: g, util_avg: 70 }];
    const r = await s.api('POST', '/api/v1/ingest', { body: { batch_id: 'opt-1', host: { hostname: 'u-opt-node' }, gpus: [gpu(g, 0)], samples }, auth: tok });
    assert.equal(r.status, 201, r.text);
    assert.equal((await rollupAll(s)).dirty_left, 0);
    const rep = ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams({ group_by: 'gpu', team: 'u-opt', from: iso(T0), to: iso(T0 + 7200), step: 'hour' })));
    assert.deepEqual(rep.items[0].gpu_hours, { owned: 1, allocated: 0, busy: 0, allocated_idle: 0, idle: 1, unknown: 0 });
    close(rep.items[1].gpu_hours.busy, 120 / 3600, 'a 120 s gap cap');
    close(rep.items[1].gpu_hours.unknown, 1 - 120 / 3600, 'the rest unknown');
  } finally {
    await stopClean(s);
  }
});

test('a report by a dimension over whole days reads the day groups, NULL owners included, and follows a re-attribution', async () => {
  const model = 'NVIDIA G' + Math.floor(Math.random() * 1e9);
  ok(await h.s.api('POST', '/api/v1/prices', { body: { model, hourly: '2.50', effective_from: '2020-01-01T00:00:00Z' } }), 201);
  const D = D0 - 86400, S = D + 10 * 3600;
  const owned = await pusher('u-grp', { team: 'u-grp' });
  const anon = await pusher('u-grp-anon');
  const m = (uuid, index) => ({ ...gpu(uuid, index), name: model });
  const a = 'GPU-a0000000-0000-4000-8000-0000000000f1';
  const b = 'GPU-a0000000-0000-4000-8000-0000000000f2';
  const c = 'GPU-a0000000-0000-4000-8000-0000000000f3';
  // a (team u-grp) busy 2 h; b and c (no team) idle, then c busy for its second hour.
  await push(owned, { batch_id: 'grp-1', host: { hostname: 'u-grp-node' }, gpus: [m(a, 0)],
    samples: every(a, S, S + 7200, { util_avg: 60, power_avg_w: 300 }) });
  await push(anon, { batch_id: 'grp-2', host: { hostname: 'u-grp-anon' }, gpus: [m(b, 0), m(c, 1)],
    samples: [...every(b, S, S + 7200, { util_avg: 0, power_avg_w: 80 }),
      ...every(c, S, S + 7200, (t) => ({ util_avg: t > S + 3600 ? 90 : 0, power_avg_w: 150 }))] });
  await rollup();

  const day = { from: iso(D), to: iso(D + 86400), model };
  const byTeam = (rep) => Object.fromEntries(rep.items.map((x) => [String(x.group), x]));
  /** The hourly report folded per group: the same figures from the hours. */
  function fold(rep) {
    const out = {};
    for (const it of rep.items) {
      const o = (out[String(it.group)] ??= { gpu_hours: {}, energy_kwh: 0, cost: 0 });
      for (const [k, v] of Object.entries(it.gpu_hours)) o.gpu_hours[k] = (o.gpu_hours[k] || 0) + v;
      o.energy_kwh += it.energy_kwh;
      o.cost += it.cost ? Number(it.cost.amount) : 0;
    }
    return out;
  }
  for (const g of ['team', 'env', 'model', 'datacenter', 'cloud']) {
    const days = await usage({ ...day, group_by: g, step: 'day' });
    const hours = fold(await usage({ ...day, group_by: g, step: 'hour' }));
    assert.equal(days.source, 'usage_daily');
    assert.deepEqual(Object.keys(byTeam(days)).sort(), Object.keys(hours).sort(), `${g}: the same groups`);
    for (const [k, it] of Object.entries(byTeam(days))) {
      for (const f of Object.keys(it.gpu_hours)) close(it.gpu_hours[f], hours[k].gpu_hours[f], `${g} ${k} ${f}`);
      close(it.energy_kwh, hours[k].energy_kwh, `${g} ${k} energy`);
      close(Number(it.cost.amount), hours[k].cost, `${g} ${k} cost`);
    }
    assertTotal(days);
  }
  // The day groups hold usage_daily's sums, the GPUs without a team as one group.
  const sums = (table, what) => dbQuery(h.s.db, `SELECT COALESCE(team, '-'), ${what} FROM ${table} ` +
    `WHERE model = '${model}' AND day = ${D} GROUP BY COALESCE(team, '-') ORDER BY 1`);
  const fromDaily = await sums('usage_daily', 'COUNT(*), ROUND(SUM(owned_s * fraction)), ROUND(SUM(busy_s * fraction)), ' +
    'ROUND(SUM(owned_s * fraction * rate_micros) / 3600e6 * 100)');
  const fromGroups = await sums('usage_groups_daily', 'SUM(gpus), ROUND(SUM(owned_s)), ROUND(SUM(busy_s)), ' +
    'ROUND(SUM(owned_cost) / 3600e6 * 100)');
  assert.equal(fromGroups, fromDaily);
  assert.match(fromGroups, /^-\|2\|/m, 'b and c: no team, one group of 2 GPU-days');
  const t = byTeam(await usage({ ...day, group_by: 'team', step: 'day' }));
  assert.deepEqual(Object.keys(t).sort(), ['null', 'u-grp']);
  close(t['u-grp'].gpu_hours.busy, 2, 'a busy from 10:00 to 12:00');
  assert.equal(t.null.cost.amount, (t.null.gpu_hours.owned * 2.5).toFixed(2));

  // Giving b a team re-attributes its hours; the day's groups follow.
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'u-grp-new' } }), 201);
  ok(await h.s.api('PUT', `/api/v1/gpus/${b}/owner`, { body: { team: 'u-grp-new', effective_from: iso(D) } }));
  await rollup();
  const after = byTeam(await usage({ ...day, group_by: 'team', step: 'day' }));
  assert.deepEqual(Object.keys(after).sort(), ['null', 'u-grp', 'u-grp-new']);
  close(after['u-grp-new'].gpu_hours.owned + after.null.gpu_hours.owned, t.null.gpu_hours.owned, 'b moved out of the no-team group');
  close(after['u-grp-new'].gpu_hours.idle, t.null.gpu_hours.idle - after.null.gpu_hours.idle, 'with its idle time');
  assert.equal((await sums('usage_groups_daily', 'SUM(gpus)')).trim(), '-|1\nu-grp|1\nu-grp-new|1');
});

test("a GPU's timeline holds its own raw samples only, in order, among many GPUs' interleaved ones", async () => {
  const tok = await pusher('u-many', { team: 'u-many' });
  const T = T0 + 6 * 3600;
  // 4 hosts of 8 GPUs each, every GPU read every minute for 2 hours, the
  // samples of a minute side by side: GPU n reads util n and n + minute.
  const uuid = (h8, i) => `GPU-e0000000-0000-4000-8000-0000000${h8}00${String(i).padStart(2, '0')}`;
  for (let host = 0; host < 4; host++) {
    const gpus = [];
    const samples = [];
    for (let i = 0; i < 8; i++) gpus.push(gpu(uuid(host, i), i));
    for (let t = T; t <= T + 7200; t += 60) {
      for (let i = 0; i < 8; i++) {
        samples.push({ time: t + host, gpu: uuid(host, i), util_avg: host * 8 + i, temp_c: (t - T) / 60 });
      }
    }
    await push(tok, { batch_id: `many-${host}`, host: { hostname: `u-many-node-${host}` }, gpus, samples });
  }
  const g = uuid(2, 5);
  const tl = ok(await h.s.api('GET', `/api/v1/gpus/${g}/timeline?from=${iso(T + 600)}&to=${iso(T + 4200)}`));
  assert.equal(tl.telemetry_source, 'samples');
  // 16:10:02 to 17:09:02: 60 readings, every one the GPU's own.
  assert.deepEqual(tl.samples.map((x) => [x.at, x.util_avg, x.temp_c]),
    Array.from({ length: 60 }, (_, k) => [iso(T + 600 + 60 * k + 2), 21, 10 + k]));
  // A range starting on one of its readings keeps it, one ending on a
  // reading leaves it out, and seconds where only other GPUs read add nothing.
  const edge = ok(await h.s.api('GET', `/api/v1/gpus/${g}/timeline?from=${iso(T + 602)}&to=${iso(T + 1202)}`));
  assert.deepEqual(edge.samples.map((x) => [x.at, x.temp_c]),
    Array.from({ length: 10 }, (_, k) => [iso(T + 602 + 60 * k), 10 + k]));
  const first = ok(await h.s.api('GET', `/api/v1/gpus/${uuid(0, 0)}/timeline?from=${iso(T)}&to=${iso(T + 61)}`));
  assert.deepEqual(first.samples.map((x) => [x.at, x.util_avg]), [[iso(T), 0], [iso(T + 60), 0]]);
  const none = ok(await h.s.api('GET', `/api/v1/gpus/${g}/timeline?from=${iso(T + 7203)}&to=${iso(T + 7800)}`));
  assert.deepEqual(none.samples, []);
});
