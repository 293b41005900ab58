// The aws source end to end against a stand-in EC2 Query API
// (tests/lib/cloud/aws.mjs replaying tests/fixtures/aws/*.xml): signed
// requests, paging by NextToken, throttling with Retry-After, an unknown
// instance type, an instance without tags, expired credentials. Instances
// become GPU records cloud:aws:<id>:<n> owned through a cloud_tag rule on
// their team tag, a running instance's GPUs are allocated to consumer
// kind cloud, a stopped one ends that, and a gone one's GPUs are missing;
// a failing region marks nothing gone.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { ok, assertError, dbQuery, stopClean, mkToken, rollupAll } from './helpers.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const T0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const isoMs = (t) => new Date(t * 1000).toISOString();
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const SESSION = 'FwoGZXIvYXdzEXAMPLEsessiontoken';
const P4D = 'i-0p4d000000000aaaa';

let s;
let aws;
let src;

const q1 = async (sql) => (await dbQuery(s.db, sql)).trim();
const instances = async (q = {}) => ok(await s.api('GET', '/api/v1/cloud/instances?' + new URLSearchParams(q)));

before(async () => {
  aws = await startAwsStandin({
    pages: { 'us-east-1': ['describe-instances-1.xml', 'describe-instances-2.xml'], 'us-west-2': ['describe-instances-west.xml'] },
    vars: { LAUNCH_P4D: isoMs(T0), LAUNCH_G5: iso(T0 + 1800).replace('Z', '+00:00') },
    throttle: { 'us-east-1': 2 },
  });
  s = await startServer();
});

after(async () => {
  try {
    if (s) await stopClean(s);
  } finally {
    if (aws) await aws.close();
  }
});

test('setup: the team and a cloud_tag rule for its tag', async () => {
  ok(await s.api('POST', '/api/v1/teams', { body: { name: 'llm-train' } }), 201);
  ok(await s.api('POST', '/api/v1/ownership-rules', { body: { match: { kind: 'cloud_tag', key: 'team', value: 'llm-train' }, set: { team: 'llm-train' }, effective_from: iso(T0 - 86400) } }), 201);
  ok(await s.api('POST', '/api/v1/usage/rollup'));
});

test('config is validated, the secrets are write-only', async () => {
  const base = { regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: SECRET };
  const bad = async (config, field) =>
    assertError(await s.api('POST', '/api/v1/sources', { body: { name: 'bad', kind: 'aws', config } }), 400, { field });
  await bad({ access_key_id: 'AKID', secret_access_key: SECRET }, 'config.regions');
  await bad({ ...base, regions: [] }, 'config.regions');
  await bad({ ...base, regions: ['US East'] }, 'config.regions');
  await bad({ ...base, regions: 'us-east-1' }, 'config.regions');
  await bad({ regions: ['us-east-1'], access_key_id: 'AKID' }, 'config.secret_access_key');
  await bad({ ...base, endpoint: 'ftp://x' }, 'config.endpoint');
  await bad({ ...base, page_size: 2 }, 'config.page_size');
  await bad({ ...base, role_arn: 'x' }, 'config.role_arn');
  src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'aws-prod', kind: 'aws', enabled: false, cluster: 'cloud-prod',
    config: { ...base, regions: ['us-east-1', 'us-west-2'], session_token: SESSION, endpoint: aws.url, timeout_s: 20 } } }), 201);
  assert.equal(src.config.secret_access_key, '(set)');
  assert.equal(src.config.session_token, '(set)');
  assert.deepEqual(src.config.regions, ['us-east-1', 'us-west-2']);
  assert.ok(!JSON.stringify(src).includes(SECRET) && !JSON.stringify(src).includes(SESSION), 'secrets are never shown');
});

