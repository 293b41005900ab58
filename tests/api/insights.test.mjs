// Usage patterns, waste and savings over HTTP: rollup rows written straight
// into usage_hourly and usage_consumers (as the rollup job leaves them), then
// every insight route asked, in JSON and CSV, with its filters, its errors
// and its role, against hand-computed figures.
//
// The fleet, from T0 = Monday 2026-11-02 00:00 UTC:
// - team vision: 3 GPUs ($2.00/h) held by pod ml/train-1 and idle for the
//   10 hours T0 .. T0+10h: 3 x 10 h x $2.00 = 60.00 of waste;
// - team speech: pod speech/big-job on 8 GPUs ($1.50/h) for T0+6h .. T0+10h,
//   2 of them at 80 %, 6 peaking at 1 %: over-requesting, k=6 of n=8;
// - team infra ($3.00/h), nobody holding them: i1 idle for 30 hours up to
//   T0+10h, i2 for 5 hours;
// - team research ($1.00/h): m1 busy at 50 % at T0, idle at 3 % at T0+168h.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkToken, mkDc, dbQuery, parseCsv } from './helpers.mjs';
import { daySumsSql, consumerDaysSql } from './day_sums.mjs';

const h = useServer();
const T0 = 1793577600;
const H = 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const RANGE = `from=${iso(T0 - 24 * H)}&to=${iso(T0 + 10 * H)}`;

const held = { owned: 3600, alloc: 3600, busy: 0, ai: 3600, idle: 0, unknown: 0, measured: 3600, util: 0, umax: 0 };
const busy = { ...held, busy: 3600, ai: 0, util: 80, umax: 90 };
const low = { ...held, umax: 1 };
const unheld = { ...held, alloc: 0, ai: 0, idle: 3600 };

function hourRow(gpu, at, team, hostId, host, rate, x) {
  return `INSERT INTO usage_hourly (gpu_id, hour, team, env, cluster, model, host_id, host, owned_s,
    allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, util_max, mem_sum,
    energy_wh, fraction, rate_micros, currency, updated_at) VALUES (${gpu}, ${at}, '${team}', 'prod',
    'c1', 'H100', ${hostId}, '${host}', ${x.owned}, ${x.alloc}, ${x.busy}, ${x.ai}, ${x.idle},
    ${x.unknown}, ${x.measured}, ${x.util * x.measured}, ${x.umax}, 0, 0, 1, ${rate}, 'USD', 1);\n`;
}

function consumerRow(gpu, at, kind, name, team, ns, pod, x) {
  const q = (v) => (v === null ? 'NULL' : `'${v}'`);
  return `INSERT INTO usage_consumers (gpu_id, hour, kind, consumer, team, namespace, pod,
    allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max) VALUES (${gpu}, ${at},
    '${kind}', '${name}', ${q(team)}, ${q(ns)}, ${q(pod)}, ${x.alloc}, ${x.busy}, ${x.ai},
    ${x.util * x.measured}, ${x.measured}, ${x.umax});\n`;
}

