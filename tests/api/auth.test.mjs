// Authentication and authorization: bearer tokens and their roles, token
// management over the API and the CLI, hashed storage, dashboard sessions.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkToken, runCli, dbQuery, dbDump, dbBytes, uniq, untilStatus } from './helpers.mjs';

describe('bearer tokens and roles', () => {
  const h = useServer();
  const secrets = [];

  test('every /api/v1 route refuses a request without credentials', async () => {
    const paths = [
      ['GET', '/api/v1/datacenters'], ['POST', '/api/v1/datacenters'], ['GET', '/api/v1/datacenters/1'],
      ['PATCH', '/api/v1/datacenters/1'], ['DELETE', '/api/v1/datacenters/1'],
      ['GET', '/api/v1/datacenters/1/overview'], ['GET', '/api/v1/resources'], ['POST', '/api/v1/resources'],
      ['GET', '/api/v1/resources/1'], ['PATCH', '/api/v1/resources/1'], ['DELETE', '/api/v1/resources/1'],
      ['POST', '/api/v1/resources/1/allocate'], ['POST', '/api/v1/resources/1/release'],
      ['POST', '/api/v1/resources/import'], ['POST', '/api/v1/allocations'], ['GET', '/api/v1/kinds'],
      ['GET', '/api/v1/audit'], ['GET', '/api/v1/tokens'], ['POST', '/api/v1/tokens'],
      ['DELETE', '/api/v1/tokens/1'], ['GET', '/api/v1/session'], ['DELETE', '/api/v1/session'],
    ];
    for (const [m, p] of paths) {
      const r = await h.s.api(m, p, { auth: null });
      assertError(r, 401, { code: 'unauthenticated' });
      assert.match(r.headers.get('www-authenticate') || '', /^Bearer/, `${m} ${p}`);
    }
  });

  test('a bad or malformed token is 401', async () => {
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: 'gpi_not-a-real-token' }), 401);
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: h.s.token + 'x' }), 401);
    for (const value of ['Basic YWRtaW46eA==', 'Bearer ', 'Bearer', 'Token ' + h.s.token,
      'Bearer ' + 'a'.repeat(300)]) {
      const r = await fetch(h.s.url + '/api/v1/datacenters', { headers: { Authorization: value } });
      assert.equal(r.status, 401, value);
      assert.equal((await r.json()).error.code, 'unauthenticated');
    }
    // The scheme name is case-insensitive.
    const r = await fetch(h.s.url + '/api/v1/datacenters', { headers: { Authorization: 'bearer ' + h.s.token } });
    assert.equal(r.status, 200);
  });

  test('roles: viewer reads, editor writes inventory, admin manages tokens, pusher reads nothing', async () => {
    const viewer = await mkToken(h.s, 'viewer');
    const editor = await mkToken(h.s, 'editor');
    const admin = await mkToken(h.s, 'admin');
    const pusher = await mkToken(h.s, 'pusher');
    secrets.push(viewer.token, editor.token, admin.token, pusher.token);
    const dc = await mkDc(h.s);
    const res = ok(await h.s.api('POST', '/api/v1/resources',
      { body: { datacenter_id: dc.id, kind: 'server', name: 'r1' } }), 201);

    const reads = ['/api/v1/datacenters', `/api/v1/datacenters/${dc.id}`, `/api/v1/datacenters/${dc.id}/overview`,
      '/api/v1/resources', `/api/v1/resources/${res.id}`, '/api/v1/kinds', '/api/v1/audit',
      '/api/v1/datacenters?format=csv'];
    for (const p of reads) {
      assert.equal((await h.s.api('GET', p, { auth: viewer.token })).status, 200, `viewer ${p}`);
      assert.equal((await h.s.api('GET', p, { auth: editor.token })).status, 200, `editor ${p}`);
      assertError(await h.s.api('GET', p, { auth: pusher.token }), 403, { code: 'forbidden' });
    }

    const writes = [
      ['POST', '/api/v1/datacenters', { name: uniq('w') }],
      ['PATCH', `/api/v1/datacenters/${dc.id}`, { location: 'elsewhere' }],
      ['POST', '/api/v1/resources', { datacenter_id: dc.id, kind: 'switch', name: uniq('sw') }],
      ['PATCH', `/api/v1/resources/${res.id}`, { rack: 'R9' }],
      ['POST', `/api/v1/resources/${res.id}/allocate`, { tenant: 't1' }],
      ['POST', `/api/v1/resources/${res.id}/release`, undefined],
      ['POST', '/api/v1/allocations', { datacenter_id: dc.id, tenant: 't', count: 1 }],
    ];
    for (const [m, p, body] of writes) {
      assertError(await h.s.api(m, p, { body, auth: viewer.token }), 403, { code: 'forbidden' });
      assertError(await h.s.api(m, p, { body, auth: pusher.token }), 403, { code: 'forbidden' });
    }
    for (const [m, p, body] of writes) {
      const r = await h.s.api(m, p, { body, auth: editor.token });
      assert.ok(r.status === 200 || r.status === 201, `editor ${m} ${p}: ${r.status} ${r.text}`);
    }
    assertError(await h.s.api('DELETE', `/api/v1/resources/${res.id}`, { auth: viewer.token }), 403);
    assertError(await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}?force=true`, { auth: viewer.token }), 403);
    assertError(await h.s.api('POST', '/api/v1/resources/import',
      { body: 'datacenter_id,kind,name\n', contentType: 'text/csv', auth: viewer.token }), 403);

    // Token management is for admins only.
    for (const t of [viewer, editor, pusher]) {
      assertError(await h.s.api('GET', '/api/v1/tokens', { auth: t.token }), 403, { code: 'forbidden' });
      assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'x', role: 'admin' }, auth: t.token }), 403);
      assertError(await h.s.api('DELETE', `/api/v1/tokens/${admin.id}`, { auth: t.token }), 403);
    }
    const list = ok(await h.s.api('GET', '/api/v1/tokens', { auth: admin.token }));
    const names = list.items.map((t) => t.name);
    for (const t of [viewer, editor, admin, pusher]) assert.ok(names.includes(t.name));
    for (const item of list.items) {
      assert.equal(item.token, undefined, 'the list must not show secrets');
      assert.equal(item.hash, undefined, 'the list must not show hashes');
    }
    const made = await mkToken(h.s, 'viewer');
    secrets.push(made.token);
    ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('by-admin'), role: 'viewer' }, auth: admin.token }), 201);
  });

  test('token creation is validated', async () => {
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'x', role: 'root' } }), 400, { field: 'role' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { role: 'viewer' } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: '', role: 'viewer' } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'x' } }), 400, { field: 'role' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'x', role: 'viewer', expires: 3 } }), 400,
      { field: 'expires' });
  });

  test('a revoked token is refused; revoking twice is 409, a missing token 404', async () => {
    const t = await mkToken(h.s, 'editor');
    secrets.push(t.token);
    ok(await h.s.api('GET', '/api/v1/datacenters', { auth: t.token }));
    const del = await h.s.api('DELETE', `/api/v1/tokens/${t.id}`);
    assert.equal(del.status, 204);
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: t.token }), 401, { code: 'unauthenticated' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('x') }, auth: t.token }), 401);
    assertError(await h.s.api('DELETE', `/api/v1/tokens/${t.id}`), 409);
    assertError(await h.s.api('DELETE', '/api/v1/tokens/999999'), 404);
    const list = ok(await h.s.api('GET', '/api/v1/tokens'));
    const item = list.items.find((x) => x.id === t.id);
    assert.match(item.revoked_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  });

  test('the database holds token hashes, never token plaintext', async () => {
    assert.ok(secrets.length >= 5);
    const dump = await dbDump(h.s.db);
    const bytes = await dbBytes(h.s.db);
    for (const secret of [...secrets, h.s.token]) {
      assert.ok(!dump.includes(secret), 'token plaintext found in the database dump');
      assert.ok(!bytes.includes(Buffer.from(secret)), 'token plaintext found in the database file');
      // The random part alone must not be there either.
      const body = secret.replace(/^gpi_/, '');
      assert.ok(!dump.includes(body));
    }
    const hashes = (await dbQuery(h.s.db, 'SELECT hash FROM tokens')).trim().split('\n');
    assert.ok(hashes.length >= secrets.length);
    for (const x of hashes) assert.match(x, /^[0-9a-f]{64}$/);
    assert.ok(!dump.includes(h.s.password), 'the admin password must not be stored in clear');
  });

  test('gpuinv token create/list/revoke work on the database', async () => {
    const name = uniq('cli');
    const created = await runCli(['token', 'create', '--db', h.s.db, '--role', 'viewer', '--name', name]);
    assert.equal(created.code, 0, created.stderr);
    const secret = created.stdout.trim();
    assert.match(secret, /^gpi_[A-Za-z0-9_-]{20,}$/);
    ok(await h.s.api('GET', '/api/v1/datacenters', { auth: secret }));
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('x') }, auth: secret }), 403);
    assert.ok(!(await dbBytes(h.s.db)).includes(Buffer.from(secret)));

    const listed = await runCli(['token', 'list', '--db', h.s.db]);
    assert.equal(listed.code, 0, listed.stderr);
    const line = listed.stdout.split('\n').find((l) => l.includes(name));
    assert.ok(line, listed.stdout);
    assert.match(line, /viewer/);
    assert.ok(!listed.stdout.includes(secret));
    const id = Number(line.trim().split(/\s+/)[0]);
    assert.ok(Number.isInteger(id) && id > 0);

    const revoked = await runCli(['token', 'revoke', '--db', h.s.db, '--id', String(id)]);
    assert.equal(revoked.code, 0, revoked.stderr);
    // Revoked by another process: refused once the server's kept copy ages out.
    assertError(await untilStatus(() => h.s.api('GET', '/api/v1/datacenters', { auth: secret }), 401), 401);
    const again = await runCli(['token', 'revoke', '--db', h.s.db, '--id', String(id)]);
    assert.notEqual(again.code, 0);

    // The API sees the CLI's token and its revocation, and the audit has both.
    const tokens = ok(await h.s.api('GET', '/api/v1/tokens'));
    assert.ok(tokens.items.find((t) => t.id === id).revoked_at);
    const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=token&entity_id=${id}`));
    assert.deepEqual(audit.items.map((a) => a.action).sort(), ['create', 'revoke']);
  });

  test('gpuinv token refuses bad usage with exit code 2', async () => {
    for (const args of [
      ['token', 'create', '--db', h.s.db, '--role', 'viewer', '--name', 'x', '--bogus'],
      ['token', 'list', '--db', h.s.db, '--colour'],
      ['token', 'frobnicate', '--db', h.s.db],
      ['token'],
      ['token', 'create', '--db', h.s.db, '--role', 'root', '--name', 'x'],
      ['token', 'create', '--db', h.s.db, '--role', 'viewer'],
      ['token', 'create', '--role', 'viewer', '--name', 'x'],
      ['token', 'revoke', '--db', h.s.db],
      ['token', 'revoke', '--db', h.s.db, '--id', 'abc'],
      ['token', 'list', '--db', h.s.db, 'extra'],
    ]) {
      const r = await runCli(args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}${r.stderr}`);
      assert.equal(r.stdout.match(/^gpi_/m), null, 'no token may be printed on bad usage');
    }
  });
});

/** The session cookie's name=value and attributes from a Set-Cookie header. */
function parseSetCookie(header) {
  const [pair, ...attrs] = header.split(';').map((x) => x.trim());
  return { pair, attrs: attrs.map((a) => a.toLowerCase()) };
}

describe('dashboard sessions', () => {
  const h = useServer();

  async function signIn(password = h.s.password, username = 'admin') {
    return h.s.api('POST', '/api/v1/session', { body: { username, password }, auth: null });
  }

  test('wrong password or user is 401 and sets no cookie', async () => {
    const r = await signIn('not-the-password');
    assertError(r, 401, { code: 'unauthenticated' });
    assert.equal(r.headers.get('set-cookie'), null);
    assertError(await signIn(h.s.password, 'nobody'), 401);
    assertError(await signIn(''), 400, { field: 'password' });
    assertError(await h.s.api('POST', '/api/v1/session', { body: { password: h.s.password }, auth: null }), 400,
      { field: 'username' });
  });

  test('sign in sets an HttpOnly SameSite=Strict cookie that authenticates', async () => {
    const r = await signIn();
    const body = ok(r);
    assert.deepEqual(body, { user: 'admin', role: 'admin' });
    const { pair, attrs } = parseSetCookie(r.headers.get('set-cookie'));
    assert.match(pair, /^gpuinv_session=[A-Za-z0-9_-]{20,}$/);
    assert.ok(attrs.includes('httponly'), attrs.join(';'));
    assert.ok(attrs.includes('samesite=strict'), attrs.join(';'));
    assert.ok(attrs.includes('path=/'));

    const cookie = { Cookie: pair };
    const me = ok(await h.s.api('GET', '/api/v1/session', { auth: null, headers: cookie }));
    assert.deepEqual(me, { user: 'admin', role: 'admin', session: true });
    ok(await h.s.api('GET', '/api/v1/datacenters', { auth: null, headers: cookie }));
    // Among other cookies, too.
    ok(await h.s.api('GET', '/api/v1/session', { auth: null, headers: { Cookie: `a=b; ${pair}; c=d` } }));
    // A bearer caller is not a session.
    const viaToken = ok(await h.s.api('GET', '/api/v1/session'));
    assert.equal(viaToken.session, false);
    // A made-up cookie is not a session.
    assertError(await h.s.api('GET', '/api/v1/session',
      { auth: null, headers: { Cookie: 'gpuinv_session=forged-value-forged-value' } }), 401);
    // Only the cookie's hash is stored.
    const secret = pair.split('=')[1];
    assert.ok(!(await dbBytes(h.s.db)).includes(Buffer.from(secret)), 'session secret stored in clear');
  });

  test('cookie writes must come from the same origin', async () => {
    const { pair } = parseSetCookie((await signIn()).headers.get('set-cookie'));
    const host = new URL(h.s.url).host;
    const same = await h.s.api('POST', '/api/v1/datacenters', {
      body: { name: uniq('same-origin') }, auth: null, headers: { Cookie: pair, Origin: `http://${host}` },
    });
    ok(same, 201);
    const cross = await h.s.api('POST', '/api/v1/datacenters', {
      body: { name: uniq('cross') }, auth: null, headers: { Cookie: pair, Origin: 'http://evil.example' },
    });
    assertError(cross, 403, { code: 'forbidden' });
    assertError(await h.s.api('DELETE', `/api/v1/datacenters/${same.json.id}`,
      { auth: null, headers: { Cookie: pair, Origin: `http://${host}.evil.example` } }), 403);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${same.json.id}`,
      { body: { location: 'x' }, auth: null, headers: { Cookie: pair, Origin: 'null' } }), 403);
    // Reads are not refused for their origin.
    ok(await h.s.api('GET', '/api/v1/datacenters', { auth: null, headers: { Cookie: pair, Origin: 'http://evil.example' } }));
    // The refused write changed nothing.
    const list = ok(await h.s.api('GET', '/api/v1/datacenters?q=cross'));
    assert.equal(list.total, 0);
    const dc = ok(await h.s.api('GET', `/api/v1/datacenters/${same.json.id}`));
    assert.equal(dc.location, '');
  });

  test('DELETE /api/v1/session signs out', async () => {
    const { pair } = parseSetCookie((await signIn()).headers.get('set-cookie'));
    ok(await h.s.api('GET', '/api/v1/session', { auth: null, headers: { Cookie: pair } }));
    const out = await h.s.api('DELETE', '/api/v1/session', { auth: null, headers: { Cookie: pair } });
    assert.equal(out.status, 204);
    const cleared = parseSetCookie(out.headers.get('set-cookie'));
    assert.equal(cleared.pair, 'gpuinv_session=');
    assert.ok(cleared.attrs.includes('max-age=0'));
    assertError(await h.s.api('GET', '/api/v1/session', { auth: null, headers: { Cookie: pair } }), 401);
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: null, headers: { Cookie: pair } }), 401);
  });
});