test('a pull lists every page of every region, signed, through throttling', async () => {
  const r = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(r.run.ok, true, JSON.stringify(r.run));
  // p4d 8 + g5 1 + the stopped ml.g5 1 + g6e 4; the unknown type none.
  assert.equal(r.run.gpus, 14);
  assert.equal(r.run.hosts, 5, 'instances');

  const east = aws.seen.filter((x) => x.region === 'us-east-1' && x.action === 'DescribeInstances');
  assert.equal(east.length, 4, 'two throttled answers, then two pages');
  assert.equal(east[0].form.NextToken, undefined);
  assert.equal(east[3].form.NextToken, 'eyJ2IjoiMiIsImMiOiJwYWdlLTIifQ==');
  for (const x of aws.seen) {
    assert.match(x.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKID\/\d{8}\/(us-east-1|us-west-2)\/ec2\/aws4_request, ?SignedHeaders=[^,]+, ?Signature=[0-9a-f]{64}$/);
    assert.equal(x.headers['x-amz-security-token'], SESSION);
    assert.match(x.headers['content-type'], /^application\/x-www-form-urlencoded/);
  }
  const types = aws.seen.filter((x) => x.action === 'DescribeInstanceTypes');
  assert.deepEqual(types.filter((x) => x.region === 'us-east-1').map((x) => Object.keys(x.form).filter((k) => k.startsWith('Filter.1.Value.')).map((k) => x.form[k]).sort()),
    [['g5.xlarge', 'p4d.24xlarge', 'x9.mystery']], 'each type asked once per pull, by a filter');
  assert.equal(types.filter((x) => x.region === 'us-west-2').length, 1);

  const all = await instances({ provider: 'aws' });
  assert.equal(all.total, 5);
  const p4d = all.items.find((i) => i.instance_id === P4D);
  assert.equal(p4d.name, 'llm-train-01');
  assert.equal(p4d.host, 'llm-train-01');
  assert.equal(p4d.account, '123456789012');
  assert.equal(p4d.region, 'us-east-1');
  assert.equal(p4d.zone, 'us-east-1c');
  assert.equal(p4d.machine_type, 'p4d.24xlarge');
  assert.equal(p4d.state, 'running');
  assert.equal(p4d.launched_at, iso(T0));
  assert.equal(p4d.gpu_model, 'NVIDIA A100');
  assert.equal(p4d.gpu_count, 8);
  assert.equal(p4d.gpu_memory_mib, 40960);
  assert.equal(p4d.private_ip, '10.0.1.17');
  assert.deepEqual(p4d.tags, { Name: 'llm-train-01', team: 'llm-train', 'aws:autoscaling:groupName': 'llm-train-asg' });
  assert.deepEqual(p4d.gpus.map((g) => g.uuid), [0, 1, 2, 3, 4, 5, 6, 7].map((n) => `cloud:aws:${P4D}:${n}`));
  const g5 = all.items.find((i) => i.instance_id === 'i-0g5000000000bbbbb');
  assert.deepEqual(g5.tags, {}, 'an instance without a tagSet');
  assert.equal(g5.host, 'i-0g5000000000bbbbb', 'no Name tag: the host is named by the id');
  assert.equal(g5.launched_at, iso(T0 + 1800), '+00:00 form');
  const mystery = all.items.find((i) => i.instance_id === 'i-0new0000000cccccc');
  assert.equal(mystery.state, 'running', 'code 272 is running once masked with 0xFF');
  assert.equal(mystery.gpu_count, null, 'an unknown type: GPUs unknown, the instance kept');
  assert.equal(mystery.gpus.length, 0);
  const stopped = all.items.find((i) => i.instance_id === 'i-0stop00000000dddd');
  assert.equal(stopped.machine_type, 'g5.xlarge', 'the ml. prefix is stripped');
  assert.equal(stopped.state, 'stopped');
  assert.equal(stopped.state_raw, 'stopped');

  assert.equal((await instances({ region: 'us-west-2' })).total, 1);
  assert.equal((await instances({ state: 'stopped' })).total, 1);
  assert.equal((await instances({ q: 'llm-train' })).total, 1);
  assert.equal((await instances({ account: '123456789012', limit: '2' })).items.length, 2);
  assertError(await s.api('GET', '/api/v1/cloud/instances?provider=ibm'), 400, { field: 'provider' });
  assertError(await s.api('GET', '/api/v1/cloud/instances?state=asleep'), 400, { field: 'state' });
  const viewer = (await mkToken(s, 'viewer')).token;
  assert.equal((await s.api('GET', '/api/v1/cloud/instances', { auth: viewer })).status, 200);
  assert.equal((await s.api('GET', '/api/v1/cloud/instances', { auth: 'nope' })).status, 401);

  // GPU records: the owner from the team tag, the cloud from the provider.
  const g = ok(await s.api('GET', `/api/v1/gpus/cloud:aws:${P4D}:3`));
  assert.equal(g.model, 'NVIDIA A100');
  assert.equal(g.host, 'llm-train-01');
  assert.equal(g.owner.team.value, 'llm-train');
  assert.match(g.owner.team.by, /^rule:/);
  assert.equal(g.owner.cloud.value, 'aws');
  assert.equal(g.owner.cluster.value, 'cloud-prod', "the source's cluster");
});

