// Resources of every kind: attributes, validation that names the field,
// uniqueness, list filters and sorting, optimistic versions, state rules,
// metadata.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, listAll, uniq } from './helpers.mjs';

describe('resources', () => {
  const h = useServer();
  let dc;
  let dc2;
  const post = (body) => h.s.api('POST', '/api/v1/resources', { body });

  test('setup', async () => {
    dc = await mkDc(h.s);
    dc2 = await mkDc(h.s);
  });

  test('the kinds catalogue lists every kind and state', async () => {
    const k = ok(await h.s.api('GET', '/api/v1/kinds'));
    assert.deepEqual(k.kinds.map((x) => x.kind), ['server', 'vm', 'storage', 'switch', 'infiniband']);
    assert.deepEqual(k.states, ['available', 'in_use', 'reserved', 'maintenance', 'retired']);
    const storage = k.kinds.find((x) => x.kind === 'storage');
    assert.deepEqual(storage.fields.find((f) => f.name === 'storage_type').choices, ['block', 'file', 'object']);
  });

  test('each kind is created with its attributes and reads back the same', async () => {
    const server = {
      kind: 'server', name: 'gpu-node-01', gpu_model: 'H100', gpu_count: 8, hostname: 'gpu-node-01.example',
      serial: 'SN123', vendor: 'Supermicro', model: 'SYS-821GE', rack: 'R01', row: 'A', position: 42,
      cpu: 'Xeon 8480+', cpu_cores: 112, memory_gb: 2048, asset_tag: 'AT-1',
    };
    const s = ok(await post({ datacenter_id: dc.id, ...server }), 201);
    const vm = { kind: 'vm', name: 'vm-01', host_id: s.id, hostname: 'vm-01.example', vcpu: 16, memory_gb: 64,
      image: 'ubuntu-24.04', gpu_model: 'H100', gpu_count: 1 };
    const storage = { kind: 'storage', name: 'st-01', storage_type: 'object', capacity_tb: 512.5, protocol: 'S3',
      vendor: 'VAST', model: 'Ceres', serial: 'ST9', rack: 'R02' };
    const sw = { kind: 'switch', name: 'sw-01', vendor: 'Arista', model: '7060X', ports: 64, speed_gbps: 400,
      mgmt_address: '10.0.0.2', serial: 'SW1', rack: 'R03' };
    const ib = { kind: 'infiniband', name: 'ib-01', fabric: 'fab-a', device_type: 'switch', generation: 'NDR',
      ports: 64, vendor: 'NVIDIA', model: 'QM9700', serial: 'IB1', rack: 'R04' };
    const made = [s];
    for (const body of [vm, storage, sw, ib]) made.push(ok(await post({ datacenter_id: dc.id, ...body }), 201));
    const sent = [server, vm, storage, sw, ib];
    for (const [i, r] of made.entries()) {
      for (const [key, value] of Object.entries(sent[i])) assert.deepEqual(r[key], value, `${sent[i].kind}.${key}`);
      assert.equal(r.datacenter_id, dc.id);
      assert.equal(r.datacenter, dc.name);
      assert.equal(r.state, 'available');
      assert.equal(r.version, 1);
      const got = ok(await h.s.api('GET', `/api/v1/resources/${r.id}`));
      assert.deepEqual(got.allocations, []);
      delete got.allocations;
      // A server's GET adds what discovery reports of it.
      if (got.kind === 'server') assert.equal(got.discovered.count, 0);
      delete got.discovered;
      assert.deepEqual(got, r);
    }
    // Text-typed numbers are not numbers in JSON.
    assertError(await post({ datacenter_id: dc.id, kind: 'switch', name: uniq('sw'), ports: '48' }), 400, { field: 'ports' });
  });

  test('validation errors name the field', async () => {
    const srv = await mkRes(h.s, dc.id);
    const otherDcServer = await mkRes(h.s, dc2.id);
    const sw = await mkRes(h.s, dc.id, { kind: 'switch' });
    const base = { datacenter_id: dc.id, kind: 'server', name: uniq('v') };
    const cases = [
      [{ ...base, kind: 'storage', storage_type: 'tape' }, 'storage_type'],
      [{ ...base, kind: 'infiniband', generation: 'SDR' }, 'generation'],
      [{ ...base, kind: 'infiniband', device_type: 'cable' }, 'device_type'],
      [{ ...base, position: 101 }, 'position'],
      [{ ...base, position: -1 }, 'position'],
      [{ ...base, cpu_cores: 5000 }, 'cpu_cores'],
      [{ ...base, kind: 'switch', speed_gbps: 1601 }, 'speed_gbps'],
      [{ ...base, kind: 'storage', capacity_tb: -0.5 }, 'capacity_tb'],
      [{ ...base, kind: 'storage', capacity_tb: 'big' }, 'capacity_tb'],
      [{ ...base, gpu_count: 1025, gpu_model: 'H100' }, 'gpu_count'],
      [{ ...base, ports: 48 }, 'ports'], // a switch attribute on a server
      [{ ...base, colour: 'blue' }, 'colour'],
      [{ ...base, cpu_cores: 'many' }, 'cpu_cores'],
      [{ ...base, cpu_cores: 1.5 }, 'cpu_cores'],
      [{ ...base, hostname: 42 }, 'hostname'],
      [{ ...base, rack: 'r'.repeat(33) }, 'rack'],
      [{ ...base, gpu_count: 4 }, 'gpu_model'],
      [{ ...base, gpu_count: '4', gpu_model: 'H100' }, 'gpu_count'],
      [{ ...base, kind: 'vm', host_id: sw.id }, 'host_id'],
      [{ ...base, kind: 'vm', host_id: otherDcServer.id }, 'host_id'],
      [{ ...base, kind: 'vm', host_id: 99999999 }, 'host_id'],
      [{ ...base, kind: 'vm', host_id: 0 }, 'host_id'],
      [{ kind: 'server', name: uniq('v') }, 'datacenter_id'],
      [{ ...base, datacenter_id: null }, 'datacenter_id'],
      [{ ...base, datacenter_id: 'one' }, 'datacenter_id'],
      [{ ...base, datacenter_id: 99999999 }, 'datacenter_id'],
      [{ ...base, kind: 'toaster' }, 'kind'],
      [{ ...base, kind: undefined }, 'kind'],
      [{ ...base, name: '' }, 'name'],
      [{ ...base, name: undefined }, 'name'],
      [{ ...base, name: 'n'.repeat(129) }, 'name'],
      [{ ...base, state: 'broken' }, 'state'],
      [{ ...base, state: 'in_use' }, 'tenant'],
      [{ ...base, tenant: 'acme' }, 'tenant'],
      [{ ...base, metadata: [1, 2] }, 'metadata'],
      [{ ...base, metadata: { nested: { a: 1 } } }, 'metadata'],
      [{ ...base, metadata: { ['k'.repeat(65)]: 'x' } }, 'metadata'],
    ];
    for (const [body, field] of cases) {
      const r = await post(body);
      assertError(r, 400, { code: 'validation_failed', field });
    }
    // A vm on a server of its own data center is fine.
    ok(await post({ ...base, kind: 'vm', host_id: srv.id }), 201);
    // Nothing invalid was stored.
    const all = await listAll(h.s, `/api/v1/resources?datacenter=${dc.id}&limit=1000`);
    assert.ok(all.items.every((r) => r.name !== 'n'.repeat(129) && r.kind !== 'toaster'));
  });

  test('a name is unique per data center and kind', async () => {
    const name = uniq('dup');
    await mkRes(h.s, dc.id, { name });
    assertError(await post({ datacenter_id: dc.id, kind: 'server', name }), 409, { code: 'conflict', field: 'name' });
    ok(await post({ datacenter_id: dc.id, kind: 'switch', name }), 201);
    ok(await post({ datacenter_id: dc2.id, kind: 'server', name }), 201);
    // Renaming onto a taken name is a conflict too.
    const other = await mkRes(h.s, dc.id);
    assertError(await h.s.api('PATCH', `/api/v1/resources/${other.id}`, { body: { name } }), 409, { field: 'name' });
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources/${other.id}`)).name, other.name);
  });

  test('list filters by datacenter, kind, state, tenant, project and q, and sorts', async () => {
    const d = await mkDc(h.s);
    const tag = uniq('flt');
    const a = await mkRes(h.s, d.id, { name: `${tag}-c`, gpu_model: 'H100', gpu_count: 8, hostname: 'alpha.example' });
    const b = await mkRes(h.s, d.id, { name: `${tag}-a`, gpu_model: 'A100', gpu_count: 4 });
    const c = await mkRes(h.s, d.id, { name: `${tag}-b`, gpu_model: 'L4', gpu_count: 1, state: 'maintenance' });
    const sw = await mkRes(h.s, d.id, { kind: 'switch', name: `${tag}-sw` });
    const st = await mkRes(h.s, d.id, { kind: 'storage', name: `${tag}-st`, state: 'reserved', tenant: 'acme' });
    ok(await h.s.api('POST', `/api/v1/resources/${a.id}/allocate`, { body: { tenant: 'acme', project: 'llm' } }));
    ok(await h.s.api('POST', `/api/v1/resources/${b.id}/allocate`, { body: { tenant: 'globex', project: 'llm' } }));
    const ids = async (q) => ok(await h.s.api('GET', `/api/v1/resources?datacenter=${d.id}&${q}`)).items.map((r) => r.id);
    const sorted = (xs) => [...xs].sort((x, y) => x - y);

    assert.deepEqual(await ids(''), [a.id, b.id, c.id, sw.id, st.id]);
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources?datacenter=${d.id}`)).total, 5);
    assert.deepEqual(await ids('kind=server'), [a.id, b.id, c.id]);
    assert.deepEqual(await ids('kind=switch'), [sw.id]);
    assert.deepEqual(await ids('state=in_use'), [a.id, b.id]);
    assert.deepEqual(await ids('state=maintenance'), [c.id]);
    assert.deepEqual(await ids('state=available'), [sw.id]);
    assert.deepEqual(await ids('tenant=acme'), [a.id, st.id]);
    assert.deepEqual(await ids('tenant=acme&kind=server'), [a.id]);
    assert.deepEqual(await ids('project=llm'), [a.id, b.id]);
    assert.deepEqual(await ids('project=llm&tenant=globex'), [b.id]);
    assert.deepEqual(await ids(`q=${tag}-s`), [sw.id, st.id]);
    assert.deepEqual(await ids('q=alpha.exa'), [a.id]); // attributes are searched
    assert.deepEqual(await ids('q=glob'), [b.id]); // and tenants
    assert.deepEqual(await ids('tenant=nobody'), []);
    // Without datacenter, the filters apply across data centers.
    const acrossKind = ok(await h.s.api('GET', `/api/v1/resources?kind=storage&q=${tag}`));
    assert.deepEqual(acrossKind.items.map((r) => r.id), [st.id]);

    assert.deepEqual(await ids('kind=server&sort=name'), [b.id, c.id, a.id]);
    assert.deepEqual(await ids('kind=server&sort=-name'), [a.id, c.id, b.id]);
    assert.deepEqual(await ids('kind=server&sort=gpu_count'), [c.id, b.id, a.id]);
    assert.deepEqual(await ids('kind=server&sort=-gpu_count'), [a.id, b.id, c.id]);
    assert.deepEqual(await ids('kind=server&sort=gpu_model'), [b.id, a.id, c.id]);
    assert.deepEqual(await ids('sort=-id'), sorted([a.id, b.id, c.id, sw.id, st.id]).reverse());
    assert.deepEqual(await ids('sort=kind&limit=2'), [a.id, b.id]);
    assertError(await h.s.api('GET', '/api/v1/resources?sort=attrs'), 400, { field: 'sort' });

    const paged = await listAll(h.s, `/api/v1/resources?datacenter=${d.id}&sort=name&limit=2`);
    assert.deepEqual(paged.items.map((r) => r.name), [b, c, a, sw, st].map((r) => r.name).sort());
  });

  test('PATCH checks the version it was given', async () => {
    const r = await mkRes(h.s, dc.id, { rack: 'R1' });
    const v2 = ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { rack: 'R2', version: 1 } }));
    assert.equal(v2.version, 2);
    assert.equal(v2.rack, 'R2');
    const stale = await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { rack: 'R3', version: 1 } });
    assertError(stale, 409, { code: 'conflict', field: 'version' });
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources/${r.id}`)).rack, 'R2');
    // A stale version with a rename is still a version conflict, not a name one.
    const renamed = await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { name: uniq('nn'), version: 1 } });
    assertError(renamed, 409, { field: 'version' });
    // A move into a data center where the name is taken is a name conflict.
    await mkRes(h.s, dc2.id, { name: r.name });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { datacenter_id: dc2.id } }), 409,
      { field: 'name' });
    // Without a version the update applies to the current one.
    assert.equal(ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { rack: 'R4' } })).version, 3);
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { version: 'x' } }), 400, { field: 'version' });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { kind: 'switch' } }), 400, { field: 'kind' });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { position: 500 } }), 400, { field: 'position' });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { ports: 4 } }), 400, { field: 'ports' });
    assertError(await h.s.api('PATCH', '/api/v1/resources/99999999', { body: { rack: 'x' } }), 404);
    // null removes an attribute.
    const cleared = ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { rack: null } }));
    assert.equal(cleared.rack, undefined);
  });

  test('moving out of a held state clears tenant and project', async () => {
    const r = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
    const held = ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`,
      { body: { state: 'in_use', tenant: 'acme', project: 'p' } }));
    assert.equal(held.tenant, 'acme');
    const m = ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { state: 'maintenance' } }));
    assert.equal(m.state, 'maintenance');
    assert.equal(m.tenant, null);
    assert.equal(m.project, null);
    const got = ok(await h.s.api('GET', `/api/v1/resources/${r.id}`));
    assert.equal(got.tenant, null);
    // The PATCH-made tenancy is an interval in the history, closed now.
    assert.equal(got.allocations.length, 1);
    assert.equal(got.allocations[0].tenant, 'acme');
    assert.ok(got.allocations[0].ended_at);
    // A tenant on a resource that is not held is refused.
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { tenant: 'x' } }), 400, { field: 'tenant' });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { state: 'in_use' } }), 400, { field: 'tenant' });
  });

  test('metadata round-trips', async () => {
    const metadata = { owner: 'team-a', cost_center: 4711, critical: true, ratio: 0.25, note: 'a "quoted", value',
      'ünï': 'cödé' };
    const r = await mkRes(h.s, dc.id, { metadata });
    assert.deepEqual(r.metadata, metadata);
    assert.deepEqual(ok(await h.s.api('GET', `/api/v1/resources/${r.id}`)).metadata, metadata);
    const listed = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}&q=${encodeURIComponent(r.name)}`));
    assert.deepEqual(listed.items[0].metadata, metadata);
    const patched = ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { metadata: { owner: 'team-b' } } }));
    assert.deepEqual(patched.metadata, { owner: 'team-b' });
    // Without metadata a resource has an empty object.
    const plain = await mkRes(h.s, dc.id);
    assert.deepEqual(plain.metadata, {});
  });

  test('DELETE removes a resource; a missing one is 404', async () => {
    const r = await mkRes(h.s, dc.id);
    const del = await h.s.api('DELETE', `/api/v1/resources/${r.id}`);
    assert.equal(del.status, 204);
    assertError(await h.s.api('GET', `/api/v1/resources/${r.id}`), 404);
    assertError(await h.s.api('DELETE', `/api/v1/resources/${r.id}`), 404);
    // Its name is free again.
    ok(await post({ datacenter_id: dc.id, kind: 'server', name: r.name }), 201);
  });
});