test('the fleet is written as the rollup job would leave it', async () => {
  let sql = '';
  const hosts = ['hv', 'hp', 'hi', 'hr'];
  hosts.forEach((n, i) => {
    sql += `INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (${900 + i}, 'ins-${n}', 1, 1);\n`;
  });
  const gpu = (id, uuid, host) => {
    sql += `INSERT INTO gpus (id, uuid, host_id, model, first_seen_at, last_seen_at) VALUES (${id}, '${uuid}', ${host}, 'H100', 1, 1);\n`;
  };
  for (let g = 1; g <= 3; g++) {
    gpu(900 + g, `GPU-ins-v${g}`, 900);
    for (let k = 0; k < 10; k++) {
      sql += hourRow(900 + g, T0 + k * H, 'vision', 900, 'ins-hv', 2000000, held);
      sql += consumerRow(900 + g, T0 + k * H, 'k8s', 'ml/train-1/main', 'vision', 'ml', 'train-1', held);
    }
  }
  for (let g = 1; g <= 8; g++) {
    gpu(910 + g, `GPU-ins-p${g}`, 901);
    for (let k = 6; k < 10; k++) {
      const x = g <= 2 ? busy : low;
      sql += hourRow(910 + g, T0 + k * H, 'speech', 901, 'ins-hp', 1500000, x);
      sql += consumerRow(910 + g, T0 + k * H, 'k8s', 'speech/big-job/c', 'speech', 'speech', 'big-job', x);
    }
  }
  gpu(921, 'GPU-ins-i1', 902);
  gpu(922, 'GPU-ins-i2', 902);
  for (let k = -20; k < 10; k++) {
    sql += hourRow(921, T0 + k * H, 'infra', 902, 'ins-hi', 3000000, unheld);
    if (k >= 5) sql += hourRow(922, T0 + k * H, 'infra', 902, 'ins-hi', 3000000, unheld);
  }
  gpu(931, 'GPU-ins-m1', 903);
  const m1busy = { ...busy, util: 50, umax: 60 };
  sql += hourRow(931, T0, 'research', 903, 'ins-hr', 1000000, m1busy);
  sql += consumerRow(931, T0, 'process', 'alice/python', null, null, null, m1busy);
  sql += hourRow(931, T0 + 168 * H, 'research', 903, 'ins-hr', 1000000, { ...unheld, util: 3, umax: 4 });
  // i1 stands in a data center of its own.
  const dc = await mkDc(h.s, { name: 'ins-dc' });
  sql += `UPDATE usage_hourly SET datacenter_id = ${dc.id} WHERE gpu_id = 921;\n`;
  // The job keeps every hour's group sums beside its rows.
  sql += `INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, datacenter_id,
    currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum,
    measured_s, energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost,
    unpriced_s, updated_at) SELECT hour, team, env, pool, cluster, cloud, model, datacenter_id,
    COALESCE(currency, ''), COUNT(*), SUM(owned_s * fraction), SUM(allocated_s * fraction),
    SUM(busy_s * fraction), SUM(alloc_idle_s * fraction), SUM(idle_s * fraction),
    SUM(unknown_s * fraction), SUM(util_sum * fraction), SUM(measured_s * fraction), SUM(energy_wh),
    SUM(owned_s * fraction * rate_micros), SUM(busy_s * fraction * rate_micros),
    SUM(alloc_idle_s * fraction * rate_micros), SUM(idle_s * fraction * rate_micros),
    SUM(unknown_s * fraction * rate_micros),
    SUM(CASE WHEN rate_micros IS NULL THEN owned_s * fraction ELSE 0 END), 1 FROM usage_hourly
    GROUP BY hour, team, env, pool, cluster, cloud, model, datacenter_id, COALESCE(currency, '');\n`;
  await dbQuery(h.s.db, sql);
  await dbQuery(h.s.db, daySumsSql()); // and their days, as the job sums them
  await dbQuery(h.s.db, consumerDaysSql()); // and each consumer's days
  assert.equal((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM usage_hourly')).trim(), String(30 + 32 + 35 + 2));
});

test('heatmap: hour-of-week cells of utilization or allocation, in UTC or a given offset', async () => {
  const q = `team=research&from=${iso(T0)}&to=${iso(T0 + 169 * H)}`;
  const r = ok(await h.s.api('GET', `/api/v1/usage/heatmap?${q}`));
  assert.equal(r.items.length, 168);
  assert.equal(r.metric, 'util');
  const c0 = r.items[0];
  assert.deepEqual([c0.hour_of_week, c0.day, c0.hour], [0, 'Mon', 0]);
  // (50 % x 1 h + 3 % x 1 h) / 2 h; 1 of 2 owned hours allocated.
  assert.equal(c0.util_avg, 26.5);
  assert.equal(c0.value, 26.5);
  assert.equal(c0.allocated_pct, 50);
  assert.deepEqual(c0.gpu_hours, { owned: 2, measured: 2, allocated: 1, busy: 1 });
  assert.equal(r.items[1].value, null);

  const a = ok(await h.s.api('GET', `/api/v1/usage/heatmap?${q}&metric=allocation&tz=%2B01:00`));
  assert.equal(a.tz, '+01:00');
  assert.equal(a.items[0].value, null);
  assert.equal(a.items[1].value, 50);
  assert.equal(a.items[1].util_avg, 26.5);
  const w = ok(await h.s.api('GET', `/api/v1/usage/heatmap?${q}&tz=-01:00`));
  assert.equal(w.items[167].day, 'Sun');
  assert.equal(w.items[167].util_avg, 26.5);

  const csv = await h.s.api('GET', `/api/v1/usage/heatmap?${q}&format=csv`);
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type'), /^text\/csv/);
  const rows = parseCsv(csv.text);
  assert.equal(rows.length, 169);
  const col = (name) => rows[0].indexOf(name);
  assert.ok(col('gpu_hours_owned') >= 0, rows[0].join(','));
  assert.equal(rows[1][col('util_avg')], '26.5');
  assert.equal(rows[1][col('gpu_hours_owned')], '2');

  assertError(await h.s.api('GET', '/api/v1/usage/heatmap?metric=heat'), 400, { field: 'metric' });
  assertError(await h.s.api('GET', '/api/v1/usage/heatmap?tz=Europe/Paris'), 400, { field: 'tz' });
  assertError(await h.s.api('GET', `/api/v1/usage/heatmap?from=${iso(T0)}&to=${iso(T0)}`), 400, { field: 'from' });
  assertError(await h.s.api('GET', '/api/v1/usage/heatmap?to=yesterday'), 400, { field: 'to' });
  assertError(await h.s.api('GET', '/api/v1/usage/heatmap?group_by=team'), 400);
});

test('trend: this week against the last, per group, with change and direction', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/usage/trend?period=week&to=${iso(T0 + 169 * H)}`));
  assert.equal(r.group_by, 'team');
  assert.deepEqual(r.current, { from: iso(T0 + H), to: iso(T0 + 169 * H) });
  assert.deepEqual(r.previous, { from: iso(T0 - 167 * H), to: iso(T0 + H) });
  const res = r.items.find((i) => i.group === 'research');
  assert.deepEqual(res.owned, { current: 1, previous: 1, change_pct: 0, direction: 'flat' });
  assert.deepEqual(res.busy, { current: 0, previous: 1, change_pct: -100, direction: 'down' });
  assert.equal(res.util_avg.current, 3);
  assert.equal(res.util_avg.previous, 50);
  assert.deepEqual(res.cost, { current: '1.00', previous: '1.00', change_pct: 0, direction: 'flat', currency: 'USD', method: 'catalog' });
  // Vision's idle hour T0 falls in the previous week, its 9 hours after in this one.
  const vision = r.items.find((i) => i.group === 'vision');
  assert.deepEqual(vision.allocated_idle, { current: 27, previous: 3, change_pct: 800, direction: 'up' });

  // A month: the 30 days up to `to` against the 30 before; by host, filtered.
  const m = ok(await h.s.api('GET', `/api/v1/usage/trend?period=month&group_by=host&team=speech&to=${iso(T0 + 30 * 24 * H)}`));
  assert.equal(m.current.from, iso(T0));
  assert.deepEqual(m.items.map((i) => i.group), ['ins-hp']);
  assert.deepEqual(m.items[0].owned, { current: 32, previous: 0, change_pct: null, direction: 'up' });

  const csv = parseCsv((await h.s.api('GET', `/api/v1/usage/trend?to=${iso(T0 + 169 * H)}&format=csv`)).text);
  assert.ok(csv[0].includes('owned_change_pct') && csv[0].includes('cost_direction'), csv[0].join(','));
  assertError(await h.s.api('GET', '/api/v1/usage/trend?group_by=colour'), 400, { field: 'group_by' });
  assertError(await h.s.api('GET', '/api/v1/usage/trend?period=year'), 400, { field: 'period' });
});

test('idle: GPUs idle for N consecutive hours up to the end of the range', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/idle?min_hours=24&${RANGE}`));
  assert.equal(r.min_hours, 24);
  assert.equal(r.items.length, 1);
  const i1 = r.items[0];
  assert.equal(i1.gpu, 'GPU-ins-i1');
  assert.equal(i1.since, iso(T0 - 20 * H));
  assert.equal(i1.until, iso(T0 + 10 * H));
  assert.equal(i1.hours, 30);
  assert.equal(i1.host, 'ins-hi');
  assert.equal(i1.team, 'infra');
  assert.deepEqual(i1.cost, { amount: '90.00', currency: 'USD', method: 'catalog' });
  assert.deepEqual(i1.hourly, { amount: '3.00', currency: 'USD' });
  const all = ok(await h.s.api('GET', `/api/v1/insights/idle?${RANGE}`));
  assert.deepEqual(all.items.map((i) => [i.gpu, i.hours]), [['GPU-ins-i1', 30], ['GPU-ins-i2', 5]]);
  const one = ok(await h.s.api('GET', `/api/v1/insights/idle?${RANGE}&limit=1`));
  assert.equal(one.items.length, 1);
  // Ten hours later nothing is idle up to the end of the range any more.
  const later = ok(await h.s.api('GET', `/api/v1/insights/idle?from=${iso(T0)}&to=${iso(T0 + 20 * H)}`));
  assert.equal(later.items.length, 0);
  assertError(await h.s.api('GET', '/api/v1/insights/idle?min_hours=0'), 400, { field: 'min_hours' });
  // The data-center filter, by name or id; an unknown one matches nothing.
  const dc = ok(await h.s.api('GET', '/api/v1/datacenters?q=ins-dc')).items[0];
  for (const sel of ['ins-dc', String(dc.id)]) {
    const d = ok(await h.s.api('GET', `/api/v1/insights/idle?${RANGE}&datacenter=${sel}`));
    assert.deepEqual(d.items.map((i) => i.gpu), ['GPU-ins-i1']);
  }
  assert.equal(ok(await h.s.api('GET', `/api/v1/insights/idle?${RANGE}&datacenter=nowhere`)).items.length, 0);
});

