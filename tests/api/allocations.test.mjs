// Allocation: single allocate/release with history intervals, bulk
// all-or-nothing allocation, and many allocations racing for the same
// resources.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, listAll } from './helpers.mjs';

describe('allocations', () => {
  const h = useServer();

  test('allocate, allocate again, release, release again', async () => {
    const dc = await mkDc(h.s);
    const r = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    const a = ok(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: { tenant: 'acme', project: 'llm' } }));
    assert.equal(a.state, 'in_use');
    assert.equal(a.tenant, 'acme');
    assert.equal(a.project, 'llm');
    assert.equal(a.version, r.version + 1);

    const again = await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: { tenant: 'other' } });
    const e = assertError(again, 409, { code: 'not_available', field: 'state' });
    assert.match(e.message, /in_use/);
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources/${r.id}`)).tenant, 'acme');

    const rel = ok(await h.s.api('POST', `/api/v1/resources/${r.id}/release`));
    assert.equal(rel.state, 'available');
    assert.equal(rel.tenant, null);
    assert.equal(rel.project, null);
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/release`), 409, { code: 'not_allocated' });

    ok(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: { tenant: 'beta' } }));
    const got = ok(await h.s.api('GET', `/api/v1/resources/${r.id}`));
    assert.equal(got.allocations.length, 2);
    const [open, closed] = got.allocations; // newest first
    assert.equal(open.tenant, 'beta');
    assert.equal(open.ended_at, null);
    assert.equal(open.project, null);
    assert.equal(closed.tenant, 'acme');
    assert.equal(closed.project, 'llm');
    assert.equal(closed.actor, 'env-admin');
    assert.match(closed.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.match(closed.ended_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    assert.ok(closed.ended_at >= closed.started_at);
    assert.ok(open.started_at >= closed.ended_at);
  });

  test('only an available resource is allocated; bad requests name the field', async () => {
    const dc = await mkDc(h.s);
    const m = await mkRes(h.s, dc.id, { state: 'maintenance' });
    const rsv = await mkRes(h.s, dc.id, { state: 'reserved', tenant: 'acme' });
    assertError(await h.s.api('POST', `/api/v1/resources/${m.id}/allocate`, { body: { tenant: 't' } }), 409,
      { code: 'not_available' });
    assertError(await h.s.api('POST', `/api/v1/resources/${m.id}/release`), 409, { code: 'not_allocated' });
    // A reservation can be released.
    assert.equal(ok(await h.s.api('POST', `/api/v1/resources/${rsv.id}/release`)).state, 'available');

    const r = await mkRes(h.s, dc.id);
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: {} }), 400, { field: 'tenant' });
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: { tenant: '' } }), 400, { field: 'tenant' });
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: { tenant: 't', until: 5 } }), 400,
      { field: 'until' });
    assertError(await h.s.api('POST', `/api/v1/resources/${r.id}/allocate`, { body: 'tenant=t', contentType: 'text/plain' }), 415);
    assertError(await h.s.api('POST', '/api/v1/resources/99999999/allocate', { body: { tenant: 't' } }), 404);
    assertError(await h.s.api('POST', '/api/v1/resources/99999999/release'), 404);
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources/${r.id}`)).state, 'available');
  });

  test('bulk allocation takes exactly count matching resources', async () => {
    const dc = await mkDc(h.s);
    const other = await mkDc(h.s);
    const h8a = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    const h8b = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    const h4 = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 4 });
    const a8 = await mkRes(h.s, dc.id, { gpu_model: 'A100', gpu_count: 8 });
    await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8, state: 'maintenance' });
    await mkRes(h.s, other.id, { gpu_model: 'H100', gpu_count: 8 });
    const vm = await mkRes(h.s, dc.id, { kind: 'vm', host_id: h4.id, gpu_model: 'H100', gpu_count: 1 });

    const r = ok(await h.s.api('POST', '/api/v1/allocations', { body: {
      datacenter_id: dc.id, kind: 'server', count: 2, min_gpus: 8, gpu_model: 'H100', tenant: 'acme', project: 'train',
    } }), 201);
    assert.equal(r.count, 2);
    assert.deepEqual(r.items.map((x) => x.id).sort((x, y) => x - y), [h8a.id, h8b.id]);
    for (const it of r.items) {
      assert.equal(it.state, 'in_use');
      assert.equal(it.tenant, 'acme');
      assert.equal(it.project, 'train');
      assert.equal(it.datacenter_id, dc.id);
      assert.equal(it.gpu_model, 'H100');
      assert.ok(it.gpu_count >= 8);
    }
    // kind defaults to server; min_gpus and model filter.
    const one = ok(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, min_gpus: 5, tenant: 'x' } }), 201);
    assert.deepEqual(one.items.map((x) => x.id), [a8.id]);
    const vms = ok(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, kind: 'vm', tenant: 'x' } }), 201);
    assert.deepEqual(vms.items.map((x) => x.id), [vm.id]);
  });

  test('bulk allocation that cannot be met changes nothing', async () => {
    const dc = await mkDc(h.s);
    const rs = [];
    for (let i = 0; i < 3; i++) rs.push(await mkRes(h.s, dc.id, { gpu_model: 'H200', gpu_count: 8 }));
    await mkRes(h.s, dc.id, { gpu_model: 'H200', gpu_count: 2 });
    const auditBefore = ok(await h.s.api('GET', '/api/v1/audit')).total;

    const short = await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, count: 4, min_gpus: 8, gpu_model: 'H200', tenant: 'greedy' } });
    const e = assertError(short, 409, { code: 'insufficient_capacity' });
    assert.equal(e.available, 3);
    assert.equal(e.requested, 4);
    const noModel = assertError(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, count: 1, gpu_model: 'B200', tenant: 'g' } }), 409);
    assert.equal(noModel.available, 0);
    assertError(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: 99999999, count: 1, tenant: 'g' } }), 409);

    const list = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}`));
    assert.ok(list.items.every((r) => r.state === 'available' && r.tenant === null && r.version === 1));
    for (const r of rs) assert.deepEqual(ok(await h.s.api('GET', `/api/v1/resources/${r.id}`)).allocations, []);
    assert.equal(ok(await h.s.api('GET', '/api/v1/audit')).total, auditBefore);

    // Exactly the available number succeeds.
    const all = ok(await h.s.api('POST', '/api/v1/allocations',
      { body: { datacenter_id: dc.id, count: 3, min_gpus: 8, tenant: 'fits' } }), 201);
    assert.equal(all.items.length, 3);
  });

  test('bulk allocation requests are validated', async () => {
    const dc = await mkDc(h.s);
    const p = (body) => h.s.api('POST', '/api/v1/allocations', { body });
    assertError(await p({ datacenter_id: dc.id }), 400, { field: 'tenant' });
    assertError(await p({ tenant: 't' }), 400, { field: 'datacenter_id' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', kind: 'toaster' }), 400, { field: 'kind' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', count: 0 }), 400, { field: 'count' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', count: 1001 }), 400, { field: 'count' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', count: '2' }), 400, { field: 'count' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', min_gpus: -1 }), 400, { field: 'min_gpus' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', gpu_model: 3 }), 400, { field: 'gpu_model' });
    assertError(await p({ datacenter_id: dc.id, tenant: 't', priority: 1 }), 400, { field: 'priority' });
  });

  test('concurrent single and bulk allocations never double-allocate', async () => {
    const dc = await mkDc(h.s);
    const servers = [];
    for (let i = 0; i < 20; i++) servers.push(await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 }));
    const ids = servers.map((s) => s.id);

    // Interleave the two kinds (one bulk, then four singles, fifty times)
    // so they really race; all 250 requests are in flight at once.
    const single = (i) => {
      const id = ids[(i * 7) % ids.length];
      return h.s.api('POST', `/api/v1/resources/${id}/allocate`, { body: { tenant: `s${i}`, project: 'race' } })
        .then((r) => ({ kind: 'single', id, i, r }));
    };
    const bulk = (i) => {
      const count = 2 + (i % 2);
      return h.s.api('POST', '/api/v1/allocations',
        { body: { datacenter_id: dc.id, count, gpu_model: 'H100', min_gpus: 8, tenant: `b${i}`, project: 'race' } })
        .then((r) => ({ kind: 'bulk', count, i, r }));
    };
    const pending = [];
    for (let g = 0; g < 50; g++) {
      pending.push(bulk(g));
      for (let k = 0; k < 4; k++) pending.push(single(g * 4 + k));
    }
    const results = await Promise.all(pending);

    const granted = new Map(); // resource id -> tenant that got it
    let okSingles = 0;
    let okBulks = 0;
    for (const { kind, r, i, id, count } of results) {
      assert.ok(r.status === 200 || r.status === 201 || r.status === 409,
        `${kind} ${i}: unexpected ${r.status} ${r.text}`);
      if (r.status === 409) {
        assertError(r, 409);
        assert.ok(['not_available', 'insufficient_capacity'].includes(r.json.error.code), r.text);
        continue;
      }
      if (kind === 'single') {
        assert.equal(r.status, 200);
        assert.equal(r.json.id, id);
        assert.equal(r.json.tenant, `s${i}`);
        assert.ok(!granted.has(id), `resource ${id} granted twice`);
        granted.set(id, `s${i}`);
        okSingles += 1;
      } else {
        assert.equal(r.status, 201);
        assert.equal(r.json.items.length, count);
        for (const it of r.json.items) {
          assert.equal(it.tenant, `b${i}`);
          assert.ok(!granted.has(it.id), `resource ${it.id} granted twice`);
          granted.set(it.id, `b${i}`);
        }
        okBulks += 1;
      }
    }
    assert.ok(okSingles > 0, 'some single allocation must succeed');
    assert.ok(granted.size <= 20);

    // The stored state agrees with the answers.
    const inUse = await listAll(h.s, `/api/v1/resources?datacenter=${dc.id}&state=in_use`);
    assert.equal(inUse.total, granted.size);
    for (const r of inUse.items) assert.equal(r.tenant, granted.get(r.id), `resource ${r.id}`);
    let intervals = 0;
    for (const id of ids) {
      const got = ok(await h.s.api('GET', `/api/v1/resources/${id}`));
      const open = got.allocations.filter((a) => a.ended_at === null);
      assert.ok(open.length <= 1, `resource ${id} has ${open.length} open intervals`);
      assert.equal(open.length, granted.has(id) ? 1 : 0);
      if (open.length) assert.equal(open[0].tenant, granted.get(id));
      intervals += got.allocations.length;
    }
    assert.equal(intervals, granted.size, 'one interval per successful allocation');
    const audit = await listAll(h.s, '/api/v1/audit?entity=resource&limit=1000');
    const allocAudits = audit.items.filter((a) => a.action === 'allocate' && ids.includes(a.entity_id));
    assert.equal(allocAudits.length, granted.size);
    // Everything is taken now, so one more of each kind is a clean 409.
    if (granted.size === 20) {
      assertError(await h.s.api('POST', '/api/v1/allocations',
        { body: { datacenter_id: dc.id, count: 1, tenant: 'late' } }), 409, { code: 'insufficient_capacity' });
    }
    if (process.env.GI_TEST_VERBOSE) console.log({ okSingles, okBulks, granted: granted.size });
    // okBulks is informative only: how many bulk requests won a share.
    assert.ok(okBulks >= 0);
  });
});
