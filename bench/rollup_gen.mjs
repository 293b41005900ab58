// The load of bench/rollup_rate.sh: GPUS GPUs (8 per host) each report one
// sample per minute of simulated time, one batch per host and minute (as
// the agent sends them), pushed by CLIENTS connections as fast as the
// server takes them, minute after minute, starting at T0 (unix seconds).
// Meanwhile the size of the rollup backlog (usage_dirty) is read every
// EVERY seconds through the database's own shell; after the last batch it
// is watched for up to DRAIN seconds more (until it is empty). Prints one
// JSON object. MAX_S > 0 stops the push after that many seconds (inside a
// minute when it must), so that a slow run still ends.
// CPU: when BENCH_SERVER_PID (and, on PostgreSQL, BENCH_PG_PID, the
// postmaster) are set, the CPU time the server and the database's backends
// spent between the end of the first minute and the end of the push is
// reported per batch (backends that exit meanwhile, such as the backlog
// readers', are not counted). FIRST is the first simulated minute (default 0),
// so a later run on the same database pushes new batches.
// Usage: node bench/rollup_gen.mjs URL TOKEN DB GPUS MINUTES CLIENTS T0 DRAIN EVERY [MAX_S [FIRST]]
import http from 'node:http';
import fs from 'node:fs';
import { execFile } from 'node:child_process';

const [url, token, db, gpusArg, minutesArg, clientsArg, t0Arg, drainArg, everyArg, maxArg, firstArg] = process.argv.slice(2);
const MAX_S = Number(maxArg || 0), FIRST = Number(firstArg || 0);
const GPUS = Number(gpusArg), MINUTES = Number(minutesArg), CLIENTS = Number(clientsArg);
const T0 = Number(t0Arg), DRAIN = Number(drainArg), EVERY = Number(everyArg);
const PER_HOST = 8, HOSTS = Math.ceil(GPUS / PER_HOST);
const u = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: CLIENTS });
const pad = (n, w) => String(n).padStart(w, '0');
const pg = db.startsWith('postgres') || db.includes('=');

function dirtyCount() {
  const [cmd, args] = pg
    ? ['psql', ['-X', '-A', '-t', '-q', '-d', db, '-c', 'SELECT COUNT(*) FROM usage_dirty']]
    : ['sqlite3', ['-cmd', '.timeout 10000', db, 'SELECT COUNT(*) FROM usage_dirty']];
  return new Promise((resolve) => execFile(cmd, args, { timeout: 60000 }, (err, out) =>
    resolve(err ? null : Number(String(out).trim()))));
}

// CPU ticks (utime + stime) of one process, and of a process's children.
const TICK_MS = 10;
function ticks(pid) {
  try {
    const st = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), t: Number(f[11]) + Number(f[12]) };
  } catch {
    return null;
  }
}
function cpuSnapshot() {
  const snap = { server: 0, pg: new Map() };
  const sp = process.env.BENCH_SERVER_PID, pp = process.env.BENCH_PG_PID;
  if (sp) snap.server = ticks(sp)?.t ?? 0;
  if (pp) {
    for (const d of fs.readdirSync('/proc')) {
      if (!/^[0-9]+$/.test(d)) continue;
      const x = ticks(d);
      if (x && String(x.ppid) === pp) snap.pg.set(d, x.t);
    }
  }
  return snap;
}
function cpuPerBatch(a, b, n) {
  if (!a || !b || n <= 0) return null;
  let pg = 0;
  for (const [pid, t] of b.pg) if (a.pg.has(pid)) pg += t - a.pg.get(pid);
  return { batches: n, gpuinv_ms_per_batch: Math.round(((b.server - a.server) * TICK_MS / n) * 100) / 100,
    postgres_ms_per_batch: process.env.BENCH_PG_PID ? Math.round((pg * TICK_MS / n) * 100) / 100 : null };
}

function body(h, m) {
  const n = Math.min(PER_HOST, GPUS - h * PER_HOST);
  const gpus = [], rows = [];
  const ts = T0 + m * 60;
  for (let g = 0; g < n; g++) {
    gpus.push({ uuid: `GPU-rr${pad(h, 6)}-${pad(g, 4)}-4000-8000-000000000000`, index: g,
      name: 'NVIDIA H100 80GB HBM3', memory_total_mib: 81559 });
    // A day-like pattern: some GPUs busy, some idle, changing by the minute.
    const util = (h * 7 + g * 13 + m) % 100 < 60 ? 20 + ((h + m) % 70) : 0;
    rows.push([ts, g, util, util + 3, 1000 + util * 100, 100 + util * 3, (100 + util * 3) * 60, 40 + (util >> 2)]);
  }
  return JSON.stringify({ batch_id: `rr-${h}-${m}`, host: { hostname: `rr-host-${pad(h, 6)}` }, gpus,
    samples: { columns: ['time', 'gpu', 'util_avg', 'util_max', 'mem_used_mib', 'power_avg_w', 'energy_j', 'temp_c'], rows } });
}