test('usage: a running instance is a cloud consumer of all its GPUs', async () => {
  assert.equal((await rollupAll(s)).dirty_left, 0);
  const q = { group_by: 'consumer', team: 'llm-train', from: iso(T0), to: iso(T0 + 3600), step: 'day' };
  const byc = ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams(q)));
  const cloud = byc.items.filter((x) => x.kind === 'cloud');
  assert.deepEqual(cloud.map((x) => x.group), [`aws/${P4D}`]);
  assert.equal(cloud[0].gpu_hours.allocated, 8, '8 GPUs x the whole hour from the launch');
  assert.equal(cloud[0].gpu_hours.busy, 0, 'nothing measured them');
  // Before the launch nothing is owned.
  assert.equal(await q1(`SELECT COUNT(*) FROM usage_hourly WHERE hour < ${T0} AND team = 'llm-train'`), '0');
});

test('the next pull: stopped ends the allocation, gone GPUs are missing, a failing region marks nothing gone', async () => {
  aws.set({ pages: { 'us-east-1': ['describe-instances-after.xml'] }, fail: { 'us-west-2': 'error-expired.xml' }, throttle: {} });
  const r = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(r.run.ok, false);
  assert.match(r.run.error, /us-west-2/);
  assert.match(r.run.error, /RequestExpired/);
  assert.doesNotMatch(r.run.error, /us-east-1/);
  const got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /RequestExpired/);

  const all = await instances();
  const byId = Object.fromEntries(all.items.map((i) => [i.instance_id, i]));
  assert.notEqual(byId['i-0g5000000000bbbbb'].gone_at, null, 'absent from a complete listing: gone');
  assert.equal(byId['i-0g5000000000bbbbb'].gpus[0].missing_since !== null, true);
  assert.equal(byId['i-0west00000000eeee'].gone_at, null, 'the failed region keeps its instances');
  assert.equal(byId['i-0west00000000eeee'].gpus.every((x) => x.missing_since === null), true);
  assert.equal(byId[P4D].state, 'stopped');
  assert.equal(byId[P4D].gpus.every((x) => x.missing_since === null), true, 'a stopped instance keeps its GPUs');
  assert.equal(await q1(`SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id = r.instance_row WHERE i.instance_id = '${P4D}' AND r.ended_at IS NOT NULL`), '1');
  assert.equal(byId['i-0new0000000cccccc'].tags.team, undefined, 'tags follow the listing');

  assert.equal((await rollupAll(s)).dirty_left, 0);
  const open = await q1(`SELECT COUNT(*) FROM usage_intervals v JOIN gpus g ON g.id = v.gpu_id WHERE g.uuid LIKE 'cloud:aws:${P4D}:%' AND v.kind = 'cloud' AND v.ended_at IS NULL`);
  assert.equal(open, '0', 'the stop ended the allocation interval');
  const ended = await q1(`SELECT COUNT(*) FROM usage_intervals v JOIN gpus g ON g.id = v.gpu_id WHERE g.uuid LIKE 'cloud:aws:${P4D}:%' AND v.kind = 'cloud' AND v.started_at = ${T0}`);
  assert.equal(ended, '8');
});

test('refused credentials name the cause and mark nothing gone', async () => {
  const other = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'aws-wrong-key', kind: 'aws', enabled: false,
    config: { regions: ['us-east-1'], access_key_id: 'AKIDWRONG', secret_access_key: SECRET, endpoint: aws.url } } }), 201);
  const before = await q1('SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NOT NULL');
  const r = ok(await s.api('POST', `/api/v1/sources/${other.id}/run`));
  assert.equal(r.run.ok, false);
  assert.match(r.run.error, /us-east-1: the credentials were refused \(HTTP 401, AuthFailure/);
  assert.equal(await q1('SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NOT NULL'), before);
});

test('a test of an aws source reads every page and stores nothing', async () => {
  aws.set({ pages: { 'eu-west-1': ['describe-instances-1.xml', 'describe-instances-2.xml'] }, fail: {}, throttle: {} });
  const before = await q1('SELECT COUNT(*) FROM cloud_instances');
  const gpusBefore = await q1('SELECT COUNT(*) FROM gpus');
  const r = ok(await s.api('POST', '/api/v1/sources/test', { body: { name: 'aws-try', kind: 'aws',
    config: { regions: ['eu-west-1'], access_key_id: 'AKID', secret_access_key: SECRET, endpoint: aws.url } } }));
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.found.instances, 4);
  assert.equal(r.found.gpus, 10, 'p4d 8 + g5 1 + the stopped g5 1; the unknown type none');
  assert.equal(await q1('SELECT COUNT(*) FROM cloud_instances'), before);
  assert.equal(await q1('SELECT COUNT(*) FROM gpus'), gpusBefore);
});
