// The azure source end to end against a stand-in (tests/lib/cloud/azure.mjs)
// that replays recorded Azure Resource Manager answers: a client-credentials
// grant from the stand-in Entra ID, the VM list over two pages (nextLink)
// with a throttled answer between them, power states from the instance
// view, GPU counts from the Resource SKUs list (read once and kept), the
// shared A10 size, an unknown size, tags feeding the ownership rules, a
// stopped or deallocated VM's GPUs not allocated, and failed pages,
// foreign nextLinks or refused credentials marking nothing gone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAzure, SUB, TENANT, CLIENT } from '../lib/cloud/azure.mjs';
import { ok, assertError, stopClean, rollupAll } from './helpers.mjs';

let s;
let az;
let src;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
// A time as the API shows it (RFC 3339 or unix seconds) in unix seconds.
const secs = (v) => (typeof v === 'number' ? v : Date.parse(v) / 1000);
// The recorded VMs were created three days ago at 10:00 UTC.
const T0 = Math.floor(Date.now() / 86400000) * 86400 - 3 * 86400 + 10 * 3600;

before(async () => {
  az = await startAzure({ secret: 'right-secret' });
  az.startAt = T0;
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
const gpu = async (uuid) => ok(await s.api('GET', `/api/v1/gpus/${encodeURIComponent(uuid)}`));
const vmCalls = (skip) => az.seen.filter((x) => x.path.endsWith('/virtualMachines') && (x.query.$skiptoken || '') === skip).length;
const cfg = (extra = {}) => ({ subscription_id: SUB, tenant_id: TENANT, client_id: CLIENT, client_secret: 'right-secret', endpoint: az.url, login_endpoint: az.url, ...extra });

test('config: ids required and checked, the secret write-only', async () => {
  const mk = (config) => s.api('POST', '/api/v1/sources', { body: { name: 'az-bad', kind: 'azure', enabled: false, config } });
  assertError(await mk({ tenant_id: TENANT, client_id: CLIENT }), 400, { field: 'config.subscription_id' });
  assertError(await mk({ subscription_id: SUB, client_id: CLIENT }), 400, { field: 'config.tenant_id' });
  assertError(await mk({ subscription_id: SUB, tenant_id: '../evil', client_id: CLIENT }), 400, { field: 'config.tenant_id' });
  assertError(await mk({ ...cfg(), login_endpoint: 'https://user:pw@login.example' }), 400, { field: 'config.login_endpoint' });
  ok(await s.api('POST', '/api/v1/teams', { body: { name: 'llm' } }), 201);
  ok(await s.api('POST', '/api/v1/ownership-rules', {
    body: { match: { kind: 'cloud_tag', key: 'team', value: 'llm' }, set: { team: 'llm' }, effective_from: iso(Math.floor(Date.now() / 1000) - 86400 * 400) },
  }), 201);
  src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'az-ml', kind: 'azure', enabled: false, config: cfg() } }), 201);
  assert.equal(src.config.client_secret, '(set)');
  assert.ok(!JSON.stringify(src).includes('right-secret'));
});

