// A cloud placeholder merged into the real GPU: an aws instance with 8
// GPUs runs for 3 hours with a price and a team tag (one placeholder also
// explicitly assigned to another team, one billed by a billing line and
// linked to an asset), then an agent on the instance pushes its real GPUs
// and the next pull supersedes the placeholders. Each real GPU then holds
// its placeholder's hours (same figures, same team, same cost), the fleet
// totals of those hours are what they were (no hour counted twice), the
// assignment, billing share and asset link follow, both records carry an
// event, and the placeholder's document names the GPU it was merged into.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { ok, dbQuery, stopClean, rollupAll } from './helpers.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const H = Math.floor(nowS() / 3600) * 3600;
const T0 = H - 3 * 3600; // the launch: 3 whole hours before the current one
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const P4D = 'i-0p4d000000000aaaa';
const ph = (n) => `cloud:aws:${P4D}:${n}`;
const real = (n) => `GPU-c1a0d000-0000-4000-8000-00000000000${n}`;
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);

let s;
let aws;
let src;

const q1 = async (sql) => (await dbQuery(s.db, sql)).trim();
const rows = async (sql) => (await q1(sql)).split('\n').filter(Boolean).map((l) => l.split('|'));
const rollup = async () => assert.equal((await rollupAll(s)).dirty_left, 0);
const usage = async (q) => ok(await s.api('GET', '/api/v1/usage?' + new URLSearchParams(q)));
const fleet = (group_by) => usage({ group_by, from: iso(T0), to: iso(T0 + 3 * 3600), step: 'day' });
/** Per GPU uuid: [hour, team, owned_s, allocated_s, rate_micros] of the 3 whole hours. */
async function hoursOf(uuids) {
  const list = uuids.map((u) => `'${u}'`).join(',');
  return rows(`SELECT g.uuid, u.hour, u.team, u.owned_s, u.allocated_s, u.rate_micros FROM usage_hourly u JOIN gpus g ON g.id = u.gpu_id WHERE g.uuid IN (${list}) AND u.hour >= ${T0} AND u.hour < ${H} ORDER BY g.uuid, u.hour`);
}

before(async () => {
  aws = await startAwsStandin({
    pages: { 'us-east-1': ['describe-instances-1.xml', 'describe-instances-2.xml'] },
    vars: { LAUNCH_P4D: iso(T0), LAUNCH_G5: iso(T0) },
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

let before3;
let beforeTeams;

test('3 hours of placeholders: priced, owned by the team tag, one explicitly assigned', async () => {
  ok(await s.api('POST', '/api/v1/teams', { body: { name: 'llm-train' } }), 201);
  ok(await s.api('POST', '/api/v1/teams', { body: { name: 'research' } }), 201);
  ok(await s.api('POST', '/api/v1/ownership-rules', { body: { match: { kind: 'cloud_tag', key: 'team', value: 'llm-train' }, set: { team: 'llm-train' }, effective_from: iso(T0 - 86400) } }), 201);
  ok(await s.api('POST', '/api/v1/prices', { body: { model: 'NVIDIA A100', hourly: '4.00', effective_from: iso(T0 - 86400) } }), 201);
  src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'aws-merge', kind: 'aws', enabled: false,
    config: { regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: 'x'.repeat(40), endpoint: aws.url } } }), 201);
  const r = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(r.run.ok, true, JSON.stringify(r.run));
  ok(await s.api('PUT', `/api/v1/gpus/${ph(5)}/owner`, { body: { team: 'research', effective_from: iso(T0 - 3600) } }));
  await rollup();

  before3 = await hoursOf([0, 1, 2, 3, 4, 5, 6, 7].map(ph));
  assert.equal(before3.length, 24, '8 placeholders x 3 whole hours');
  for (const [uuid, , team, owned, alloc, rate] of before3) {
    assert.equal(team, uuid === ph(5) ? 'research' : 'llm-train', uuid);
    close(Number(owned), 3600, `${uuid} owned`);
    close(Number(alloc), 3600, `${uuid} allocated by the running instance`);
    assert.equal(rate, '4000000', 'priced');
  }
  beforeTeams = await fleet('team');
  // The 3 hours may span midnight: one item per team and day, summed.
  const alloc = (team) => beforeTeams.items.filter((x) => x.group === team)
    .reduce((a, x) => a + x.gpu_hours.allocated, 0);
  close(alloc('llm-train'), 7 * 3, 'llm-train GPU-hours');
  close(alloc('research'), 3, 'research GPU-hours');

  // A billing line for the instance, spread over its 8 placeholders.
  const hdr = 'identity/LineItemId,identity/TimeInterval,bill/PayerAccountId,lineItem/UsageAccountId,lineItem/LineItemType,lineItem/UsageStartDate,lineItem/UsageEndDate,lineItem/ProductCode,lineItem/UsageType,lineItem/ResourceId,lineItem/UsageAmount,lineItem/CurrencyCode,lineItem/UnblendedRate,lineItem/UnblendedCost,product/instanceType,product/region,resourceTags/user:team,resourceTags/user:Name';
  const line = ['merge-line-1', `${iso(T0)}/${iso(T0 + 3600)}`, '123456789012', '123456789012', 'Usage', iso(T0), iso(T0 + 3600), 'AmazonEC2', 'USE1-BoxUsage:p4d.24xlarge', P4D, '1.0', 'USD', '32.00', '32.00', 'p4d.24xlarge', 'us-east-1', 'llm-train', 'llm-train-01'].join(',');
  const b = ok(await s.api('POST', '/api/v1/billing/import', { body: `${hdr}\n${line}\n`, contentType: 'text/csv' }));
  assert.equal(b.matched_instance, 1, JSON.stringify(b));
  assert.equal(await q1(`SELECT COUNT(*) FROM billing_costs c JOIN gpus g ON g.id = c.gpu_id WHERE g.uuid LIKE 'cloud:aws:${P4D}:%'`), '8');

  // An asset linked to placeholder 2.
  ok(await s.api('POST', '/api/v1/assets', { body: { tag: 'MERGE-A2', kind: 'gpu', serial: 'SN-MERGE-2', gpu_uuid: ph(2) } }), 201);
});

