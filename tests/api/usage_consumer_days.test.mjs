// The daily per-consumer rollup end to end: readings pushed through the
// ingest API with explicit past timestamps, the rollup job run on demand,
// then the consumer report and the consumer insight lists asked over whole
// days (read from usage_consumers_daily) and over the same data by hours
// (a range without a whole day, read from the hourly rows): the answers
// must be the same, before and after late data and an owner change.
//
// Host cd-node of team i-cd (the pushing source's default owner); day D0 is
// three days ago, T0 = D0 + 10:00, samples every 5 minutes:
// - pod ml/cd-job on a and b for 90 minutes from T0: 3 GPU-hours; a stays at
//   80 % for 3 hours, b at 0 %;
// - processes of bob and carol share c (0 %) for 2 hours from T0;
// - d busy at 80 % with nobody known (consumer unknown) for 3 hours;
// - pod ml/cd-hold holds f at 0 % from D0 - 2 days to T0 + 3 h (61 hours).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const DAY = 86400;
const H = 3600;
const D0 = Math.floor(nowS() / DAY) * DAY - 3 * DAY;
const T0 = D0 + 10 * H;
const HOLD = D0 - 2 * DAY;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const uuid = (n) => `GPU-cd000000-0000-4000-8000-00000000000${n}`;
const [A, B, C, D, F] = [1, 2, 3, 4, 6].map(uuid);
// Each pair of ranges holds the same consumer hours: the first reads
// whole days from the daily rows, the second none (D0 to 23:00) or only
// the days between partial ends (the hours of those from the hourly rows).
const DAYS = [`from=${iso(D0)}&to=${iso(D0 + DAY)}`, `from=${iso(D0)}&to=${iso(D0 + 23 * H)}`];
const LONG = [`from=${iso(HOLD - DAY)}&to=${iso(D0 + DAY)}`, `from=${iso(HOLD - DAY + H)}&to=${iso(D0 + 23 * H)}`];

let tok;
async function push(id, samples, processes) {
  const gpus = [A, B, C, D, F].map((u, i) => ({ uuid: u, index: i, name: 'NVIDIA H100 80GB HBM3', serial: 'S-cd-' + i }));
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: id, host: { hostname: 'cd-node' }, gpus, samples, processes } });
  assert.equal(r.status, 201, r.text);
}
async function rollup() {
  const run = await rollupAll(h.s);
  assert.equal(run.dirty_left, 0);
  assert.equal(run.redo_left, 0);
}
const job = (gpu, t, pid) => ({ gpu, pid, name: 'python', time: t, namespace: 'ml', pod: 'cd-job', container: 'main' });

// A list asked over both ranges of a pair; the answers must be equal (the
// consumer report: its consumer items, as the unknown time of the hour
// 23:00 is in one range only).
async function same(path, pair, extra = '') {
  const sep = path.includes('?') ? '&' : '?';
  const [a, b] = await Promise.all(pair.map(async (range) => {
    const x = ok(await h.s.api('GET', `${path}${sep}${range}${extra}`));
    return path.startsWith('/api/v1/usage') ? x.items.filter((i) => i.kind !== 'none') : x.items;
  }));
  assert.deepEqual(a, b, `${path}${extra}: ${pair[0]} and ${pair[1]} differ`);
  return { items: a };
}
async function allSame(extra = '') {
  const out = {};
  for (const [name, pair] of [['', DAYS], ['long_', LONG]]) {
    out[name + 'top'] = await same('/api/v1/insights/top-consumers', pair, extra);
    out[name + 'ai'] = await same('/api/v1/insights/allocated-idle', pair, extra);
    out[name + 'over'] = await same('/api/v1/insights/overrequest', pair, extra);
    out[name + 'usage'] = await same('/api/v1/usage?group_by=consumer&step=day', pair, extra);
  }
  out.month = await same('/api/v1/usage?group_by=consumer&step=month', DAYS, extra);
  return out;
}
const gh = (top, name) => top.items.find((i) => i.consumer === name)?.gpu_hours;

