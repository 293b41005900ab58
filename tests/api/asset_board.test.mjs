// What the dashboard's asset pages read beside the list: counts per stage
// (GET /api/v1/asset-stages) with the list's filters, the newest stage
// moves across assets (GET /api/v1/asset-events?kind=stage) narrowed by
// the asset's kind and data center, and the list's warranty_after and
// ends_after / ends_before filters behind the warranty calendar.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, uniq } from './helpers.mjs';

describe('asset board', () => {
  const h = useServer();
  const post = (body) => h.s.api('POST', '/api/v1/assets', { body });
  const stage = (tag, body) => h.s.api('POST', `/api/v1/assets/${encodeURIComponent(tag)}/stage`, { body });
  const get = async (p) => ok(await h.s.api('GET', p));
  const day = (n) => new Date(Date.now() + n * 86400000).toISOString().slice(0, 10);
  let dc;
  let other;
  const tags = {};

  test('setup', async () => {
    dc = await mkDc(h.s);
    other = await mkDc(h.s);
    const mk = async (name, fields) => {
      tags[name] = uniq(name.toUpperCase());
      ok(await post({ tag: tags[name], ...fields }), 201);
    };
    await mk('srv1', { kind: 'server', model: 'R760', location: { datacenter: dc.name }, warranty_end: day(10) });
    await mk('srv2', { kind: 'server', model: 'R760', location: { datacenter: dc.name }, lease_end: day(45) });
    await mk('gpu1', { kind: 'gpu', model: 'H100', location: { datacenter: dc.name }, warranty_end: day(200) });
    await mk('gpu2', { kind: 'gpu', model: 'H100', location: { datacenter: dc.name }, stage: 'spare',
      warranty_end: day(-20) });
    await mk('far', { kind: 'gpu', model: 'H100', location: { datacenter: other.name }, warranty_end: day(20) });
  });

  test('counts per stage follow the filters and every stage is named', async () => {
    let c = await get(`/api/v1/asset-stages?datacenter=${dc.id}`);
    assert.deepEqual(c.stages, { ordered: 0, received: 0, active: 3, spare: 1, diagnostic_repair: 0,
      refurbishment_candidate: 0, decommissioned: 0 });
    assert.equal(c.total, 4);
    c = await get(`/api/v1/asset-stages?datacenter=${dc.id}&kind=gpu`);
    assert.equal(c.stages.active, 1);
    assert.equal(c.stages.spare, 1);
    assert.equal(c.total, 2);
    c = await get(`/api/v1/asset-stages?datacenter=${encodeURIComponent(dc.name)}&model=R760`);
    assert.equal(c.total, 2);
    c = await get('/api/v1/asset-stages?datacenter=no-such-dc');
    assert.equal(c.total, 0);
    // The stage moves the count.
    ok(await stage(tags.srv1, { stage: 'diagnostic_repair', reason: 'fans' }));
    c = await get(`/api/v1/asset-stages?datacenter=${dc.id}`);
    assert.equal(c.stages.active, 2);
    assert.equal(c.stages.diagnostic_repair, 1);
    assertError(await h.s.api('GET', '/api/v1/asset-stages?kind=toaster'), 400, { field: 'kind' });
    assertError(await h.s.api('GET', '/api/v1/asset-stages?ends_before=2026-13-01'), 400, { field: 'ends_before' });
  });

  test('the newest stage moves, narrowed by the asset\'s kind and data center', async () => {
    ok(await stage(tags.gpu1, { stage: 'spare', reason: 'swap' }));
    ok(await stage(tags.far, { stage: 'diagnostic_repair', reason: 'xid' }));
    let ev = await get(`/api/v1/asset-events?kind=stage&sort=-seq&limit=10&datacenter=${dc.id}`);
    assert.deepEqual(ev.items.map((e) => e.tag), [tags.gpu1, tags.srv1]);
    assert.ok(ev.items.every((e) => e.kind === 'stage'));
    assert.equal(ev.items[0].detail.from, 'active');
    assert.equal(ev.items[0].detail.to, 'spare');
    assert.equal(ev.total, 2);
    ev = await get(`/api/v1/asset-events?kind=stage&sort=-seq&asset_kind=gpu&datacenter=${dc.id}`);
    assert.deepEqual(ev.items.map((e) => e.tag), [tags.gpu1]);
    ev = await get('/api/v1/asset-events?kind=stage&sort=-seq&asset_kind=gpu');
    assert.deepEqual(ev.items.slice(0, 2).map((e) => e.tag), [tags.far, tags.gpu1]);
    // Without the filters every event of the range is there, created ones too.
    ev = await get(`/api/v1/asset-events?datacenter=${dc.id}`);
    assert.ok(ev.items.some((e) => e.kind === 'created'));
    assertError(await h.s.api('GET', '/api/v1/asset-events?asset_kind=toaster'), 400, { field: 'asset_kind' });
  });

  test('warranty_after and the warranty-or-lease range', async () => {
    const list = async (q) => (await get(`/api/v1/assets?datacenter=${dc.id}&sort=tag&${q}`)).items.map((a) => a.tag).sort();
    // Ending within 30 days from today: expired ones are not.
    assert.deepEqual(await list(`warranty_after=${day(0)}&warranty_before=${day(31)}`), [tags.srv1]);
    assert.deepEqual(await list(`warranty_before=${day(31)}`), [tags.srv1, tags.gpu2].sort());
    // Warranty or lease ending in the next 12 months.
    assert.deepEqual(await list(`ends_after=${day(0)}&ends_before=${day(365)}`), [tags.srv1, tags.srv2, tags.gpu1].sort());
    assert.deepEqual(await list(`ends_after=${day(30)}&ends_before=${day(100)}`), [tags.srv2]);
    assert.deepEqual(await list(`ends_before=${day(0)}`), [tags.gpu2]);
    assertError(await h.s.api('GET', '/api/v1/assets?warranty_after=tomorrow'), 400, { field: 'warranty_after' });
  });
});
