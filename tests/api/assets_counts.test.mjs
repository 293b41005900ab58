// The asset list's total and the lifecycle board's stage counts are kept
// between requests while nothing changes; every kind of asset change
// (create, import, stage change, scan into another data center) shows at
// the next read, through this server and through a second one on the same
// database.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, mkDc, uniq } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';

describe('asset counts', () => {
  const h = useServer();
  const total = async (s, q) => ok(await s.api('GET', `/api/v1/assets?limit=1${q}`)).total;
  const board = async (s, q = '') => ok(await s.api('GET', `/api/v1/asset-stages${q ? '?' + q : ''}`)).stages;
  let dc;
  let dc2;

  test('setup', async () => {
    dc = await mkDc(h.s);
    dc2 = await mkDc(h.s);
  });

  test('a create, an import, a stage change and a scan each show at once', async () => {
    const model = uniq('CNT-MODEL');
    const q = `&model=${encodeURIComponent(model)}`;
    assert.equal(await total(h.s, q), 0);
    assert.equal(await total(h.s, q), 0); // asked twice: the kept answer
    const before = await board(h.s, `model=${encodeURIComponent(model)}`);
    assert.equal(before.active, 0);

    const tag = uniq('CNT');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'gpu', model, location: { datacenter: dc.name } } }), 201);
    assert.equal(await total(h.s, q), 1);
    assert.equal((await board(h.s, `model=${encodeURIComponent(model)}`)).active, 1);

    const csv = ['asset tag,kind,model', `${uniq('CNT')},gpu,${model}`, `${uniq('CNT')},gpu,${model}`].join('\n');
    ok(await h.s.api('POST', '/api/v1/assets/import', { body: csv, contentType: 'text/csv' }));
    assert.equal(await total(h.s, q), 3);

    ok(await h.s.api('POST', `/api/v1/assets/${tag}/stage`, { body: { stage: 'spare', reason: 'count test' } }));
    const after = await board(h.s, `model=${encodeURIComponent(model)}`);
    assert.equal(after.active, 2);
    assert.equal(after.spare, 1);
    assert.equal(await total(h.s, `${q}&stage=spare`), 1);

    assert.equal(await total(h.s, `${q}&datacenter=${dc2.id}`), 0);
    ok(await h.s.api('POST', '/api/v1/scans', { body: { tag, location: { datacenter: dc2.name, rack: 'R1' } } }), 201);
    assert.equal(await total(h.s, `${q}&datacenter=${dc2.id}`), 1);
    assert.equal(await total(h.s, `${q}&datacenter=${dc.id}`), 0);
  });

  test('a change through another server on the same database shows here', async () => {
    const other = await startServer({ db: h.s.db, token: h.s.token });
    try {
      const model = uniq('CNT-OTHER');
      const q = `&model=${encodeURIComponent(model)}`;
      assert.equal(await total(h.s, q), 0);
      ok(await other.api('POST', '/api/v1/assets', { body: { tag: uniq('CNT'), kind: 'psu', model } }), 201);
      assert.equal(await total(h.s, q), 1);
      assert.equal((await board(h.s, `model=${encodeURIComponent(model)}`)).active, 1);
    } finally {
      await other.stop();
    }
  });
});
