// Deleting a resource a tenant holds: refused with 409 naming the tenant
// (nothing changes), done with ?force=true; free resources delete as before.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken } from './helpers.mjs';

const h = useServer();

test('an allocated resource is not deleted unless forced, and the refusal names its tenant', async () => {
  const dc = await mkDc(h.s);
  const srv = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
  ok(await h.s.api('POST', `/api/v1/resources/${srv.id}/allocate`, { body: { tenant: 'speech', project: 'asr' } }));

  const r = await h.s.api('DELETE', `/api/v1/resources/${srv.id}`);
  assertError(r, 409, { code: 'allocated' });
  assert.match(r.json.error.message, /tenant 'speech'/);
  assert.match(r.json.error.message, /project 'asr'/);
  assert.match(r.json.error.message, /force=true/);
  assert.equal(r.json.error.tenant, 'speech');
  assert.equal(r.json.error.project, 'asr');
  // Nothing changed: still there, still allocated, no delete in the audit.
  const still = ok(await h.s.api('GET', `/api/v1/resources/${srv.id}`));
  assert.equal(still.state, 'in_use');
  assert.equal(still.tenant, 'speech');
  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=resource&entity_id=${srv.id}`));
  assert.ok(!audit.items.some((a) => a.action === 'delete'));

  assertError(await h.s.api('DELETE', `/api/v1/resources/${srv.id}?force=maybe`), 400);
  assert.equal((await h.s.api('DELETE', `/api/v1/resources/${srv.id}?force=true`)).status, 204);
  assertError(await h.s.api('GET', `/api/v1/resources/${srv.id}`), 404);
});

test('a reserved resource is held too; a released one deletes without force', async () => {
  const dc = await mkDc(h.s);
  const res = await mkRes(h.s, dc.id, { kind: 'storage', state: 'reserved', tenant: 'vision' });
  const r = await h.s.api('DELETE', `/api/v1/resources/${res.id}`);
  assertError(r, 409, { code: 'allocated' });
  assert.match(r.json.error.message, /reserved by tenant 'vision'/);
  assert.equal(r.json.error.project ?? null, null);
  ok(await h.s.api('POST', `/api/v1/resources/${res.id}/release`));
  assert.equal((await h.s.api('DELETE', `/api/v1/resources/${res.id}`)).status, 204);
});

test('an editor may force; a viewer may not delete at all', async () => {
  const dc = await mkDc(h.s);
  const srv = await mkRes(h.s, dc.id);
  ok(await h.s.api('POST', `/api/v1/resources/${srv.id}/allocate`, { body: { tenant: 'acme' } }));
  const viewer = await mkToken(h.s, 'viewer');
  const editor = await mkToken(h.s, 'editor');
  assertError(await h.s.api('DELETE', `/api/v1/resources/${srv.id}?force=true`, { auth: viewer.token }), 403);
  assertError(await h.s.api('DELETE', `/api/v1/resources/${srv.id}`, { auth: editor.token }), 409);
  assert.equal((await h.s.api('DELETE', `/api/v1/resources/${srv.id}?force=true`, { auth: editor.token })).status, 204);
});
