// Discovery matched to inventory: the matching order (serial, machine id,
// host name), manual links that win and are audited, the GPU and server
// documents that carry the link, drift of every kind with its expected and
// found values, its filters, and the data-center overview's two GPU figures.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkDc, mkRes, mkToken, uniq, parseCsv } from './helpers.mjs';

const h = useServer();
let push;
let seq = 0;

const now = () => Math.floor(Date.now() / 1000);
const hex = (n, w) => n.toString(16).padStart(w, '0');

/** Pushes one host with n GPUs of `model` at utilization `util` (null: no samples). */
async function report(host, { n = 8, model = 'NVIDIA H100 80GB HBM3', util = 0, tag } = {}) {
  seq += 1;
  const t = tag || host.hostname;
  const base = [...t].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7);
  const gpus = Array.from({ length: n }, (_, i) => ({
    uuid: `GPU-${hex(base, 8)}-${hex(i, 4)}-4000-8000-${hex(n, 12)}`,
    index: i, name: model, serial: `S${base}-${i}`, memory_total_mib: 81559,
  }));
  const samples = util === null ? [] : gpus.map((g) => ({ time: now() - 5, gpu: g.uuid, util_avg: util, util_max: util }));
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: push, body: { batch_id: `b-${process.pid}-${seq}`, host, gpus, samples } });
  assert.equal(r.status, 201, r.text);
  return gpus.map((g) => g.uuid);
}

/** A server declaring H100s unless told otherwise. */
async function mkServer(dcId, fields) {
  return mkRes(h.s, dcId, { gpu_model: 'NVIDIA H100 80GB HBM3', ...fields });
}

async function hostByName(name) {
  const l = ok(await h.s.api('GET', `/api/v1/hosts?q=${encodeURIComponent(name)}`));
  const found = l.items.find((x) => x.hostname === name);
  assert.ok(found, `host ${name} listed: ${JSON.stringify(l.items)}`);
  return found;
}

async function drift(query = '') {
  return ok(await h.s.api('GET', `/api/v1/drift${query}`));
}

let dcA, dcB;
test('setup', async () => {
  push = (await mkToken(h.s, 'pusher')).token;
  dcA = await mkDc(h.s);
  dcB = await mkDc(h.s);
});

test('a serial match beats a host-name match, and the host follows its server\'s data center', async () => {
  const bySerial = await mkServer(dcA.id, { name: uniq('alpha'), serial: 'SER-ALPHA-1', gpu_count: 8, gpu_model: 'H100' });
  const byName = await mkServer(dcB.id, { name: uniq('bravo'), gpu_count: 8 });
  // The host is named like one server but carries the other's serial.
  await report({ hostname: byName.name, serial: 'ser-alpha-1 ', machine_id: 'mid-' + byName.name });
  const host = await hostByName(byName.name);
  assert.equal(host.resource_id, bySerial.id);
  assert.equal(host.rule, 'serial');
  assert.equal(host.manual, false);
  assert.equal(host.datacenter_id, dcA.id);
  assert.equal(host.gpus, 8);
});

test('machine id, then full host name, then short name', async () => {
  const mid = await mkServer(dcA.id, { name: uniq('mid'), machine_id: 'ABCDEF0123456789', gpu_count: 8 });
  await report({ hostname: uniq('other-name'), machine_id: 'abcdef0123456789' }, { tag: 'mid-host' });
  const l1 = ok(await h.s.api('GET', `/api/v1/hosts?q=${encodeURIComponent('abcdef0123456789')}`));
  assert.equal(l1.items.length, 1);
  assert.equal(l1.items[0].resource_id, mid.id);
  assert.equal(l1.items[0].rule, 'machine_id');

  const full = await mkServer(dcA.id, { name: uniq('fullsrv'), hostname: 'Node-Full.Lab.Example', gpu_count: 8 });
  await report({ hostname: 'node-full.lab.example' });
  const hf = await hostByName('node-full.lab.example');
  assert.equal(hf.resource_id, full.id);
  assert.equal(hf.rule, 'hostname');

  const short = await mkServer(dcB.id, { name: uniq('shortsrv'), gpu_count: 8 });
  await report({ hostname: `${short.name.toUpperCase()}.dc.example` });
  const hs = await hostByName(`${short.name.toUpperCase()}.dc.example`);
  assert.equal(hs.resource_id, short.id);
  assert.equal(hs.rule, 'hostname');
  assert.equal(hs.datacenter_id, dcB.id);
});

