// The demo's history generator (scripts/demo-history.mjs) against a real
// server: a small fleet of three hosts and two weekdays of 5-minute
// samples pushed through the ingest API. The samples arrive whole, under
// each host's source, a second run stores nothing, the office host is busy
// by day and quiet at night, the 8-GPU pod keeps 6 of its GPUs near 0 %,
// the idle-held GPUs are held at 0 % with a process on them, and the setup
// steps (ownership, the price change, the rollup) either do their work or
// say that this build has no such API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ok, dbQuery, stopClean } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';
import { STEP_S, hostPlan } from '../../scripts/demo-fleet.mjs';
import { adminApi, iso, loadHistory, runRollup, setupOwnership, setupPrices } from '../../scripts/demo-history.mjs';

const h = { s: null };
const DAYS = 2;
// The history ends on the latest Thursday 00:00 UTC, so its two days are a
// Tuesday and a Wednesday whatever day the suite runs, and inside the raw
// samples' retention.
const now = Math.floor(Date.now() / 1000);
const today = now - (now % 86400);
const END = today - ((new Date(today * 1000).getUTCDay() + 7 - 4) % 7) * 86400;
const START = END - DAYS * 86400;

const server = (id, name) => ({ id, name, gpu_model: 'NVIDIA H100 80GB HBM3' });
const plans = [
  hostPlan(server(0xa01, 'lab-office-1'), 201, { role: 'office', team: 'office-team', env: 'prod', count: 2, gap: true, days: DAYS }, END),
  hostPlan(server(0xa02, 'lab-pod-1'), 202, { role: 'pod8', team: 'ml-research', env: 'prod', count: 8, days: DAYS }, END),
  hostPlan(server(0xa03, 'lab-held-1'), 203, { role: 'idle-held', team: 'holders', env: 'dev', count: 2, days: DAYS }, END),
];
const [office, pod, held] = plans;
const tokens = new Map();
let first;

const uuids = (p) => p.gpus.map((g) => `'${g.uuid}'`).join(',');
const rowsOf = (text) => text.trim().split('\n').filter(Boolean).map((l) => l.split('|'));
/** Samples of a host: [ts, gpu uuid, util_avg, util_max, source name]. */
async function samplesOf(p) {
  return rowsOf(await dbQuery(h.s.db, `SELECT x.ts, g.uuid, x.util_avg, x.util_max, o.name FROM gpu_samples x
    JOIN gpus g ON g.id = x.gpu_id JOIN sources o ON o.id = x.source_id WHERE g.uuid IN (${uuids(p)}) ORDER BY x.ts`))
    .map(([ts, uuid, u, um, src]) => ({ ts: Number(ts), uuid, util: Number(u), umax: Number(um), src }));
}

before(async () => {
  h.s = await startServer();
  for (const p of plans) {
    if (tokens.has(p.source)) continue;
    const t = ok(await h.s.api('POST', '/api/v1/tokens',
      { body: { name: `demo-${p.source}`, role: 'pusher', source: p.source, team: p.team, env: p.env } }), 201);
    tokens.set(p.source, t.token);
  }
  first = await loadHistory({ url: h.s.url, plans, tokens, end: END, days: DAYS, concurrency: 4 });
});
after(async () => { if (h.s) await stopClean(h.s); });

test('every sample of the history arrives, under its host\'s source, less the maintenance hour', async () => {
  const perGpu = (DAYS * 86400) / STEP_S;
  const gapSamples = office.gpus.length * (3600 / STEP_S);
  const expected = plans.reduce((n, p) => n + p.gpus.length * perGpu, 0) - gapSamples;
  assert.equal(first.samples, expected);
  assert.equal(first.duplicates, 0);
  for (const p of plans) {
    const rows = await samplesOf(p);
    assert.equal(rows.length, p.gpus.length * perGpu - (p === office ? gapSamples : 0), p.name);
    assert.deepEqual([...new Set(rows.map((r) => r.src))], [p.source], `${p.name} pushes under its own source`);
    assert.ok(rows.every((r) => r.ts > START && r.ts <= END && r.ts % STEP_S === 0), `${p.name}: 5-minute samples in the window`);
  }
  // The maintenance window: one hour with no data on the office host, data on each side of it.
  const rows = await samplesOf(office);
  const inHour = (t0) => rows.filter((r) => r.ts >= t0 && r.ts < t0 + 3600).length;
  assert.ok(office.gapHour > START && office.gapHour < END);
  assert.equal(inHour(office.gapHour), 0);
  assert.equal(inHour(office.gapHour - 3600), 2 * 12);
  assert.equal(inHour(office.gapHour + 3600), 2 * 12);
});

