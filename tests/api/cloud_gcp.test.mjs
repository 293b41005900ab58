// The gcp source end to end against a stand-in (tests/lib/cloud/gcp.mjs)
// that replays recorded Compute Engine answers: a service-account key
// made for the test signs the grant (RS256, checked by the stand-in with
// node's crypto), aggregatedList is read over two pages with a throttled
// answer between them, GPUs come from guestAccelerators, the machine-type
// table or machineTypes.get, labels feed the ownership rules, a
// TERMINATED (stopped) instance's GPUs are not allocated, and failed
// pages or refused credentials mark nothing gone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startGcp, makeServiceAccount, PROJECT } from '../lib/cloud/gcp.mjs';
import { ok, assertError, stopClean, rollupAll } from './helpers.mjs';

let s;
let gcp;
let key;
let src;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
// A time as the API shows it (RFC 3339 or unix seconds) in unix seconds.
const secs = (v) => (typeof v === 'number' ? v : Date.parse(v) / 1000);
// The recorded instances started three days ago at 10:00 UTC.
const T0 = Math.floor(Date.now() / 86400000) * 86400 - 3 * 86400 + 10 * 3600;

before(async () => {
  gcp = await startGcp({ staticTokens: ['ya29.given-token'] });
  key = makeServiceAccount(gcp.url + '/token');
  gcp.publicKey = key.publicKey;
  gcp.startAt = T0;
  s = await startServer();
});

after(async () => {
  try {
    if (s) await stopClean(s);
  } finally {
    await gcp.close();
  }
});

const instances = async () => ok(await s.api('GET', '/api/v1/cloud/instances?provider=gcp&limit=100')).items;
const byName = (items, name) => items.find((x) => x.name === name);
const run = async (id) => ok(await s.api('POST', `/api/v1/sources/${id}/run`)).run;
const gpu = async (uuid) => ok(await s.api('GET', `/api/v1/gpus/${encodeURIComponent(uuid)}`));
const pageCalls = (tok) => gcp.seen.filter((x) => x.path.endsWith('/aggregated/instances') && (x.query.pageToken || '') === tok).length;

test('config: project required and checked, credentials exclusive, the key must be a key, secrets write-only', async () => {
  const mk = (config) => s.api('POST', '/api/v1/sources', { body: { name: 'gcp-bad', kind: 'gcp', enabled: false, config } });
  assertError(await mk({ access_token: 't' }), 400, { field: 'config.project' });
  assertError(await mk({ project: 'ml prod/../x', access_token: 't' }), 400, { field: 'config.project' });
  assertError(await mk({ project: PROJECT, access_token: 't', service_account_json: key.json }), 400, { field: 'config.access_token' });
  assertError(await mk({ project: PROJECT, service_account_json: '{"type":"service_account"}' }), 400, { field: 'config.service_account_json' });
  assertError(await mk({ project: PROJECT, endpoint: 'ftp://x' }), 400, { field: 'config.endpoint' });
  assertError(await mk({ project: PROJECT, regions: ['x'] }), 400, { field: 'config.regions' });
  ok(await s.api('POST', '/api/v1/teams', { body: { name: 'llm' } }), 201);
  ok(await s.api('POST', '/api/v1/ownership-rules', {
    body: { match: { kind: 'cloud_tag', key: 'team', value: 'llm' }, set: { team: 'llm' }, effective_from: iso(Math.floor(Date.now() / 1000) - 86400 * 400) },
  }), 201);
  src = ok(await s.api('POST', '/api/v1/sources', {
    body: { name: 'gcp-ml', kind: 'gcp', enabled: false, config: { project: PROJECT, service_account_json: key.json, endpoint: gcp.url, token_endpoint: gcp.url + '/token' } },
  }), 201);
  assert.equal(src.config.service_account_json, '(set)');
  assert.ok(!JSON.stringify(src).includes('PRIVATE KEY'));
});

