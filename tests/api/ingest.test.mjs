// The push API: batches in, one record per GPU out, with provenance,
// identity events, idempotency, all-or-nothing writes, bounds, token scope
// and freshness.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startServer, BIN } from '../lib/server.mjs';

let s;
let pushToken;

function batch(id, host, gpus, extra = {}) {
  return {
    batch_id: id,
    host: { hostname: host, machine_id: 'mid-' + host },
    gpus,
    // Taken now: freshness is judged by when a reading was taken.
    samples: gpus.map((g, i) => ({ time: Math.floor(Date.now() / 1000), gpu: g.uuid, util_avg: 10 * i, util_max: 50,
      mem_used_mib: 1000, power_avg_w: 250.5, temp_c: 60 })),
    ...extra,
  };
}
const gpu = (uuid, serial, idx = 0) => ({ uuid, serial, index: idx, name: 'NVIDIA H100 80GB HBM3',
  pci_bus_id: `00000000:${(0x18 + idx).toString(16)}:00.0`, memory_total_mib: 81559, driver: '550.54.15' });

before(async () => {
  s = await startServer({ args: ['--freshness', '2'] });
  const r = await s.api('POST', '/api/v1/tokens', { body: { name: 'agents', role: 'pusher', source: 'lab-agents', team: 'ml', env: 'dev', cluster: 'lab' } });
  assert.equal(r.status, 201, r.text);
  pushToken = r.json.token;
});
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

test('a batch is stored once, with provenance and source defaults', async () => {
  const b = batch('b-1', 'node-a', [gpu('GPU-11111111-0000-0000-0000-000000000001', 'S1', 0), gpu('GPU-11111111-0000-0000-0000-000000000002', 'S2', 1)],
    { processes: [{ gpu: 'GPU-11111111-0000-0000-0000-000000000001', pid: 4242, name: 'python train.py', user: 'alice', uid: 1000, pod_uid: 'd3b07384-d9a0-4c3e-9f1a-1b2c3d4e5f60', container: 'c0ffee' }] });
  const r1 = await s.api('POST', '/api/v1/ingest', { body: b, auth: pushToken });
  assert.equal(r1.status, 201, r1.text);
  assert.deepEqual([r1.json.duplicate, r1.json.gpus, r1.json.samples, r1.json.processes], [false, 2, 2, 1]);
  const r2 = await s.api('POST', '/api/v1/ingest', { body: b, auth: pushToken });
  assert.equal(r2.status, 200);
  assert.equal(r2.json.duplicate, true);

  const g = await s.api('GET', '/api/v1/gpus/GPU-11111111-0000-0000-0000-000000000001');
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.host, 'node-a');
  assert.equal(g.json.serial, 'S1');
  assert.equal(g.json.pci_bus_id, '0000:18:00.0');
  assert.equal(g.json.team, 'ml');
  assert.equal(g.json.cluster, 'lab');
  assert.equal(g.json.source, 'lab-agents');
  assert.equal(g.json.util_pct, 0);
  const prov = Object.fromEntries(g.json.provenance.map((p) => [p.field, p]));
  assert.equal(prov.serial.value, 'S1');
  assert.equal(prov.serial.source, 'lab-agents');
  assert.match(prov.serial.set_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
  assert.equal(g.json.processes.length, 1);
  assert.equal(g.json.processes[0].user, 'alice');
  assert.equal(g.json.events[0].kind, 'discovered');

  const list = await s.api('GET', '/api/v1/gpus?host=node-a');
  assert.equal(list.json.total, 2);
  const src = await s.api('GET', '/api/v1/sources');
  const mine = src.json.items.find((x) => x.name === 'lab-agents');
  assert.equal(mine.gpus_reported, 2);
  assert.ok(mine.last_success_at);
});