// A keep-alive connection the server closed as idle can fail the batch
// sent on it at that instant: such a batch is sent again (counted).
let retries = 0;
async function post(payload) {
  for (let i = 0; ; i++) {
    try {
      return await postOnce(payload);
    } catch (e) {
      if (i >= 2 || !['ECONNRESET', 'EPIPE'].includes(e.code)) throw e;
      retries++;
    }
  }
}

function postOnce(payload) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: '/api/v1/ingest', method: 'POST', agent,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) } },
    (res) => {
      res.resume();
      res.on('end', () => (res.statusCode === 201 || res.statusCode === 200 ? resolve()
        : reject(new Error(`ingest answered ${res.statusCode}`))));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

const start = process.hrtime.bigint();
const secs = () => Number(process.hrtime.bigint() - start) / 1e9;
const backlog = [];
let samples = 0, batches = 0, minuteDone = -1, firstMinuteEnd = null, firstMinuteSamples = 0;
const lat = [];
let sampling = true;
(async () => {
  while (sampling) {
    const t = secs(), d = await dirtyCount();
    backlog.push({ t_s: Math.round(t * 10) / 10, dirty: d, samples, simulated_minute: minuteDone });
    await new Promise((r) => setTimeout(r, EVERY * 1000));
  }
})();

let stopped = false, minutesDone = 0, cpuFirst = null, batchesFirst = 0;
for (let m = FIRST; m < FIRST + MINUTES && !stopped; m++) {
  let next = 0;
  const worker = async () => {
    while (next < HOSTS) {
      if (MAX_S > 0 && secs() >= MAX_S) {
        stopped = true;
        break;
      }
      const h = next++;
      const b = body(h, m);
      const t = process.hrtime.bigint();
      await post(b);
      lat.push(Number(process.hrtime.bigint() - t) / 1e6);
      samples += Math.min(PER_HOST, GPUS - h * PER_HOST);
      batches++;
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, worker));
  if (stopped) break;
  minuteDone = m;
  minutesDone = m + 1 - FIRST;
  if (m === FIRST) {
    firstMinuteEnd = secs();
    firstMinuteSamples = samples;
    cpuFirst = cpuSnapshot();
    batchesFirst = batches;
  }
}
const pushS = secs();
const cpuSustained = cpuPerBatch(cpuFirst, cpuSnapshot(), batches - batchesFirst);
let drainedAfter = null;
for (;;) {
  const d = await dirtyCount();
  const t = secs();
  if (d === 0) { drainedAfter = Math.round((t - pushS) * 10) / 10; break; }
  if (t - pushS >= DRAIN) break;
  await new Promise((r) => setTimeout(r, EVERY * 1000));
}
sampling = false;
const endDirty = await dirtyCount();
lat.sort((a, b) => a - b);
const q = (p) => Math.round(lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] * 10) / 10;
// Sustained: after the first minute, whose batches also create the GPUs.
const steady = firstMinuteEnd !== null && pushS > firstMinuteEnd
  ? (samples - firstMinuteSamples) / (pushS - firstMinuteEnd) : null;
const ds = [...backlog.map((x) => x.dirty), endDirty].filter((x) => x !== null);
console.log(JSON.stringify({
  gpus: GPUS, hosts: HOSTS, simulated_minutes: MINUTES, simulated_minutes_done: minutesDone,
  stopped_at_max_s: stopped, clients: CLIENTS, samples, batches, batches_resent: retries,
  first_minute_s: firstMinuteEnd === null ? null : Math.round(firstMinuteEnd * 10) / 10,
  push_s: Math.round(pushS * 10) / 10,
  samples_per_s_all: Math.round(samples / pushS),
  samples_per_s_sustained: steady === null ? null : Math.round(steady),
  cpu_sustained: cpuSustained,
  simulated_minutes_per_s: Math.round((samples / GPUS / pushS) * 1000) / 1000,
  batch_p50_ms: q(0.5), batch_p99_ms: q(0.99),
  backlog_max: ds.length ? Math.max(...ds) : null,
  backlog_at_push_end: backlog.filter((x) => x.t_s <= pushS).map((x) => x.dirty).pop() ?? null,
  backlog_end: endDirty, drained_after_push_s: drainedAfter,
  backlog,
}));
agent.destroy();
// The backlog reader may be waiting out its interval: nothing is left to do.
process.exit(0);