test('the agent on the instance reports its GPUs; the next pull merges the placeholders into them', async () => {
  const tok = ok(await s.api('POST', '/api/v1/tokens', { body: { name: 'agent-merge', role: 'pusher', source: 'agent-merge' } }), 201).token;
  const gpus = [0, 1, 2, 3, 4, 5, 6, 7].map((n) => ({ uuid: real(n), index: n, name: 'NVIDIA A100', serial: `S-MERGE-${n}`, pci_bus_id: `0000:${(0x10 + n).toString(16)}:00.0` }));
  // Just after the hour began: its first reading must not reach back into the moved hours.
  const t = Math.min(nowS(), H + 5);
  const r = await s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: 'merge-1', host: { hostname: 'llm-train-01' }, gpus,
    samples: gpus.map((g) => ({ time: t, gpu: g.uuid, util_avg: 80 })) } });
  assert.equal(r.status, 201, r.text);

  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(run.run.ok, true, JSON.stringify(run.run));
  assert.equal(await q1(`SELECT COUNT(*) FROM cloud_gpus c JOIN gpus g ON g.id = c.gpu_id JOIN gpus m ON m.id = c.superseded_by WHERE g.uuid LIKE 'cloud:aws:${P4D}:%' AND m.uuid = 'GPU-c1a0d000-0000-4000-8000-00000000000' || CAST(c.idx AS TEXT)`), '8',
    'each placeholder merged into the real GPU of its index');

  const p3 = ok(await s.api('GET', `/api/v1/gpus/${ph(3)}`));
  assert.equal(p3.cloud.merged_into, real(3));
  assert.equal(p3.cloud.placeholder_index, 3);
  assert.notEqual(p3.missing_since, null, 'the placeholder stops counting');
  assert.ok(p3.events.some((e) => e.kind === 'merged_into' && e.detail.uuid === real(3)));
  const g3 = ok(await s.api('GET', `/api/v1/gpus/${real(3)}`));
  assert.deepEqual(g3.cloud.merged_from, [ph(3)]);
  assert.equal(g3.cloud.instance_id, P4D, 'the real GPU names its instance');
  assert.equal(g3.cloud.placeholder_index, null);
  assert.ok(g3.events.some((e) => e.kind === 'merged_from' && e.detail.uuid === ph(3)));
  assert.equal(g3.owner.team.value, 'llm-train');

  // The explicit assignment followed placeholder 5 to the real GPU 5.
  const g5 = ok(await s.api('GET', `/api/v1/gpus/${real(5)}`));
  assert.equal(g5.owner.team.value, 'research');
  assert.match(g5.owner.team.by, /^assignment/);

  // The billing shares and the asset link moved.
  const shares = await rows(`SELECT g.uuid, c.cost_micros FROM billing_costs c JOIN gpus g ON g.id = c.gpu_id ORDER BY g.uuid`);
  assert.deepEqual(shares.map((x) => x[0]), [0, 1, 2, 3, 4, 5, 6, 7].map(real));
  assert.equal(shares.reduce((a, x) => a + Number(x[1]), 0), 32000000, 'the line total kept');
  const ids = JSON.parse(await q1(`SELECT gpu_ids FROM billing_lines WHERE line_key LIKE '%merge-line-1%' OR resource_id = '${P4D}'`));
  assert.deepEqual(ids.sort(), (await rows(`SELECT id FROM gpus WHERE uuid LIKE 'GPU-c1a0d000-%'`)).map((x) => Number(x[0])).sort());
  assert.equal(ok(await s.api('GET', '/api/v1/assets/MERGE-A2')).gpu_uuid, real(2));
});

