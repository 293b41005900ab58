// The deployment examples under deploy/: haproxy accepts haproxy.cfg, and
// the same configuration (pointed at two local replicas on one database)
// balances over them, checks them on /readyz and keeps answering when one
// dies; the Kubernetes manifest runs three replicas with readiness on
// /readyz, liveness on /healthz and the database URL from a Secret; the
// flags the systemd unit and the manifest pass are ones `gpuinv serve`
// takes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir, BIN } from '../lib/server.mjs';
import { ok, mkDc, stopClean, newDb, dbQuery } from './helpers.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const deploy = (f) => path.join(root, 'deploy', f);
const HAPROXY = process.env.HAPROXY_BIN || 'haproxy';

const cleanups = [];
after(async () => { for (const f of cleanups.reverse()) await f(); });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function freePort() {
  const srv = http.createServer();
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** `gpuinv serve` parses these flags (it stops at --help, exit 0). */
function serveTakes(args) {
  execFileSync(path.resolve(BIN), [...args, '--help'], { stdio: 'pipe' });
}

test('haproxy accepts deploy/haproxy.cfg', () => {
  const out = execFileSync(HAPROXY, ['-c', '-f', deploy('haproxy.cfg')], { encoding: 'utf8', stdio: 'pipe' });
  assert.match(out, /Configuration file is valid/);
  const cfg = readFileSync(deploy('haproxy.cfg'), 'utf8');
  assert.match(cfg, /^\s*option httpchk GET \/readyz$/m);
  assert.match(cfg, /^\s*http-check expect status 200$/m);
  assert.equal((cfg.match(/^\s*server /gm) || []).length, 3);
});

test('the haproxy configuration balances over replicas, checked on /readyz', async () => {
  const a = await startServer();
  const b = await startServer({ db: a.db, dir: a.dir, token: a.token, password: a.password });
  cleanups.push(async () => {
    for (const s of [a, b]) if (s.child.exitCode === null && s.child.signalCode === null) await stopClean(s);
  });
  const port = await freePort();
  const addr = (s) => s.url.replace('http://', '');
  // The example as it is, with local addresses, in the foreground, checking
  // often, and without the system's user and log socket.
  const cfg = readFileSync(deploy('haproxy.cfg'), 'utf8')
    .replace(/^\s*(user|group|daemon|log \/dev\/log).*$/gm, '')
    .replace(/^(\s*bind) \S+/m, `$1 127.0.0.1:${port}`)
    .replace(/inter \S+/, 'inter 200ms')
    .replace(/^\s*server gpuinv-1 \S+/m, `    server gpuinv-1 ${addr(a)}`)
    .replace(/^\s*server gpuinv-2 \S+/m, `    server gpuinv-2 ${addr(b)}`)
    .replace(/^\s*server gpuinv-3 .*$/m, '');
  const dir = tempDir('haproxy-');
  writeFileSync(path.join(dir, 'haproxy.cfg'), cfg);
  const hap = spawn(HAPROXY, ['-db', '-f', path.join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  hap.stdout.on('data', (d) => { log += d; });
  hap.stderr.on('data', (d) => { log += d; });
  cleanups.push(async () => { hap.kill('SIGTERM'); await new Promise((r) => hap.once('exit', r)); });
  const lb = `http://127.0.0.1:${port}`;
  const call = async (p, opts = {}) => {
    const r = await fetch(lb + p, { ...opts, headers: { Authorization: 'Bearer ' + a.token, ...(opts.headers || {}) } });
    return { status: r.status, json: await r.json().catch(() => null) };
  };
  for (let i = 0; ; i++) {
    try { if ((await call('/readyz')).status === 200) break; } catch { /* not listening yet */ }
    if (i > 100) throw new Error('haproxy did not come up:\n' + log);
    await sleep(100);
  }

  // Written through the balancer (to either replica), read through it.
  const dc = await mkDc(a);
  for (let i = 0; i < 4; i++) {
    const r = await call(`/api/v1/datacenters/${dc.id}`);
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.name, dc.name);
  }
  // One replica dies: once its checks fail, every request goes to the other.
  b.child.kill('SIGKILL');
  await new Promise((r) => b.child.once('exit', r));
  await sleep(1500);
  for (let i = 0; i < 6; i++) assert.equal((await call(`/api/v1/datacenters/${dc.id}`)).status, 200, log);
  ok(await a.api('GET', '/readyz', { auth: null }));
});

test('the Kubernetes manifest: three replicas, probes, the URL from a Secret, a Service', () => {
  const json = execFileSync('python3', ['-c',
    'import json, sys, yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))',
    deploy('kubernetes/gpuinv.yaml')], { encoding: 'utf8' });
  const docs = JSON.parse(json);
  const dep = docs.find((d) => d.kind === 'Deployment');
  const svc = docs.find((d) => d.kind === 'Service');
  assert.ok(dep && svc, 'a Deployment and a Service');
  assert.equal(dep.spec.replicas, 3);
  const c = dep.spec.template.spec.containers[0];
  assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  assert.equal(c.livenessProbe.httpGet.path, '/healthz');
  const db = c.env.find((e) => e.name === 'GPUINV_DB');
  assert.ok(db.valueFrom.secretKeyRef.name && db.valueFrom.secretKeyRef.key, 'GPUINV_DB from a Secret');
  assert.deepEqual(dep.spec.selector.matchLabels, svc.spec.selector);
  const port = c.ports.find((p) => p.name === svc.spec.ports[0].targetPort);
  assert.ok(port, 'the Service targets a named container port');
  assert.equal(c.readinessProbe.httpGet.port, port.name);
  assert.match(c.args.join(' '), new RegExp(`^serve .*--listen \\S+:${port.containerPort}\\b`));
  serveTakes(c.args);
});

test('the systemd unit runs `gpuinv serve` with its environment file', () => {
  const unit = readFileSync(deploy('gpuinv.service'), 'utf8');
  assert.match(unit, /^EnvironmentFile=\/etc\/gpuinv\/gpuinv\.env$/m);
  const exec = unit.match(/^ExecStart=(\S+) (.*)$/m);
  assert.ok(exec, 'an ExecStart line');
  const env = Object.fromEntries([...unit.matchAll(/^Environment=(\w+)=(.*)$/gm)].map((m) => [m[1], m[2]]));
  assert.ok(env.GPUINV_DB, 'a default GPUINV_DB');
  const args = exec[2].split(/\s+/).map((w) => w.replace(/^\$\{(\w+)\}$/, (_, k) => env[k] ?? ''));
  assert.equal(args[0], 'serve');
  serveTakes(args);
});

test('GPUINV_DB is the database when --db is not given', async () => {
  const dir = path.resolve(tempDir('gpuinv-db-env-'));
  const db = await newDb(dir, 'from-env.db');
  const child = spawn(path.resolve(BIN), ['serve', '--listen', '127.0.0.1:0'], {
    cwd: dir, env: { ...process.env, GPUINV_DB: db }, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => { err += d; });
  const exited = new Promise((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+?)\/?\s/);
      if (m) resolve(m[1]);
    });
    exited.then((code) => reject(new Error(`server exited ${code}:\n${err}`)));
  });
  const r = await fetch(url + '/readyz');
  assert.equal(r.status, 200);
  assert.ok(Number(await dbQuery(db, 'SELECT COUNT(*) FROM schema_version')) > 0, 'migrated');
  child.kill('SIGTERM');
  assert.equal(await exited, 0, err);
});
