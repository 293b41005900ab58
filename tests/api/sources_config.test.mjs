// Sources stay in their lane: nothing pushes or imports under a pull
// source's name, a write-only secret never follows a changed URL to another
// server, and credentials written into a URL are refused (and masked where
// an older database holds them).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { useServer, assertError, ok, mkToken, dbQuery } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const metrics = readFileSync(path.join(here, '..', 'fixtures', 'prom', 'dcgm_a100_8gpu.prom'));

const srv = useServer();

/** A dcgm-exporter stand-in that records the Authorization header of each scrape. */
function exporter() {
  const seen = [];
  const server = http.createServer((req, res) => {
    seen.push(req.headers.authorization || null);
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(metrics);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () =>
    resolve({ server, seen, url: `http://127.0.0.1:${server.address().port}/metrics` })));
}

let one;
let two;
before(async () => { one = await exporter(); two = await exporter(); });
after(async () => {
  await new Promise((r) => one.server.close(r));
  await new Promise((r) => two.server.close(r));
});

const batch = (id, source) => ({
  batch_id: id, source,
  host: { hostname: 'forged-host' },
  gpus: [{ uuid: 'GPU-fa4ed000-0000-0000-0000-000000000001', name: 'Forged', serial: 'X' }],
});

test('an editor cannot push under a pull source name, and the source keeps its error', async () => {
  const { s } = srv;
  const src = ok(await s.api('POST', '/api/v1/sources',
    { body: { name: 'dcgm-down', kind: 'dcgm-exporter', config: { url: 'http://127.0.0.1:1/metrics', timeout_s: 2 } } }), 201);
  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(run.run.ok, false);
  const before = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.ok(before.last_error, 'the failed run left an error');

  const editor = (await mkToken(s, 'editor')).token;
  const refused = await s.api('POST', '/api/v1/ingest', { body: batch('b-1', 'dcgm-down'), auth: editor });
  assertError(refused, 403, { code: 'forbidden', field: 'source' });
  assert.match(refused.json.error.message, /dcgm-down/);

  const after = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  // A scheduled pull may have failed again meanwhile; the error stays shown.
  assert.ok(after.last_error, 'the error is still shown');
  assert.equal(after.last_success_at, before.last_success_at);
  assert.equal((await s.api('GET', '/api/v1/gpus/GPU-fa4ed000-0000-0000-0000-000000000001')).status, 404);

  // A push source is still pushed to by name, and a pusher token cannot be
  // minted for the pull source either.
  ok(await s.api('POST', '/api/v1/ingest', { body: batch('b-2', 'editor-push'), auth: editor }), 201);
  const tok = await s.api('POST', '/api/v1/tokens', { body: { name: 'p', role: 'pusher', source: 'dcgm-down' } });
  assertError(tok, 409);
});

test('a spreadsheet cannot be imported under a pull source name, dry run or not', async () => {
  const { s } = srv;
  ok(await s.api('POST', '/api/v1/sources',
    { body: { name: 'prom-x', kind: 'prometheus', config: { url: 'http://127.0.0.1:1' } } }), 201);
  const sheet = 'hostname,uuid\nh1,GPU-fa4ed000-0000-0000-0000-000000000002\n';
  for (const q of ['?source=prom-x&dry_run=true', '?source=prom-x']) {
    const r = await s.api('POST', '/api/v1/gpus/import' + q, { body: sheet, contentType: 'text/csv' });
    assertError(r, 409, { code: 'conflict', field: 'source' });
  }
  assert.equal((await s.api('GET', '/api/v1/gpus/GPU-fa4ed000-0000-0000-0000-000000000002')).status, 404);
});

test('changing the URL without giving the secret again clears it', async () => {
  const { s } = srv;
  const src = ok(await s.api('POST', '/api/v1/sources',
    { body: { name: 'scrape-me', kind: 'dcgm-exporter', config: { url: one.url, bearer_token: 'hunter2' } } }), 201);
  assert.equal(src.config.bearer_token, '(set)');
  assert.equal(ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).run.ok, true);
  // The scheduler may scrape the new source too: every scrape carries it.
  assert.ok(one.seen.length >= 1);
  assert.deepEqual([...new Set(one.seen)], ['Bearer hunter2']);

  // Other settings keep the secret, "(set)" included.
  const kept = ok(await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { config: { timeout_s: 7, bearer_token: '(set)' } } }));
  assert.equal(kept.config.bearer_token, '(set)');
  assert.equal(kept.warnings, undefined);

  // A new URL, secret echoed as "(set)": the secret is dropped, and said so.
  const moved = ok(await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { config: { url: two.url, bearer_token: '(set)' } } }));
  assert.equal(moved.config.url, two.url);
  assert.equal(moved.config.bearer_token, undefined);
  assert.deepEqual(moved.warnings.map((w) => w.field), ['config.bearer_token']);
  assert.equal(ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).run.ok, true);
  assert.ok(two.seen.length >= 1);
  assert.deepEqual([...new Set(two.seen)], [null], 'the new server never receives the old secret');

  // Giving the secret with the new URL keeps it.
  const again = ok(await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { config: { url: one.url, bearer_token: 'swordfish' } } }));
  assert.equal(again.config.bearer_token, '(set)');
  assert.equal(again.warnings, undefined);
  ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(one.seen.at(-1), 'Bearer swordfish');

  // Turning off certificate checks also counts as sending it elsewhere.
  const insecure = ok(await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { config: { insecure_skip_verify: true } } }));
  assert.equal(insecure.config.bearer_token, undefined);
});

test('credentials inside a source URL are refused with a pointer to the secret field', async () => {
  const { s } = srv;
  for (const url of ['https://user:pw@prom.example/', 'http://token@127.0.0.1:9400/metrics']) {
    const r = await s.api('POST', '/api/v1/sources', { body: { name: 'cred', kind: 'prometheus', config: { url } } });
    const e = assertError(r, 400, { code: 'validation_failed', field: 'config.url' });
    assert.match(e.message, /bearer_token/);
  }
  const src = ok(await s.api('POST', '/api/v1/sources',
    { body: { name: 'at-in-query', kind: 'prometheus', config: { url: 'http://127.0.0.1:1/api?who=a@b' } } }), 201);
  const patch = await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { config: { url: 'http://u:p@127.0.0.1:1/' } } });
  assertError(patch, 400, { field: 'config.url' });
  assert.equal(ok(await s.api('GET', `/api/v1/sources/${src.id}`)).config.url, 'http://127.0.0.1:1/api?who=a@b');
});

test('a URL with credentials stored before they were refused is masked for viewers', async () => {
  const { s } = srv;
  const src = ok(await s.api('POST', '/api/v1/sources',
    { body: { name: 'legacy', kind: 'prometheus', config: { url: 'http://127.0.0.1:1/' } } }), 201);
  const legacy = JSON.stringify({ url: 'http://admin:s3cret@127.0.0.1:1/' });
  await dbQuery(s.db, `UPDATE sources SET config = '${legacy}' WHERE id = ${src.id}`);
  const viewer = (await mkToken(s, 'viewer')).token;
  const one = await s.api('GET', `/api/v1/sources/${src.id}`, { auth: viewer });
  assert.equal(one.json.config.url, 'http://(redacted)@127.0.0.1:1/');
  const list = await s.api('GET', '/api/v1/sources', { auth: viewer });
  assert.ok(!list.text.includes('s3cret'), 'the list does not show the password');
  assert.ok(list.text.includes('(redacted)@127.0.0.1:1/'));
});
