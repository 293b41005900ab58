// A full disk under the database: writes answer 503 storage_full with
// Retry-After and change nothing, reads go on, and once space is freed the
// same write succeeds without a restart. The database lives on a small
// tmpfs mounted for this test, which needs root (CI runs as root); other
// users skip it with a message saying so.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { openSync, writeSync, closeSync, unlinkSync, rmdirSync } from 'node:fs';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';
import { assertError, ok, stopClean, onPg, sqliteOnly } from './helpers.mjs';

let skip = false;
let mnt;
let s;

before(async () => {
  if (onPg) return; // the test is skipped: PostgreSQL's files belong to its server
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    skip = 'needs root to mount a small tmpfs for the database (run the suite as root, as CI does)';
    return;
  }
  mnt = tempDir('diskfull-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mnt], { stdio: 'pipe' });
  } catch (e) {
    skip = `cannot mount a tmpfs here (${String(e.stderr || e.message).trim()}); needs CAP_SYS_ADMIN`;
    rmdirSync(mnt);
    mnt = null;
    return;
  }
  s = await startServer({ db: path.join(mnt, 'gpuinv.db') });
});

after(async () => {
  if (s) await stopClean(s);
  if (mnt) {
    execFileSync('umount', [mnt]);
    rmdirSync(mnt);
  }
});

/** Fills the file system holding `dir` to the last byte; returns the filler's path. */
function fill(dir) {
  const file = path.join(dir, 'filler');
  const fd = openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 0x5a);
  try {
    for (let i = 0; i < 1 << 16; i++) writeSync(fd, chunk);
    throw new Error('the file system did not fill up');
  } catch (e) {
    if (e.code !== 'ENOSPC') throw e;
    // The last partial chunk: fill what is left byte-exactly.
    for (let n = 32 * 1024; n >= 1; n = Math.floor(n / 2)) {
      try { for (;;) writeSync(fd, chunk, 0, n); } catch (e2) { if (e2.code !== 'ENOSPC') throw e2; }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

/** A resources CSV of n rows, large enough to need new pages in the WAL. */
function bigCsv(dc, n, prefix) {
  const rows = ['datacenter,kind,name,rack,gpu_model,gpu_count'];
  for (let i = 0; i < n; i++) rows.push(`${dc},server,${prefix}-${String(i).padStart(5, '0')}-${'x'.repeat(40)},R${i % 40},NVIDIA H100 80GB HBM3,8`);
  return rows.join('\n') + '\n';
}

const importCsv = (csv) => s.api('POST', '/api/v1/resources/import', { body: csv, contentType: 'text/csv' });

test('a full disk answers 503 storage_full, and writes work again once space is freed',
  sqliteOnly('fills the file system under the database file'), async (t) => {
  if (skip) { t.skip(skip); return; }
  const dc = ok(await s.api('POST', '/api/v1/datacenters', { body: { name: 'full-dc', location: 'tmpfs' } }), 201);
  const filler = fill(mnt);
  const csv = bigCsv(dc.name, 3000, 'n');

  const full = await importCsv(csv);
  const e = assertError(full, 503, { code: 'storage_full' });
  assert.equal(e.message, "the database's disk is full; free space and retry");
  assert.match(full.headers.get('retry-after') || '', /^\d+$/);
  // Smaller writes meet the same answer rather than 500, while reads go on.
  const small = await s.api('POST', '/api/v1/datacenters', { body: { name: 'full-dc-2', location: 'tmpfs' } });
  assert.ok(small.status === 201 || small.status === 503, `201 or 503, got ${small.status}: ${small.text}`);
  if (small.status === 503) assert.equal(small.json.error.code, 'storage_full');
  const listed = ok(await s.api('GET', `/api/v1/resources?datacenter=${dc.id}&limit=1`));
  assert.equal(listed.total, 0, 'the failed import wrote nothing');
  ok(await s.api('GET', '/api/v1/datacenters'));

  unlinkSync(filler);
  const again = ok(await importCsv(csv), 201);
  assert.equal(again.imported, 3000);
  assert.equal(ok(await s.api('GET', `/api/v1/resources?datacenter=${dc.id}&limit=1`)).total, 3000);
  ok(await s.api('POST', '/api/v1/datacenters', { body: { name: 'after-full', location: 'tmpfs' } }), 201);
});