test('a GPU carries its server; the server carries the same GPUs', async () => {
  const srv = await mkServer(dcA.id, { name: uniq('joined'), serial: 'SER-JOINED', gpu_count: 8, gpu_model: 'H100', state: 'in_use', tenant: 'ml' });
  const hostname = uniq('joined-host');
  const uuids = await report({ hostname, serial: 'SER-JOINED' }, { util: 40 });
  const list = ok(await h.s.api('GET', `/api/v1/gpus?host=${hostname}`));
  assert.equal(list.items.length, 8);
  for (const g of list.items) assert.equal(g.resource_id, srv.id);
  const g = ok(await h.s.api('GET', `/api/v1/gpus/${uuids[0]}`));
  assert.equal(g.resource_id, srv.id);
  assert.deepEqual(g.resource, { id: srv.id, name: srv.name, datacenter_id: dcA.id, datacenter: dcA.name, rule: 'serial', manual: false });
  assert.equal(g.datacenter_id, dcA.id);

  const r = ok(await h.s.api('GET', `/api/v1/resources/${srv.id}`));
  assert.equal(r.discovered.count, 8);
  assert.deepEqual(r.discovered.models, ['NVIDIA H100 80GB HBM3']);
  assert.equal(r.discovered.in_use, 8);
  assert.equal(r.discovered.util_avg, 40);
  assert.equal(r.discovered.hosts.length, 1);
  assert.equal(r.discovered.hosts[0].hostname, hostname);
  assert.equal(r.discovered.hosts[0].rule, 'serial');
  assert.equal(r.discovered.hosts[0].manual, false);
  assert.deepEqual(r.discovered.gpus.map((x) => x.uuid).sort(), [...uuids].sort());
  for (const x of r.discovered.gpus) assert.equal(x.state, 'in_use');

  // A server nothing reports carries an empty figure; an unlinked GPU a null link.
  const lone = await mkServer(dcA.id, { name: uniq('lone'), gpu_count: 2 });
  const rl = ok(await h.s.api('GET', `/api/v1/resources/${lone.id}`));
  assert.deepEqual(rl.discovered, { count: 0, models: [], util_avg: null, in_use: 0, hosts: [], gpus: [] });
  const stray = await report({ hostname: uniq('stray') });
  const gs = ok(await h.s.api('GET', `/api/v1/gpus/${stray[0]}`));
  assert.equal(gs.resource_id, null);
  assert.equal(gs.resource, null);
});

