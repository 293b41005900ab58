// Changing a token's data centers: PATCH /api/v1/tokens/{id} (admin only,
// audited, [] or null for every data center) takes effect on the token's
// next request; an admin token is never confined, a revoked one is not
// changed. The CLI sets the scope on creation (--datacenter, repeatable)
// and changes it (token scope), and lists it.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkToken, uniq, runCli, untilStatus } from './helpers.mjs';

describe('token data-center scope: changing it', () => {
  const h = useServer();
  let dcA, dcB, tok, tagA, tagB;
  const read = (tag, auth) => h.s.api('GET', `/api/v1/assets/${tag}`, { auth });

  test('setup: two data centers, an asset in each, an unconfined viewer', async () => {
    dcA = await mkDc(h.s);
    dcB = await mkDc(h.s);
    tagA = uniq('PA');
    tagB = uniq('PB');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagA, kind: 'server', location: { datacenter: dcA.name } } }), 201);
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagB, kind: 'server', location: { datacenter: dcB.name } } }), 201);
    tok = await mkToken(h.s, 'viewer');
    ok(await read(tagB, tok.token));
  });

  test('PATCH confines the token, by id or name, at its next request', async () => {
    const r = ok(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [dcA.name] } }));
    assert.equal(r.id, tok.id);
    assert.equal(r.role, 'viewer');
    assert.deepEqual(r.datacenters, [dcA.id]);
    ok(await read(tagA, tok.token));
    assertError(await read(tagB, tok.token), 404, { code: 'not_found' });
    const listed = ok(await h.s.api('GET', '/api/v1/tokens')).items.find((t) => t.id === tok.id);
    assert.deepEqual(listed.datacenters, [dcA.id]);
    // moved to B
    ok(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [dcB.id] } }));
    assertError(await read(tagA, tok.token), 404);
    ok(await read(tagB, tok.token));
  });

  test('[] and null lift the confinement', async () => {
    assert.deepEqual(ok(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [] } })).datacenters, []);
    ok(await read(tagA, tok.token));
    ok(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [dcA.id] } }));
    assertError(await read(tagB, tok.token), 404);
    assert.deepEqual(ok(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: null } })).datacenters, []);
    ok(await read(tagB, tok.token));
  });

  test('each change is in the audit log', async () => {
    const log = ok(await h.s.api('GET', `/api/v1/audit?entity=token&entity_id=${tok.id}&limit=100`)).items;
    const scopes = log.filter((e) => e.action === 'scope');
    // newest first: A, B, [], A, null
    assert.deepEqual(scopes.map((e) => e.after.datacenters), [[], [dcA.id], [], [dcB.id], [dcA.id]], JSON.stringify(log));
    assert.deepEqual(scopes.map((e) => e.before.datacenters), [[dcA.id], [], [dcB.id], [dcA.id], []]);
  });

  test('bad changes are refused and change nothing', async () => {
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: ['no-such-dc'] } }), 400, { field: 'datacenters[0]' });
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: 7 } }), 400, { field: 'datacenters' });
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: {} }), 400);
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [], role: 'admin' } }), 400);
    assertError(await h.s.api('PATCH', '/api/v1/tokens/99999999', { body: { datacenters: [] } }), 404);
    const admin = await mkToken(h.s, 'admin');
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${admin.id}`, { body: { datacenters: [dcA.id] } }), 400, { field: 'datacenters' });
    ok(await h.s.api('PATCH', `/api/v1/tokens/${admin.id}`, { body: { datacenters: [] } }));
    const editor = await mkToken(h.s, 'editor');
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${tok.id}`, { body: { datacenters: [dcA.id] }, auth: editor.token }), 403);
    const gone = await mkToken(h.s, 'viewer');
    ok(await h.s.api('DELETE', `/api/v1/tokens/${gone.id}`), 204);
    assertError(await h.s.api('PATCH', `/api/v1/tokens/${gone.id}`, { body: { datacenters: [dcA.id] } }), 409, { code: 'conflict' });
    const listed = ok(await h.s.api('GET', '/api/v1/tokens')).items.find((t) => t.id === tok.id);
    assert.deepEqual(listed.datacenters, []);
  });

  test('the CLI creates a confined token, changes its scope and lists it', async () => {
    const name = uniq('cli');
    const made = await runCli(['token', 'create', '--db', h.s.db, '--role', 'viewer', '--name', name,
      '--datacenter', dcA.name, '--datacenter', String(dcB.id)]);
    assert.equal(made.code, 0, made.stderr);
    const secret = made.stdout.trim();
    ok(await read(tagA, secret));
    ok(await read(tagB, secret));
    const id = ok(await h.s.api('GET', '/api/v1/tokens')).items.find((t) => t.name === name).id;
    let listed = await runCli(['token', 'list', '--db', h.s.db]);
    let line = listed.stdout.split('\n').find((l) => l.includes(name));
    assert.ok(line.trim().endsWith(`${dcA.id},${dcB.id}`), line);

    const sc = await runCli(['token', 'scope', '--db', h.s.db, '--id', String(id), '--datacenter', dcB.name]);
    assert.equal(sc.code, 0, sc.stderr);
    // Changed by another process: honoured once the server's kept copy ages out.
    assertError(await untilStatus(() => read(tagA, secret), 404), 404);
    ok(await read(tagB, secret));

    const all = await runCli(['token', 'scope', '--db', h.s.db, '--id', String(id), '--all-datacenters']);
    assert.equal(all.code, 0, all.stderr);
    ok(await untilStatus(() => read(tagA, secret), 200));
    listed = await runCli(['token', 'list', '--db', h.s.db]);
    line = listed.stdout.split('\n').find((l) => l.includes(name));
    assert.ok(line.trim().endsWith('all'), line);

    const bad = await runCli(['token', 'scope', '--db', h.s.db, '--id', String(id), '--datacenter', 'no-such-dc']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /no-such-dc/);
    const neither = await runCli(['token', 'scope', '--db', h.s.db, '--id', String(id)]);
    assert.equal(neither.code, 2);
    const adm = await runCli(['token', 'create', '--db', h.s.db, '--role', 'admin', '--name', uniq('a'), '--datacenter', dcA.name]);
    assert.equal(adm.code, 2);
    assert.match(adm.stderr, /admin/);
  });
});
