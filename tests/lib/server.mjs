// Test harness: starts the real gpuinv binary on an ephemeral loopback port
// with a temporary database, and talks to it over HTTP.
//
// The database is a SQLite file unless GPUINV_TEST_PG is set: then every
// server gets a fresh PostgreSQL database on that server. GPUINV_TEST_PG is
// either a libpq URL without a database name (postgresql://user@/?host=/sock,
// postgresql://user@host:port/) or a directory holding such a URL in its
// file `conninfo` (what tests/lib/pg.sh start writes).
import { spawn, execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { checkReply } from './contract.mjs';

export const BIN = process.env.GPUINV_BIN || path.resolve('build/gpuinv');

/** A fresh temporary directory under the build tree (or the OS temp dir). */
export function tempDir(prefix = 'gpuinv-') {
  const base = process.env.GPUINV_TMP || os.tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(path.join(base, prefix));
}

/**
 * The PostgreSQL URL base from GPUINV_TEST_PG (see the top of this file),
 * or null when the suites run on SQLite.
 */
export function pgBase() {
  const v = process.env.GPUINV_TEST_PG;
  if (!v) return null;
  if (/^postgres(ql)?:\/\//.test(v)) return v;
  let isDir = false;
  try { isDir = statSync(v).isDirectory(); } catch { /* not a path */ }
  if (!isDir) throw new Error(`GPUINV_TEST_PG is neither a postgresql:// URL nor a directory: ${v}`);
  return readFileSync(path.join(v, 'conninfo'), 'utf8').trim();
}

/** True when db names a PostgreSQL database rather than a SQLite file. */
export function isPg(db) {
  return /^postgres(ql)?:\/\//.test(db);
}

/** The URL base with its database name set to name (the query is kept). */
export function pgUrl(base, name) {
  const q = base.indexOf('?');
  const head = q < 0 ? base : base.slice(0, q);
  const query = q < 0 ? '' : base.slice(q);
  // postgresql://[userinfo@][hosts][/dbname]: replace whatever follows the authority.
  const m = head.match(/^(postgres(?:ql)?:\/\/[^/]*)/);
  return `${m[1]}/${encodeURIComponent(name)}${query}`;
}

/** Runs psql on a database URL; resolves to its unaligned, header-less output. */
export function psql(url, sql) {
  return new Promise((resolve, reject) => {
    execFile('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql],
      { timeout: 30000, env: { ...process.env, PGCONNECT_TIMEOUT: '10' } }, (err, stdout, stderr) => {
        if (err) reject(new Error(`psql failed: ${stderr || err.message}`));
        else resolve(stdout);
      });
  });
}

// Servers still running and PostgreSQL databases made by this process: when
// it exits (a test file has ended, or died), the servers are killed, so none
// outlives its test, and the databases are dropped.
const live = new Set();
const created = [];
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
  if (created.length === 0) return;
  const args = ['-X', '-q', '-d', pgUrl(pgBase(), 'postgres')];
  for (const name of created) args.push('-c', `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  try {
    execFileSync('psql', args, { stdio: 'ignore', timeout: 30000 });
  } catch { /* the cluster is thrown away after the run anyway */ }
});

/**
 * A fresh, empty database for a server or a CLI command: a new file name in
 * dir (default a new temp directory) on SQLite, or a newly created database
 * gi_<random hex> when the suites run on PostgreSQL. Resolves to what
 * `--db` takes.
 */
export async function newDb(dir, file = 'gpuinv.db') {
  const base = pgBase();
  if (!base) return path.join(dir || tempDir(), file);
  const name = 'gi_' + randomBytes(8).toString('hex');
  await psql(pgUrl(base, 'postgres'), `CREATE DATABASE ${name}`);
  created.push(name);
  return pgUrl(base, name);
}

/**
 * Starts `gpuinv serve`. Options: db (path or URL; default newDb()), demo,
 * args (extra flags), env (extra environment). Resolves to a handle with
 * url (https:// when started with --tls-cert), token (admin bearer token),
 * password (admin dashboard password), db (the database it runs on: pass
 * it as opts.db to start another server on the same data), pid, api(),
 * stop() and the child process.
 */
export async function startServer(opts = {}) {
  const dir = opts.dir || tempDir();
  const db = opts.db || await newDb(dir);
  const token = opts.token || 'test-admin-' + randomBytes(16).toString('hex');
  const password = opts.password || 'pw-' + randomBytes(8).toString('hex');
  const args = ['serve', '--listen', '127.0.0.1:0', '--db', db, ...(opts.demo ? ['--demo'] : []),
    ...(opts.args || [])];
  const child = spawn(opts.bin || BIN, args, {
    env: { ...process.env, GPUINV_ADMIN_TOKEN: token, GPUINV_ADMIN_PASSWORD: password,
      ...(opts.env || {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.on('exit', () => live.delete(child));
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  // GPUINV_TEST_SERVER_LOG=1 copies every server's log to the test's stderr,
  // each line tagged with the server's pid, to see why a test failed.
  if (process.env.GPUINV_TEST_SERVER_LOG) {
    let partial = '';
    child.stderr.on('data', (d) => {
      const lines = (partial + d).split('\n');
      partial = lines.pop();
      for (const l of lines) process.stderr.write(`[gpuinv ${child.pid}] ${l}\n`);
    });
  }
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + stderr)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (https?:\/\/[^\s]+?)\/?\s/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then(({ code }) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${stderr}`)); });
  });
  const handle = {
    url, token, password, db, dir, child, pid: child.pid,
    get stderr() { return stderr; },
    /**
     * HTTP call; body objects are sent as JSON, strings as-is. Every reply
     * is checked against the API description (tests/lib/contract.mjs): one
     * that does not match it throws.
     */
    async api(method, p, { body, auth = token, headers = {}, contentType } = {}) {
      const h = { ...headers };
      if (auth) h.Authorization = 'Bearer ' + auth;
      let payload;
      if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        h['Content-Type'] = contentType || (typeof body === 'string' ? 'text/plain' : 'application/json');
      }
      const res = await fetch(url + p, { method, headers: h, body: payload });
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      const reply = { status: res.status, headers: res.headers, text, json };
      let sent;
      if (body !== undefined && typeof body !== 'string') sent = body;
      else if (typeof body === 'string' && /^application\/json/.test(contentType || '')) {
        try { sent = JSON.parse(body); } catch { /* not JSON: nothing to compare */ }
      }
      checkReply(method, p, reply, sent);
      return reply;
    },
    /** Sends SIGTERM and resolves to the exit status ({code, signal}). */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return handle;
}