test('every drift kind appears with its expected and found values', async () => {
  const count = await mkServer(dcA.id, { name: uniq('count'), gpu_count: 8, gpu_model: 'NVIDIA H100', state: 'in_use', tenant: 't' });
  await report({ hostname: count.name }, { n: 6, util: 50 });
  const model = await mkServer(dcA.id, { name: uniq('model'), gpu_count: 8, gpu_model: 'A100', state: 'in_use', tenant: 't' });
  await report({ hostname: model.name }, { util: 1 });
  const okModel = await mkServer(dcA.id, { name: uniq('okmodel'), gpu_count: 8, gpu_model: 'H100 80GB', state: 'in_use', tenant: 't' });
  await report({ hostname: okModel.name }, { util: 1 });
  const maint = await mkServer(dcA.id, { name: uniq('maint'), gpu_count: 8, gpu_model: 'H100', state: 'maintenance' });
  await report({ hostname: maint.name }, { util: 90 });
  const avail = await mkServer(dcB.id, { name: uniq('avail'), gpu_count: 8, gpu_model: 'H100', state: 'available' });
  await report({ hostname: avail.name }, { util: 70 });
  const idle = await mkServer(dcB.id, { name: uniq('idle'), gpu_count: 8, gpu_model: 'H100', state: 'available' });
  await report({ hostname: idle.name }, { util: 2 });
  const never = await mkServer(dcB.id, { name: uniq('never'), gpu_count: 4 });
  const retiredNever = await mkServer(dcB.id, { name: uniq('retired'), gpu_count: 4, state: 'retired' });
  const orphan = uniq('orphan');
  await report({ hostname: orphan }, { n: 2 });
  await mkServer(dcA.id, { name: uniq('dup1'), serial: 'DUP-SERIAL', gpu_count: 8 });
  await mkServer(dcB.id, { name: uniq('dup2'), serial: 'DUP-SERIAL', gpu_count: 8 });
  const amb = uniq('amb');
  await report({ hostname: amb, serial: 'DUP-SERIAL' });

  const d = await drift('?limit=1000');
  assert.equal(d.total, d.items.length);
  const of = (kind, pred) => d.items.filter((x) => x.kind === kind && pred(x));
  const one = (kind, pred) => { const f = of(kind, pred); assert.equal(f.length, 1, `${kind}: ${JSON.stringify(d.items)}`); return f[0]; };

  const c = one('gpu_count_mismatch', (x) => x.resource_id === count.id);
  assert.deepEqual([c.expected, c.found, c.host, c.datacenter_id], [8, 6, count.name, dcA.id]);
  assert.match(c.message, /declares 8 GPUs/);
  const m = one('gpu_model_mismatch', (x) => x.resource_id === model.id);
  assert.deepEqual([m.expected, m.found], ['A100', 'NVIDIA H100 80GB HBM3']);
  assert.equal(of('gpu_model_mismatch', (x) => x.resource_id === okModel.id).length, 0, 'H100 80GB names NVIDIA H100 80GB HBM3');
  assert.equal(of('gpu_model_mismatch', (x) => x.resource_id === count.id).length, 0, 'NVIDIA H100 names it too');
  const rb = one('retired_busy', (x) => x.resource_id === maint.id);
  assert.deepEqual([rb.expected, rb.found], [0, 8]);
  const ub = one('unallocated_busy', (x) => x.resource_id === avail.id);
  assert.deepEqual([ub.expected, ub.found, ub.datacenter_id], [0, 8, dcB.id]);
  assert.equal(of('unallocated_busy', (x) => x.resource_id === idle.id).length, 0, 'idle GPUs are not busy');
  assert.equal(of('unallocated_busy', (x) => x.resource_id === count.id).length, 0, 'allocated servers may be busy');
  const ns = one('never_seen', (x) => x.resource_id === never.id);
  assert.deepEqual([ns.expected, ns.found, ns.host], [4, 0, null]);
  assert.equal(of('never_seen', (x) => x.resource_id === retiredNever.id).length, 0, 'retired servers are not expected');
  const uh = one('unlinked_host', (x) => x.host === orphan);
  assert.deepEqual([uh.resource_id, uh.found], [null, 2]);
  assert.equal(typeof uh.host_id, 'number');
  const am = one('ambiguous_match', (x) => x.host === amb);
  assert.equal(am.resource_id, null);
  assert.match(am.message, /serial 'dup-serial' fits 2 servers/);
  assert.equal(of('unlinked_host', (x) => x.host === amb).length, 0);
  const ah = await hostByName(amb);
  assert.equal(ah.resource_id, null);
  assert.equal(ah.rule, 'ambiguous');

  // Counts per kind, every kind present, agreeing with the items.
  for (const kind of ['gpu_count_mismatch', 'gpu_model_mismatch', 'retired_busy', 'unallocated_busy', 'unlinked_host', 'never_seen', 'ambiguous_match'])
    assert.equal(d.counts[kind], d.items.filter((x) => x.kind === kind).length, kind);

  // Filters: by kind, by data center, paged, and as CSV.
  const k = await drift('?kind=never_seen');
  assert.ok(k.items.length > 0);
  assert.ok(k.items.every((x) => x.kind === 'never_seen'));
  assert.equal(k.total, d.counts.never_seen);
  assert.deepEqual(k.counts, d.counts);
  const b = await drift(`?datacenter=${dcB.id}&limit=1000`);
  assert.ok(b.items.length > 0);
  assert.ok(b.items.every((x) => x.datacenter_id === dcB.id));
  assert.ok(b.items.some((x) => x.resource_id === avail.id));
  assert.ok(!b.items.some((x) => x.resource_id === count.id));
  const p1 = await drift('?limit=2');
  assert.equal(p1.items.length, 2);
  assert.equal(p1.next, '2');
  const p2 = await drift('?limit=2&cursor=2');
  assert.deepEqual(p2.items[0], d.items[2]);
  assertError(await h.s.api('GET', '/api/v1/drift?kind=bogus'), 400, { field: 'kind' });
  const csv = await h.s.api('GET', '/api/v1/drift?format=csv&kind=gpu_count_mismatch');
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type'), /text\/csv/);
  const rows = parseCsv(csv.text);
  const col = rows[0].indexOf('expected');
  assert.ok(col >= 0, rows[0].join(','));
  const row = rows.find((x) => x.includes(count.name));
  assert.ok(row, csv.text);
  assert.equal(row[col], '8');
});

