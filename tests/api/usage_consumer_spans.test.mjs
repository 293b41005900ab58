// The consumer lists read whole days as aligned spans of consumer days
// (usage_consumer_spans): their figures must be the sums of the consumer
// days (usage_consumers_daily) and, at a range's partial days, of the
// hourly consumer rows, worked out here straight from those tables, over
// ranges whose ends fall anywhere in the spans; again after late data
// rewrites an old day, and after retention prunes the oldest days.
//
// Host sp-node, GPUs A, B, C; on each day k = 1..36 before today, 10:00 to
// 12:00, samples every 5 minutes:
// - A at 80 %, a process of user u<k % 3> ("u0/train" ...): 2 GPU-hours a day;
// - B at 0 % and C at 80 % on even days (0 % on odd), both held by pod
//   ml/job-<k / 5>: allocated-idle on B, over-requesting where C is busy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { ok, dbQuery, stopClean, rollupAll } from './helpers.mjs';

const DAY = 86400;
const H = 3600;
const TODAY = Math.floor(Date.now() / 1000 / DAY) * DAY;
const DAYS = 36;
const dayK = (k) => TODAY - k * DAY;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const uuid = (n) => `GPU-5b000000-0000-4000-8000-00000000000${n}`;
const [A, B, C] = [1, 2, 3].map(uuid);
const PEAK = 50;
const r6 = (x) => Math.round(x * 1e6) / 1e6;
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);

let s;
let tok;

async function push(id, samples, processes) {
  const gpus = [A, B, C].map((u, i) => ({ uuid: u, index: i, name: 'NVIDIA H100 80GB HBM3', serial: 'S-sp-' + i }));
  const r = await s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: id, host: { hostname: 'sp-node' }, gpus, samples, processes } });
  assert.equal(r.status, 201, r.text);
}
async function rollup() {
  const run = await rollupAll(s);
  assert.equal(run.dirty_left, 0);
  assert.equal(run.redo_left, 0);
}
const pod = (gpu, t, n) => ({ gpu, pid: 500 + n, name: 'python', time: t, namespace: 'ml', pod: `job-${n}`, container: 'main' });

/** One day's readings: [lo, hi] every 5 minutes, with A's user `user`. */
async function pushDay(k, lo, hi, user) {
  const samples = [], processes = [];
  for (let t = lo; t <= hi; t += 300) {
    samples.push({ time: t, gpu: A, util_avg: 80, util_max: 80 });
    samples.push({ time: t, gpu: B, util_avg: 0, util_max: 0 });
    const c = k % 2 === 0 ? 80 : 0;
    samples.push({ time: t, gpu: C, util_avg: c, util_max: c });
    if (t === lo) continue;
    processes.push({ gpu: A, pid: 100, name: 'train', user, time: t });
    processes.push(pod(B, t, Math.floor(k / 5)), pod(C, t, Math.floor(k / 5)));
  }
  await push(`sp-${k}-${lo}`, samples, processes);
}

const rowsOf = async (sql) => (await dbQuery(s.db, sql)).trim().split('\n').filter(Boolean).map((l) => l.split('|'));

/** The consumer rows of [from, to) straight from the base tables: the
 * whole days from usage_consumers_daily, the hours of the partial days at
 * either end from usage_consumers with their usage_hourly rows. */
async function baseRows(from, to) {
  const top = Math.ceil(to / H) * H;
  let d1 = Math.ceil(from / DAY) * DAY, d2 = Math.floor(top / DAY) * DAY;
  if (d2 <= d1) d1 = d2 = from;
  const cols = 'g.uuid, x.kind, x.consumer, x.pod, x.namespace';
  const days = await rowsOf(`SELECT ${cols}, x.allocated_s, x.busy_s, x.alloc_idle_s, COALESCE(x.util_max, -1), x.hours FROM usage_consumers_daily x JOIN gpus g ON g.id = x.gpu_id WHERE x.day >= ${d1} AND x.day < ${d2}`);
  const hours = await rowsOf(`SELECT ${cols}, x.allocated_s * h.fraction, x.busy_s * h.fraction, x.alloc_idle_s * h.fraction, COALESCE(x.util_max, -1), 1 FROM usage_consumers x JOIN usage_hourly h ON h.gpu_id = x.gpu_id AND h.hour = x.hour JOIN gpus g ON g.id = x.gpu_id WHERE x.allocated_s > 0 AND ((x.hour >= ${from} AND x.hour < ${d1}) OR (x.hour >= ${d2} AND x.hour < ${to}))`);
  return [...days, ...hours].map(([gpu, kind, consumer, podName, ns, a, b, i, u, n]) =>
    ({ gpu, kind, consumer, workload: kind === 'k8s' && podName ? `${ns}/${podName}` : consumer, allocated: +a, busy: +b, idle: +i, peak: +u, hours: +n }));
}

