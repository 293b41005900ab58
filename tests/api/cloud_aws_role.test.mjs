// The aws source's other credentials, against the stand-in
// (tests/lib/cloud/aws.mjs), which also plays STS and the instance
// metadata service and verifies every SigV4 signature with the secret of
// the key that made it:
//  - role_arn: the base keys call STS AssumeRole (signed for sts in
//    us-east-1, with the external id), and only the role's temporary keys
//    and their session token are accepted by EC2;
//  - AccessDenied from STS is named with the role, and marks nothing gone;
//  - credentials "instance": IMDSv2 (a session token by PUT, then the
//    role's name and its keys);
//  - temporary keys close to their Expiration are renewed before use, and
//    keys EC2 calls ExpiredToken are renewed once and the request retried.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { ok, assertError, dbQuery, stopClean } from './helpers.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const T0 = Math.floor(nowS() / 86400) * 86400 - 86400 + 6 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const SECRET = 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY';
const ROLE = 'arn:aws:iam::123456789012:role/gpuinv-reader';
const EXT = 'gpuinv-7f3a2c';

let s;
let aws;

const q1 = async (sql) => (await dbQuery(s.db, sql)).trim();
const ec2 = () => aws.seen.filter((x) => x.service === 'ec2');
const sts = () => aws.seen.filter((x) => x.service === 'sts');
const keyOf = (x) => /Credential=([^/]+)\//.exec(x.headers.authorization)[1];
const create = async (name, config) =>
  ok(await s.api('POST', '/api/v1/sources', { body: { name, kind: 'aws', enabled: false, config: { regions: ['us-east-1'], endpoint: aws.url, ...config } } }), 201);
const run = async (src) => ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).run;