test('manual link and unlink win over matching, are audited, and need admin', async () => {
  const srv = await mkServer(dcA.id, { name: uniq('manual'), serial: 'SER-MANUAL', gpu_count: 8 });
  const target = await mkServer(dcB.id, { name: uniq('target'), gpu_count: 8 });
  const hostname = uniq('manual-host');
  await report({ hostname, serial: 'SER-MANUAL' });
  let host = await hostByName(hostname);
  assert.equal(host.resource_id, srv.id);

  const editor = (await mkToken(h.s, 'editor')).token;
  assertError(await h.s.api('DELETE', `/api/v1/hosts/${host.id}/link`, { auth: editor }), 403);
  assertError(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: target.id }, auth: editor }), 403);

  host = ok(await h.s.api('DELETE', `/api/v1/hosts/${host.id}/link`));
  assert.deepEqual([host.resource_id, host.rule, host.manual], [null, 'manual', true]);
  // A new identity would match again; the manual "not linked" holds.
  await report({ hostname, serial: 'SER-MANUAL', machine_id: 'changed-mid' });
  host = ok(await h.s.api('GET', `/api/v1/hosts/${host.id}`));
  assert.equal(host.resource_id, null);
  const d = await drift('?kind=unlinked_host&limit=1000');
  const item = d.items.find((x) => x.host === hostname);
  assert.ok(item);
  assert.match(item.message, /unlinked by an admin/);

  host = ok(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: target.id } }));
  assert.deepEqual([host.resource_id, host.rule, host.manual, host.datacenter_id], [target.id, 'manual', true, dcB.id]);
  const admin = host.linked_by;
  assert.match(admin, /admin/);
  // Editing the serial-matched server re-runs matching, which leaves manual links alone.
  ok(await h.s.api('PATCH', `/api/v1/resources/${srv.id}`, { body: { rack: 'R9' } }));
  host = ok(await h.s.api('GET', `/api/v1/hosts/${host.id}`));
  assert.equal(host.resource_id, target.id);
  const g = ok(await h.s.api('GET', `/api/v1/gpus?host=${hostname}`));
  assert.ok(g.items.every((x) => x.resource_id === target.id));

  host = ok(await h.s.api('POST', `/api/v1/hosts/${host.id}/link/auto`));
  assert.deepEqual([host.resource_id, host.rule, host.manual], [srv.id, 'serial', false]);

  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=host&entity_id=${host.id}`));
  const actions = audit.items.map((a) => a.action).reverse();
  assert.deepEqual(actions, ['match', 'unlink', 'link', 'match']);
  const link = audit.items.find((a) => a.action === 'link');
  assert.equal(link.actor, admin);
  assert.equal(link.after.resource_id, target.id);
  const back = audit.items[0];
  assert.equal(back.actor, admin);
  assert.deepEqual([back.before.manual, back.after.manual, back.after.rule], [true, false, 'serial']);

  assertError(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: 999999 } }), 400, { field: 'resource_id' });
  assertError(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource: 1 } }), 400);
  assertError(await h.s.api('PUT', '/api/v1/hosts/999999/link', { body: { resource_id: target.id } }), 404);
});

test('servers created, renamed or deleted re-run matching', async () => {
  const hostname = uniq('late');
  await report({ hostname }, { n: 4 });
  assert.equal((await hostByName(hostname)).resource_id, null);
  const srv = await mkServer(dcB.id, { name: uniq('early'), gpu_count: 4 });
  ok(await h.s.api('PATCH', `/api/v1/resources/${srv.id}`, { body: { name: hostname } }));
  let host = await hostByName(hostname);
  assert.deepEqual([host.resource_id, host.rule], [srv.id, 'hostname']);
  ok(await h.s.api('PATCH', `/api/v1/resources/${srv.id}`, { body: { name: uniq('renamed') } }));
  assert.equal((await hostByName(hostname)).resource_id, null);

  const created = await mkServer(dcA.id, { name: hostname, gpu_count: 4 });
  host = await hostByName(hostname);
  assert.deepEqual([host.resource_id, host.datacenter_id], [created.id, dcA.id]);
  assert.equal((await h.s.api('DELETE', `/api/v1/resources/${created.id}`)).status, 204);
  host = await hostByName(hostname);
  assert.equal(host.resource_id, null);
  assert.equal(host.rule, null);
});

test('hosts list filters by link and data center', async () => {
  const linked = ok(await h.s.api('GET', '/api/v1/hosts?linked=true&limit=1000'));
  const unlinked = ok(await h.s.api('GET', '/api/v1/hosts?linked=false&limit=1000'));
  const all = ok(await h.s.api('GET', '/api/v1/hosts?limit=1000'));
  assert.ok(linked.items.length > 0 && unlinked.items.length > 0);
  assert.ok(linked.items.every((x) => x.resource_id !== null));
  assert.ok(unlinked.items.every((x) => x.resource_id === null));
  assert.equal(linked.total + unlinked.total, all.total);
  const inB = ok(await h.s.api('GET', `/api/v1/hosts?datacenter=${dcB.id}&limit=1000`));
  assert.ok(inB.items.length > 0);
  assert.ok(inB.items.every((x) => x.datacenter_id === dcB.id));
  assertError(await h.s.api('GET', '/api/v1/hosts?linked=maybe'), 400, { field: 'linked' });
  assertError(await h.s.api('GET', '/api/v1/hosts/999999'), 404);
});

test('the data-center overview shows declared and discovered GPUs', async () => {
  const dc = await mkDc(h.s);
  await mkServer(dc.id, { name: uniq('ov-a'), gpu_count: 8, state: 'in_use', tenant: 't' });
  const b = await mkServer(dc.id, { name: uniq('ov-b'), gpu_count: 8 });
  await mkServer(dc.id, { name: uniq('ov-c'), gpu_count: 8, state: 'retired' });
  await report({ hostname: b.name }, { n: 6, util: 60 });
  await report({ hostname: uniq('ov-elsewhere'), datacenter: dc.name }, { n: 2, util: null });
  const o = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}/overview`));
  assert.deepEqual(o.gpus.declared, { total: 16, allocated: 8, available: 8, unavailable: 0 });
  assert.equal(o.gpus.total, 16, 'the declared figures stay where they were');
  assert.deepEqual(o.gpus.discovered, { total: 8, in_use: 6, idle: 0, stale: 0, unknown: 2, on_linked_hosts: 6, servers_seen: 1 });
  assert.match(o.gpus.basis.declared, /gpu_count/);
  assert.match(o.gpus.basis.discovered, /physical GPUs/);
});