/** Sums rows by key(row) into objects made by init(row), each added to by add. */
function group(rows, key, add) {
  const m = new Map();
  for (const r of rows) {
    const k = key(r);
    if (!m.has(k)) m.set(k, { allocated: 0, busy: 0, idle: 0, peak: -1, gpus: new Set(), first: r });
    const g = m.get(k);
    g.allocated += r.allocated;
    g.busy += r.busy;
    g.idle += r.idle;
    g.peak = Math.max(g.peak, r.peak);
    g.gpus.add(r.gpu);
    if (add) add(g, r);
  }
  return m;
}

/** Asks the three lists over [from, to) and checks each against the base tables. */
async function check(from, to) {
  const range = `from=${iso(from)}&to=${iso(to)}`;
  const base = await baseRows(from, to);
  const tag = `${iso(from)}..${iso(to)}`;

  // Top consumers: per consumer, every figure.
  const top = ok(await s.api('GET', `/api/v1/insights/top-consumers?${range}&limit=1000`)).items;
  const want = group(base, (r) => `${r.kind}|${r.consumer}`);
  assert.deepEqual(top.map((i) => `${i.kind}|${i.consumer}`).sort(), [...want.keys()].sort(), `top ${tag}`);
  for (const i of top) {
    const w = want.get(`${i.kind}|${i.consumer}`);
    close(i.gpu_hours, r6(w.allocated / H), `top ${tag} ${i.consumer} gpu_hours`);
    close(i.busy_gpu_hours, r6(w.busy / H), `top ${tag} ${i.consumer} busy`);
    close(i.allocated_idle_gpu_hours, r6(w.idle / H), `top ${tag} ${i.consumer} idle`);
    assert.equal(i.gpus, w.gpus.size, `top ${tag} ${i.consumer} gpus`);
  }

  // Allocated-idle: per GPU and consumer with an allocated-idle hour.
  const ai = ok(await s.api('GET', `/api/v1/insights/allocated-idle?${range}&limit=1000`)).items;
  const wantAi = group(base, (r) => `${r.gpu}|${r.kind}|${r.consumer}`);
  for (const [k, w] of wantAi) if (w.idle <= 0) wantAi.delete(k);
  assert.deepEqual(ai.map((i) => `${i.gpu}|${i.consumer.kind}|${i.consumer.name}`).sort(), [...wantAi.keys()].sort(), `allocated-idle ${tag}`);
  for (const i of ai) {
    const w = wantAi.get(`${i.gpu}|${i.consumer.kind}|${i.consumer.name}`);
    close(i.allocated_idle_gpu_hours, r6(w.idle / H), `allocated-idle ${tag} ${i.consumer.name}`);
    close(i.held_gpu_hours, r6(w.allocated / H), `allocated-idle ${tag} ${i.consumer.name} held`);
  }

  // Over-requesting workloads: some of n >= 2 GPUs peak below PEAK, not all.
  const over = ok(await s.api('GET', `/api/v1/insights/overrequest?${range}&peak_below=${PEAK}&limit=1000`)).items;
  const perGpu = group(base.filter((r) => r.kind !== 'unknown'), (r) => `${r.kind}|${r.workload}|${r.gpu}`);
  const wl = new Map();
  for (const g of perGpu.values()) {
    const k = `${g.first.kind}|${g.first.workload}`;
    if (!wl.has(k)) wl.set(k, { n: 0, idle: [], idleHours: 0 });
    const w = wl.get(k);
    w.n++;
    if (g.peak >= 0 && g.peak < PEAK) {
      w.idle.push(g.first.gpu);
      w.idleHours += g.allocated / H;
    }
  }
  const wantOver = [...wl].filter(([, w]) => w.n >= 2 && w.idle.length >= 1 && w.idle.length < w.n);
  assert.deepEqual(over.map((i) => `${i.kind}|${i.workload}`).sort(), wantOver.map(([k]) => k).sort(), `overrequest ${tag}`);
  for (const i of over) {
    const w = wl.get(`${i.kind}|${i.workload}`);
    assert.equal(i.n, w.n);
    assert.deepEqual([...i.idle_gpus].sort(), w.idle.sort());
    close(i.idle_gpu_hours, r6(w.idleHours), `overrequest ${tag} ${i.workload}`);
  }
  await checkIdleNow(from, to, ai, tag);
  return { top, ai, over };
}

