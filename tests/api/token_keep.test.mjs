// Verified tokens kept in the process (src/store/credentials.c): a server
// that has just verified a token refuses it at the very next request once
// it is revoked or re-scoped through that server, and a second server on
// the same database (a replica) that kept it refuses it too, within the
// second a token is kept for.
import { test, describe, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { useServer, assertError, ok, mkDc, mkToken, uniq, stopClean, untilStatus } from './helpers.mjs';

describe('kept tokens: revocation and scope across replicas', () => {
  const h = useServer();
  let other;
  before(async () => { other = await startServer({ db: h.s.db }); });
  after(async () => { if (other) await stopClean(other); });

  test('a revoked token is refused at once where revoked and within the keep time elsewhere', async () => {
    const t = await mkToken(h.s, 'viewer');
    // Both servers verify (and keep) it.
    for (let i = 0; i < 3; i++) {
      ok(await h.s.api('GET', '/api/v1/datacenters', { auth: t.token }));
      ok(await other.api('GET', '/api/v1/datacenters', { auth: t.token }));
    }
    assert.equal((await h.s.api('DELETE', `/api/v1/tokens/${t.id}`)).status, 204);
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: t.token }), 401, { code: 'unauthenticated' });
    const r = await untilStatus(() => other.api('GET', '/api/v1/datacenters', { auth: t.token }), 401);
    assertError(r, 401, { code: 'unauthenticated' });
    // And it stays refused on both.
    assertError(await other.api('GET', '/api/v1/datacenters', { auth: t.token }), 401);
    assertError(await h.s.api('GET', '/api/v1/datacenters', { auth: t.token }), 401);
  });

  test('a token unknown to both is refused by both, and a new one works at once', async () => {
    assertError(await other.api('GET', '/api/v1/datacenters', { auth: 'gpi_' + 'x'.repeat(43) }), 401);
    const t = await mkToken(h.s, 'viewer');
    ok(await other.api('GET', '/api/v1/datacenters', { auth: t.token }));
  });

  test('a scope change is honoured at once where made and within the keep time elsewhere', async () => {
    const dcA = await mkDc(h.s);
    const dcB = await mkDc(h.s);
    const tagA = uniq('KA');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagA, kind: 'server', location: { datacenter: dcA.name } } }), 201);
    const t = await mkToken(h.s, 'viewer');
    const read = (s) => s.api('GET', `/api/v1/assets/${tagA}`, { auth: t.token });
    ok(await read(h.s));
    ok(await read(other));
    ok(await h.s.api('PATCH', `/api/v1/tokens/${t.id}`, { body: { datacenters: [dcB.id] } }));
    assertError(await read(h.s), 404, { code: 'not_found' });
    assertError(await untilStatus(() => read(other), 404), 404, { code: 'not_found' });
    ok(await h.s.api('PATCH', `/api/v1/tokens/${t.id}`, { body: { datacenters: [] } }));
    ok(await read(h.s));
    ok(await untilStatus(() => read(other), 200));
  });
});