test('a structurally bad batch writes nothing and names the field', async () => {
  // A GPU without a uuid has no identity: the batch is refused whole.
  const b = batch('b-bad', 'node-b', [gpu('GPU-22222222-0000-0000-0000-000000000001', 'T1'), { name: 'nameless' }]);
  b.samples = b.samples.slice(0, 1);
  const r = await s.api('POST', '/api/v1/ingest', { body: b, auth: pushToken });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.field, 'gpus[1].uuid');
  const g = await s.api('GET', '/api/v1/gpus/GPU-22222222-0000-0000-0000-000000000001');
  assert.equal(g.status, 404);

  const notList = { ...batch('b-nl', 'node-b', []), processes: { pid: 1 } };
  const r2 = await s.api('POST', '/api/v1/ingest', { body: notList, auth: pushToken });
  assert.equal(r2.status, 400);
  assert.equal(r2.json.error.field, 'processes');

  const twice = batch('b-2x', 'node-b', [gpu('GPU-22222222-0000-0000-0000-000000000002', 'T2'), gpu('GPU-22222222-0000-0000-0000-000000000002', 'T2')]);
  const r3 = await s.api('POST', '/api/v1/ingest', { body: twice, auth: pushToken });
  assert.equal(r3.status, 400);
  assert.equal(r3.json.error.field, 'gpus');

  const r4 = await s.api('POST', '/api/v1/ingest', { body: { batch_id: 'x', gpus: [] }, auth: pushToken });
  assert.equal(r4.status, 400);
  assert.equal(r4.json.error.field, 'host');
  assert.equal((await s.api('GET', '/api/v1/gpus?host=node-b')).json.total, 0);
});

test('bounds answer 413 naming the list', async () => {
  const gpus = Array.from({ length: 1025 }, (_, i) => ({ uuid: `GPU-big-${i}` }));
  const r = await s.api('POST', '/api/v1/ingest', { body: { batch_id: 'big', host: { hostname: 'h' }, gpus }, auth: pushToken });
  assert.equal(r.status, 413);
  assert.equal(r.json.error.field, 'gpus');
});

test('identity events: moved host, serial conflict, missing GPU', async () => {
  const a = 'GPU-33333333-0000-0000-0000-000000000001';
  const b = 'GPU-33333333-0000-0000-0000-000000000002';
  assert.equal((await s.api('POST', '/api/v1/ingest', { body: batch('e-1', 'node-c', [gpu(a, 'X1', 0), gpu(b, 'X2', 1)]), auth: pushToken })).status, 201);
  // b disappears from node-c, a moves to node-d, and a new GPU claims b's serial.
  assert.equal((await s.api('POST', '/api/v1/ingest', { body: batch('e-2', 'node-c', [gpu('GPU-33333333-0000-0000-0000-000000000003', 'X3', 0)]), auth: pushToken })).status, 201);
  assert.equal((await s.api('POST', '/api/v1/ingest', { body: batch('e-3', 'node-d', [gpu(a, 'X1', 0), gpu('GPU-33333333-0000-0000-0000-000000000004', 'X2', 1)]), auth: pushToken })).status, 201);
  const kinds = async (u) => (await s.api('GET', '/api/v1/gpus/' + u)).json.events.map((e) => e.kind);
  assert.ok((await kinds(a)).includes('host_changed'));
  assert.ok((await kinds(b)).includes('missing_from_host'));
  assert.ok((await kinds('GPU-33333333-0000-0000-0000-000000000004')).includes('serial_conflict'));
  assert.ok((await s.api('GET', '/api/v1/gpus/' + b)).json.missing_since);
});

test('push tokens push only, only as their source', async () => {
  const read = await s.api('GET', '/api/v1/gpus', { auth: pushToken });
  assert.equal(read.status, 403);
  const spoof = { ...batch('s-1', 'node-e', []), source: 'someone-else' };
  const r = await s.api('POST', '/api/v1/ingest', { body: spoof, auth: pushToken });
  assert.equal(r.status, 400);
  assert.equal(r.json.error.field, 'source');
  const viewer = await s.api('POST', '/api/v1/tokens', { body: { name: 'v', role: 'viewer' } });
  const v = await s.api('POST', '/api/v1/ingest', { body: batch('s-2', 'node-e', []), auth: viewer.json.token });
  assert.equal(v.status, 403);
  // An admin must say which source it pushes as.
  const adm = await s.api('POST', '/api/v1/ingest', { body: batch('s-3', 'node-e', []) });
  assert.equal(adm.status, 400);
  const adm2 = await s.api('POST', '/api/v1/ingest', { body: { ...batch('s-4', 'node-e', [gpu('GPU-44444444-0000-0000-0000-000000000001', 'Y1')]), source: 'manual' } });
  assert.equal(adm2.status, 201, adm2.text);
  const noSrc = await s.api('POST', '/api/v1/tokens', { body: { name: 'p', role: 'pusher' } });
  assert.equal(noSrc.status, 400);
  assert.equal(noSrc.json.error.field, 'source');
});