test('a second run stores nothing: every batch is a duplicate', async () => {
  const count = async () => Number((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM gpu_samples')).trim());
  const before = await count();
  const again = await loadHistory({ url: h.s.url, plans, tokens, end: END, days: DAYS, concurrency: 4 });
  assert.equal(again.batches, 0);
  assert.equal(again.samples, 0);
  assert.equal(again.duplicates, first.batches);
  assert.equal(await count(), before);
});

test('weekdays are busy from 10 to 18 h and quiet from 2 to 5 h', async () => {
  const all = [];
  for (const p of plans) all.push(...(await samplesOf(p)).map((r) => ({ ...r, host: p.name })));
  const mean = (rows) => rows.reduce((a, r) => a + r.util, 0) / rows.length;
  const hourOf = (t) => new Date(t * 1000).getUTCHours();
  const weekday = (t) => ![0, 6].includes(new Date(t * 1000).getUTCDay());
  const day = (rows) => rows.filter((r) => weekday(r.ts) && hourOf(r.ts) >= 10 && hourOf(r.ts) < 18);
  const night = (rows) => rows.filter((r) => hourOf(r.ts) >= 2 && hourOf(r.ts) < 5);
  assert.ok(day(all).length > 0 && night(all).length > 0);
  assert.ok(mean(day(all)) > 1.5 * mean(night(all)), `fleet: day ${mean(day(all))} vs night ${mean(night(all))}`);
  const o = all.filter((r) => r.host === office.name);
  assert.ok(mean(day(o)) > 3 * mean(night(o)) && mean(day(o)) > 40, `office: day ${mean(day(o))} vs night ${mean(night(o))}`);
});

test('the pod holds all 8 GPUs and uses 2: the other 6 peak near 0 %', async () => {
  const rows = await samplesOf(pod);
  const by = new Map(pod.gpus.map((g) => [g.uuid, []]));
  for (const r of rows) by.get(r.uuid).push(r);
  const idle = [...by].filter(([, rs]) => Math.max(...rs.map((r) => r.umax)) <= 1);
  const busy = [...by].filter(([, rs]) => rs.reduce((a, r) => a + r.util, 0) / rs.length >= 50);
  assert.equal(idle.length, 6);
  assert.equal(busy.length, 2);
  // One pod's processes on every one of the 8 GPUs, at every sample.
  const procs = rowsOf(await dbQuery(h.s.db, `SELECT gpu_uuid, namespace, pod, pod_uid, COUNT(*) FROM gpu_processes
    WHERE gpu_uuid IN (${uuids(pod)}) GROUP BY gpu_uuid, namespace, pod, pod_uid`));
  assert.equal(procs.length, 8);
  assert.equal(new Set(procs.map((p) => p.slice(1, 4).join('/'))).size, 1, 'the same pod on all 8');
  assert.equal(procs[0][1], 'ml-research');
  for (const p of procs) assert.equal(Number(p[4]), rows.length / 8);
});

test('the idle-held GPUs keep a process and memory at 0 % from when they went idle', async () => {
  assert.ok(held.idleFrom > START && held.idleFrom < END);
  const rows = (await samplesOf(held)).filter((r) => r.ts >= held.idleFrom);
  assert.equal(rows.length, 2 * ((END - held.idleFrom) / STEP_S + 1));
  assert.ok(rows.every((r) => r.umax <= 1), 'near 0 % all along');
  const procRow = rowsOf(await dbQuery(h.s.db, `SELECT COUNT(*), MIN(used_mib) FROM gpu_processes
    WHERE gpu_uuid IN (${uuids(held)}) AND ts >= ${held.idleFrom}`))[0];
  assert.equal(Number(procRow[0]), rows.length, 'a process at every sample');
  assert.ok(Number(procRow[1]) > 20000, 'holding memory');
});

test('the idle-held team\'s allocated-idle GPU-hours show in the usage API', async (t) => {
  const api = adminApi(h.s.url, h.s.token);
  const probe = await api('GET', `/api/v1/usage?group_by=team&from=${iso(START)}&to=${iso(END)}`);
  if (probe.status === 404) {
    t.skip('this build has no usage API');
    return;
  }
  assert.match(await runRollup(h.s.url, h.s.token), /^usage: rolled up/);
  const u = ok(await h.s.api('GET', `/api/v1/usage?group_by=team&from=${iso(START)}&to=${iso(END)}&step=day`));
  const mine = u.items.filter((i) => i.group === held.team);
  const allocIdle = mine.reduce((a, i) => a + i.gpu_hours.allocated_idle, 0);
  t.diagnostic(`${held.team}: ${JSON.stringify(mine.map((i) => i.gpu_hours))}`);
  assert.ok(allocIdle > 0, `allocated-idle GPU-hours of ${held.team}: ${allocIdle}`);
  // The last day: 2 GPUs, each with a process at every sample and below
  // 5 %, for 24 hours: 48 GPU-hours allocated and idle, none busy.
  const last = mine.find((i) => i.start === iso(held.idleFrom));
  assert.ok(last, JSON.stringify(mine));
  assert.ok(Math.abs(last.gpu_hours.allocated_idle - 48) < 0.01, JSON.stringify(last.gpu_hours));
  assert.equal(last.gpu_hours.busy, 0);
});

test('the ownership and price steps do their work once, or say this build has no such API', async () => {
  const api = adminApi(h.s.url, h.s.token);
  const own = await setupOwnership(api, plans, START);
  const teams = await api('GET', '/api/v1/teams?limit=1000');
  if (teams.status === 404) {
    assert.match(own, /no ownership API.*skipped/);
  } else {
    const names = teams.json.items.map((x) => x.name);
    for (const n of ['office-team', 'ml-research', 'holders', 'vision']) assert.ok(names.includes(n), n);
    const rules = ok(await h.s.api('GET', '/api/v1/ownership-rules')).items;
    assert.ok(rules.some((r) => r.match.kind === 'k8s_namespace' && r.match.value === 'ml-research'));
    await setupOwnership(api, plans, START);
    assert.equal(ok(await h.s.api('GET', '/api/v1/ownership-rules')).items.length, rules.length, 'no rule twice');
  }
  const mid = END - 86400;
  const price = await setupPrices(api, plans, mid);
  const prices = await api('GET', '/api/v1/prices?limit=1000');
  if (prices.status === 404) {
    assert.match(price, /no price catalog API.*skipped/);
  } else {
    const at = prices.json.items.filter((p) => p.effective_from === iso(mid));
    assert.equal(at.length, 1, price);
    assert.equal(Number(at[0].hourly), 4.1);
    await setupPrices(api, plans, mid);
    assert.equal((await api('GET', '/api/v1/prices?limit=1000')).json.items.length, prices.json.items.length);
  }
});
