// GPUs and hosts from a spreadsheet export: header aliases and explicit
// mapping, dry run with every row's errors, all-or-nothing import.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';

let s;
before(async () => { s = await startServer({ demo: true }); });
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

const post = (csv, q = '') => s.api('POST', '/api/v1/gpus/import' + q, { body: csv, contentType: 'text/csv' });

const sheet = [
  'Host,GPU UUID,Model,Serial Number,Index,PCI Bus ID,Memory,Owner,Environment,Site',
  'fra1-gpu-001,GPU-aaaa0000-0000-0000-0000-000000000001,NVIDIA H100 80GB HBM3,1650000000001,0,00000000:18:00.0,81559 MiB,ml-research,prod,Frankfurt DC1',
  'fra1-gpu-001,GPU-aaaa0000-0000-0000-0000-000000000002,NVIDIA H100 80GB HBM3,1650000000002,1,00000000:2A:00.0,81559,ml-research,prod,Frankfurt DC1',
  '"lab-box, desk 4",GPU-bbbb0000-0000-0000-0000-000000000001,NVIDIA GeForce RTX 4090,[N/A],0,0000:01:00.0,24564,vision,dev,',
].join('\n') + '\n';

test('a dry run validates and writes nothing', async () => {
  const r = await post(sheet, '?dry_run=true');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual([r.json.valid, r.json.rows], [true, 3]);
  assert.equal((await s.api('GET', '/api/v1/gpus')).json.total, 0);
});

test('every bad row is reported with line and column, and nothing is written', async () => {
  const bad = sheet + 'h2,,X,,zero,zz:zz,lots,,,\n' + 'fra1-gpu-002,GPU-aaaa0000-0000-0000-0000-000000000001,,,,,,,,\n';
  const r = await post(bad);
  assert.equal(r.status, 422);
  const errs = r.json.errors.map((e) => `${e.line}:${e.column}`);
  for (const want of ['5:uuid', '5:index', '5:memory_total_mib', '5:pci_bus_id', '6:uuid']) assert.ok(errs.includes(want), `${want} in ${errs}`);
  assert.equal((await s.api('GET', '/api/v1/gpus')).json.total, 0);
});

test('a good sheet is imported with ownership, data center and provenance', async () => {
  const r = await post(sheet, '?source=finance-sheet');
  assert.equal(r.status, 201, r.text);
  assert.deepEqual([r.json.imported, r.json.hosts], [3, 2]);
  const g = (await s.api('GET', '/api/v1/gpus/GPU-aaaa0000-0000-0000-0000-000000000002')).json;
  assert.equal(g.host, 'fra1-gpu-001');
  assert.equal(g.team, 'ml-research');
  assert.equal(g.env, 'prod');
  assert.equal(g.datacenter, 'Frankfurt DC1');
  assert.equal(g.pci_bus_id, '0000:2a:00.0');
  assert.equal(g.memory_total_mib, 81559);
  assert.equal(g.provenance.find((p) => p.field === 'serial').source, 'finance-sheet');
  const lab = (await s.api('GET', '/api/v1/gpus/GPU-bbbb0000-0000-0000-0000-000000000001')).json;
  assert.equal(lab.host, 'lab-box, desk 4');
  assert.equal(lab.serial, null, '[N/A] means absent');
  const src = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'finance-sheet');
  assert.equal(src.kind, 'csv');
  assert.equal((await s.api('POST', `/api/v1/sources/${src.id}/run`)).status, 409);
});

test('columns can be mapped explicitly', async () => {
  const csv = 'Rechner,Kennung\nnode-x,GPU-cccc0000-0000-0000-0000-000000000001\n';
  const missing = await post(csv);
  assert.equal(missing.status, 400);
  assert.equal(missing.json.error.field, 'hostname');
  const r = await post(csv, '?map.hostname=Rechner&map.uuid=Kennung');
  assert.equal(r.status, 201, r.text);
  const nope = await post(csv, '?map.hostname=Nope&map.uuid=Kennung');
  assert.equal(nope.status, 400);
  assert.equal(nope.json.error.field, 'map.hostname');
});

test('a viewer may not import', async () => {
  const v = (await s.api('POST', '/api/v1/tokens', { body: { name: 'v', role: 'viewer' } })).json.token;
  assert.equal((await s.api('POST', '/api/v1/gpus/import', { body: sheet, contentType: 'text/csv', auth: v })).status, 403);
});