test('a service-account pull: signed grant, two pages with a throttled answer, every GPU source', async () => {
  gcp.throttle = 1;
  const r = await run(src.id);
  assert.equal(r.ok, true, r.error);
  // The grant: form-encoded, RS256 with the key's id, claims as Google wants them.
  const tokenCalls = gcp.seen.filter((x) => x.path === '/token');
  assert.equal(tokenCalls.length, 1);
  assert.match(tokenCalls[0].type, /application\/x-www-form-urlencoded/);
  assert.equal(gcp.lastRefusal, undefined);
  const g = gcp.grants[0];
  assert.deepEqual(g.header, { alg: 'RS256', typ: 'JWT', kid: 'test-key-1' });
  assert.equal(g.claims.iss, 'inventory@ml-prod.iam.gserviceaccount.com');
  assert.equal(g.claims.aud, gcp.url + '/token');
  assert.equal(g.claims.scope, 'https://www.googleapis.com/auth/compute.readonly');
  // Page 2 was throttled once (429 + Retry-After), then read.
  assert.equal(pageCalls(''), 1);
  assert.equal(pageCalls('Cg1wYWdlLXR3by10b2tlbg'), 2);
  assert.equal(gcp.seen.find((x) => x.path.endsWith('/aggregated/instances')).query.maxResults, '500');

  const items = await instances();
  assert.deepEqual(items.map((x) => x.name).sort(), ['b200-new', 'bastion', 'infer-1', 'mystery-gpu', 'trainer-0', 'vision-t4']);
  const t0 = byName(items, 'trainer-0');
  assert.equal(t0.instance_id, '4583243601304432596');
  assert.equal(t0.account, PROJECT);
  assert.equal(t0.region, 'us-central1');
  assert.equal(t0.zone, 'us-central1-a');
  assert.equal(t0.machine_type, 'a3-highgpu-8g');
  assert.equal(t0.state, 'running');
  assert.equal(t0.gpu_model, 'NVIDIA H100 80GB HBM3');
  assert.equal(t0.gpu_count, 8);
  assert.deepEqual(t0.tags, { team: 'llm', env: 'prod' });
  assert.equal(secs(t0.launched_at), T0); // lastStartTimestamp, -07:00 with millis
  assert.equal(t0.gpus.length, 8);
  assert.equal(t0.gpus[0].uuid, 'cloud:gcp:4583243601304432596:0');
  // No guestAccelerators and no labels: the machine type's 2 L4s.
  const inf = byName(items, 'infer-1');
  assert.equal(inf.gpu_count, 2);
  assert.equal(inf.gpu_model, 'NVIDIA L4');
  assert.deepEqual(inf.tags, {});
  // TERMINATED is stopped; -vws is the same T4.
  const vis = byName(items, 'vision-t4');
  assert.equal(vis.state, 'stopped');
  assert.equal(vis.state_raw, 'TERMINATED');
  assert.equal(vis.gpu_model, 'Tesla T4');
  assert.equal(vis.gpu_count, 2);
  // A GPU family's type the table lacks, resolved by machineTypes.get;
  // another that the API does not know stays unknown.
  const b200 = byName(items, 'b200-new');
  assert.equal(b200.gpu_count, 8);
  assert.equal(b200.gpu_model, 'NVIDIA B200');
  assert.equal(b200.state, 'pending');
  assert.equal(gcp.seen.filter((x) => x.path.endsWith('/machineTypes/a4-highgpu-8g')).length, 1);
  const mys = byName(items, 'mystery-gpu');
  assert.equal(mys.gpu_count, null);
  assert.equal(mys.gpus.length, 0);
  assert.equal(byName(items, 'bastion').gpu_count, 0);
  assert.equal(r.gpus, 8 + 2 + 2 + 8);
});