test('MIG instances are not counted as GPUs of their server', async () => {
  const srv = await mkServer(dcA.id, { name: uniq('migsrv'), gpu_count: 1, gpu_model: 'H100', state: 'in_use', tenant: 't' });
  const parent = `GPU-ffff${String(process.pid % 10000).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const mig = (i) => ({ uuid: `MIG-${parent}/${i}`, parent_uuid: parent, mig_profile: '3g.40gb', mig_instance: i });
  seq += 1;
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: push, body: { batch_id: `mig-${seq}`,
    host: { hostname: srv.name }, gpus: [{ uuid: parent, index: 0, name: 'NVIDIA H100 80GB HBM3', mig_mode: true }, mig(1), mig(2)],
    samples: [{ time: now() - 5, gpu: `MIG-${parent}/1`, util_avg: 30 }] } });
  assert.equal(r.status, 201, r.text);
  const doc = ok(await h.s.api('GET', `/api/v1/resources/${srv.id}`));
  assert.equal(doc.discovered.count, 1);
  assert.deepEqual(doc.discovered.gpus.map((g) => g.uuid), [parent]);
  const d = await drift('?kind=gpu_count_mismatch&limit=1000');
  assert.ok(!d.items.some((x) => x.resource_id === srv.id), JSON.stringify(d.items));
  // The instances themselves still say which server they are in.
  const l = ok(await h.s.api('GET', `/api/v1/gpus?host=${srv.name}`));
  assert.equal(l.items.length, 3);
  assert.ok(l.items.every((g) => g.resource_id === srv.id));
});

test('drift, a server\'s GPUs and the overview judge fresh and busy as the GPU list does', async () => {
  const dc = await mkDc(h.s);
  const old = now() - 7200;
  const uuid = (tag, i) => `GPU-d${hex(process.pid % 0xfffffff, 7)}-${hex(i, 4)}-4000-8000-${tag.padStart(12, '0')}`;
  const ingest = async (body) => {
    seq += 1;
    const r = await h.s.api('POST', '/api/v1/ingest', { auth: push, body: { batch_id: `fresh-${process.pid}-${seq}`, ...body } });
    assert.equal(r.status, 201, r.text);
  };
  const states = async (host) => Object.fromEntries(
    ok(await h.s.api('GET', `/api/v1/gpus?host=${encodeURIComponent(host)}`)).items.map((g) => [g.uuid, g.state]));

  // Readings taken 2 h ago, received just now: one GPU read at 97%, its
  // neighbour reported in the same batch without telemetry of its own.
  const late = await mkServer(dc.id, { name: uniq('late'), gpu_count: 2 });
  const [a, b] = [uuid('a1', 0), uuid('a1', 1)];
  await ingest({ host: { hostname: late.name }, gpus: [{ uuid: a, index: 0, name: 'NVIDIA H100 80GB HBM3' },
    { uuid: b, index: 1, name: 'NVIDIA H100 80GB HBM3' }], samples: [{ time: old, gpu: a, util_avg: 97 }] });
  assert.deepEqual(await states(late.name), { [a]: 'stale', [b]: 'stale' });
  let d = await drift('?kind=unallocated_busy&limit=1000');
  assert.ok(!d.items.some((x) => x.resource_id === late.id), 'an old reading is not busy');
  let doc = ok(await h.s.api('GET', `/api/v1/resources/${late.id}`));
  assert.equal(doc.discovered.in_use, 0);
  assert.deepEqual(Object.fromEntries(doc.discovered.gpus.map((g) => [g.uuid, g.state])), { [a]: 'stale', [b]: 'stale' });
  assert.equal(Date.parse(doc.discovered.gpus.find((g) => g.uuid === b).observed_at) / 1000, old);
  let o = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}/overview`));
  assert.deepEqual(o.gpus.discovered, { total: 2, in_use: 0, idle: 0, stale: 2, unknown: 0, on_linked_hosts: 2, servers_seen: 1 });

  // The host reports the GPUs again now, without new samples: the GPU list
  // takes the last reading as current, and so do drift and the server.
  await ingest({ host: { hostname: late.name }, gpus: [{ uuid: a, index: 0, name: 'NVIDIA H100 80GB HBM3' },
    { uuid: b, index: 1, name: 'NVIDIA H100 80GB HBM3' }] });
  assert.deepEqual(await states(late.name), { [a]: 'in_use', [b]: 'unknown' });
  d = await drift('?kind=unallocated_busy&limit=1000');
  const busy = d.items.filter((x) => x.resource_id === late.id);
  assert.equal(busy.length, 1, JSON.stringify(d.items));
  assert.equal(busy[0].found, 1);
  doc = ok(await h.s.api('GET', `/api/v1/resources/${late.id}`));
  assert.equal(doc.discovered.in_use, 1);
  assert.deepEqual(Object.fromEntries(doc.discovered.gpus.map((g) => [g.uuid, g.state])), { [a]: 'in_use', [b]: 'unknown' });
  o = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}/overview`));
  assert.deepEqual(o.gpus.discovered, { total: 2, in_use: 1, idle: 0, stale: 0, unknown: 1, on_linked_hosts: 2, servers_seen: 1 });
});
