// Three `gpuinv serve` replicas on one PostgreSQL database behind haproxy
// (configured like deploy/haproxy.cfg, checking /readyz), under failures:
// hundreds of single and bulk allocations racing through the balancer for
// one pool of resources never allocate a resource twice; a replica killed
// in the middle of a stream of writes loses none that it acknowledged; and
// while the database is stopped and started again under load the replicas
// stay alive and answer 503 (readiness too, so the balancer takes them out),
// then recover by themselves, with nothing acknowledged lost.
//
// The suite brings its own PostgreSQL (tests/lib/pg.sh), since it stops
// and starts it; so it runs once, on the SQLite pass of the suites, and is
// skipped where PostgreSQL 15 or haproxy is not installed.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir } from '../lib/server.mjs';
import { checkReply } from '../lib/contract.mjs';
import { ok, assertError, stopClean } from './helpers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PG_BIN = process.env.PG_BIN || '/usr/lib/postgresql/15/bin';
const PG_SH = path.join(root, 'tests', 'lib', 'pg.sh');
const HAPROXY = process.env.HAPROXY_BIN || 'haproxy';

function haveHaproxy() {
  try { execFileSync(HAPROXY, ['-v'], { stdio: 'pipe' }); return true; } catch { return false; }
}
const skip = !existsSync(path.join(PG_BIN, 'postgres')) ? `no PostgreSQL in ${PG_BIN}`
  : !haveHaproxy() ? 'haproxy is not installed'
    : !existsSync(PG_SH) ? 'tests/lib/pg.sh is missing'
      : process.env.GPUINV_TEST_PG ? 'runs its own PostgreSQL: once, on the SQLite pass' : false;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const alive = (s) => s.child.exitCode === null && s.child.signalCode === null;

async function waitFor(fn, what, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + (typeof what === 'function' ? what() : what));
    await sleep(100);
  }
}

