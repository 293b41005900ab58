// Reads of a token confined to data centers: a single read of anything
// outside its data centers (an asset and everything under it, a GPU and
// its sub-resources, a host, a ticket, a resource, a room audit, a data
// center's overview) answers 404 exactly as for a thing that does not
// exist; a thing in no data center is outside every scope; the lists of
// GPUs, hosts, tickets and drift are narrowed to its data centers; usage
// and insights are forced to its data center and the reports that cannot
// be narrowed are refused. The same reads by an unconfined token answer.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, uniq, listAll } from './helpers.mjs';

const hex = (n, w) => n.toString(16).padStart(w, '0');
const now = () => Math.floor(Date.now() / 1000);

describe('token data-center scope: reads', () => {
  const h = useServer();
  let dcA, dcB, pusher, viewer, both;
  const A = {}, B = {}, none = {};
  let seq = 0;

  /** Pushes one host with one GPU; returns the GPU's UUID. */
  async function report(hostname) {
    seq += 1;
    const uuid = `GPU-${hex(process.pid, 8)}-${hex(seq, 4)}-4000-8000-${hex(seq * 7919, 12)}`;
    const r = await h.s.api('POST', '/api/v1/ingest', {
      auth: pusher.token,
      body: {
        batch_id: `reads-${process.pid}-${seq}`, host: { hostname },
        gpus: [{ uuid, index: 0, name: 'NVIDIA A100 80GB PCIe', memory_total_mib: 81920 }],
        samples: [{ time: now() - 5, gpu: uuid, util_avg: 40, util_max: 50 }],
      },
    });
    assert.equal(r.status, 201, r.text);
    return uuid;
  }
  const hostNamed = async (name) => ok(await h.s.api('GET', `/api/v1/hosts?q=${name}`)).items.find((x) => x.hostname === name);

  /** One data center's things: an asset, a server, a host linked to it
   * with a GPU, tickets on the asset and on the GPU, a room audit. */
  async function populate(side, dc) {
    side.tag = uniq('RD');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: side.tag, kind: 'server', location: { datacenter: dc.name, room: 'r1' } } }), 201);
    side.res = await mkRes(h.s, dc.id);
    side.hostname = uniq('host');
    side.uuid = await report(side.hostname);
    const host = await hostNamed(side.hostname);
    ok(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: side.res.id } }));
    side.host = ok(await h.s.api('GET', `/api/v1/hosts/${host.id}`));
    assert.equal(side.host.datacenter_id, dc.id);
    side.ticket = ok(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: side.tag, title: 'check fans' } }), 201);
    side.gpuTicket = ok(await h.s.api('POST', '/api/v1/tickets', { body: { gpu_uuid: side.uuid, title: 'XID 79' } }), 201);
    side.audit = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dc.name, room: 'r1' } } }), 201);
  }

  /** Every single-item read of one side's things. */
  const reads = (side, dc) => [
    `/api/v1/assets/${side.tag}`,
    `/api/v1/assets/${side.tag}/label.svg`,
    `/api/v1/assets/${side.tag}/events`,
    `/api/v1/assets/${side.tag}/conflicts`,
    `/api/v1/assets/${side.tag}/health`,
    `/api/v1/sync-conflicts?asset=${side.tag}`,
    `/api/v1/sync-pushes?asset=${side.tag}`,
    `/api/v1/gpus/${side.uuid}`,
    `/api/v1/gpus/${side.uuid}/timeline`,
    `/api/v1/gpus/${side.uuid}/owner`,
    `/api/v1/hosts/${side.host.id}`,
    `/api/v1/hosts/${side.hostname}/owner`,
    `/api/v1/tickets/${side.ticket.id}`,
    `/api/v1/tickets/${side.gpuTicket.id}`,
    `/api/v1/resources/${side.res.id}`,
    `/api/v1/resources/${side.res.id}/owner`,
    `/api/v1/audits/${side.audit.id}`,
    `/api/v1/datacenters/${dc.id}/overview`,
  ];

  /** The same reads of things that do not exist. */
  const missing = [
    '/api/v1/assets/NO-SUCH-TAG', '/api/v1/assets/NO-SUCH-TAG/label.svg', '/api/v1/assets/NO-SUCH-TAG/events',
    '/api/v1/assets/NO-SUCH-TAG/conflicts', '/api/v1/assets/NO-SUCH-TAG/health',
    '/api/v1/sync-conflicts?asset=NO-SUCH-TAG', '/api/v1/sync-pushes?asset=NO-SUCH-TAG',
    '/api/v1/gpus/GPU-00000000-0000-0000-0000-000000000000',
    '/api/v1/gpus/GPU-00000000-0000-0000-0000-000000000000/timeline',
    '/api/v1/gpus/GPU-00000000-0000-0000-0000-000000000000/owner',
    '/api/v1/hosts/99999999', '/api/v1/hosts/no-such-host/owner',
    '/api/v1/tickets/99999999', '/api/v1/tickets/99999999',
    '/api/v1/resources/99999999', '/api/v1/resources/99999999/owner',
    '/api/v1/audits/99999999', '/api/v1/datacenters/99999999/overview',
  ];

  test('setup: two data centers with an asset, server, host, GPU, tickets and an audit each', async () => {
    dcA = await mkDc(h.s);
    dcB = await mkDc(h.s);
    pusher = await mkToken(h.s, 'pusher');
    await populate(A, dcA);
    await populate(B, dcB);
    // a host linked to nothing, its GPU and a ticket on it: in no data center
    none.hostname = uniq('loose');
    none.uuid = await report(none.hostname);
    none.host = await hostNamed(none.hostname);
    none.ticket = ok(await h.s.api('POST', '/api/v1/tickets', { body: { gpu_uuid: none.uuid, title: 'loose' } }), 201);
    viewer = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('va'), role: 'viewer', datacenters: [dcA.id] } }), 201);
    both = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('vab'), role: 'viewer', datacenters: [dcA.id, dcB.id] } }), 201);
  });

  test("every single read of A's things answers the confined token", async () => {
    for (const p of reads(A, dcA)) {
      const r = await h.s.api('GET', p, { auth: viewer.token });
      assert.equal(r.status, 200, `${p}: ${r.text}`);
    }
  });

  test("every single read of B's things is a 404 the same as for a thing that does not exist", async () => {
    const outside = reads(B, dcB);
    assert.equal(outside.length, missing.length);
    for (let i = 0; i < outside.length; i++) {
      const r = await h.s.api('GET', outside[i], { auth: viewer.token });
      const m = await h.s.api('GET', missing[i], { auth: viewer.token });
      assert.equal(r.status, 404, `${outside[i]}: ${r.status} ${r.text}`);
      assert.equal(m.status, 404, `${missing[i]}: ${m.status} ${m.text}`);
      assert.deepEqual(r.json, m.json, `${outside[i]} must read as ${missing[i]}`);
    }
  });

  test('the unconfined admin and a token confined to both read B', async () => {
    for (const p of reads(B, dcB)) {
      assert.equal((await h.s.api('GET', p)).status, 200, p);
      assert.equal((await h.s.api('GET', p, { auth: both.token })).status, 200, p);
    }
  });

  test('a thing in no data center is outside every scope', async () => {
    for (const p of [`/api/v1/gpus/${none.uuid}`, `/api/v1/hosts/${none.host.id}`, `/api/v1/tickets/${none.ticket.id}`]) {
      assertError(await h.s.api('GET', p, { auth: viewer.token }), 404, { code: 'not_found' });
      ok(await h.s.api('GET', p));
    }
  });

  test('the lists of GPUs, hosts, tickets and drift hold only A', async () => {
    const gpus = (await listAll(h.s, '/api/v1/gpus', { auth: viewer.token })).items.map((g) => g.uuid);
    assert.deepEqual(gpus, [A.uuid]);
    const hosts = (await listAll(h.s, '/api/v1/hosts', { auth: viewer.token })).items.map((x) => x.id);
    assert.deepEqual(hosts, [A.host.id]);
    const tickets = (await listAll(h.s, '/api/v1/tickets', { auth: viewer.token })).items.map((t) => t.id).sort((x, y) => x - y);
    assert.deepEqual(tickets, [A.ticket.id, A.gpuTicket.id].sort((x, y) => x - y));
    ok(await h.s.api('GET', '/api/v1/drift', { auth: viewer.token }));
    // the admin sees everything, and may filter tickets by data center
    const all = (await listAll(h.s, '/api/v1/tickets')).items.map((t) => t.id);
    for (const t of [A.ticket, B.ticket, B.gpuTicket, none.ticket]) assert.ok(all.includes(t.id));
    const inB = (await listAll(h.s, `/api/v1/tickets?datacenter=${dcB.id}`)).items.map((t) => t.id).sort((x, y) => x - y);
    assert.deepEqual(inB, [B.ticket.id, B.gpuTicket.id].sort((x, y) => x - y));
  });

  test("a list filter on B is 403; a token of several data centers lists all of them or one", async () => {
    for (const p of ['/api/v1/gpus', '/api/v1/hosts', '/api/v1/tickets', '/api/v1/drift']) {
      assertError(await h.s.api('GET', `${p}?datacenter=${dcB.id}`, { auth: viewer.token }), 403, { code: 'forbidden', field: 'datacenter' });
      ok(await h.s.api('GET', p, { auth: both.token }));
      ok(await h.s.api('GET', `${p}?datacenter=${dcB.id}`, { auth: both.token }));
    }
    const sorted = (xs) => [...xs].sort();
    const gpusAB = (await listAll(h.s, '/api/v1/gpus?limit=1', { auth: both.token })).items.map((g) => g.uuid);
    assert.deepEqual(sorted(gpusAB), sorted([A.uuid, B.uuid]));
    const hostsAB = (await listAll(h.s, '/api/v1/hosts?limit=1', { auth: both.token })).items.map((x) => x.id);
    assert.deepEqual(sorted(hostsAB), sorted([A.host.id, B.host.id]));
    const ticketsAB = (await listAll(h.s, '/api/v1/tickets', { auth: both.token })).items.map((t) => t.id);
    assert.deepEqual(sorted(ticketsAB), sorted([A.ticket.id, A.gpuTicket.id, B.ticket.id, B.gpuTicket.id]));
    const gpusB = ok(await h.s.api('GET', `/api/v1/gpus?datacenter=${dcB.id}`, { auth: both.token })).items.map((g) => g.uuid);
    assert.deepEqual(gpusB, [B.uuid]);
  });

  test('/metrics counts the whole fleet: refused to a confined token, served to an unconfined one', async () => {
    for (const t of [viewer, both]) {
      const r = assertError(await h.s.api('GET', '/metrics', { auth: t.token }), 403, { code: 'forbidden', field: 'datacenter' });
      assert.match(r.message, /\/metrics/);
    }
    const m = await h.s.api('GET', '/metrics');
    assert.equal(m.status, 200, m.text);
    assert.match(m.text, /^gpuinv_gpus \d+$/m);
  });

  test('usage, insights and showback are forced to the data center; unmatched billing is refused', async () => {
    ok(await h.s.api('GET', '/api/v1/usage', { auth: viewer.token }));
    ok(await h.s.api('GET', `/api/v1/usage?datacenter=${encodeURIComponent(dcA.name)}`, { auth: viewer.token }));
    assertError(await h.s.api('GET', `/api/v1/usage?datacenter=${encodeURIComponent(dcB.name)}`, { auth: viewer.token }), 403, { code: 'forbidden', field: 'datacenter' });
    ok(await h.s.api('GET', '/api/v1/usage', { auth: both.token }));
    ok(await h.s.api('GET', '/api/v1/insights/idle', { auth: viewer.token }));
    assertError(await h.s.api('GET', `/api/v1/insights/idle?datacenter=${dcB.id}`, { auth: viewer.token }), 403, { code: 'forbidden' });
    assert.deepEqual(ok(await h.s.api('GET', '/api/v1/reports/showback', { auth: viewer.token })).datacenter_ids, [dcA.id]);
    assertError(await h.s.api('GET', `/api/v1/reports/showback?datacenter=${dcB.id}`, { auth: viewer.token }), 403, { code: 'forbidden', field: 'datacenter' });
    assertError(await h.s.api('GET', '/api/v1/billing/unmatched', { auth: viewer.token }), 403, { code: 'forbidden' });
    ok(await h.s.api('GET', '/api/v1/reports/showback'));
  });
});
