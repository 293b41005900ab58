// Durability: a stopped server's successor on the same database sees all
// data, and every write acknowledged before SIGTERM (or a crash) survives.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, tempDir } from '../lib/server.mjs';
import { assertError, ok, mkDc, mkRes, mkToken, stopClean, newDb } from './helpers.mjs';

/** Starts a server on an existing database with the same admin credentials. */
function restart(prev) {
  return startServer({ db: prev.db, dir: prev.dir, token: prev.token, password: prev.password });
}

describe('durability', () => {
  test('a restarted server on the same database has everything', async () => {
    const dir = tempDir('gpuinv-dur-');
    const s1 = await startServer({ dir, db: await newDb(dir, 'inv.db') });
    let s2;
    try {
      const dc = await mkDc(s1, { location: 'Stockholm', rows: 7 });
      const a = await mkRes(s1, dc.id, { gpu_model: 'H100', gpu_count: 8, rack: 'R1', metadata: { owner: 'ml' } });
      const b = await mkRes(s1, dc.id, { kind: 'storage', storage_type: 'block', capacity_tb: 12.5 });
      ok(await s1.api('POST', `/api/v1/resources/${a.id}/allocate`, { body: { tenant: 'acme', project: 'p' } }));
      ok(await s1.api('POST', `/api/v1/resources/${a.id}/release`));
      ok(await s1.api('POST', `/api/v1/resources/${a.id}/allocate`, { body: { tenant: 'beta' } }));
      const viewer = await mkToken(s1, 'viewer');
      const revoked = await mkToken(s1, 'editor');
      assert.equal((await s1.api('DELETE', `/api/v1/tokens/${revoked.id}`)).status, 204);
      const cookie = (await s1.api('POST', '/api/v1/session',
        { body: { username: 'admin', password: s1.password }, auth: null })).headers.get('set-cookie').split(';')[0];

      const snapshot = {
        dcs: ok(await s1.api('GET', '/api/v1/datacenters')),
        resources: ok(await s1.api('GET', '/api/v1/resources')),
        a: ok(await s1.api('GET', `/api/v1/resources/${a.id}`)),
        b: ok(await s1.api('GET', `/api/v1/resources/${b.id}`)),
        overview: ok(await s1.api('GET', `/api/v1/datacenters/${dc.id}/overview`)),
        audit: ok(await s1.api('GET', '/api/v1/audit?limit=1000')),
      };
      await stopClean(s1);

      s2 = await restart(s1);
      assert.deepEqual(ok(await s2.api('GET', '/api/v1/datacenters')), snapshot.dcs);
      assert.deepEqual(ok(await s2.api('GET', '/api/v1/resources')), snapshot.resources);
      assert.deepEqual(ok(await s2.api('GET', `/api/v1/resources/${a.id}`)), snapshot.a);
      assert.deepEqual(ok(await s2.api('GET', `/api/v1/resources/${b.id}`)), snapshot.b);
      assert.deepEqual(ok(await s2.api('GET', `/api/v1/datacenters/${dc.id}/overview`)), snapshot.overview);
      assert.deepEqual(ok(await s2.api('GET', '/api/v1/audit?limit=1000')), snapshot.audit);
      assert.equal(snapshot.a.allocations.length, 2);
      // Credentials survive too: tokens, revocations and sessions.
      ok(await s2.api('GET', '/api/v1/datacenters', { auth: viewer.token }));
      assertError(await s2.api('GET', '/api/v1/datacenters', { auth: revoked.token }), 401);
      ok(await s2.api('GET', '/api/v1/session', { auth: null, headers: { Cookie: cookie } }));
      // The restart applied no migration twice and writes still work.
      assert.ok(!/applied migration/.test(s2.stderr), s2.stderr);
      await mkRes(s2, dc.id);
    } finally {
      if (s1) await s1.stop();
      if (s2) await stopClean(s2);
    }
  });

  test('writes acknowledged before SIGTERM survive; the stop is clean', async () => {
    const s1 = await startServer();
    let s2;
    try {
      const dc = await mkDc(s1);
      // The last write is answered, then the signal goes at once.
      const last = await mkRes(s1, dc.id, { name: 'acked-before-stop' });
      // A stream of writes is in flight while the server is told to stop:
      // each one answered with success must be there afterwards.
      const inflight = [];
      for (let i = 0; i < 40; i++) {
        inflight.push(s1.api('POST', '/api/v1/resources', { body: { datacenter_id: dc.id, kind: 'switch', name: `sw-${i}` } })
          .then((r) => ({ i, status: r.status }), () => ({ i, status: 0 })));
      }
      const firstAck = Promise.race(inflight);
      await firstAck;
      const stopped = s1.stop();
      const results = await Promise.all(inflight);
      const { code, signal } = await stopped;
      assert.equal(signal, null, s1.stderr);
      assert.equal(code, 0, s1.stderr);
      for (const r of results) assert.ok([0, 201].includes(r.status), `write ${r.i}: ${r.status}`);
      const acked = results.filter((r) => r.status === 201).map((r) => `sw-${r.i}`);
      assert.ok(acked.length >= 1);

      s2 = await restart(s1);
      ok(await s2.api('GET', `/api/v1/resources/${last.id}`));
      const names = new Set(ok(await s2.api('GET', `/api/v1/resources?datacenter=${dc.id}&limit=1000`)).items.map((r) => r.name));
      for (const n of acked) assert.ok(names.has(n), `acknowledged write ${n} lost`);
      // Every acknowledged write is audited as well.
      const audit = ok(await s2.api('GET', '/api/v1/audit?entity=resource&limit=1000'));
      assert.equal(audit.items.filter((a) => a.action === 'create').length, names.size);
    } finally {
      await s1.stop();
      if (s2) await stopClean(s2);
    }
  });

  test('acknowledged writes survive a crash (SIGKILL)', async () => {
    const s1 = await startServer();
    let s2;
    try {
      const dc = await mkDc(s1);
      const made = [];
      for (let i = 0; i < 5; i++) made.push(await mkRes(s1, dc.id, { gpu_model: 'H100', gpu_count: 8 }));
      ok(await s1.api('POST', `/api/v1/resources/${made[0].id}/allocate`, { body: { tenant: 'acme' } }));
      s1.child.kill('SIGKILL');
      const { signal } = await s1.stop();
      assert.equal(signal, 'SIGKILL');

      s2 = await restart(s1);
      const list = ok(await s2.api('GET', `/api/v1/resources?datacenter=${dc.id}`));
      assert.deepEqual(list.items.map((r) => r.id), made.map((r) => r.id));
      const a = ok(await s2.api('GET', `/api/v1/resources/${made[0].id}`));
      assert.equal(a.state, 'in_use');
      assert.equal(a.allocations.length, 1);
    } finally {
      if (s2) await stopClean(s2);
    }
  });
});
