// A pusher token reports only as a push source: `gpuinv token create` for
// the name of a pull source says so and leaves no token behind (nothing is
// created, revoked or not); the API names the source field; the CLI's help
// lists the options that confine a pusher token.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, runCli, uniq } from './helpers.mjs';

const h = useServer();

const tokens = async () => ok(await h.s.api('GET', '/api/v1/tokens')).items;

async function pullSource(kind, name) {
  return ok(await h.s.api('POST', '/api/v1/sources', { body: { name, kind,
    config: { url: 'http://127.0.0.1:9/' }, interval_s: 300, enabled: false } }), 201);
}

test('gpuinv token create --role pusher for a pull source refuses and creates no token', async () => {
  for (const kind of ['prometheus', 'dcgm-exporter']) {
    const src = await pullSource(kind, uniq(`pull-${kind}`));
    const before = await tokens();
    const name = uniq('cli-pusher');
    const r = await runCli(['token', 'create', '--db', h.s.db, '--role', 'pusher', '--name', name,
      '--source', src.name, '--hosts', 'fra1-*']);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.stdout, '', 'no secret is printed');
    assert.equal(r.stderr.trim(), `source ${src.name} is a ${kind} source; a pusher token needs a push source name`);
    const after = await tokens();
    assert.equal(after.length, before.length, 'no token is left, not even a revoked one');
    assert.ok(!after.some((t) => t.name === name));
    // The source is untouched.
    assert.equal(ok(await h.s.api('GET', `/api/v1/sources/${src.id}`)).kind, kind);
  }
});

test('gpuinv token create --role pusher for a push source, new or existing, still works', async () => {
  const source = uniq('cli-push');
  for (const name of [uniq('first'), uniq('second')]) {
    const r = await runCli(['token', 'create', '--db', h.s.db, '--role', 'pusher', '--name', name, '--source', source]);
    assert.equal(r.code, 0, r.stderr);
    const secret = r.stdout.trim();
    assert.match(secret, /^gpi_[A-Za-z0-9_-]{20,}$/);
    const t = (await tokens()).find((x) => x.name === name);
    assert.ok(t && !t.revoked_at, name);
    const pushed = await h.s.api('POST', '/api/v1/ingest', { auth: secret,
      body: { batch_id: `${name}-1`, host: { hostname: `${name}-host` } } });
    assert.equal(pushed.status, 201, pushed.text);
  }
  const srcs = ok(await h.s.api('GET', '/api/v1/sources')).items.filter((s) => s.name === source);
  assert.deepEqual(srcs.map((s) => s.kind), ['push']);
});

test('the API refuses a pusher token for a pull source, naming the source field', async () => {
  const src = await pullSource('prometheus', uniq('api-prom'));
  const name = uniq('api-pusher');
  const r = await h.s.api('POST', '/api/v1/tokens', { body: { name, role: 'pusher', source: src.name } });
  assertError(r, 409, { field: 'source' });
  assert.match(r.json.error.message, new RegExp(`source ${src.name} is not a push source`));
  assert.ok((await tokens()).filter((t) => t.name === name).every((t) => t.revoked_at), 'no usable token is left');
});

test('gpuinv token --help lists the options that confine a pusher token', async () => {
  for (const args of [['token', '--help'], ['token', 'create', '--help']]) {
    const r = await runCli(args);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /--hosts PATTERNS/);
    assert.match(r.stdout, /--limit-cluster CLUSTER/);
    assert.match(r.stdout, /--source SOURCE/);
  }
});
