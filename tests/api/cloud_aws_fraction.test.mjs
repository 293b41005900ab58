// Fractional cloud GPUs end to end: an AWS g6f.large (DescribeInstanceTypes
// Count 0, gpuPartitionSize 0.125, logicalGpuCount 1) is one placeholder
// GPU that is an eighth of an L4, a g6f.4xlarge half of one. The instance
// list shows gpu_fraction, and the usage model charges each by its share:
// two hours of a running g6f.large are 0.25 owned GPU-hours and cost a
// quarter of an L4-hour's rate.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { ok, stopClean, rollupAll } from './helpers.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const T0 = Math.floor(nowS() / 86400) * 86400 - 2 * 86400 + 8 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const SMALL = 'i-0g6f00000000small';
const HALF = 'i-0g6f0000000000half';
const close = (a, b, what) => assert.ok(Math.abs(a - b) < 1e-6, `${what}: ${a} is not ${b}`);

let s;
let aws;

before(async () => {
  aws = await startAwsStandin({
    pages: { 'us-east-1': ['describe-instances-g6f.xml'] },
    vars: { LAUNCH: iso(T0), TEAM: 'frac-small', TEAM_HALF: 'frac-half' },
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

test('a g6f instance is one GPU that is a share of an L4', async () => {
  for (const team of ['frac-small', 'frac-half']) {
    ok(await s.api('POST', '/api/v1/teams', { body: { name: team } }), 201);
    ok(await s.api('POST', '/api/v1/ownership-rules', { body: { match: { kind: 'cloud_tag', key: 'team', value: team }, set: { team }, effective_from: iso(T0 - 86400) } }), 201);
  }
  ok(await s.api('POST', '/api/v1/prices', { body: { model: 'NVIDIA L4', hourly: '4.00', effective_from: '2020-01-01T00:00:00Z' } }), 201);
  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'aws-g6f', kind: 'aws', enabled: false,
    config: { regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: 'secret', endpoint: aws.url } } }), 201);
  const r = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(r.run.ok, true, JSON.stringify(r.run));
  assert.equal(r.run.gpus, 2, 'one logical GPU each, not Count 0 and not a whole L4 counted twice');

  const list = ok(await s.api('GET', '/api/v1/cloud/instances?provider=aws'));
  const by = Object.fromEntries(list.items.map((i) => [i.instance_id, i]));
  assert.equal(by[SMALL].gpu_count, 1);
  assert.equal(by[SMALL].gpu_fraction, 0.125);
  assert.equal(by[SMALL].gpu_model, 'NVIDIA L4');
  assert.equal(by[SMALL].gpu_memory_mib, 2861);
  assert.equal(by[SMALL].gpus.length, 1);
  assert.equal(by[HALF].gpu_fraction, 0.5);
  assert.equal(by[HALF].gpu_memory_mib, 11444);
});

test('the usage model charges a fractional GPU by its share', async () => {
  assert.equal((await rollupAll(s)).dirty_left, 0);
  const usage = async (team) => ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams({ group_by: 'team', team, from: iso(T0), to: iso(T0 + 7200), step: 'day' })));
  const small = await usage('frac-small');
  close(small.total.gpu_hours.owned, 0.25, 'g6f.large: 2 h x 0.125');
  close(small.total.gpu_hours.allocated, 0.25, 'allocated to the instance for its run');
  assert.equal(small.total.cost.currency, 'USD');
  close(Number(small.total.cost.amount), 1.0, '0.25 GPU-hours x 4.00 an L4-hour');
  const half = await usage('frac-half');
  close(half.total.gpu_hours.owned, 1, 'g6f.4xlarge: 2 h x 0.5');
  close(Number(half.total.cost.amount), 4.0, '1 GPU-hour x 4.00');
});
