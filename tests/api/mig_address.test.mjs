// MIG instances that dcgm-exporter reports without a UUID are named
// `MIG-<parent uuid>/<GPU instance id>`; such a record is addressable at
// /api/v1/gpus/ in both the raw and the %2F-encoded form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkToken } from './helpers.mjs';

const srv = useServer();
const PARENT = 'GPU-3f7a9c21-5e4d-4b8a-9c0e-7d1f2a3b4c5d';
const MIG = `MIG-${PARENT}/5`;

test('a MIG record named after its parent answers at its raw and encoded address', async () => {
  const { s } = srv;
  const pusher = await mkToken(s, 'pusher');
  ok(await s.api('POST', '/api/v1/ingest', { auth: pusher.token, body: {
    batch_id: 'mig-1', host: { hostname: 'gpu-node-07' },
    gpus: [{ uuid: PARENT, index: 0, name: 'NVIDIA A100 80GB PCIe', mig_mode: true },
      { uuid: MIG, parent_uuid: PARENT, mig_instance: 5, mig_profile: '2g.20gb', name: 'NVIDIA A100 80GB PCIe' }],
  } }), 201);
  const listed = ok(await s.api('GET', '/api/v1/gpus?host=gpu-node-07')).items.map((g) => g.uuid);
  assert.ok(listed.includes(MIG), listed.join(' '));

  const raw = ok(await s.api('GET', `/api/v1/gpus/${MIG}`));
  assert.equal(raw.uuid, MIG);
  assert.equal(raw.parent_uuid, PARENT);
  assert.equal(raw.mig_profile, '2g.20gb');
  const encoded = ok(await s.api('GET', `/api/v1/gpus/${encodeURIComponent(MIG)}`));
  assert.equal(encoded.uuid, MIG);
  const perSegment = ok(await s.api('GET', `/api/v1/gpus/${MIG.split('/').map(encodeURIComponent).join('/')}`));
  assert.equal(perSegment.uuid, MIG);
  // The parent is still its own record, and lists its instance.
  const parent = ok(await s.api('GET', `/api/v1/gpus/${PARENT}`));
  assert.equal(parent.uuid, PARENT);
});

test('the rest-of-path key matches only real keys and only on that route', async () => {
  const { s } = srv;
  assertError(await s.api('GET', `/api/v1/gpus/MIG-${PARENT}/99`), 404, { code: 'not_found' });
  for (const p of [`/api/v1/gpus/${MIG}/`, `/api/v1/gpus/MIG-${PARENT}//5`, `/api/v1/gpus/${'x/'.repeat(80)}x`]) {
    assertError(await s.api('GET', p), 404);
  }
  // Other routes keep matching one segment per pattern segment.
  assertError(await s.api('GET', '/api/v1/sources/1/run/extra'), 404);
  assertError(await s.api('GET', `/api/v1/gpus/${MIG}`, { auth: null }), 401);
  assertError(await s.api('POST', `/api/v1/gpus/${MIG}`), 405);
});
