// Data centers: create/validate, search and paging, read/update/delete,
// deletion guarded by held resources, the overview counts, and the audit
// trail every write leaves.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, listAll, uniq } from './helpers.mjs';

describe('data centers', () => {
  const h = useServer();

  test('create answers 201 with the record and zero counts', async () => {
    const name = uniq('alpha');
    const r = await h.s.api('POST', '/api/v1/datacenters', { body: { name, location: 'Frankfurt', rows: 12 } });
    const dc = ok(r, 201);
    assert.ok(Number.isInteger(dc.id) && dc.id > 0);
    assert.equal(dc.name, name);
    assert.equal(dc.location, 'Frankfurt');
    assert.equal(dc.rows, 12);
    for (const k of ['servers', 'vms', 'storages', 'switches', 'infiniband']) assert.equal(dc[k], 0, k);
    assert.match(dc.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.deepEqual(ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`)), dc);
    // Only a name is needed.
    const bare = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('bare') } }), 201);
    assert.equal(bare.location, '');
    assert.equal(bare.rows, 0);
  });

  test('create is validated and names the field', async () => {
    const dc = await mkDc(h.s);
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: dc.name } }), 409,
      { code: 'conflict', field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: '' } }), 400,
      { code: 'validation_failed', field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { location: 'x' } }), 400,
      { code: 'validation_failed', field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: null } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 7 } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'x'.repeat(129) } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'bell\u0007here' } }), 400, { field: 'name' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('u'), colour: 'red' } }), 400,
      { code: 'validation_failed', field: 'colour' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('u'), rows: -1 } }), 400, { field: 'rows' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('u'), rows: 2.5 } }), 400, { field: 'rows' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('u'), rows: '3' } }), 400, { field: 'rows' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('u'), location: ['a'] } }), 400,
      { field: 'location' });
    // Unicode names are fine.
    ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('Zürich-東京') } }), 201);
  });

  test('get, update and delete by id; 404 for a missing id', async () => {
    const dc = await mkDc(h.s, { location: 'Oslo' });
    const up = ok(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { location: 'Bergen', rows: 9 } }));
    assert.equal(up.location, 'Bergen');
    assert.equal(up.rows, 9);
    assert.equal(up.name, dc.name);
    const renamed = uniq('renamed');
    assert.equal(ok(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { name: renamed } })).name, renamed);
    const other = await mkDc(h.s);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { name: other.name } }), 409,
      { field: 'name' });
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { name: '' } }), 400, { field: 'name' });
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { name: null } }), 400, { field: 'name' });
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { floor: 2 } }), 400, { field: 'floor' });
    const now = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`));
    assert.equal(now.name, renamed);
    assert.equal(now.location, 'Bergen');

    assertError(await h.s.api('GET', '/api/v1/datacenters/999999'), 404, { code: 'not_found' });
    assertError(await h.s.api('PATCH', '/api/v1/datacenters/999999', { body: { location: 'x' } }), 404);
    assertError(await h.s.api('DELETE', '/api/v1/datacenters/999999'), 404);
    assertError(await h.s.api('GET', '/api/v1/datacenters/999999/overview'), 404);

    const del = await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}`);
    assert.equal(del.status, 204);
    assert.equal(del.text, '');
    assertError(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`), 404);
    assertError(await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}`), 404);
  });

  test('delete refuses a data center holding resources unless forced', async () => {
    const dc = await mkDc(h.s);
    const srv = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    await mkRes(h.s, dc.id, { kind: 'switch' });
    await mkRes(h.s, dc.id, { kind: 'switch' });
    await mkRes(h.s, dc.id, { kind: 'vm', host_id: srv.id });
    const r = await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}`);
    const err = assertError(r, 409, { code: 'conflict' });
    assert.deepEqual(err.counts, { servers: 1, vms: 1, storages: 0, switches: 2, infiniband: 0 });
    // Nothing was deleted.
    ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`));
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}`)).total, 4);

    assertError(await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}?force=false`), 409);
    assert.equal((await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}?force=true`)).status, 204);
    assertError(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`), 404);
    assertError(await h.s.api('GET', `/api/v1/resources/${srv.id}`), 404);
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}`)).total, 0);
  });

  test('list searches name and location with q and carries resource counts', async () => {
    const tag = uniq('qq');
    const a = await mkDc(h.s, { name: `${tag}-north`, location: 'Helsinki' });
    const b = await mkDc(h.s, { name: `${tag}-south`, location: `Lisbon ${tag}x` });
    await mkDc(h.s, { name: uniq('unrelated'), location: 'Madrid' });
    await mkRes(h.s, a.id, { kind: 'storage' });
    await mkRes(h.s, a.id, { kind: 'infiniband' });
    await mkRes(h.s, a.id, {});

    const byTag = ok(await h.s.api('GET', `/api/v1/datacenters?q=${encodeURIComponent(tag)}`));
    assert.equal(byTag.total, 2);
    assert.deepEqual(byTag.items.map((d) => d.id).sort((x, y) => x - y), [a.id, b.id]);
    const itemA = byTag.items.find((d) => d.id === a.id);
    assert.deepEqual([itemA.servers, itemA.vms, itemA.storages, itemA.switches, itemA.infiniband], [1, 0, 1, 0, 1]);

    const byLocation = ok(await h.s.api('GET', '/api/v1/datacenters?q=helsink'));
    assert.ok(byLocation.items.some((d) => d.id === a.id));
    assert.ok(byLocation.items.every((d) => /helsink/i.test(d.name + d.location)));
    const onlyB = ok(await h.s.api('GET', `/api/v1/datacenters?q=${encodeURIComponent(tag + 'x')}`));
    assert.deepEqual(onlyB.items.map((d) => d.id), [b.id]);
    // LIKE wildcards in q are literal.
    assert.equal(ok(await h.s.api('GET', '/api/v1/datacenters?q=%25')).total, 0);
    assert.equal(ok(await h.s.api('GET', '/api/v1/datacenters?q=_')).total, 0);
    assert.equal(ok(await h.s.api('GET', `/api/v1/datacenters?q=${encodeURIComponent('zz-none-zz')}`)).total, 0);
  });

  test('sort, limit and cursor paging walk every record once', async () => {
    const tag = uniq('page');
    const names = ['delta', 'alpha', 'echo', 'charlie', 'bravo', 'foxtrot', 'golf'].map((n) => `${tag}-${n}`);
    for (const [i, n] of names.entries()) await mkDc(h.s, { name: n, rows: 10 - i });
    const q = `q=${encodeURIComponent(tag)}`;

    const asc = await listAll(h.s, `/api/v1/datacenters?${q}&sort=name&limit=2`);
    assert.equal(asc.total, names.length);
    assert.deepEqual(asc.items.map((d) => d.name), [...names].sort());
    const desc = await listAll(h.s, `/api/v1/datacenters?${q}&sort=-name&limit=3`);
    assert.deepEqual(desc.items.map((d) => d.name), [...names].sort().reverse());
    const byRows = await listAll(h.s, `/api/v1/datacenters?${q}&sort=rows&limit=1`);
    assert.deepEqual(byRows.items.map((d) => d.rows), [4, 5, 6, 7, 8, 9, 10]);

    const first = ok(await h.s.api('GET', `/api/v1/datacenters?${q}&sort=name&limit=3`));
    assert.equal(first.items.length, 3);
    assert.equal(first.total, 7);
    assert.equal(first.next, '3');
    const last = ok(await h.s.api('GET', `/api/v1/datacenters?${q}&sort=name&limit=3&cursor=6`));
    assert.equal(last.items.length, 1);
    assert.equal(last.next, null);
    const past = ok(await h.s.api('GET', `/api/v1/datacenters?${q}&limit=3&cursor=50`));
    assert.deepEqual(past.items, []);
    assert.equal(past.next, null);

    // The whole unfiltered list pages too, with no record twice.
    const all = await listAll(h.s, '/api/v1/datacenters?limit=4');
    assert.equal(all.items.length, all.total);
    assert.equal(new Set(all.items.map((d) => d.id)).size, all.total);
    const byId = all.items.map((d) => d.id);
    assert.deepEqual(byId, [...byId].sort((x, y) => x - y));
  });
});