test('a pull: token grant, SKUs, two pages with a throttled answer, power states, sizes', async () => {
  az.throttle = 1;
  const r = await run(src.id);
  assert.equal(r.ok, true, r.error);
  assert.equal(az.seen.filter((x) => x.path === `/${TENANT}/oauth2/v2.0/token`).length, 1);
  assert.equal(az.seen.filter((x) => x.path.endsWith('/skus')).length, 1);
  assert.equal(vmCalls(''), 1);
  assert.equal(vmCalls('cGFnZTI'), 2); // 429 + Retry-After, then the page
  const items = await instances();
  assert.deepEqual(items.map((x) => x.name).sort(), ['future-05', 'jump-06', 'nc-a100-04', 'nc-t4-02', 'nd-h100-01', 'nv-a10-03']);
  const nd = byName(items, 'nd-h100-01');
  assert.equal(nd.instance_id, '6f1c2a3b-0000-4000-8000-000000000001');
  assert.equal(nd.account, SUB);
  assert.equal(nd.region, 'eastus');
  assert.equal(nd.zone, '1');
  assert.equal(nd.state, 'running');
  assert.equal(nd.gpu_count, 8);
  assert.equal(nd.gpu_model, 'NVIDIA H100 80GB HBM3');
  assert.deepEqual(nd.tags, { team: 'llm', 'cost-center': '4711' });
  assert.equal(nd.gpus[0].uuid, 'cloud:azure:6f1c2a3b-0000-4000-8000-000000000001:0');
  assert.equal(secs(nd.launched_at), T0); // 7 fractional digits, +00:00
  // The size in another case, deallocated, no tags.
  const t4 = byName(items, 'nc-t4-02');
  assert.equal(t4.gpu_count, 1);
  assert.equal(t4.gpu_model, 'Tesla T4');
  assert.equal(t4.state, 'stopped');
  assert.equal(t4.state_raw, 'deallocated');
  assert.deepEqual(t4.tags, {});
  // A sixth of an A10 is one virtual GPU of its profile.
  const a10 = byName(items, 'nv-a10-03');
  assert.equal(a10.gpu_count, 1);
  assert.equal(a10.gpu_model, 'NVIDIA A10-4Q');
  assert.equal(a10.gpu_memory_mib, 4096);
  // stopped (still billed) is not running either.
  const a100 = byName(items, 'nc-a100-04');
  assert.equal(a100.state, 'stopped');
  assert.equal(a100.state_raw, 'stopped');
  assert.equal(byName(items, 'future-05').gpu_count, null);
  assert.equal(byName(items, 'jump-06').gpu_count, 0);
  assert.equal(r.gpus, 8 + 1 + 1 + 1);
});

test('tags feed the ownership rules; stopped and deallocated VMs are not allocated', async () => {
  const g = await gpu('cloud:azure:6f1c2a3b-0000-4000-8000-000000000001:7');
  assert.equal(g.owner.team.value, 'llm');
  assert.match(g.owner.team.by, /^rule:/);
  assert.equal((await rollupAll(s)).dirty_left, 0);
  const q = { group_by: 'consumer', from: iso(T0), to: iso(T0 + 3600), step: 'day' };
  const cloud = ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams(q))).items.filter((x) => x.kind === 'cloud');
  // Running: nd-h100-01 (8) and nv-a10-03 (1 shared). Not: deallocated
  // nc-t4-02, stopped nc-a100-04; future-05 and jump-06 have no known GPUs.
  const ID = (n) => `azure/6f1c2a3b-0000-4000-8000-00000000000${n}`;
  assert.deepEqual(cloud.map((x) => x.group).sort(), [ID(1), ID(3)]);
  assert.equal(cloud.find((x) => x.group === ID(1)).gpu_hours.allocated, 8);
  assert.equal(cloud.find((x) => x.group === ID(3)).gpu_hours.allocated, 1);
});

test('the SKU list is kept; failures mark nothing gone; a foreign nextLink is not followed', async () => {
  az.failPage2 = true;
  let r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /page 2\): HTTP 500 InternalServerError/);
  az.failPage2 = false;
  assert.equal(az.seen.filter((x) => x.path.endsWith('/skus')).length, 1);
  az.throttle = 100;
  r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /HTTP 429 TooManyRequests.*still throttled/);
  az.throttle = 0;
  az.foreignNext = true;
  const before = az.seen.length;
  r = await run(src.id);
  az.foreignNext = false;
  assert.equal(r.ok, false);
  assert.match(r.error, /nextLink leaves the configured endpoint/);
  assert.equal(az.seen.slice(before).filter((x) => x.query.$skiptoken).length, 0);
  for (const x of await instances()) assert.equal(x.gone_at, null, x.name);
});

test('an expired client secret and an expired token are named; nothing is gone', async () => {
  az.secret = 'rotated-secret';
  let r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /Entra ID refused the client credentials \(HTTP 401: invalid_client: AADSTS7000222/);
  const got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /AADSTS7000222/);
  az.secret = 'right-secret';
  // A token that expires between the grant and the list.
  const orig = az.tokens.add.bind(az.tokens);
  az.tokens.add = () => az.tokens;
  r = await run(src.id);
  az.tokens.add = orig;
  assert.equal(r.ok, false);
  assert.match(r.error, /HTTP 401 ExpiredAuthenticationToken.*invalid or has expired/);
  for (const x of await instances()) assert.equal(x.gone_at, null, x.name);
  r = await run(src.id);
  assert.equal(r.ok, true, r.error);
});
