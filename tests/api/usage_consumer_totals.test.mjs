// The usage report by consumer reads whole days from the consumer totals
// (usage_consumer_totals: the consumer days summed over their GPUs): its
// figures must be the sums of the consumer days (usage_consumers_daily)
// and, for hour steps and ranges with partial days, of the hourly consumer
// rows, worked out here straight from those tables, with the rest of the
// owned time as kind "none": day, week, month and hour steps, ranges at
// and off midnight, empty ones, a team filter; again after late data
// rewrites an old day, and after retention prunes the oldest days.
//
// Host ct-a (team i-cta): GPUs A, B, C; host ct-b (team i-ctb): GPUs D, E.
// On each day k = 1..DAYS before today, 10:00 to 12:00, samples every 5
// minutes:
// - A at 80 %, a process of user u<k % 3>;
// - B and C (ct-a) and D (ct-b) held by pod ml/job-<k / 5>: one consumer
//   on three GPUs of two teams; B idle, C and D at 80 % on even days;
// - E at 0 % held by nobody.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { ok, dbQuery, stopClean, rollupAll } from './helpers.mjs';

const DAY = 86400;
const H = 3600;
const TODAY = Math.floor(Date.now() / 1000 / DAY) * DAY;
const DAYS = 14;
const dayK = (k) => TODAY - k * DAY;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const uuid = (n) => `GPU-c7000000-0000-4000-8000-00000000000${n}`;
const [A, B, C, D, E] = [1, 2, 3, 4, 5].map(uuid);
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-5, `${msg}: ${a} != ${b}`);

let s;
const tok = {};

async function push(host, id, samples, processes) {
  const uuids = host === 'ct-a' ? [A, B, C] : [D, E];
  const gpus = uuids.map((u, i) => ({ uuid: u, index: i, name: 'NVIDIA H100 80GB HBM3', serial: `S-${host}-${i}` }));
  const r = await s.api('POST', '/api/v1/ingest', { auth: tok[host], body: { batch_id: id, host: { hostname: host }, gpus, samples, processes } });
  assert.equal(r.status, 201, r.text);
}
async function rollup() {
  const run = await rollupAll(s);
  assert.equal(run.dirty_left, 0);
  assert.equal(run.redo_left, 0);
}
const pod = (gpu, t, n) => ({ gpu, pid: 500 + n, name: 'python', time: t, namespace: 'ml', pod: `job-${n}`, container: 'main' });

/** One day's readings on both hosts: [lo, hi] every 5 minutes, A's user `user`. */
async function pushDay(k, lo, hi, user) {
  const a = { samples: [], processes: [] }, b = { samples: [], processes: [] };
  const busy = k % 2 === 0 ? 80 : 0;
  for (let t = lo; t <= hi; t += 300) {
    a.samples.push({ time: t, gpu: A, util_avg: 80, util_max: 80 }, { time: t, gpu: B, util_avg: 0, util_max: 0 },
      { time: t, gpu: C, util_avg: busy, util_max: busy });
    b.samples.push({ time: t, gpu: D, util_avg: busy, util_max: busy }, { time: t, gpu: E, util_avg: 0, util_max: 0 });
    if (t === lo) continue;
    a.processes.push({ gpu: A, pid: 100, name: 'train', user, time: t }, pod(B, t, Math.floor(k / 5)), pod(C, t, Math.floor(k / 5)));
    b.processes.push(pod(D, t, Math.floor(k / 5)));
  }
  await push('ct-a', `ct-a-${k}-${lo}`, a.samples, a.processes);
  await push('ct-b', `ct-b-${k}-${lo}`, b.samples, b.processes);
}

const rowsOf = async (sql) => (await dbQuery(s.db, sql)).trim().split('\n').filter(Boolean).map((l) => l.split('|'));

/** The start of the step holding t, as the report's steps start. */
function stepStart(t, step) {
  if (step === 'hour') return t - (t % H);
  if (step === 'day') return t - (t % DAY);
  if (step === 'week') return t - ((((t - 4 * DAY) % (7 * DAY)) + 7 * DAY) % (7 * DAY)); // Mondays
  const d = new Date(t * 1000);
  return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1) / 1000;
}