/** The runs of the allocated-idle items worked out from the consumer hours
 * (a run: the hours back from the consumer's newest one in the range, each
 * there and wholly allocated-idle, none before `from`), and the savings'
 * allocated-idle GPUs: those idle now whose newest hour is recent (the hour
 * before the range's newest or later), less those an over-requesting
 * workload's opportunity names first. */
async function checkIdleNow(from, to, ai, tag) {
  const hours = await rowsOf(`SELECT g.uuid, x.kind, x.consumer, x.hour, CASE WHEN x.busy_s = 0 AND x.alloc_idle_s > 0 THEN 1 ELSE 0 END
    FROM usage_consumers x JOIN gpus g ON g.id = x.gpu_id WHERE x.allocated_s > 0 AND x.hour >= ${from} AND x.hour < ${to}`);
  const idleAt = new Map(hours.map(([gpu, kind, consumer, hour, idle]) => [`${gpu}|${kind}|${consumer}|${hour}`, idle === '1']));
  const recent = (to - 1) - ((to - 1) % H) - H;
  const wantSaved = new Set();
  for (const i of ai) {
    const last = Date.parse(i.last_seen) / 1000 - H;
    const key = `${i.gpu}|${i.consumer.kind}|${i.consumer.name}`;
    let start = last + H;
    while (start - H >= from && idleAt.get(`${key}|${start - H}`)) start -= H;
    const now = start <= last;
    assert.equal(i.idle_now, now, `allocated-idle ${tag} ${key} idle now`);
    if (now) assert.equal(Date.parse(i.since) / 1000, start, `allocated-idle ${tag} ${key} since`);
    if (now && last >= recent) wantSaved.add(i.gpu);
  }
  const sv = ok(await s.api('GET', `/api/v1/insights/savings?from=${iso(from)}&to=${iso(to)}&peak_below=${PEAK}&limit=1000`)).items;
  const of = (kind) => sv.filter((o) => o.kind === kind).flatMap((o) => o.gpu_uuids);
  for (const u of of('overrequest')) wantSaved.delete(u);
  assert.deepEqual(of('allocated_idle').sort(), [...wantSaved].sort(), `savings ${tag} allocated-idle GPUs`);
}

// Ranges whose ends fall in every part of the spans: whole days at odd
// offsets, one day, partial days at either end, no whole day, nothing; a
// range that ends inside a day with hours after its end (read by the
// hour), and inside one with none (read whole, as a range that ends now):
// day 4 after 13:00, today, and day 20 before 15:00 until late data; and
// ranges whose consumers are idle now, for the savings.
const RANGES = [
  [dayK(35), dayK(2)], [dayK(29), dayK(6)], [dayK(17), dayK(16)], [dayK(32), dayK(1)],
  [dayK(13) + 11 * H, dayK(3) + 11 * H], [dayK(20) + 10 * H, dayK(20) + 11 * H],
  [dayK(9) + 23 * H, dayK(7) + 1 * H], [dayK(40), dayK(38)], [dayK(37), TODAY],
  [dayK(12) + 5 * H, dayK(4) + 13 * H], [dayK(30) + 17 * H, TODAY + 5 * H],
  [dayK(20), dayK(20) + 15 * H], [dayK(21), dayK(20) + 15 * H + 1800],
  // Ending just after a day's readings, so that its consumers are idle
  // now: on day 5 B and C (B named by the pod's over-request, so that the
  // savings release C as allocated-idle), on day 2 B (named by the
  // over-request; C busy).
  [dayK(30) + 12 * H, dayK(5) + 12 * H], [dayK(8) + 11 * H, dayK(2) + 12 * H + 600],
];
const spansMatchDays = async () => {
  // Every span row is the sum of the consumer days inside it.
  const bad = await rowsOf(`SELECT s.len, s.day, s.gpu_id, s.kind, s.consumer, s.hours, s.allocated_s,
      (SELECT SUM(d.hours) FROM usage_consumers_daily d WHERE d.gpu_id = s.gpu_id AND d.kind = s.kind
         AND d.consumer = s.consumer AND COALESCE(d.team, '') = COALESCE(s.team, '')
         AND COALESCE(d.consumer_team, '') = COALESCE(s.consumer_team, '')
         AND d.day >= s.day AND d.day < s.day + s.len * 86400)
    FROM usage_consumer_spans s`);
  for (const [len, day, gid, kind, consumer, hours, , sum] of bad)
    assert.equal(+hours, +sum, `span ${len} ${day} ${gid} ${kind} ${consumer}`);
  // And every consumer day is in one span of each length.
  const missing = await rowsOf(`SELECT d.day, d.gpu_id, d.consumer, l.len FROM usage_consumers_daily d
    CROSS JOIN (SELECT 2 AS len UNION ALL SELECT 4 UNION ALL SELECT 8 UNION ALL SELECT 16 UNION ALL SELECT 32) l
    WHERE NOT EXISTS (SELECT 1 FROM usage_consumer_spans s WHERE s.len = l.len AND s.gpu_id = d.gpu_id
      AND s.kind = d.kind AND s.consumer = d.consumer AND s.day = d.day - d.day % (l.len * 86400))`);
  assert.deepEqual(missing, []);
};

