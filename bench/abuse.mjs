// gpuinv under abuse: what hostile clients cost the server and the users it
// serves, each next to a reference measured in the same run.
//
//   1. Unauthenticated uploads: 200 clients each start an 8 MiB POST
//      without credentials. Measured: the server's peak RSS (VmHWM) and what
//      the clients got; reference: the server's RSS before the flood.
//   2. Sign-in flood: 64 clients post wrong passwords as fast as answers
//      come. Measured: a viewer's GET latency (p50/p99) during the flood;
//      reference: the same GET with no flood.
//   3. Idle connections: 1,100 TCP connections opened and left idle.
//      Measured: /healthz from a fresh connection of the same address and of
//      another (127.0.0.2) (answered or not, latency);
//      reference: /healthz before the idle connections.
//
// Usage: node bench/abuse.mjs [path/to/gpuinv]   (default build/gpuinv)
// Writes bench/results/abuse.json and prints a table.
import { startServer, tempDir } from '../tests/lib/server.mjs';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

const BIN = path.resolve(process.argv[2] || 'build/gpuinv');
const MIB = 1024 * 1024;

function vm(pid, key) {
  const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm'));
  return m ? Number(m[1]) / 1024 : NaN;
}

function pct(values, p) {
  const v = [...values].sort((a, b) => a - b);
  return v.length ? v[Math.min(v.length - 1, Math.floor((p / 100) * v.length))] : NaN;
}

/** One request on its own connection; resolves {status, ms} or {error}. */
function once(url, { method = 'GET', headers = {}, body, timeoutMs = 5000, localAddress } = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const req = http.request(url, { method, headers, agent: false, timeout: timeoutMs, localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - t0 }));
    });
    req.on('timeout', () => { req.destroy(); resolve({ error: 'timeout', ms: performance.now() - t0 }); });
    req.on('error', (e) => resolve({ error: e.code || e.message, ms: performance.now() - t0 }));
    req.end(body);
  });
}

/** An 8 MiB upload sent in 64 KiB writes; resolves with what came back. */
function upload(url, bytes) {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    let settled = false;
    const done = (v) => { if (!settled) { settled = true; resolve({ ...v, sent }); } };
    const req = http.request(url, {
      method: 'POST', agent: false, timeout: 60000,
      headers: { 'Content-Type': 'application/json', 'Content-Length': bytes },
    }, (res) => { res.resume(); res.on('end', () => done({ status: res.statusCode })); });
    req.on('error', (e) => done({ error: e.code || e.message }));
    req.on('timeout', () => { req.destroy(); done({ error: 'timeout' }); });
    const pump = () => {
      while (sent < bytes) {
        sent += chunk.length;
        if (!req.write(chunk)) { req.once('drain', pump); return; }
      }
      req.end();
    };
    pump();
  });
}

/** Up to n sequential GETs, for at most maxMs; the latencies of the 200s. */
async function latencies(url, headers, n, maxMs = 10000) {
  const out = [];
  const end = performance.now() + maxMs;
  for (let i = 0; i < n && performance.now() < end; i++) {
    const r = await once(url, { headers });
    if (r.status === 200) out.push(r.ms);
  }
  return out;
}

async function unauthUploads(srv) {
  const before = vm(srv.child.pid, 'VmRSS');
  const rs = await Promise.all(Array.from({ length: 200 }, () => upload(srv.url + '/api/v1/ingest', 8 * MIB)));
  const peak = vm(srv.child.pid, 'VmHWM');
  const statuses = {};
  for (const r of rs) statuses[r.status || r.error] = (statuses[r.status || r.error] || 0) + 1;
  return { rss_before_mib: before, peak_rss_mib: peak, answers: statuses };
}