test('the real GPUs hold the placeholders hours: same figures and team, fleet totals unchanged', async () => {
  await rollup();
  const after3 = await hoursOf([0, 1, 2, 3, 4, 5, 6, 7].map(real));
  assert.deepEqual(after3, before3.map(([uuid, ...rest]) => [real(Number(uuid.split(':').pop())), ...rest]));
  assert.equal(await q1(`SELECT COUNT(*) FROM usage_hourly u JOIN gpus g ON g.id = u.gpu_id WHERE g.uuid LIKE 'cloud:aws:${P4D}:%'`), '0',
    'no placeholder row is left to count twice');
  const afterTeams = await fleet('team');
  const norm = (rep) => Object.fromEntries(rep.items.map((x) => [`${x.group} ${x.start}`, [x.gpu_hours, x.cost]]));
  assert.deepEqual(norm(afterTeams), norm(beforeTeams));
  close(afterTeams.total.gpu_hours.owned, beforeTeams.total.gpu_hours.owned, 'fleet owned GPU-hours');

  // The instance stays the consumer of the hours, now on the real GPUs.
  const byc = await usage({ group_by: 'consumer', from: iso(T0), to: iso(T0 + 3 * 3600), step: 'day' });
  const cloud = byc.items.filter((x) => x.kind === 'cloud' && x.group === `aws/${P4D}`);
  close(cloud.reduce((a, x) => a + x.gpu_hours.allocated, 0), 24, 'aws instance GPU-hours');
  assert.equal(await q1(`SELECT COUNT(*) FROM usage_intervals v JOIN gpus g ON g.id = v.gpu_id WHERE g.uuid LIKE 'GPU-c1a0d000-%' AND v.kind = 'cloud' AND v.started_at = ${T0}`), '8');
});

test('a later pull merges nothing again, and the current hour of a real GPU is not counted twice', async () => {
  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`));
  assert.equal(run.run.ok, true);
  assert.equal(await q1(`SELECT COUNT(*) FROM gpu_events WHERE kind = 'merged_from'`), '8');
  await rollup();
  assert.equal(await q1(`SELECT COUNT(*) FROM usage_hourly u JOIN gpus g ON g.id = u.gpu_id WHERE g.uuid LIKE 'cloud:aws:${P4D}:%'`), '0');
  const hours = await rows(`SELECT u.hour, COUNT(*) FROM usage_hourly u JOIN gpus g ON g.id = u.gpu_id JOIN hosts h ON h.id = g.host_id WHERE h.hostname = 'llm-train-01' GROUP BY u.hour ORDER BY u.hour`);
  for (const [hour, n] of hours) assert.equal(n, '8', `hour ${hour}: one row per physical GPU`);
});
