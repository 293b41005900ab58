// History for the demo's simulated hosts (demo-fleet.mjs): days of
// readings at 5-minute spacing ending at a given time, pushed through the
// real push API (POST /api/v1/ingest, the agent's batch format with
// samples in columns and processes with their time) under each host's own
// pusher source, in batches of about 1,000 samples, several at once. Batch
// ids are fixed by host and time window, so pushing the same history again
// stores nothing new. Also the demo's ownership (teams, environments,
// pools, mapping rules), its mid-month price change and the usage rollup,
// each through its API and each skipped, with a line, where this build has
// no such API.
import http from 'node:http';
import https from 'node:https';
import { STEP_S, reading } from './demo-fleet.mjs';

const DAY = 86400;
export const iso = (t) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const COLUMNS = ['time', 'gpu', 'util_avg', 'util_max', 'mem_used_mib', 'power_avg_w', 'energy_j', 'temp_c',
  'ecc_corrected', 'ecc_uncorrected'];

/**
 * The batches of one host's history: the `days` before `end` (unix
 * seconds, a multiple of step), one sample per GPU every `step` seconds in
 * (end - days, end], cut into windows of about `batchSamples` samples.
 * With xid(plan, g, ts) → XID code (0: none) the samples carry an xid
 * column. Yields {id, body, samples}.
 */
export function* historyBatches(plan, end, days, { step = STEP_S, batchSamples = 1000, xid = null } = {}) {
  const start = end - days * DAY;
  const perBatch = Math.max(1, Math.floor(batchSamples / plan.gpus.length));
  const host = { hostname: plan.name, machine_id: plan.machineId, cluster: plan.cluster };
  if (plan.serial) host.serial = plan.serial;
  if (plan.datacenter) host.datacenter = plan.datacenter;
  const gpus = plan.gpus.map((g) => ({
    uuid: g.uuid, index: g.index, name: g.name, serial: g.serial, pci_bus_id: g.pci_bus_id,
    memory_total_mib: g.memory_total_mib, driver: '550.54.15', mig_mode: false,
  }));
  for (let from = start; from < end; from += perBatch * step) {
    const rows = [];
    const processes = [];
    for (let ts = from + step; ts <= Math.min(end, from + perBatch * step); ts += step) {
      for (let g = 0; g < plan.gpus.length; g++) {
        const r = reading(plan, g, ts);
        if (!r) continue;
        const row = [ts, g, r.util, r.util_max, r.mem, r.power, Math.round(r.power * step), r.temp, 0, 0];
        if (xid) row.push(xid(plan, g, ts));
        rows.push(row);
        for (const p of r.procs) processes.push({ gpu: plan.gpus[g].uuid, time: ts, ...p });
      }
    }
    if (rows.length === 0) continue;
    yield {
      id: `history-${plan.name}-${iso(from)}`,
      samples: rows.length,
      body: { batch_id: `history-${plan.name}-${iso(from)}`, host, gpus, samples: { columns: xid ? [...COLUMNS, 'xid'] : COLUMNS, rows }, processes },
    };
  }
}

/** POSTs one batch with a pusher token, retrying what the server could not take yet. */
async function push(url, token, body) {
  const payload = JSON.stringify(body);
  for (let attempt = 0; ; attempt++) {
    let status = 0;
    let text = '';
    try {
      const r = await fetch(url + '/api/v1/ingest', {
        method: 'POST', body: payload,
        headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
      });
      status = r.status;
      text = await r.text();
      if (status === 200 || status === 201) return JSON.parse(text);
    } catch (e) {
      text = e.message;
    }
    const retry = status === 0 || status === 408 || status === 429 || status >= 500;
    if (!retry || attempt >= 6) throw new Error(`batch ${body.batch_id}: HTTP ${status}: ${text.slice(0, 300)}`);
    await sleep(250 * 2 ** attempt);
  }
}

/**
 * Pushes the history of every host plan. o: {url, plans, tokens (source
 * name → pusher token), end, days (30), step, batchSamples, concurrency
 * (6)}. Resolves to {batches, duplicates, samples,
 * processes}: what the server stored (a batch it already had counts as a
 * duplicate and stores nothing).
 */