async function signinFlood(srv, viewerToken) {
  const get = srv.url + '/api/v1/datacenters';
  const h = { Authorization: 'Bearer ' + viewerToken };
  await latencies(get, h, 20); // warm-up
  const quiet = await latencies(get, h, 200);
  let stop = false;
  const answers = {};
  const flooder = async () => {
    while (!stop) {
      const r = await once(srv.url + '/api/v1/session', {
        method: 'POST', headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password: 'wrong-password' }),
      });
      answers[r.status || r.error] = (answers[r.status || r.error] || 0) + 1;
    }
  };
  const floods = Array.from({ length: 64 }, flooder);
  await new Promise((r) => setTimeout(r, 500));
  const loud = await latencies(get, h, 200);
  stop = true;
  await Promise.all(floods);
  return {
    quiet_p50_ms: pct(quiet, 50), quiet_p99_ms: pct(quiet, 99),
    flood_p50_ms: pct(loud, 50), flood_p99_ms: pct(loud, 99), flood_ok: loud.length, quiet_ok: quiet.length,
    signin_answers: answers,
  };
}

async function idleConnections(srv, n) {
  const u = new URL(srv.url);
  const ref = await once(srv.url + '/healthz');
  const socks = [];
  let refused = 0;
  await Promise.all(Array.from({ length: n }, () => new Promise((resolve) => {
    const s = net.connect(Number(u.port), u.hostname, () => resolve());
    s.on('error', () => { refused++; resolve(); });
    s.on('close', () => {});
    socks.push(s);
  })));
  await new Promise((r) => setTimeout(r, 1000));
  const under = await once(srv.url + '/healthz', { timeoutMs: 15000 });
  // Another client: the same loopback interface, another source address.
  const other = await once(srv.url + '/healthz', { timeoutMs: 15000, localAddress: '127.0.0.2' });
  const alive = socks.filter((s) => !s.destroyed && s.readyState === 'open').length;
  for (const s of socks) s.destroy();
  return {
    reference_ms: ref.ms, reference_status: ref.status,
    healthz_ms: under.ms, healthz: under.status || under.error,
    other_client_ms: other.ms, other_client: other.status || other.error, open_after_1s: alive, refused,
  };
}

async function main() {
  const dir = tempDir('gpuinv-abuse-');
  const srv = await startServer({ bin: BIN, dir });
  try {
    execFileSync(BIN, ['user', 'set', '--db', srv.db, '--name', 'alice', '--role', 'viewer'],
      { input: 'alice-password-123\n' });
    const tok = await srv.api('POST', '/api/v1/tokens', { body: { name: 'bench-viewer', role: 'viewer' } });
    if (tok.status !== 201 && tok.status !== 200) throw new Error('token: ' + tok.text);
    const viewer = tok.json.token;
    let commit = '';
    try { commit = execFileSync('git', ['rev-parse', '--short', 'HEAD']).toString().trim(); } catch { /* no git */ }
    const res = { commit, binary: BIN };
    res.signin = await signinFlood(srv, viewer);
    res.idle = await idleConnections(srv, 1100);
    res.uploads = await unauthUploads(srv);
    mkdirSync('bench/results', { recursive: true });
    writeFileSync('bench/results/abuse.json', JSON.stringify(res, null, 2) + '\n');
    const f = (x) => (typeof x === 'number' ? x.toFixed(1) : String(x));
    console.log('| measure | result | reference, same run |');
    console.log('|---|---|---|');
    console.log(`| 200 unauthenticated 8 MiB uploads | peak RSS ${f(res.uploads.peak_rss_mib)} MiB; answers ${JSON.stringify(res.uploads.answers)} | RSS before ${f(res.uploads.rss_before_mib)} MiB |`);
    console.log(`| viewer GET during 64-client sign-in flood | p50 ${f(res.signin.flood_p50_ms)} ms, p99 ${f(res.signin.flood_p99_ms)} ms (${res.signin.flood_ok} answered in 10 s); sign-in answers ${JSON.stringify(res.signin.signin_answers)} | no flood: p50 ${f(res.signin.quiet_p50_ms)} ms, p99 ${f(res.signin.quiet_p99_ms)} ms |`);
    console.log(`| /healthz with 1,100 idle connections from one address | same address: ${res.idle.healthz} in ${f(res.idle.healthz_ms)} ms; another address: ${res.idle.other_client} in ${f(res.idle.other_client_ms)} ms; idle still open after 1 s: ${res.idle.open_after_1s}, refused ${res.idle.refused} | no idle connections: ${res.idle.reference_status} in ${f(res.idle.reference_ms)} ms |`);
  } finally {
    await srv.stop();
  }
}

main().catch((e) => { console.error(e); process.exit(1); });