test('the CLI creates a pusher token bound to a source', async () => {
  const out = execFileSync(BIN, ['token', 'create', '--db', s.db, '--role', 'pusher', '--name', 'cli-agent', '--source', 'cli-src', '--team', 'vision']).toString().trim();
  assert.match(out, /^gpi_/);
  const r = await s.api('POST', '/api/v1/ingest', { body: batch('c-1', 'node-f', [gpu('GPU-55555555-0000-0000-0000-000000000001', 'Z1')]), auth: out });
  assert.equal(r.status, 201, r.text);
  const g = await s.api('GET', '/api/v1/gpus/GPU-55555555-0000-0000-0000-000000000001');
  assert.equal(g.json.team, 'vision');
  assert.equal(g.json.source, 'cli-src');
});

test('data older than the freshness limit is flagged stale', async () => {
  const u = 'GPU-66666666-0000-0000-0000-000000000001';
  assert.equal((await s.api('POST', '/api/v1/ingest', { body: batch('f-1', 'node-g', [gpu(u, 'W1')]), auth: pushToken })).status, 201);
  assert.equal((await s.api('GET', '/api/v1/gpus/' + u)).json.stale, 0);
  await new Promise((r) => setTimeout(r, 3200));
  assert.equal((await s.api('GET', '/api/v1/gpus/' + u)).json.stale, 1);
  const stale = await s.api('GET', '/api/v1/gpus?stale=true&host=node-g');
  assert.equal(stale.json.total, 1);
  const fresh = await s.api('GET', '/api/v1/gpus?stale=false&host=node-g');
  assert.equal(fresh.json.total, 0);
});

test('samples from the future are dropped with a warning, not the batch', async () => {
  const b = batch('t-1', 'node-h', [gpu('GPU-77777777-0000-0000-0000-000000000001', 'V1')]);
  b.samples[0].time = Math.floor(Date.now() / 1000) + 3600;
  const r = await s.api('POST', '/api/v1/ingest', { body: b, auth: pushToken });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.samples, 0);
  assert.deepEqual(r.json.warnings.map((w) => w.field), ['samples[0].time']);
  assert.equal((await s.api('GET', '/api/v1/gpus/GPU-77777777-0000-0000-0000-000000000001')).status, 200);
});

test('GPU state: in_use, idle, missing, stale', async () => {
  const busy = 'GPU-88888888-0000-0000-0000-000000000001';
  const idle = 'GPU-88888888-0000-0000-0000-000000000002';
  const b = batch('st-1', 'node-st', [gpu(busy, 'ST1', 0), gpu(idle, 'ST2', 1)]);
  b.samples[0].util_avg = 90;
  b.samples[1].util_avg = 1;
  assert.equal((await s.api('POST', '/api/v1/ingest', { body: b, auth: pushToken })).status, 201);
  const st = async (u) => (await s.api('GET', '/api/v1/gpus/' + u)).json.state;
  assert.equal(await st(busy), 'in_use');
  assert.equal(await st(idle), 'idle');
  const only = (await s.api('GET', '/api/v1/gpus?host=node-st&state=idle')).json;
  assert.deepEqual(only.items.map((x) => x.uuid), [idle]);
  assert.equal((await s.api('GET', '/api/v1/gpus?state=bogus')).status, 400);
  const b2 = batch('st-2', 'node-st', [gpu(busy, 'ST1', 0)]);
  b2.samples[0].util_avg = 90;
  await s.api('POST', '/api/v1/ingest', { body: b2, auth: pushToken });
  assert.equal(await st(idle), 'missing');
});