test('the consumer lists from spans answer as the consumer days do', async () => {
  s = await startServer();
  try {
    tok = ok(await s.api('POST', '/api/v1/tokens',
      { body: { name: 'tok-sp', role: 'pusher', source: 'i-sp', team: 'i-sp' } }), 201).token;
    for (let k = DAYS; k >= 1; k--) await pushDay(k, dayK(k) + 10 * H, dayK(k) + 12 * H, `u${k % 3}`);
    await rollup();
    await spansMatchDays();
    for (const [from, to] of RANGES) await check(from, to);

    // Worked by hand: A holds 2 GPU-hours a day, u0 on the days k % 3 = 0;
    // days 2..34 hold u0 on 3, 6, ..., 33 (11 days).
    let r = await check(dayK(34), dayK(1));
    assert.equal(r.top.find((i) => i.consumer === 'u0/train').gpu_hours, 22);
    // ml/job-3 holds B and C on days 15..19, 2 hours a day: 20 GPU-hours;
    // C is busy on days 16 and 18, B never: it over-requests, with B's 10
    // GPU-hours idle.
    const job3 = r.over.find((i) => i.workload === 'ml/job-3');
    assert.equal(job3.n, 2);
    assert.deepEqual(job3.idle_gpus, [B]);
    assert.equal(job3.idle_gpu_hours, 10);
    assert.equal(r.top.find((i) => i.consumer === 'ml/job-3/main').gpu_hours, 20);
    // ml/job-7 holds days 35 and 36 only, outside the range.
    assert.equal(r.top.find((i) => i.consumer === 'ml/job-7/main'), undefined);

    // Late data rewrites day 20 (and its spans): two more hours of A as
    // "late/train", and of the pod on B and C.
    await pushDay(20, dayK(20) + 14 * H, dayK(20) + 16 * H, 'late');
    await rollup();
    await spansMatchDays();
    for (const [from, to] of RANGES) await check(from, to);
    r = await check(dayK(34), dayK(1));
    assert.equal(r.top.find((i) => i.consumer === 'late/train').gpu_hours, 2);
    assert.equal(r.top.find((i) => i.consumer === 'ml/job-4/main').gpu_hours, 24);
  } finally {
    await stopClean(s);
  }

  // Retention of 30 days: the consumer days older go, and their spans with
  // them (those holding kept days summed again from those).
  s = await startServer({ db: s.db, dir: s.dir, token: s.token, args: ['--retain-daily-days', '30'] });
  try {
    await rollup();
    // Day 30 starts before now - 30 days; day 29 after it.
    const [[oldest]] = await rowsOf('SELECT MIN(day) FROM usage_consumers_daily');
    assert.equal(+oldest, dayK(29));
    await spansMatchDays();
    for (const [from, to] of RANGES) await check(from, to);
    // Nothing is left of days 31..36 as whole days.
    const gone = ok(await s.api('GET', `/api/v1/insights/top-consumers?from=${iso(dayK(36))}&to=${iso(dayK(31))}`));
    assert.deepEqual(gone.items, []);
  } finally {
    await stopClean(s);
  }
});
