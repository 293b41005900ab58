// A test run of a source (POST /api/v1/sources/test, /sources/{id}/test)
// is bounded as a whole, not only per request: a paged listing whose
// pages come slowly stops at the run's overall limit (?deadline_s=,
// default 60 s), the error says so, and the listing was not read to its
// end; the limit is validated.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { ok, assertError, stopClean } from './helpers.mjs';

const PAGES = 40;
let s;
let aws;
const config = () => ({ regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: 'x'.repeat(40), endpoint: aws.url, timeout_s: 30 });
const listed = () => aws.seen.filter((x) => x.action === 'DescribeInstances').length;

before(async () => {
  // Every page names a next one; each answer takes 400 ms.
  aws = await startAwsStandin({ pages: { 'us-east-1': Array(PAGES).fill('describe-instances-1.xml') }, delay: 400 });
  s = await startServer();
});

after(async () => {
  try {
    if (s) await stopClean(s);
  } finally {
    if (aws) await aws.close();
  }
});

test('a slow paged listing stops at the test run\'s overall limit', async () => {
  const r = ok(await s.api('POST', '/api/v1/sources/test?deadline_s=2', { body: { kind: 'aws', config: config() } }));
  assert.equal(r.ok, false);
  assert.match(r.error, /^the test stopped at its overall limit of 2 s: /);
  const n = listed();
  assert.ok(n >= 1 && n < PAGES, `stopped paging (${n} of ${PAGES} pages asked)`);
});

test('a saved source\'s test is bounded the same way; the limit is validated', async () => {
  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'aws-slow', kind: 'aws', enabled: false, config: config() } }), 201);
  aws.seen.length = 0;
  const r = ok(await s.api('POST', `/api/v1/sources/${src.id}/test?deadline_s=1`));
  assert.equal(r.ok, false);
  assert.match(r.error, /overall limit of 1 s/);
  assert.ok(listed() < PAGES);
  assertError(await s.api('POST', '/api/v1/sources/test?deadline_s=0', { body: { kind: 'aws', config: config() } }), 400, { field: 'deadline_s' });
  assertError(await s.api('POST', `/api/v1/sources/${src.id}/test?deadline_s=601`), 400, { field: 'deadline_s' });
});