before(async () => {
  aws = await startAwsStandin({
    pages: { 'us-east-1': ['describe-instances-1.xml', 'describe-instances-2.xml'] },
    vars: { LAUNCH_P4D: iso(T0), LAUNCH_G5: iso(T0 + 1800) },
    secret: SECRET,
    role: { arn: ROLE, externalId: EXT },
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

test('the credential settings are validated, each error naming its key', async () => {
  const base = { regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: SECRET };
  const bad = async (config, field) =>
    assertError(await s.api('POST', '/api/v1/sources', { body: { name: 'bad', kind: 'aws', config } }), 400, { field });
  await bad({ ...base, role_arn: 'gpuinv-reader' }, 'config.role_arn');
  await bad({ ...base, role_arn: 'arn:aws:iam::1234:role/x' }, 'config.role_arn');
  await bad({ ...base, role_arn: 'arn:aws:iam::123456789012:user/x' }, 'config.role_arn');
  await bad({ ...base, role_arn: 'arn:aws:iam::123456789012:role/' }, 'config.role_arn');
  await bad({ ...base, credentials: 'magic' }, 'config.credentials');
  await bad({ regions: ['us-east-1'], credentials: 'instance', access_key_id: 'AKID' }, 'config.access_key_id');
  await bad({ regions: ['us-east-1'], credentials: 'instance', secret_access_key: SECRET }, 'config.secret_access_key');
  await bad({ regions: ['us-east-1'], credentials: 'instance', session_token: 'x' }, 'config.session_token');
  await bad({ regions: ['us-east-1'], credentials: 'keys', access_key_id: 'AKID' }, 'config.secret_access_key');
  await bad({ regions: ['us-east-1'], secret_access_key: SECRET }, 'config.access_key_id');
  await bad({ ...base, external_id: EXT }, 'config.external_id');
  await bad({ ...base, sts_endpoint: aws.url }, 'config.sts_endpoint');
  await bad({ ...base, imds_endpoint: aws.url }, 'config.imds_endpoint');
  await bad({ ...base, role_arn: ROLE, role_session_name: 'a b' }, 'config.role_session_name');
  await bad({ ...base, role_arn: ROLE, sts_endpoint: 'ftp://sts' }, 'config.sts_endpoint');
  const kinds = ok(await s.api('GET', '/api/v1/source-kinds'));
  const keys = (kinds.items ?? kinds).find((k) => k.kind === 'aws').keys;
  const byName = Object.fromEntries(keys.map((k) => [k.name, k]));
  for (const k of ['credentials', 'role_arn', 'external_id', 'role_session_name', 'sts_endpoint', 'imds_endpoint']) {
    assert.ok(byName[k], `${k} is listed`);
    assert.ok(byName[k].help, `${k} has help`);
  }
  assert.equal(byName.external_id.secret, true);
  assert.equal(byName.access_key_id.required, false, 'not with credentials "instance"');
});

test('with role_arn the role is assumed and only its temporary keys read EC2', async () => {
  // Without the role EC2 refuses the base keys.
  const plain = await create('aws-base-only', { access_key_id: 'AKID', secret_access_key: SECRET });
  const r0 = await run(plain);
  assert.equal(r0.ok, false);
  assert.match(r0.error, /AuthFailure/);

  const src = await create('aws-role', { access_key_id: 'AKID', secret_access_key: SECRET, role_arn: ROLE, external_id: EXT, sts_endpoint: aws.url });
  assert.equal(src.config.external_id, '(set)', 'the external id is write-only');
  aws.seen.length = 0;
  const r = await run(src);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.hosts, 4);
  assert.equal(r.gpus, 10);
  const calls = sts();
  assert.equal(calls.length, 1, 'one AssumeRole serves the whole pull');
  assert.deepEqual(calls[0].form, { Action: 'AssumeRole', Version: '2011-06-15', RoleArn: ROLE, RoleSessionName: 'gpuinv', DurationSeconds: '3600', ExternalId: EXT });
  assert.match(calls[0].headers.authorization, /Credential=AKID\/\d{8}\/us-east-1\/sts\/aws4_request/);
  assert.equal(calls[0].headers['x-amz-security-token'], undefined, 'long-term base keys carry no token');
  const issued = aws.issued.filter((k) => k.by === 'sts');
  assert.equal(issued.length, 1);
  assert.ok(ec2().length >= 3, 'two pages and the types');
  for (const x of ec2()) {
    assert.equal(keyOf(x), issued[0].keyId, 'EC2 is signed with the role\'s key');
    assert.ok(x.headers['x-amz-security-token'], 'with its session token');
  }
  const all = ok(await s.api('GET', '/api/v1/cloud/instances?provider=aws'));
  assert.equal(all.total, 4);
  assert.equal(all.items.find((i) => i.instance_id === 'i-0p4d000000000aaaa').gpu_count, 8);
});

test('a role STS refuses is named with its code and marks nothing gone', async () => {
  const src = await create('aws-denied', { access_key_id: 'AKID', secret_access_key: SECRET, role_arn: 'arn:aws:iam::123456789012:role/not-trusted', sts_endpoint: aws.url });
  const gone = await q1('SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NOT NULL');
  aws.seen.length = 0;
  const r = await run(src);
  assert.equal(r.ok, false);
  assert.match(r.error, /arn:aws:iam::123456789012:role\/not-trusted/);
  assert.match(r.error, /AccessDenied/);
  assert.match(r.error, /trust policy/);
  assert.equal(ec2().length, 0, 'no EC2 request without the role\'s keys');
  const got = ok(await s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /AccessDenied/);
  assert.equal(await q1('SELECT COUNT(*) FROM cloud_instances WHERE gone_at IS NOT NULL'), gone);

  // A source test says the same, and stores nothing.
  const t = ok(await s.api('POST', `/api/v1/sources/${src.id}/test`));
  assert.equal(t.ok, false);
  assert.match(t.error, /AccessDenied/);
});

test('keys about to expire are renewed before use; keys EC2 calls expired are renewed once', async () => {
  // The first keys expire in 2 minutes: within 5 minutes of Expiration,
  // so before the first EC2 request new ones (valid an hour) are got.
  aws.set({ role: { arn: ROLE, externalId: EXT, expiresIn: [120, 3600] } });
  aws.issued.length = 0;
  aws.seen.length = 0;
  const src = await create('aws-renew', { access_key_id: 'AKID', secret_access_key: SECRET, role_arn: ROLE, external_id: EXT, sts_endpoint: aws.url, role_session_name: 'gpuinv-renew' });
  const r = await run(src);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(sts().length, 2, 'assumed again when close to the expiry');
  assert.equal(sts()[1].form.RoleSessionName, 'gpuinv-renew');
  const [first, second] = aws.issued.map((k) => k.keyId);
  const used = ec2().map(keyOf);
  assert.ok(!used.includes(first), 'keys that expire within 5 minutes are not used');
  assert.ok(used.length >= 3 && used.every((k) => k === second), JSON.stringify(used));

  // Keys that are revoked after one use: EC2 answers ExpiredToken, the
  // role is assumed again and the request retried.
  aws.set({ role: { arn: ROLE, externalId: EXT, revokeAfter: 1 } });
  aws.issued.length = 0;
  aws.seen.length = 0;
  const r2 = await run(src);
  assert.equal(r2.ok, true, JSON.stringify(r2));
  const keysUsed = ec2().map(keyOf);
  assert.ok(aws.issued.length >= 2, 'new keys after ExpiredToken');
  for (const k of new Set(keysUsed)) {
    assert.ok(keysUsed.filter((x) => x === k).length <= 2, 'each key: one answer, then one ExpiredToken');
  }
  assert.equal(sts().length, aws.issued.length);
});

test('credentials "instance": the metadata service\'s keys (IMDSv2) sign the requests', async () => {
  aws.set({ role: undefined, imds: { role: 'gpuinv-node' } });
  aws.issued.length = 0;
  aws.seen.length = 0;
  aws.imdsSeen.length = 0;
  const src = await create('aws-instance', { credentials: 'instance', imds_endpoint: aws.url });
  const r = await run(src);
  assert.equal(r.ok, true, JSON.stringify(r));
  const m = aws.imdsSeen;
  assert.equal(m[0].method, 'PUT');
  assert.equal(m[0].path, '/latest/api/token');
  assert.equal(m[0].headers['x-aws-ec2-metadata-token-ttl-seconds'], '21600');
  assert.deepEqual(m.slice(1).map((x) => [x.method, x.path]), [['GET', '/latest/meta-data/iam/security-credentials/'], ['GET', '/latest/meta-data/iam/security-credentials/gpuinv-node']]);
  assert.ok(m.slice(1).every((x) => x.headers['x-aws-ec2-metadata-token']), 'every GET carries the session token');
  const key = aws.issued[0].keyId;
  assert.ok(ec2().length >= 3);
  assert.ok(ec2().every((x) => keyOf(x) === key && x.headers['x-amz-security-token']), 'signed with the instance role\'s keys');

  // The instance's keys can also assume a role.
  aws.set({ role: { arn: ROLE }, imds: { role: 'gpuinv-node' } });
  aws.issued.length = 0;
  aws.seen.length = 0;
  const chained = await create('aws-instance-role', { credentials: 'instance', imds_endpoint: aws.url, role_arn: ROLE, sts_endpoint: aws.url });
  const r2 = await run(chained);
  assert.equal(r2.ok, true, JSON.stringify(r2));
  assert.deepEqual(aws.issued.map((k) => k.by), ['imds', 'sts']);
  assert.equal(keyOf(sts()[0]), aws.issued[0].keyId, 'STS is called with the instance\'s keys');
  assert.ok(sts()[0].headers['x-amz-security-token']);
  assert.ok(ec2().every((x) => keyOf(x) === aws.issued[1].keyId));

  // Not on an instance with a role: named.
  aws.set({ role: undefined, imds: { role: '' } });
  const r3 = await run(src);
  assert.equal(r3.ok, false);
  assert.match(r3.error, /instance metadata service/);
});
