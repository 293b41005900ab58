// Shared helpers for the API suites: one server per test file, error-shape
// assertions, and small builders for data centers, resources and tokens.
import { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, existsSync } from 'node:fs';
import { startServer, BIN, isPg, psql, newDb, pgBase, pgUrl } from '../lib/server.mjs';

export { newDb, isPg };

/** True when the suites run on PostgreSQL (GPUINV_TEST_PG is set). */
export const onPg = pgBase() !== null;

/**
 * Test options that skip a test which depends on SQLite itself (its file,
 * its disk-full behaviour) when the suites run on PostgreSQL.
 */
export function sqliteOnly(reason) {
  return { skip: onPg ? `SQLite only: ${reason}` : false };
}

/** Test options that skip a test of PostgreSQL itself when the suites run on SQLite. */
export function pgOnly(reason) {
  return { skip: onPg ? false : `PostgreSQL only: ${reason}` };
}

/** The name of the PostgreSQL database a URL from newDb() names. */
export function pgName(db) {
  return decodeURIComponent(db.match(/^postgres(?:ql)?:\/\/[^/?]*\/([^?]*)/)[1]);
}

/** Runs SQL on the maintenance database of the server the PostgreSQL suites use. */
export function pgAdmin(sql) {
  return psql(pgUrl(pgBase(), 'postgres'), sql);
}

/**
 * Starts one server for the whole file (before) and stops it at the end
 * (after), asserting a clean exit: 0 on SIGTERM, which under the sanitizer
 * build also means no leaks. Returns a holder whose `s` is the server.
 */
export function useServer(opts = {}) {
  const holder = { s: null };
  before(async () => { holder.s = await startServer(opts); });
  after(async () => {
    if (!holder.s) return;
    const { code, signal } = await holder.s.stop();
    assert.equal(signal, null, holder.s.stderr);
    assert.equal(code, 0, holder.s.stderr);
  });
  return holder;
}

/** Stops a server and asserts it exited 0. */
export async function stopClean(s) {
  const { code, signal } = await s.stop();
  assert.equal(signal, null, s.stderr);
  assert.equal(code, 0, s.stderr);
}

/**
 * Asserts an error reply: the status, a JSON body {"error":{"code","message",
 * "field"?}} (never HTML), and optionally the code and field.
 */
export function assertError(res, status, { code, field } = {}) {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  assert.match(res.headers.get('content-type') || '', /^application\/json/);
  assert.ok(!/<html/i.test(res.text), 'error body must not be HTML');
  assert.ok(res.json && typeof res.json.error === 'object', `not an error body: ${res.text}`);
  assert.equal(typeof res.json.error.code, 'string');
  assert.equal(typeof res.json.error.message, 'string');
  assert.ok(res.json.error.message.length > 0);
  if (code !== undefined) assert.equal(res.json.error.code, code, res.text);
  if (field !== undefined) assert.equal(res.json.error.field, field, res.text);
  return res.json.error;
}

/** Asserts a success status and returns the JSON body. */
export function ok(res, status = 200) {
  assert.equal(res.status, status, `expected ${status}, got ${res.status}: ${res.text}`);
  return res.json;
}

let seq = 0;
/** A name unique within this process. */
/**
 * Runs the rollup on demand until no dirty hour and no unsummed group is
 * left, and returns the last run's answer. One run may leave marks behind when something else
 * marks hours meanwhile (a scheduled pull, the rollup job holding a chunk),
 * so a test that needs everything rolled up asks again, a bounded number
 * of times.
 */
export async function rollupAll(s, tries = 20) {
  let r;
  for (let i = 0; i < tries; i++) {
    r = ok(await s.api('POST', '/api/v1/usage/rollup'));
    if (r.dirty_left === 0 && r.groups_left === 0) return r;
    await new Promise((done) => setTimeout(done, 200));
  }
  return r;
}

export function uniq(prefix = 'n') {
  seq += 1;
  return `${prefix}-${process.pid}-${seq}`;
}

export async function mkDc(s, fields = {}) {
  return ok(await s.api('POST', '/api/v1/datacenters',
    { body: { name: uniq('dc'), location: 'somewhere', rows: 4, ...fields } }), 201);
}

export async function mkRes(s, dcId, fields = {}) {
  return ok(await s.api('POST', '/api/v1/resources',
    { body: { datacenter_id: dcId, kind: 'server', name: uniq('res'), ...fields } }), 201);
}