test('samples may come in columns, the GPU by uuid or by its index in gpus', async () => {
  const a = 'GPU-99999999-0000-0000-0000-000000000001';
  const b = 'GPU-99999999-0000-0000-0000-000000000002';
  const t = Math.floor(Date.now() / 1000) - 60;
  const body = { batch_id: 'col-1', host: { hostname: 'node-col' }, gpus: [gpu(a, 'C1', 0), gpu(b, 'C2', 1)],
    samples: { columns: ['time', 'gpu', 'util_avg', 'temp_c'], rows: [[t, 0, 42.5, 61], [t, b, 7, null], [t + 1, 0, 50, 62]] } };
  const r = await s.api('POST', '/api/v1/ingest', { body, auth: pushToken });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.samples, 3);
  const ga = (await s.api('GET', '/api/v1/gpus/' + a)).json;
  assert.equal(ga.util_pct, 50, 'the newest sample of GPU 0');
  assert.equal(ga.temp_c, 62);
  assert.equal((await s.api('GET', '/api/v1/gpus/' + b)).json.temp_c, null);

  const bad = async (samples, field) => {
    const x = await s.api('POST', '/api/v1/ingest', { auth: pushToken, body: { ...body, batch_id: 'col-bad-' + field, samples } });
    assert.equal(x.status, 400, x.text);
    assert.equal(x.json.error.field, field);
  };
  // Only a header that cannot be read refuses the batch; bad rows and
  // values are dropped with warnings (tests/api/warnings.test.mjs).
  await bad({ columns: ['time', 'util_avg'], rows: [] }, 'samples.columns');
  await bad({ columns: ['time', 'gpu', 'gpu'], rows: [] }, 'samples.columns[2]');
  await bad({ columns: 'time', rows: [] }, 'samples.columns');
  await bad({ columns: ['time', 'gpu'], rows: {} }, 'samples.rows');
  const none = await s.api('GET', '/api/v1/gpus?host=node-col');
  assert.equal(none.json.total, 2, 'the refused batches wrote nothing new');
});

test('a MIG instance named by dcgm-exporter and by NVML is one record', async () => {
  const parent = 'GPU-mig00000-0000-0000-0000-000000000001';
  const madeUp = (i) => `MIG-${parent}/${i}`;
  const real = (i) => `MIG-1f2e3d4c-0000-5000-8000-00000000000${i}`;
  const t = Math.floor(Date.now() / 1000) - 30;
  const mig = (uuid, inst) => ({ uuid, parent_uuid: parent, mig_profile: '3g.40gb', mig_instance: inst });
  const push = async (id, gpus, samples) => {
    const r = await s.api('POST', '/api/v1/ingest', { auth: pushToken, body: { batch_id: id, host: { hostname: 'node-mig' }, gpus, samples } });
    assert.equal(r.status, 201, r.text);
  };
  // Instance 1: first under the made-up name (as a dcgm pull names it), then NVML's UUID.
  await push('m-1', [gpu(parent, 'M1', 0), mig(madeUp(1), 1)], [{ time: t, gpu: madeUp(1), util_avg: 33 }]);
  await push('m-2', [gpu(parent, 'M1', 0), mig(real(1), 1), mig(real(2), 2)], [{ time: t + 1, gpu: real(2), util_avg: 44 }]);
  // Instance 2: first under NVML's UUID, then under the made-up name.
  await push('m-3', [gpu(parent, 'M1', 0), mig(madeUp(2), 2), mig(real(1), 1)], [{ time: t + 2, gpu: madeUp(2), util_avg: 55 }]);
  const kids = (await s.api('GET', '/api/v1/gpus/' + parent)).json.mig_instances.map((m) => m.uuid).sort();
  assert.deepEqual(kids, [real(1), real(2)]);
  assert.equal((await s.api('GET', '/api/v1/gpus/' + encodeURIComponent(madeUp(1)))).status, 404, 'renamed');
  const one = (await s.api('GET', '/api/v1/gpus/' + real(1))).json;
  assert.equal(one.events[one.events.length - 1].kind, 'discovered', 'history kept across the rename');
  assert.equal((await s.api('GET', '/api/v1/gpus/' + real(2))).json.util_pct, 55, 'made-up name fed the real record');
  assert.equal(one.missing_since, null);
});