test('consumer days answer as the hours do', async () => {
  tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-cd', role: 'pusher', source: 'i-cd', team: 'i-cd' } }), 201).token;
  // f, held for 61 hours from HOLD, in batches of a day.
  for (let d = 0; d < 3; d++) {
    const samples = [], processes = [];
    for (let t = HOLD + d * DAY; t < HOLD + (d + 1) * DAY && t <= T0 + 3 * H; t += 300) {
      samples.push({ time: t, gpu: F, util_avg: 0, util_max: 0 });
      if (t > HOLD) processes.push({ gpu: F, pid: 900, name: 'python', time: t, namespace: 'ml', pod: 'cd-hold', container: 'main' });
    }
    await push(`cd-f-${d}`, samples, processes);
  }
  const samples = [], processes = [];
  for (let t = T0; t <= T0 + 3 * H; t += 300) {
    for (const u of [A, B, C, D]) {
      const util = u === A || u === D ? 80 : 0;
      samples.push({ time: t, gpu: u, util_avg: util, util_max: util });
    }
    if (t === T0) continue;
    if (t <= T0 + 5400) processes.push(job(A, t, 100), job(B, t, 101));
    if (t <= T0 + 2 * H) {
      processes.push({ gpu: C, pid: 200, name: 'python', user: 'bob', time: t });
      processes.push({ gpu: C, pid: 201, name: 'python', user: 'carol', time: t });
    }
  }
  await push('cd-1', samples, processes);
  await rollup();

  let r = await allSame();
  // A pod on 2 GPUs for 90 minutes is 3 GPU-hours; two users sharing a
  // GPU for 2 hours hold one each.
  assert.equal(gh(r.top, 'ml/cd-job/main'), 3);
  assert.equal(r.top.items.find((i) => i.consumer === 'ml/cd-job/main').gpus, 2);
  assert.equal(gh(r.top, 'bob/python'), 1);
  assert.equal(gh(r.top, 'carol/python'), 1);
  // d's 3 hours and a's 1.5 after the pod: busy, nobody known.
  assert.equal(gh(r.top, 'unknown'), 4.5);
  assert.equal(gh(r.top, 'ml/cd-hold/main'), 13);
  assert.equal(gh(r.long_top, 'ml/cd-hold/main'), 61);
  // f's run of idle hours crosses two whole days: since HOLD, idle now.
  const hold = r.long_ai.items.find((i) => i.gpu === F);
  assert.equal(hold.since, iso(HOLD));
  assert.equal(hold.idle_now, true);
  assert.equal(hold.allocated_idle_gpu_hours, 61);
  const b = r.ai.items.find((i) => i.gpu === B);
  assert.equal(b.since, iso(T0));
  assert.equal(b.allocated_idle_gpu_hours, 1.5);
  assert.deepEqual(r.ai.items.filter((i) => i.gpu === C).map((i) => i.consumer.name).sort(), ['bob/python', 'carol/python']);
  assert.deepEqual(r.over.items.map((i) => [i.workload, i.n, i.k, i.idle_gpus]), [['ml/cd-job', 2, 1, [B]]]);
  // The consumer report adds up to the owned time of the day.
  const job1 = r.usage.items.filter((i) => i.group === 'ml/cd-job/main');
  assert.deepEqual(job1.map((i) => [i.start, i.gpu_hours.allocated]), [[iso(D0), 3]]);

  // Late data: another hour of the pod on a, the same day.
  const late = [], lateP = [];
  for (let t = T0 + 5 * H; t <= T0 + 6 * H; t += 300) {
    for (const u of [A, B, C, D]) late.push({ time: t, gpu: u, util_avg: u === A ? 80 : 0, util_max: u === A ? 80 : 0 });
    if (t > T0 + 5 * H) lateP.push(job(A, t, 100));
  }
  await push('cd-late', late, lateP);
  await rollup();
  r = await allSame();
  assert.equal(gh(r.top, 'ml/cd-job/main'), 4);

  // c changes owner at T0 + 1 h: bob's first hour stays with i-cd.
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'cd-other' } }), 201);
  ok(await h.s.api('PUT', `/api/v1/gpus/${C}/owner`, { body: { team: 'cd-other', effective_from: iso(T0 + H) } }));
  await rollup();
  await allSame();
  const mine = await allSame('&team=i-cd');
  const other = await allSame('&team=cd-other');
  assert.equal(gh(mine.top, 'bob/python'), 0.5);
  assert.equal(gh(other.top, 'bob/python'), 0.5);
  assert.equal(gh(other.top, 'ml/cd-job/main'), undefined);
  assert.equal(other.ai.items.find((i) => i.consumer.name === 'bob/python').since, iso(T0 + H));
});