describe('overview', () => {
  const h = useServer();

  test('counts every kind and GPU totals as resources change', async () => {
    const dc = await mkDc(h.s);
    // The declared figures are kept at the top of `gpus` and under `declared`.
    const ov = async () => {
      const o = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}/overview`));
      const { declared, discovered, basis, ...top } = o.gpus;
      assert.deepEqual(declared, top);
      assert.equal(typeof discovered.total, 'number');
      assert.equal(typeof basis.discovered, 'string');
      return { ...o, gpus: top };
    };
    let o = await ov();
    assert.equal(o.datacenter_id, dc.id);
    assert.equal(o.name, dc.name);
    assert.deepEqual(o.counts, { servers: 0, vms: 0, storages: 0, switches: 0, infiniband: 0 });
    assert.deepEqual(o.gpus, { total: 0, allocated: 0, available: 0, unavailable: 0 });

    const a = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    const b = await mkRes(h.s, dc.id, { gpu_model: 'A100', gpu_count: 4 });
    const c = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 2 });
    await mkRes(h.s, dc.id, {}); // a CPU-only server
    await mkRes(h.s, dc.id, { kind: 'vm', host_id: a.id });
    await mkRes(h.s, dc.id, { kind: 'storage', storage_type: 'object' });
    await mkRes(h.s, dc.id, { kind: 'switch' });
    await mkRes(h.s, dc.id, { kind: 'switch' });
    const ib = await mkRes(h.s, dc.id, { kind: 'infiniband', generation: 'NDR' });
    o = await ov();
    assert.deepEqual(o.counts, { servers: 4, vms: 1, storages: 1, switches: 2, infiniband: 1 });
    assert.deepEqual(o.gpus, { total: 14, allocated: 0, available: 14, unavailable: 0 });

    ok(await h.s.api('POST', `/api/v1/resources/${a.id}/allocate`, { body: { tenant: 'acme' } }));
    o = await ov();
    assert.deepEqual(o.gpus, { total: 14, allocated: 8, available: 6, unavailable: 0 });

    ok(await h.s.api('PATCH', `/api/v1/resources/${b.id}`, { body: { state: 'maintenance' } }));
    o = await ov();
    assert.deepEqual(o.gpus, { total: 14, allocated: 8, available: 2, unavailable: 4 });

    ok(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, tenant: 'beta', min_gpus: 1, count: 1 } }), 201);
    o = await ov();
    assert.deepEqual(o.gpus, { total: 14, allocated: 10, available: 0, unavailable: 4 });

    ok(await h.s.api('POST', `/api/v1/resources/${a.id}/release`));
    o = await ov();
    assert.deepEqual(o.gpus, { total: 14, allocated: 2, available: 8, unavailable: 4 });

    // Retired hardware leaves the totals.
    ok(await h.s.api('PATCH', `/api/v1/resources/${b.id}`, { body: { state: 'retired' } }));
    o = await ov();
    assert.deepEqual(o.gpus, { total: 10, allocated: 2, available: 8, unavailable: 0 });

    // A GPU count change is seen at once.
    ok(await h.s.api('PATCH', `/api/v1/resources/${a.id}`, { body: { gpu_count: 4 } }));
    o = await ov();
    assert.deepEqual(o.gpus, { total: 6, allocated: 2, available: 4, unavailable: 0 });

    assert.equal((await h.s.api('DELETE', `/api/v1/resources/${c.id}`)).status, 204);
    assert.equal((await h.s.api('DELETE', `/api/v1/resources/${ib.id}`)).status, 204);
    o = await ov();
    assert.deepEqual(o.counts, { servers: 3, vms: 1, storages: 1, switches: 2, infiniband: 0 });
    assert.deepEqual(o.gpus, { total: 4, allocated: 0, available: 4, unavailable: 0 });
    const { total, allocated, available, unavailable } = o.gpus;
    assert.equal(allocated + available + unavailable, total);

    // Another data center's resources do not leak in.
    const other = await mkDc(h.s);
    await mkRes(h.s, other.id, { gpu_model: 'H100', gpu_count: 8 });
    assert.deepEqual((await ov()).gpus, o.gpus);
  });
});

describe('audit trail', () => {
  const h = useServer();

  test('every write is recorded with actor, action, entity, id and before/after', async () => {
    const ed = await mkToken(h.s, 'editor', 'auditor-editor');
    const as = { auth: ed.token };
    const dc = ok(await h.s.api('POST', '/api/v1/datacenters', { ...as, body: { name: uniq('aud'), location: 'A' } }), 201);
    ok(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { ...as, body: { location: 'B' } }));
    const res = ok(await h.s.api('POST', '/api/v1/resources',
      { ...as, body: { datacenter_id: dc.id, kind: 'server', name: 'a1', gpu_model: 'L40S', gpu_count: 4 } }), 201);
    ok(await h.s.api('PATCH', `/api/v1/resources/${res.id}`, { ...as, body: { rack: 'R2' } }));
    ok(await h.s.api('POST', `/api/v1/resources/${res.id}/allocate`, { ...as, body: { tenant: 'acme', project: 'p1' } }));
    ok(await h.s.api('POST', `/api/v1/resources/${res.id}/release`, as));
    const bulk = ok(await h.s.api('POST', '/api/v1/allocations',
      { ...as, body: { datacenter_id: dc.id, tenant: 'zed', count: 1 } }), 201);
    assert.equal(bulk.items[0].id, res.id);
    assert.equal((await h.s.api('DELETE', `/api/v1/resources/${res.id}`, as)).status, 204);
    const tok = await mkToken(h.s, 'viewer', 'audited-token');
    assert.equal((await h.s.api('DELETE', `/api/v1/tokens/${tok.id}`)).status, 204);
    assert.equal((await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}`, as)).status, 204);

    const all = await listAll(h.s, '/api/v1/audit?limit=5');
    assert.equal(all.items.length, all.total);
    // Newest first.
    const ids = all.items.map((a) => a.id);
    assert.deepEqual(ids, [...ids].sort((x, y) => y - x));

    const find = (entity, id, action) => all.items.filter((a) => a.entity === entity && a.entity_id === id && a.action === action);
    const one = (entity, id, action) => {
      const hits = find(entity, id, action);
      assert.equal(hits.length, 1, `${entity} ${id} ${action}: ${hits.length} entries`);
      return hits[0];
    };

    let e = one('datacenter', dc.id, 'create');
    assert.equal(e.actor, 'auditor-editor');
    assert.equal(e.before, null);
    assert.equal(e.after.location, 'A');
    e = one('datacenter', dc.id, 'update');
    assert.equal(e.before.location, 'A');
    assert.equal(e.after.location, 'B');
    e = one('datacenter', dc.id, 'delete');
    assert.equal(e.actor, 'auditor-editor');
    assert.equal(e.before.name, dc.name);
    assert.equal(e.after, null);

    e = one('resource', res.id, 'create');
    assert.equal(e.before, null);
    assert.equal(e.after.name, 'a1');
    assert.equal(e.after.gpu_count, 4);
    e = one('resource', res.id, 'update');
    assert.equal(e.before.rack ?? null, null);
    assert.equal(e.after.rack, 'R2');
    const allocs = find('resource', res.id, 'allocate');
    assert.equal(allocs.length, 2, 'single and bulk allocation are both recorded');
    const single = allocs.find((a) => a.after.tenant === 'acme');
    assert.equal(single.actor, 'auditor-editor');
    assert.equal(single.before.state, 'available');
    assert.equal(single.after.state, 'in_use');
    assert.equal(single.after.project, 'p1');
    assert.ok(allocs.find((a) => a.after.tenant === 'zed'));
    e = one('resource', res.id, 'release');
    assert.equal(e.before.state, 'in_use');
    assert.equal(e.after.state, 'available');
    assert.equal(e.after.tenant, null);
    e = one('resource', res.id, 'delete');
    assert.equal(e.before.state, 'in_use');
    assert.equal(e.after, null);

    e = one('token', tok.id, 'create');
    assert.equal(e.actor, 'env-admin');
    assert.equal(e.after.role, 'viewer');
    assert.equal(e.after.name, 'audited-token');
    e = one('token', tok.id, 'revoke');
    assert.equal(e.before.revoked_at, null);
    assert.ok(e.after.revoked_at);
    // The audit never holds a token secret.
    assert.ok(!JSON.stringify(all.items).includes(tok.token));

    for (const a of all.items) {
      assert.equal(typeof a.actor, 'string');
      assert.ok(a.actor.length > 0);
      assert.match(a.occurred_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/, 'audit times are RFC 3339 UTC');
    }

    // Filters: entity, entity_id, actor.
    const forRes = ok(await h.s.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`));
    assert.deepEqual(forRes.items.map((a) => a.action).sort(),
      ['allocate', 'allocate', 'create', 'delete', 'release', 'update']);
    const byActor = await listAll(h.s, '/api/v1/audit?actor=auditor-editor');
    assert.ok(byActor.items.length >= 9);
    assert.ok(byActor.items.every((a) => a.actor === 'auditor-editor'));
    // Viewers may read the audit.
    const v = await mkToken(h.s, 'viewer');
    ok(await h.s.api('GET', '/api/v1/audit', { auth: v.token }));
  });

  test('refused writes leave no audit entry', async () => {
    const before = ok(await h.s.api('GET', '/api/v1/audit')).total;
    const dc = await mkDc(h.s);
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: dc.name } }), 409);
    assertError(await h.s.api('POST', '/api/v1/resources', { body: { datacenter_id: dc.id, kind: 'server', name: '' } }), 400);
    const r = await mkRes(h.s, dc.id);
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/release`), 409);
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { version: 99, rack: 'x' } }), 409);
    assert.equal(ok(await h.s.api('GET', '/api/v1/audit')).total, before + 2);
  });
});