test('labels feed the ownership rules; a running instance is allocated, a stopped one is not', async () => {
  const g = await gpu('cloud:gcp:4583243601304432596:3');
  assert.equal(g.model, 'NVIDIA H100 80GB HBM3');
  assert.equal(g.owner.team.value, 'llm');
  assert.match(g.owner.team.by, /^rule:/);
  const other = await gpu('cloud:gcp:7310001112223334445:0');
  assert.notEqual(other.owner.team?.value, 'llm'); // infer-1 has no labels
  assert.equal((await rollupAll(s)).dirty_left, 0);
  const q = { group_by: 'consumer', from: iso(T0), to: iso(T0 + 3600), step: 'day' };
  const cloud = ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams(q))).items.filter((x) => x.kind === 'cloud');
  // Running: trainer-0 (8 H100) and infer-1 (2 L4). Not: the TERMINATED
  // vision-t4, the STAGING b200-new, mystery-gpu without known GPUs.
  assert.deepEqual(cloud.map((x) => x.group).sort(), ['gcp/4583243601304432596', 'gcp/7310001112223334445']);
  assert.equal(cloud.find((x) => x.group === 'gcp/4583243601304432596').gpu_hours.allocated, 8);
  assert.equal(cloud.find((x) => x.group === 'gcp/7310001112223334445').gpu_hours.allocated, 2);
  const llm = ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...q, team: 'llm' }))).items.filter((x) => x.kind === 'cloud');
  assert.deepEqual(llm.map((x) => x.group), ['gcp/4583243601304432596']);
});

test('a failed page and throttling without end mark nothing gone; an empty zone that does not answer is a warning', async () => {
  gcp.failPage2 = true;
  let r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /page 2/);
  assert.match(r.error, /HTTP 500/);
  gcp.failPage2 = false;
  gcp.throttle = 100;
  r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /HTTP 429.*throttled/);
  gcp.throttle = 0;
  let got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /throttled/);
  gcp.unreachable = true;
  r = await run(src.id);
  assert.equal(r.ok, true, r.error);
  gcp.unreachable = false;
  const items = await instances();
  assert.equal(items.length, 6);
  for (const x of items) assert.equal(x.gone_at, null, x.name);
  got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.equal(got.last_error, null);
  assert.match(got.last_warning, /1 zone did not answer: zones\/asia-east2-c/);
});

test('refused credentials: a revoked key and an expired access token are named; nothing is gone', async () => {
  gcp.refuseKey = true;
  let r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /refused the service-account key \(HTTP 400: invalid_grant: Invalid JWT Signature\.\)/);
  gcp.refuseKey = false;
  const tok = ok(await s.api('POST', '/api/v1/sources', {
    body: { name: 'gcp-token', kind: 'gcp', enabled: false, config: { project: PROJECT, access_token: 'ya29.given-token', endpoint: gcp.url } },
  }), 201);
  // A token of two lines would add a header to the request: refused.
  const two = ok(await s.api('POST', '/api/v1/sources', {
    body: { name: 'gcp-two-lines', kind: 'gcp', enabled: false, config: { project: PROJECT, access_token: 'ya29.given-token\r\nX-Injected: 1', endpoint: gcp.url } },
  }), 201);
  const seenBefore = gcp.seen.length;
  r = await run(two.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /access_token must be one line/);
  assert.equal(gcp.seen.length, seenBefore, 'nothing was sent');
  gcp.expire();
  r = await run(tok.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /HTTP 401 UNAUTHENTICATED: Request had invalid authentication credentials.*invalid or has expired/);
  for (const x of await instances()) assert.equal(x.gone_at, null, x.name);
  // A fresh grant works again, and the listing is whole once more.
  r = await run(src.id);
  assert.equal(r.ok, true, r.error);
});

test('an instance gone from a complete listing is marked gone', async () => {
  gcp.dropPage2 = true;
  const r = await run(src.id);
  gcp.dropPage2 = false;
  assert.equal(r.ok, true, r.error);
  const items = await instances();
  assert.notEqual(byName(items, 'vision-t4').gone_at, null);
  assert.equal(byName(items, 'trainer-0').gone_at, null);
});