test('allocated-idle: who holds idle GPUs, since when, and the waste', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/allocated-idle?${RANGE}`));
  assert.equal(r.items.length, 9);
  const vision = r.items.filter((i) => i.team === 'vision');
  assert.equal(vision.length, 3);
  for (const v of vision) {
    assert.deepEqual(v.consumer, { kind: 'k8s', name: 'ml/train-1/main', team: 'vision' });
    assert.equal(v.since, iso(T0));
    assert.equal(v.idle_now, true);
    assert.equal(v.allocated_idle_gpu_hours, 10);
  }
  // 3 GPUs x 10 hours x $2.00.
  assert.equal(vision.reduce((s, v) => s + Number(v.cost.amount), 0).toFixed(2), '60.00');
  assert.deepEqual(r.items.slice(0, 3).map((i) => i.team), ['vision', 'vision', 'vision']);
  const f = ok(await h.s.api('GET', `/api/v1/insights/allocated-idle?${RANGE}&team=speech`));
  assert.equal(f.items.length, 6);
  assert.ok(f.items.every((i) => i.cost.amount === '6.00' && i.since === iso(T0 + 6 * H)));
  const csv = parseCsv((await h.s.api('GET', `/api/v1/insights/allocated-idle?${RANGE}&format=csv`)).text);
  assert.equal(csv.length, 10);
  assert.ok(csv[0].includes('consumer_name') && csv[0].includes('cost_amount'));
});

test('waste-by-team: ranked by allocated-idle cost, then idle cost', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/waste-by-team?${RANGE}`));
  assert.deepEqual(r.items.map((i) => [i.rank, i.team, i.allocated_idle_cost.amount, i.idle_cost.amount]), [
    [1, 'vision', '60.00', '0.00'],
    [2, 'speech', '36.00', '0.00'],
    [3, 'infra', '0.00', '105.00'],
    [4, 'research', '0.00', '0.00'],
  ]);
  assert.deepEqual(r.items[2].gpu_hours, { owned: 35, allocated_idle: 0, idle: 35 });
});