/** The report's items over [from, to) by `step` worked out from the base tables:
 * per consumer (kind, key) and step its allocated, busy and allocated-idle
 * seconds, and per step the owned seconds left to nobody (kind "none"). */
async function expected(from, to, step, team) {
  const daily = step !== 'hour' && from % DAY === 0 && to % DAY === 0;
  const teamOf = (t) => (team ? ` AND ${t}.team = '${team}'` : '');
  const cons = daily
    ? await rowsOf(`SELECT d.kind, d.consumer, d.day, d.allocated_s, d.busy_s, d.alloc_idle_s FROM usage_consumers_daily d
        WHERE d.day >= ${from} AND d.day < ${to}${teamOf('d')}`)
    : await rowsOf(`SELECT u.kind, u.consumer, u.hour, u.allocated_s * h.fraction, u.busy_s * h.fraction, u.alloc_idle_s * h.fraction
        FROM usage_consumers u JOIN usage_hourly h ON h.gpu_id = u.gpu_id AND h.hour = u.hour
        WHERE h.owned_s > 0 AND u.hour >= ${from} AND u.hour < ${to}${teamOf('h')}`);
  const owned = daily
    ? await rowsOf(`SELECT d.day, d.owned_s * d.fraction FROM usage_daily d WHERE d.day >= ${from} AND d.day < ${to}${teamOf('d')}`)
    : await rowsOf(`SELECT h.hour, h.owned_s * h.fraction FROM usage_hourly h WHERE h.hour >= ${from} AND h.hour < ${to}${teamOf('h')}`);
  const items = new Map(), rest = new Map();
  for (const [kind, consumer, t, a, b, i] of cons) {
    const k = `${kind}|${consumer}|${stepStart(+t, step)}`;
    const it = items.get(k) || { owned: 0, busy: 0, idle: 0 };
    it.owned += +a;
    it.busy += +b;
    it.idle += +i;
    items.set(k, it);
    rest.set(stepStart(+t, step), (rest.get(stepStart(+t, step)) || 0) - +a);
  }
  for (const [t, o] of owned) rest.set(stepStart(+t, step), (rest.get(stepStart(+t, step)) || 0) + +o);
  for (const [start, o] of rest) if (o > 1e-6) items.set(`none||${start}`, { owned: o, none: true });
  return items;
}

/** Asks the report over [from, to) by `step` and checks it against the base tables. */
async function check(from, to, step, team) {
  const q = `group_by=consumer&from=${iso(from)}&to=${iso(to)}&step=${step}&limit=1000${team ? `&team=${team}` : ''}`;
  const tag = `${q}`;
  const r = ok(await s.api('GET', `/api/v1/usage?${q}`));
  const want = await expected(from, to, step, team);
  const got = new Map(r.items.map((i) => [`${i.kind}|${i.group ?? ''}|${Date.parse(i.start) / 1000}`, i]));
  assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `items ${tag}`);
  for (const [k, w] of want) {
    const i = got.get(k);
    close(i.gpu_hours.owned, w.owned / H, `${tag} ${k} owned`);
    if (w.none) continue;
    close(i.gpu_hours.allocated, w.owned / H, `${tag} ${k} allocated`);
    close(i.gpu_hours.busy, w.busy / H, `${tag} ${k} busy`);
    close(i.gpu_hours.allocated_idle, w.idle / H, `${tag} ${k} allocated_idle`);
  }
  return r;
}