/** Creates an API token with the admin token; returns {id, name, role, token}. */
export async function mkToken(s, role, name = uniq(role)) {
  // A pusher token writes only as its source, so it names one.
  const body = role === 'pusher' ? { name, role, source: 'src-' + name } : { name, role };
  const t = ok(await s.api('POST', '/api/v1/tokens', { body }), 201);
  assert.equal(t.role, role);
  assert.match(t.token, /^gpi_[A-Za-z0-9_-]{20,}$/);
  return t;
}

/**
 * Repeats call() until its reply has `status` or `ms` milliseconds pass,
 * and returns the last reply. For a change to a token made by another
 * process (the CLI, another replica): a server keeps a token it verified
 * for up to a second (src/store/credentials.c), so the change reaches it
 * within that.
 */
export async function untilStatus(call, status, ms = 5000) {
  const end = Date.now() + ms;
  for (;;) {
    const r = await call();
    if (r.status === status || Date.now() > end) return r;
    await new Promise((done) => setTimeout(done, 50));
  }
}

/** Every item of a list, walking `next` cursors. */
export async function listAll(s, pathWithQuery, opts = {}) {
  const items = [];
  let cursor = null;
  let total = null;
  for (let guard = 0; guard < 1000; guard++) {
    const sep = pathWithQuery.includes('?') ? '&' : '?';
    const p = cursor === null ? pathWithQuery : `${pathWithQuery}${sep}cursor=${cursor}`;
    const page = ok(await s.api('GET', p, opts));
    if (total === null) total = page.total;
    assert.equal(page.total, total, 'total must not change between pages');
    items.push(...page.items);
    if (page.next === null) return { items, total };
    assert.equal(typeof page.next, 'string');
    cursor = page.next;
  }
  throw new Error('paging did not end');
}

/** Runs the gpuinv binary with args; resolves to {code, stdout, stderr}. */
export function runCli(args, env = {}) {
  return new Promise((resolve) => {
    execFile(BIN, args, { env: { ...process.env, ...env }, timeout: 60000 },
      (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
      });
  });
}

/**
 * Runs SQL on a database, a SQLite file (through the sqlite3 shell) or a
 * PostgreSQL URL (through psql), and resolves to the rows as both shells
 * print them here: one line per row, columns separated by '|', NULL as an
 * empty string, no header. Statements may write; several may be given, the
 * output of each is printed in turn. Use SQL both dialects accept.
 */
export function dbQuery(db, sql) {
  if (isPg(db)) return psql(db, sql);
  return new Promise((resolve, reject) => {
    execFile('sqlite3', ['-cmd', '.timeout 5000', db, sql], { timeout: 30000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`sqlite3 failed: ${stderr || err.message}`));
      else resolve(stdout);
    });
  });
}

/** The former name of dbQuery, kept so that older tests run on both stores. */
export const sqlite = dbQuery;

/** Every table's rows as SQL text: sqlite3's .dump or pg_dump. */
export function dbDump(db) {
  if (!isPg(db)) return dbQuery(db, '.dump');
  return new Promise((resolve, reject) => {
    execFile('pg_dump', ['--no-owner', '-d', db], { timeout: 60000, maxBuffer: 256 << 20 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`pg_dump failed: ${stderr || err.message}`));
        else resolve(stdout);
      });
  });
}

/**
 * Where stored data could be read in clear: the raw bytes of a SQLite
 * database and its WAL (deleted rows and old page versions included); on
 * PostgreSQL, whose files belong to the server, the bytes of a full dump.
 */
export async function dbBytes(db) {
  if (isPg(db)) return Buffer.from(await dbDump(db));
  const parts = [readFileSync(db)];
  if (existsSync(db + '-wal')) parts.push(readFileSync(db + '-wal'));
  return Buffer.concat(parts);
}

/** A minimal RFC 4180 reader for checking CSV replies. */
export function parseCsv(text) {
  const rows = [];
  let row = [];
  let cell = '';
  let quoted = false;
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') { cell += '"'; i += 2; continue; }
      if (ch === '"') { quoted = false; i += 1; continue; }
      cell += ch; i += 1; continue;
    }
    if (ch === '"' && cell === '') { quoted = true; i += 1; continue; }
    if (ch === ',') { row.push(cell); cell = ''; i += 1; continue; }
    if (ch === '\r' && text[i + 1] === '\n') { i += 1; continue; }
    if (ch === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; i += 1; continue; }
    cell += ch; i += 1;
  }
  if (cell !== '' || row.length) { row.push(cell); rows.push(row); }
  return rows;
}