test('top-consumers: by GPU-hours with the busy share', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/top-consumers?${RANGE}`));
  assert.deepEqual(r.items.map((i) => [i.consumer, i.gpu_hours, i.busy_pct, i.gpus]), [
    ['speech/big-job/c', 32, 25, 8],
    ['ml/train-1/main', 30, 0, 3],
    ['alice/python', 1, 100, 1],
  ]);
  assert.equal(r.items[0].cost.amount, '48.00');
  assert.equal(r.items[2].util_avg, 50);
});

test('overrequest: a pod on 8 GPUs with 6 unused is k=6 of n=8', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/overrequest?${RANGE}`));
  assert.equal(r.peak_below, 5);
  assert.equal(r.items.length, 1);
  const p = r.items[0];
  assert.equal(p.workload, 'speech/big-job');
  assert.equal(p.kind, 'k8s');
  assert.equal(p.n, 8);
  assert.equal(p.k, 6);
  assert.deepEqual(p.idle_gpus, [3, 4, 5, 6, 7, 8].map((g) => `GPU-ins-p${g}`));
  assert.equal(p.idle_gpu_hours, 24);
  assert.equal(p.idle_cost.amount, '36.00');
  const none = ok(await h.s.api('GET', `/api/v1/insights/overrequest?${RANGE}&peak_below=0.5`));
  assert.equal(none.items.length, 0);
  assertError(await h.s.api('GET', '/api/v1/insights/overrequest?peak_below=101'), 400, { field: 'peak_below' });
});

