// Smoke test: the server starts, answers /healthz without auth, refuses
// /api/v1 without a token, and stops cleanly on SIGTERM.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';

test('starts, answers health, requires auth, stops cleanly', async () => {
  const s = await startServer();
  try {
    const h = await s.api('GET', '/healthz', { auth: null });
    assert.equal(h.status, 200);
    assert.deepEqual(h.json, { status: 'ok' });
    const r = await s.api('GET', '/api/v1/datacenters', { auth: null });
    assert.equal(r.status, 401);
    assert.equal(r.json.error.code, 'unauthenticated');
  } finally {
    const { code } = await s.stop();
    assert.equal(code, 0, s.stderr);
  }
});
