// A server's `discovered` figures when its linked host lists GPUs whose
// model is unknown beside GPUs whose model is known: the unknown ones are
// counted and listed with a null model, and `models` names only the known.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, mkDc, mkRes, mkToken, uniq } from './helpers.mjs';

const h = useServer();

test('GPUs without a model count in a server\'s discovered figures without breaking its models', async () => {
  const push = (await mkToken(h.s, 'pusher')).token;
  const dc = await mkDc(h.s);
  const name = uniq('mixed');
  const server = await mkRes(h.s, dc.id, { name, serial: `SER-${name}`, gpu_count: 3, gpu_model: 'H100' });
  // Index order puts the GPUs with a model first, so the one without a
  // model is compared with models already found.
  const gpus = [
    { uuid: `GPU-${name}-0`, index: 0, name: 'NVIDIA H100 80GB HBM3' },
    { uuid: `GPU-${name}-1`, index: 1, name: 'NVIDIA H100 80GB HBM3' },
    { uuid: `GPU-${name}-2`, index: 2 },
  ];
  const r = await h.s.api('POST', '/api/v1/ingest', {
    auth: push,
    body: { batch_id: `b-${name}`, host: { hostname: name, serial: `SER-${name}` }, gpus },
  });
  assert.equal(r.status, 201, r.text);

  const got = ok(await h.s.api('GET', `/api/v1/resources/${server.id}`));
  assert.equal(got.discovered.count, 3);
  assert.deepEqual(got.discovered.models, ['NVIDIA H100 80GB HBM3']);
  assert.deepEqual(got.discovered.gpus.map((g) => [g.uuid, g.model]), [
    [`GPU-${name}-0`, 'NVIDIA H100 80GB HBM3'],
    [`GPU-${name}-1`, 'NVIDIA H100 80GB HBM3'],
    [`GPU-${name}-2`, null],
  ]);
  assert.equal(got.discovered.hosts.length, 1);
  assert.equal(got.discovered.hosts[0].rule, 'serial');
});