async function freePort() {
  const srv = http.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** Runs a PostgreSQL program as the cluster's owner (nobody when root). */
function pgAsOwner(prog, args) {
  const cmd = path.join(PG_BIN, prog);
  const [file, argv] = process.getuid() === 0
    ? ['setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', cmd, ...args]]
    : [cmd, args];
  return new Promise((resolve, reject) => {
    execFile(file, argv, { timeout: 60000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${prog} ${args.join(' ')} failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

let pgDir;
let dbUrl;
let replicas = [];
let hap;
let hapLog = '';
let lb;
let statsUrl;
let token;
const cleanups = [];

before(async () => {
  if (skip) return;
  pgDir = tempDir('pg-replicas-');
  execFileSync('sh', [PG_SH, 'start', pgDir], { stdio: 'pipe', env: { ...process.env, PG_BIN } });
  cleanups.push(() => execFileSync('sh', [PG_SH, 'stop', pgDir], { stdio: 'pipe', env: { ...process.env, PG_BIN } }));
  // The base URL names no database; pg.sh creates one named like the user.
  const base = readFileSync(path.join(pgDir, 'conninfo'), 'utf8').trim();
  dbUrl = base.replace('@/?', '@/gpuinv?');

  // Behind a balancer every request comes from its one address.
  const args = ['--per-ip-connections', '0'];
  const first = await startServer({ db: dbUrl, args });
  token = first.token;
  const more = await Promise.all([1, 2].map(() => startServer({ db: dbUrl, dir: first.dir, token,
    password: first.password, args })));
  replicas = [first, ...more];
  cleanups.push(async () => { for (const s of replicas) if (alive(s)) await stopClean(s); });

  // deploy/haproxy.cfg with local addresses, in the foreground, checking
  // every 200 ms, and a statistics page to read the servers' states from.
  const port = await freePort();
  const statsPort = await freePort();
  const addr = (s) => s.url.replace('http://', '');
  let cfg = readFileSync(path.join(root, 'deploy', 'haproxy.cfg'), 'utf8')
    .replace(/^\s*(user|group|daemon|log \/dev\/log).*$/gm, '')
    .replace(/^(\s*bind) \S+/m, `$1 127.0.0.1:${port}`)
    .replace(/inter \S+/, 'inter 200ms')
    // A check waits as long as the example's does (its interval, 2 s): a
    // replica busy with hundreds of writes answers /readyz after queueing
    // behind them for a database connection, which can take a second.
    .replace(/^(\s*)(option httpchk .*)$/m, '$1$2\n$1timeout check 2s');
  for (let i = 0; i < 3; i++) {
    cfg = cfg.replace(new RegExp(`^\\s*server gpuinv-${i + 1} \\S+`, 'm'), `    server gpuinv-${i + 1} ${addr(replicas[i])}`);
  }
  cfg += `\nfrontend stats\n    bind 127.0.0.1:${statsPort}\n    stats enable\n    stats uri /stats\n`;
  const dir = tempDir('haproxy-');
  writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
  hap = spawn(HAPROXY, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
  hap.stdout.on('data', (d) => { hapLog += d; });
  hap.stderr.on('data', (d) => { hapLog += d; });
  cleanups.push(async () => {
    if (hap.exitCode === null) { hap.kill('SIGTERM'); await new Promise((r) => hap.once('exit', r)); }
  });
  lb = `http://127.0.0.1:${port}`;
  statsUrl = `http://127.0.0.1:${statsPort}/stats;csv`;
  await waitFor(async () => (await serverStates()).every((st) => st === 'UP'), 'haproxy to see three ready replicas', 15000);
});

after(async () => {
  const errs = [];
  for (const f of cleanups.reverse()) {
    try { await f(); } catch (e) { errs.push(e); }
  }
  if (errs.length) throw errs[0];
});

/** The states haproxy gives gpuinv-1..3 ("UP", "DOWN", "UP 1/2", ...). */
async function serverStates() {
  let text;
  try { text = await (await fetch(statsUrl)).text(); } catch { return ['unreachable', 'unreachable', 'unreachable']; }
  const lines = text.trim().split('\n');
  const head = lines[0].replace(/^# /, '').split(',');
  const sv = head.indexOf('svname');
  const status = head.indexOf('status');
  return [1, 2, 3].map((i) => {
    const row = lines.map((l) => l.split(',')).find((c) => c[sv] === `gpuinv-${i}`);
    return row ? row[status] : 'missing';
  });
}

/**
 * One call through the balancer: {status, json, text, from}, where from is
 * 'gpuinv' for a reply of a replica (checked against the API description)
 * and 'haproxy' for one the balancer made itself (no replica could answer),
 * or {status: 0, from: 'network'} when the connection failed.
 */
async function call(method, p, body) {
  const headers = { Authorization: 'Bearer ' + token };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let res;
  try {
    res = await fetch(lb + p, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (e) {
    return { status: 0, from: 'network', text: `${e} (${e.cause?.code || e.cause})`, json: null };
  }
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  const reply = { status: res.status, headers: res.headers, text, json };
  // Every reply of gpuinv carries nosniff; haproxy's own error pages do not.
  reply.from = res.headers.get('x-content-type-options') === 'nosniff' ? 'gpuinv' : 'haproxy';
  if (reply.from === 'gpuinv') checkReply(method, p, reply, body);
  return reply;
}

/** A write through the balancer, sent again while a replica answers 503 retry. */
async function write(method, p, body) {
  for (let i = 0; ; i++) {
    const r = await call(method, p, body);
    if (!(r.status === 503 && r.json?.error?.code === 'retry') || i === 20) return r;
    await sleep(50);
  }
}

test('racing single and bulk allocations through the balancer never allocate a resource twice', { skip }, async () => {
  const dc = ok(await call('POST', '/api/v1/datacenters', { name: 'race', location: 'here', rows: 2 }), 201);
  const created = await Promise.all(Array.from({ length: 24 }, (_, i) =>
    call('POST', '/api/v1/resources', { datacenter_id: dc.id, kind: 'server', name: `race-${i}`, gpu_model: 'H100', gpu_count: 8 })));
  const ids = created.map((r) => ok(r, 201).id);
  const grants = []; // {id, tenant} of every acknowledged allocation

  // Two rounds; between them every resource is released again, so each
  // is contended for twice.
  for (const round of [0, 1]) {
    const pending = [];
    for (let g = 0; g < 40; g++) {
      const tb = `r${round}-b${g}`;
      const count = 2 + (g % 2);
      pending.push(write('POST', '/api/v1/allocations', { datacenter_id: dc.id, count, gpu_model: 'H100', min_gpus: 8, tenant: tb, project: 'race' })
        .then((r) => ({ kind: 'bulk', tenant: tb, count, r })));
      for (let k = 0; k < 5; k++) {
        const id = ids[(g * 5 + k) * 7 % ids.length];
        const ts = `r${round}-s${g * 5 + k}`;
        pending.push(write('POST', `/api/v1/resources/${id}/allocate`, { tenant: ts, project: 'race' })
          .then((r) => ({ kind: 'single', tenant: ts, id, r })));
      }
    }
    const results = await Promise.all(pending);
    assert.equal(results.length, 240);
    const held = new Set();
    for (const { kind, tenant, id, count, r } of results) {
      assert.equal(r.from, 'gpuinv', `${kind} ${tenant}: ${r.status} ${r.text}`);
      if (r.status === 409) {
        assertError(r, 409);
        assert.ok(['not_available', 'insufficient_capacity'].includes(r.json.error.code), r.text);
        continue;
      }
      const items = kind === 'single' ? [ok(r, 200)] : ok(r, 201).items;
      if (kind === 'single') assert.equal(items[0].id, id);
      else assert.equal(items.length, count);
      for (const it of items) {
        assert.equal(it.tenant, tenant);
        assert.equal(it.state, 'in_use');
        assert.ok(!held.has(it.id), `resource ${it.id} allocated twice in round ${round}`);
        held.add(it.id);
        grants.push({ id: it.id, tenant });
      }
    }
    // 240 requests for 24 resources: every one of them is taken.
    assert.equal(held.size, ids.length, `round ${round}: ${held.size} of ${ids.length} resources allocated`);
    if (round === 0) {
      const rel = await Promise.all(ids.map((id) => write('POST', `/api/v1/resources/${id}/release`)));
      for (const r of rel) assert.equal(ok(r).state, 'available');
    }
  }

  // The history says the same as the replies: each resource's allocations
  // are exactly those acknowledged for it, one per round, the second open;
  // read from every replica directly.
  for (const s of replicas) {
    for (const id of ids) {
      const doc = ok(await s.api('GET', `/api/v1/resources/${id}`));
      const mine = grants.filter((g) => g.id === id).map((g) => g.tenant).sort();
      assert.deepEqual(doc.allocations.map((a) => a.tenant).sort(), mine, `history of resource ${id}`);
      assert.equal(doc.allocations.filter((a) => a.ended_at === null).length, 1);
      const open = doc.allocations.find((a) => a.ended_at === null);
      assert.match(open.tenant, /^r1-/);
      assert.equal(doc.state, 'in_use');
      assert.equal(doc.tenant, open.tenant);
    }
  }
});

/**
 * Writers through the balancer until stop() is called: each creates
 * resources in dc (names with prefix), one after another. Resolves on
 * stop() to {acked: [{id, name}], failed: [replies]}.
 */
function writers(n, dcId, prefix) {
  const acked = [];
  const failed = [];
  let stopping = false;
  let seq = 0;
  const loops = Array.from({ length: n }, async () => {
    while (!stopping) {
      const name = `${prefix}-${seq++}`;
      const r = await call('POST', '/api/v1/resources', { datacenter_id: dcId, kind: 'server', name });
      if (r.status === 201) acked.push({ id: r.json.id, name, at: Date.now() });
      else {
        failed.push(r);
        await sleep(50);
      }
    }
  });
  return {
    acked,
    failed,
    /** What the writers saw, for a failure's message. */
    report: () => `${acked.length} acknowledged, ${failed.length} failed` +
      (failed.length ? `, the last: ${failed.at(-1).status} ${failed.at(-1).text}` : ''),
    async stop() { stopping = true; await Promise.all(loops); return { acked, failed }; },
  };
}

/** Every acknowledged create is there, read from replica s. */
async function assertPresent(s, dcId, acked) {
  const names = new Map();
  for (let cursor = null, guard = 0; guard < 100; guard++) {
    const page = ok(await s.api('GET', `/api/v1/resources?datacenter=${dcId}&limit=500${cursor ? '&cursor=' + cursor : ''}`));
    for (const it of page.items) names.set(it.name, it.id);
    if (page.next === null) break;
    cursor = page.next;
  }
  for (const { id, name } of acked) assert.equal(names.get(name), id, `acknowledged resource ${name} (${id}) is missing`);
}

test('a replica killed in the middle of a stream of writes loses none it acknowledged', { skip }, async () => {
  const dc = ok(await call('POST', '/api/v1/datacenters', { name: 'kill', location: 'here', rows: 2 }), 201);
  const w = writers(12, dc.id, 'kill');
  cleanups.push(() => w.stop());
  await waitFor(() => w.acked.length >= 100, () => 'writes before the kill: ' + w.report(), 20000);
  const victim = replicas[2];
  victim.child.kill('SIGKILL');
  await new Promise((r) => victim.child.once('exit', r));
  replicas = replicas.slice(0, 2);
  const killedAt = Date.now();
  const ackedAtKill = w.acked.length;
  // haproxy takes it out and the survivors carry the stream on.
  await waitFor(async () => (await serverStates())[2].startsWith('DOWN'), 'haproxy to mark the killed replica down', 10000);
  await waitFor(() => w.acked.filter((a) => a.at > killedAt + 500).length >= 50, () => 'writes after the kill: ' + w.report(), 20000);
  const { acked, failed } = await w.stop();
  assert.ok(acked.length > ackedAtKill);
  // Only requests the victim was handling when it died fail: with the
  // balancer's 502, or the balancer closing the connection when the
  // victim died in the middle of its reply.
  for (const r of failed) {
    assert.ok((r.from === 'haproxy' && r.status === 502) || r.from === 'network', `${r.status} ${r.text}`);
  }
  assert.ok(failed.length <= 12, `${failed.length} writes failed`);
  await assertPresent(replicas[0], dc.id, acked);
  await assertPresent(replicas[1], dc.id, acked);
});

test('the database stopped and started under load: 503 meanwhile, then the replicas recover by themselves', { skip }, async () => {
  const dc = ok(await call('POST', '/api/v1/datacenters', { name: 'outage', location: 'here', rows: 2 }), 201);
  const sample = ok(await call('POST', '/api/v1/resources', { datacenter_id: dc.id, kind: 'server', name: 'outage-sample' }), 201);
  const w = writers(6, dc.id, 'outage');
  cleanups.push(() => w.stop());
  // Readers straight at each replica: every reply is 200, or 503 while
  // the database is away; never a 500.
  let reading = true;
  const seen = replicas.map(() => new Map());
  const wrong = [];
  const direct = []; // writes acknowledged by a replica called directly
  const readers = replicas.map(async (s, i) => {
    while (reading) {
      for (const p of [`/api/v1/resources/${sample.id}`, '/readyz', `/api/v1/resources?datacenter=${dc.id}&limit=5`]) {
        const r = await s.api('GET', p, { auth: p === '/readyz' ? null : s.token });
        seen[i].set(r.status, (seen[i].get(r.status) || 0) + 1);
        const json = /^application\/json/.test(r.headers.get('content-type') || '');
        if (!((r.status === 200 || r.status === 503) && json)) wrong.push(`${p}: ${r.status} ${r.text}`);
        else if (r.status === 503 && p !== '/readyz' && r.json?.error?.code !== 'unavailable') wrong.push(`${p}: ${r.text}`);
      }
      await sleep(20);
    }
  });
  try {
    await waitFor(() => w.acked.length >= 50, () => 'writes before the outage: ' + w.report(), 20000);
    const ackedBefore = w.acked.length;
    await pgAsOwner('pg_ctl', ['-D', path.join(pgDir, 'data'), '-m', 'fast', '-w', '-t', '30', 'stop']);

    // Meanwhile: the replicas live, answer 503 (/readyz too), and haproxy
    // takes them out.
    for (const s of replicas) {
      await waitFor(async () => (await s.api('GET', '/readyz', { auth: null })).status === 503, 'readyz 503', 10000);
      const r = await s.api('GET', `/api/v1/resources/${sample.id}`);
      assertError(r, 503, { code: 'unavailable' });
      const wr = await s.api('POST', '/api/v1/resources', { body: { datacenter_id: dc.id, kind: 'server', name: 'outage-direct' } });
      assertError(wr, 503, { code: 'unavailable' });
    }
    await waitFor(async () => (await serverStates()).slice(0, 2).every((st) => st.startsWith('DOWN')), 'haproxy to mark the replicas down', 10000);
    const quietFrom = Date.now();
    const down = await call('GET', `/api/v1/resources/${sample.id}`);
    assert.equal(down.status, 503);
    await sleep(1000); // under load, with the database away
    for (const s of replicas) assert.ok(alive(s), 'a replica died with its database:\n' + s.stderr);
    const ackedDuring = w.acked.filter((a) => a.at > quietFrom).length;
    assert.equal(ackedDuring, 0, 'a write was acknowledged while the database was down');

    await pgAsOwner('pg_ctl', ['-D', path.join(pgDir, 'data'), '-l', path.join(pgDir, 'postgres.log'), '-w', '-t', '60', 'start']);
    const upAt = Date.now();
    // They recover by themselves within a few seconds: ready again, back
    // in the balancer, writes succeeding through it. Once a replica is ready again it serves requests on every connection
    // of its pool (more requests at once than it has connections): none
    // fails, not even on a connection the restart closed while it was idle.
    for (const [k, s] of replicas.entries()) {
      await waitFor(async () => (await s.api('GET', '/readyz', { auth: null })).status === 200, 'readyz 200 after the restart', 10000);
      const burst = await Promise.all(Array.from({ length: 40 }, (_, i) => s.api('POST', '/api/v1/resources',
        { body: { datacenter_id: dc.id, kind: 'server', name: `outage-after-${k}-${i}` } })));
      for (const r of burst) {
        ok(r, 201);
        direct.push({ id: r.json.id, name: r.json.name });
      }
    }
    await waitFor(async () => (await serverStates()).slice(0, 2).every((st) => st === 'UP'), 'haproxy to put the replicas back', 10000);
    await waitFor(() => w.acked.filter((a) => a.at > upAt).length >= 50, () => 'writes after the restart: ' + w.report(), 20000);
    assert.ok(w.acked.length > ackedBefore);
  } finally {
    reading = false;
    await Promise.all(readers);
    await w.stop();
  }
  const { acked, failed } = await w.stop();
  for (const r of failed) {
    assert.ok(r.status === 503 || (r.from === 'haproxy' && r.status === 502), `${r.status} ${r.text}`);
    if (r.from === 'gpuinv') assertError(r, 503);
  }
  assert.deepEqual(wrong, [], 'replies other than 200 or 503 unavailable');
  for (let i = 0; i < replicas.length; i++) {
    assert.ok(seen[i].get(503) > 0 && seen[i].get(200) > 0, `replica ${i} replies: ${JSON.stringify([...seen[i]])}`);
    assert.ok(alive(replicas[i]));
  }
  await assertPresent(replicas[0], dc.id, [...acked, ...direct]);
  await assertPresent(replicas[1], dc.id, [...acked, ...direct]);
});