export async function loadHistory(o) {
  const days = o.days || 30;
  // Batches are made as the pushes need them, the hosts interleaved, so
  // every host's history grows at once and little is held in memory.
  function* interleaved() {
    let live = o.plans.map((plan) => ({ plan, it: historyBatches(plan, o.end, days, o) }));
    while (live.length > 0) {
      const still = [];
      for (const h of live) {
        const n = h.it.next();
        if (n.done) continue;
        still.push(h);
        yield { plan: h.plan, batch: n.value };
      }
      live = still;
    }
  }
  const jobs = interleaved();
  const out = { batches: 0, duplicates: 0, samples: 0, processes: 0 };
  const worker = async () => {
    for (let n = jobs.next(); !n.done; n = jobs.next()) {
      const { plan, batch } = n.value;
      const token = o.tokens.get(plan.source);
      if (!token) throw new Error(`no pusher token for source ${plan.source}`);
      const r = await push(o.url, token, batch.body);
      if (r.duplicate) out.duplicates++;
      else {
        out.batches++;
        out.samples += r.samples || 0;
        out.processes += r.processes || 0;
      }
    }
  };
  await Promise.all(Array.from({ length: o.concurrency || 6 }, worker));
  return out;
}

/**
 * An admin caller for the setup steps: resolves to {status, json}; an
 * API this build does not have (404 on its route, 405) resolves too, so
 * the caller logs it and goes on.
 */
export function adminApi(url, token) {
  return async (method, p, body) => {
    const r = await fetch(url + p, {
      method, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
    });
    const text = await r.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* not JSON */ }
    return { status: r.status, json, text };
  };
}

/** True when a reply says the route is not in this build (rather than a record not found). */
const missingRoute = (r) => r.status === 405 || (r.status === 404 && !(r.json && r.json.error && r.json.error.field));

/**
 * The demo's ownership, through the ownership API: teams (every source
 * team, and vision), environments, pools, and mapping rules effective from
 * `start`: the unallocated busy host's name → team vision, Pune's hosts →
 * pool training, data center Pune DC3 → environment poc, Kubernetes
 * namespace ml-research → team ml-research, every other GPU host → pool
 * shared. The unowned host matches no rule that sets a team. Existing
 * dimensions and rules are kept. Resolves to a line saying what it did.
 */
export async function setupOwnership(api, plans, start) {
  const probe = await api('GET', '/api/v1/teams?limit=1000');
  if (missingRoute(probe)) return 'ownership: this build has no ownership API (/api/v1/teams); skipped';
  const teams = new Set(plans.map((p) => p.team).filter(Boolean));
  teams.add('vision');
  const dims = [
    ...[...teams].map((name) => ['teams', { name, description: `${name} team` }]),
    ['environments', { name: 'prod', description: 'production' }],
    ['environments', { name: 'dev', description: 'development' }],
    ['environments', { name: 'poc', description: 'proofs of concept' }],
    ['pools', { name: 'training', description: 'training jobs' }],
    ['pools', { name: 'shared', description: 'shared GPU hosts' }],
  ];
  let made = 0;
  let problems = 0;
  for (const [kind, body] of dims) {
    const r = await api('POST', `/api/v1/${kind}`, body);
    if (r.status === 201 || r.status === 200) made++;
    else if (r.status !== 409) {
      problems++;
      console.error(`gpuinv: demo: POST /api/v1/${kind} ${body.name}: ${r.status} ${r.text.slice(0, 200)}`);
    }
  }
  const busyUnallocated = plans.find((p) => p.role === 'office' && p.state === 'available');
  const pune = plans.find((p) => /^Pune/.test(p.datacenter || ''));
  const rules = [];
  if (busyUnallocated)
    rules.push({ match: { kind: 'host_pattern', value: busyUnallocated.name }, set: { team: 'vision', pool: 'training' } });
  if (pune) {
    rules.push({ match: { kind: 'host_pattern', value: `${pune.name.slice(0, 4)}-*` }, set: { pool: 'training' } });
    rules.push({ match: { kind: 'datacenter', value: pune.datacenter }, set: { env: 'poc' } });
  }
  rules.push({ match: { kind: 'k8s_namespace', value: 'ml-research' }, set: { team: 'ml-research' } });
  rules.push({ match: { kind: 'host_pattern', value: '*-gpu-*' }, set: { pool: 'shared' } });
  const have = await api('GET', '/api/v1/ownership-rules');
  if (missingRoute(have)) return `ownership: ${made} dimension(s) made; this build has no /api/v1/ownership-rules; rules skipped`;
  const key = (m) => `${m.kind}|${m.key || ''}|${m.value}`;
  const existing = new Set(((have.json && have.json.items) || []).map((r) => r.match && key(r.match)));
  let added = 0;
  for (const [i, rule] of rules.entries()) {
    if (existing.has(key(rule.match))) continue;
    const r = await api('POST', '/api/v1/ownership-rules',
      { ...rule, position: 10 * (i + 1), effective_from: iso(start), enabled: true });
    if (r.status === 201 || r.status === 200) added++;
    else {
      problems++;
      console.error(`gpuinv: demo: POST /api/v1/ownership-rules ${key(rule.match)}: ${r.status} ${r.text.slice(0, 200)}`);
    }
  }
  return `ownership: ${made} dimension(s) and ${added} rule(s) made${problems ? `, ${problems} refused (see above)` : ''}`;
}