test('savings: opportunities with a monthly estimate, a sentence and their GPUs', async () => {
  const r = ok(await h.s.api('GET', `/api/v1/insights/savings?${RANGE}`));
  assert.equal(r.method, 'catalog');
  assert.deepEqual(r.items.map((i) => [i.kind, i.team, i.gpus, i.saving.monthly]), [
    ['overrequest', 'speech', 6, '6480.00'],
    ['allocated_idle', 'vision', 3, '4320.00'],
    ['idle', 'infra', 1, '2160.00'],
  ]);
  const v = r.items[1];
  assert.equal(v.text, 'release 3 allocated-idle GPUs held by team vision since 2026-11-02: ~$4320.00/month');
  assert.deepEqual(v.gpu_uuids.sort(), ['GPU-ins-v1', 'GPU-ins-v2', 'GPU-ins-v3']);
  assert.equal(v.saving.currency, 'USD');
  // Idle for 5 hours or more: i2 joins i1.
  const five = ok(await h.s.api('GET', `/api/v1/insights/savings?${RANGE}&min_hours=5`));
  const infra = five.items.find((i) => i.kind === 'idle');
  assert.equal(infra.saving.monthly, '4320.00');
  assert.match(infra.text, /^reclaim 2 GPUs of team infra idle for 5 hours or more since 2026-11-01: ~\$4320\.00\/month$/);
  const csv = parseCsv((await h.s.api('GET', `/api/v1/insights/savings?${RANGE}&format=csv`)).text);
  assert.equal(csv.length, 4);
  assert.ok(csv[0].includes('saving_monthly') && csv[0].includes('gpu_uuids'));
});

test('every insight route needs a viewer and refuses unknown parameters', async () => {
  const viewer = await mkToken(h.s, 'viewer');
  const routes = ['/api/v1/usage/heatmap', '/api/v1/usage/trend', '/api/v1/insights/idle',
    '/api/v1/insights/allocated-idle', '/api/v1/insights/waste-by-team',
    '/api/v1/insights/top-consumers', '/api/v1/insights/overrequest', '/api/v1/insights/savings'];
  for (const p of routes) {
    assertError(await h.s.api('GET', p, { auth: null }), 401);
    ok(await h.s.api('GET', `${p}?${RANGE}`, { auth: viewer.token }));
    assertError(await h.s.api('GET', `${p}?colour=red`), 400, { code: 'unknown_parameter' });
    assertError(await h.s.api('GET', `${p}?from=soon`), 400, { field: 'from' });
  }
});
