// Azure scale sets against the stand-in (tests/lib/cloud/azure.mjs): the
// members of a Uniform scale set (an AKS GPU node pool), which the VM
// list does not return, are read page by page with their instance views
// and recorded under their computer names (the host names agents and
// Kubernetes nodes report), with GPUs from their size and the scale
// set's tags when they have none; a Flexible scale set's member, already
// in the VM list, is recorded once; a failed member page fails the pull
// naming the scale set and marks nothing gone; a member absent from a
// complete listing is gone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAzure, SUB, TENANT, CLIENT, AKS_SET, FLEX_SET } from '../lib/cloud/azure.mjs';
import { ok, stopClean } from './helpers.mjs';

let s;
let az;
let src;

before(async () => {
  az = await startAzure({ secret: 'right-secret' });
  az.vmss = true;
  s = await startServer();
});

after(async () => {
  try {
    if (s) await stopClean(s);
  } finally {
    await az.close();
  }
});

const instances = async () => ok(await s.api('GET', '/api/v1/cloud/instances?provider=azure&limit=100')).items;
const byName = (items, name) => items.find((x) => x.name === name);
const run = async (id) => ok(await s.api('POST', `/api/v1/sources/${id}/run`)).run;
const cfg = { subscription_id: SUB, tenant_id: TENANT, client_id: CLIENT, client_secret: 'right-secret' };
const memberCalls = (set) => az.seen.filter((x) => x.path === set + '/virtualMachines');

test('the members of a Uniform scale set are listed; a Flexible member is counted once', async () => {
  src = ok(await s.api('POST', '/api/v1/sources', {
    body: { name: 'az-aks', kind: 'azure', enabled: false, config: { ...cfg, endpoint: az.url, login_endpoint: az.url } },
  }), 201);
  const r = await run(src.id);
  assert.equal(r.ok, true, r.error);
  // The scale sets were listed; the Uniform set's members read over two
  // pages with their instance views; the Flexible set's members not.
  const lists = az.seen.filter((x) => x.path.endsWith('/providers/Microsoft.Compute/virtualMachineScaleSets'));
  assert.equal(lists.length, 1);
  assert.equal(lists[0].query['api-version'], '2024-07-01');
  const calls = memberCalls(AKS_SET);
  assert.equal(calls.length, 2);
  for (const c of calls) {
    assert.equal(c.query['api-version'], '2024-07-01');
    assert.equal(c.query.$expand, 'instanceView');
  }
  assert.equal(calls[1].query.$skiptoken, 'bWVtYmVycy0y');
  assert.equal(memberCalls(FLEX_SET).length, 0);

  const items = await instances();
  // The six VMs of the VM list, the Flexible member among them once, and
  // the two Uniform members.
  assert.equal(items.length, 6 + 1 + 2);
  const m0 = byName(items, 'aks-gpu-12345678-vmss000000');
  assert.ok(m0, JSON.stringify(items.map((x) => x.name)));
  assert.equal(m0.instance_id, '0e5a1d2c-0000-4000-8000-00000000b000');
  assert.equal(m0.host, 'aks-gpu-12345678-vmss000000');
  assert.equal(m0.machine_type, 'Standard_NC24ads_A100_v4');
  assert.equal(m0.gpu_count, 1);
  assert.equal(m0.gpu_model, 'NVIDIA A100 80GB PCIe');
  assert.equal(m0.state, 'running');
  assert.equal(m0.region, 'eastus');
  assert.equal(m0.zone, '1');
  assert.equal(m0.account, SUB);
  // Without tags of its own, the member has its scale set's.
  assert.deepEqual(m0.tags, { 'aks-managed-poolName': 'gpu', team: 'aks-ml' });
  assert.equal(m0.gpus.length, 1);
  assert.equal(m0.gpus[0].uuid, 'cloud:azure:0e5a1d2c-0000-4000-8000-00000000b000:0');
  // Page 2's member: its own tags, its size in lower case, deallocated.
  const m1 = byName(items, 'aks-gpu-12345678-vmss000001');
  assert.deepEqual(m1.tags, { team: 'aks-ml', pool: 'gpu-spot' });
  assert.equal(m1.gpu_count, 1);
  assert.equal(m1.gpu_model, 'NVIDIA A100 80GB PCIe');
  assert.equal(m1.state, 'stopped');
  assert.equal(m1.state_raw, 'deallocated');
  assert.equal(m1.zone, '2');
  // The Flexible member, from the VM list, under its computer name, once.
  const flex = items.filter((x) => x.instance_id === '0e5a1d2c-0000-4000-8000-00000000c001');
  assert.equal(flex.length, 1);
  assert.equal(flex[0].name, 'flex-infer000001');
  assert.equal(flex[0].gpu_count, 1);
  assert.equal(flex[0].gpu_model, 'Tesla T4');
  assert.equal(r.gpus, 8 + 1 + 1 + 1 + 1 + 1 + 1);
});

test('a failed page of members fails the pull naming the scale set; nothing is gone', async () => {
  az.failMembers2 = true;
  az.omit = ['jump-06', 'aks-gpu-12345678-vmss000000'];
  const r = await run(src.id);
  az.failMembers2 = false;
  az.omit = [];
  assert.equal(r.ok, false);
  assert.match(r.error, /members of scale set aks-gpu-12345678-vmss \(page 2\): HTTP 500 InternalServerError.*nothing was marked gone/);
  for (const x of await instances()) assert.equal(x.gone_at, null, x.name);
  const got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /scale set aks-gpu-12345678-vmss/);
});

test('a member absent from a complete listing is gone', async () => {
  az.omit = ['aks-gpu-12345678-vmss000000'];
  const r = await run(src.id);
  az.omit = [];
  assert.equal(r.ok, true, r.error);
  const items = await instances();
  const m0 = byName(items, 'aks-gpu-12345678-vmss000000');
  assert.notEqual(m0.gone_at, null);
  for (const g of m0.gpus) assert.notEqual(g.missing_since, null);
  assert.equal(byName(items, 'aks-gpu-12345678-vmss000001').gone_at, null);
  assert.equal(byName(items, 'flex-infer000001').gone_at, null);
});