/** Whether a catalog model names a GPU model: equal ignoring case, or a whole word of it. */
function modelMatches(catalog, model) {
  const c = catalog.toLowerCase();
  const m = model.toLowerCase();
  if (c === m) return true;
  const at = m.indexOf(c);
  const edge = (ch) => ch === undefined || !/[a-z0-9]/.test(ch);
  return at >= 0 && edge(m[at - 1]) && edge(m[at + c.length]);
}

/**
 * The demo's price change: from `at` (mid-month) the fleet's main model
 * costs `hourly` per GPU-hour instead of the catalog's rate, entered for
 * the catalog's own entry of that model (so the new rate follows the old
 * one) through POST /api/v1/prices. Kept when already there.
 */
export async function setupPrices(api, plans, at, hourly = '4.10') {
  const list = await api('GET', '/api/v1/prices?limit=1000');
  if (missingRoute(list)) return 'prices: this build has no price catalog API (/api/v1/prices); skipped';
  const counts = new Map();
  for (const p of plans) counts.set(p.model, (counts.get(p.model) || 0) + p.gpus.length);
  const main = [...counts].sort((a, b) => b[1] - a[1])[0][0];
  // Hourly rates only (a catalog may hold purchase prices too).
  const items = ((list.json && list.json.items) || []).filter((e) => !e.kind || e.kind === 'hourly');
  const entry = items.find((e) => e.model && !e.env && !e.cloud && !e.pool && modelMatches(e.model, main));
  const model = entry ? entry.model : main;
  if (items.some((e) => e.model === model && !e.env && !e.cloud && !e.pool && e.effective_from === iso(at)))
    return `prices: the mid-month rate for ${model} is already in the catalog`;
  const r = await api('POST', '/api/v1/prices', {
    model, hourly, currency: (entry && entry.currency) || 'USD', effective_from: iso(at),
    note: 'demo: negotiated rate from mid-month',
  });
  if (r.status === 409) return `prices: the mid-month rate for ${model} is already in the catalog`;
  if (r.status !== 201 && r.status !== 200) return `prices: POST /api/v1/prices refused: ${r.status} ${r.text.slice(0, 200)}`;
  return `prices: ${model} costs ${hourly} ${(entry && entry.currency) || 'USD'} per GPU-hour from ${iso(at)}` +
    (entry && entry.hourly ? ` (${entry.hourly} before)` : '');
}

/**
 * A POST that may take minutes (a rollup over a month of history): no
 * client timeout, unlike fetch's five minutes. Resolves to {status, json, text}.
 */
function slowPost(url, token, p) {
  return new Promise((resolve, reject) => {
    const u = new URL(p, url);
    const req = (u.protocol === 'https:' ? https : http).request(u, {
      method: 'POST', headers: { Authorization: 'Bearer ' + token, 'Content-Length': 0 },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, json, text });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Runs the usage rollup now (POST /api/v1/usage/rollup, admin) until it
 * reports nothing left to do, so the dashboard shows the whole history at
 * once rather than as the periodic job catches up. url and token: the
 * server and an admin token.
 */
export async function runRollup(url, token) {
  let hours = 0;
  for (let i = 0; i < 500; i++) {
    const r = await slowPost(url, token, '/api/v1/usage/rollup');
    if (missingRoute(r)) return 'usage: this build has no POST /api/v1/usage/rollup; skipped';
    if (r.status !== 200 && r.status !== 201) return `usage: the rollup answered ${r.status} ${r.text.slice(0, 200)}`;
    const j = r.json || {};
    hours += j.hours || 0;
    const left = (j.dirty_left || 0) + (j.redo_left || 0);
    if (!(left > 0)) return `usage: rolled up (${hours} GPU-hour(s) computed now)`;
  }
  return 'usage: the rollup is still catching up; the periodic job finishes it';
}