// Whole days, days off midnight at either end, one day, nothing, a range
// ending in today's unfinished day; every step, and the team filters.
const RANGES = [
  [dayK(13), dayK(1)], [dayK(12) + 5 * H, dayK(2) + 13 * H], [dayK(6), dayK(5)], [dayK(40), dayK(38)],
  [dayK(9) + 23 * H, dayK(7) + H], [dayK(11), TODAY + 5 * H],
];
async function checkAll() {
  for (const [from, to] of RANGES)
    for (const step of ['day', 'week', 'month', 'hour'])
      for (const team of [null, 'i-cta', 'i-ctb']) await check(from, to, step, team);
}
/** The totals are the sums of the consumer days, one row per key (its block of 64 GPU ids included). */
async function totalsMatchDays() {
  const key = 'day, kind, consumer, gpu_id / 64, team, env, pool, cluster, cloud, model, datacenter_id, currency';
  const bad = await rowsOf(`SELECT COUNT(*) FROM (SELECT day, kind, consumer, gpu_id / 64 AS blk, team, currency, COUNT(*) AS n,
      SUM(allocated_s) AS a, SUM(busy_s) AS b FROM usage_consumers_daily GROUP BY ${key}) x LEFT JOIN usage_consumer_totals t
      ON t.day = x.day AND t.kind = x.kind AND t.consumer = x.consumer AND t.gpu_block = x.blk
      AND COALESCE(t.team, '') = COALESCE(x.team, '') AND COALESCE(t.currency, '') = COALESCE(x.currency, '')
      WHERE t.day IS NULL OR t.gpu_rows <> x.n OR ABS(t.allocated_s - x.a) > 0.001 OR ABS(t.busy_s - x.b) > 0.001`);
  assert.equal(+bad[0][0], 0);
  const [[nt]] = await rowsOf('SELECT COUNT(*) FROM usage_consumer_totals');
  const [[nd]] = await rowsOf(`SELECT COUNT(*) FROM (SELECT DISTINCT ${key} FROM usage_consumers_daily) x`);
  assert.equal(+nt, +nd);
}

test('the consumer report from the consumer totals answers as the consumer days and hours do', async () => {
  s = await startServer();
  try {
    for (const [host, team] of [['ct-a', 'i-cta'], ['ct-b', 'i-ctb']])
      tok[host] = ok(await s.api('POST', '/api/v1/tokens', { body: { name: `tok-${host}`, role: 'pusher', source: `src-${host}`, team } }), 201).token;
    for (let k = DAYS; k >= 1; k--) await pushDay(k, dayK(k) + 10 * H, dayK(k) + 12 * H, `u${k % 3}`);
    await rollup();
    await totalsMatchDays();
    await checkAll();

    // Worked by hand: ml/job-2 holds B, C and D on days 10..14, 2 hours a
    // day, on day 10 (in the range from day 13): 6 GPU-hours, 4 of team
    // i-cta; u1/train holds A on days 13, 10, 7, 4, 1: 2 hours each.
    let r = await check(dayK(13), dayK(1), 'month');
    const sum = (items, consumer) => items.filter((i) => i.group === consumer).reduce((a, i) => a + i.gpu_hours.allocated, 0);
    r = await check(dayK(10), dayK(9), 'day');
    assert.equal(sum(r.items, 'ml/job-2/main'), 6);
    r = await check(dayK(10), dayK(9), 'day', 'i-cta');
    assert.equal(sum(r.items, 'ml/job-2/main'), 4);
    r = await check(dayK(13), dayK(1), 'week');
    assert.equal(sum(r.items, 'u1/train'), 8); // days 13, 10, 7, 4 (day 1 is past the range)

    // Late data rewrites day 6 (and its totals): two more hours of A as
    // "late/train", and of the pod on B, C and D.
    await pushDay(6, dayK(6) + 14 * H, dayK(6) + 16 * H, 'late');
    await rollup();
    await totalsMatchDays();
    await checkAll();
    r = await check(dayK(6), dayK(5), 'day');
    assert.equal(sum(r.items, 'late/train'), 2);
    assert.equal(sum(r.items, 'ml/job-1/main'), 12);
  } finally {
    await stopClean(s);
  }

  // Retention of 10 days: the consumer days older go, and their totals
  // with them.
  s = await startServer({ db: s.db, dir: s.dir, token: s.token, args: ['--retain-daily-days', '10'] });
  try {
    await rollup();
    const [[oldest]] = await rowsOf('SELECT MIN(day) FROM usage_consumer_totals');
    assert.equal(+oldest, dayK(9));
    await totalsMatchDays();
    for (const step of ['day', 'month']) await check(dayK(13), dayK(1), step);
  } finally {
    await stopClean(s);
  }
});
