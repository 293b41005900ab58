// A GCP listing that could not see every zone (aggregatedList with
// returnPartialSuccess=true) against the stand-in (tests/lib/cloud/gcp.mjs):
// the pull succeeds; the instances of the zone that did not answer keep
// their state (not gone, runs open, GPUs present); an instance absent from
// a zone that did answer is still marked gone; the source carries a
// warning naming the zone, not an error; the next complete listing is
// handled as usual.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { startGcp, PROJECT } from '../lib/cloud/gcp.mjs';
import { ok, stopClean, dbQuery } from './helpers.mjs';

let s;
let gcp;
let src;

before(async () => {
  gcp = await startGcp({ staticTokens: ['ya29.partial-token'] });
  gcp.startAt = Math.floor(Date.now() / 1000) - 3600;
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
const source = async () => ok(await s.api('GET', `/api/v1/sources/${src.id}`));
// The open runs of an instance, read from the store.
const openRuns = async (iid) => Number((await dbQuery(s.db,
  `SELECT COUNT(*) FROM cloud_runs r JOIN cloud_instances i ON i.id = r.instance_row WHERE i.instance_id = '${iid}' AND r.ended_at IS NULL`)).trim());

test('a first complete listing', async () => {
  src = ok(await s.api('POST', '/api/v1/sources', {
    body: { name: 'gcp-partial', kind: 'gcp', enabled: false, config: { project: PROJECT, access_token: 'ya29.partial-token', endpoint: gcp.url } },
  }), 201);
  const r = await run(src.id);
  assert.equal(r.ok, true, r.error);
  const calls = gcp.seen.filter((x) => x.path.endsWith('/aggregated/instances'));
  assert.ok(calls.length >= 2);
  for (const c of calls) assert.equal(c.query.returnPartialSuccess, 'true');
  const items = await instances();
  assert.equal(items.length, 6);
  for (const x of items) assert.equal(x.gone_at, null, x.name);
  assert.equal(await openRuns('7310001112223334445'), 1); // infer-1, us-central1-a
  const got = await source();
  assert.equal(got.last_error, null);
  assert.equal(got.last_warning, null);
});

test('a zone that does not answer keeps its instances; an absence elsewhere still marks gone; the source warns', async () => {
  const before = await instances();
  const downZone = before.filter((x) => x.zone === 'us-east1-c');
  assert.deepEqual(downZone.map((x) => x.name).sort(), ['b200-new', 'bastion', 'mystery-gpu', 'vision-t4']);
  const runningDown = downZone.filter((x) => x.state === 'running');
  assert.ok(runningDown.length >= 2, 'the zone has running instances');
  for (const x of runningDown) assert.equal(await openRuns(x.instance_id), 1, x.name);

  gcp.down = ['us-east1-c'];
  gcp.omit = ['infer-1'];
  const r = await run(src.id);
  gcp.down = [];
  gcp.omit = [];
  assert.equal(r.ok, true, r.error);

  const items = await instances();
  assert.equal(items.length, 6);
  for (const x of downZone) {
    const now = byName(items, x.name);
    assert.equal(now.gone_at, null, x.name);
    assert.equal(now.state, x.state, x.name);
    assert.equal(now.last_seen_at, x.last_seen_at, `${x.name} was not seen again`);
    for (const g of now.gpus) assert.equal(g.missing_since, null, `${x.name} GPU ${g.index}`);
  }
  for (const x of runningDown) assert.equal(await openRuns(x.instance_id), 1, `${x.name} run stays open`);
  const vision = byName(items, 'vision-t4');
  assert.equal(vision.gpus.length, 2);
  // infer-1's zone answered without it: gone, its run closed, its GPUs missing.
  const infer = byName(items, 'infer-1');
  assert.notEqual(infer.gone_at, null);
  assert.equal(await openRuns(infer.instance_id), 0);
  for (const g of infer.gpus) assert.notEqual(g.missing_since, null);
  assert.equal(byName(items, 'trainer-0').gone_at, null);

  // A warning on the source, in its document and in the list the Sources
  // page shows; no error.
  const got = await source();
  assert.equal(got.last_error, null);
  assert.match(got.last_warning, /^1 zone did not answer: zones\/us-east1-c; its instances keep their last state$/);
  assert.ok(got.warnings_total >= 1);
  assert.match(got.last_warning_at, /^\d{4}-\d\d-\d\dT/);
  const listed = ok(await s.api('GET', '/api/v1/sources')).items.find((x) => x.id === src.id);
  assert.equal(listed.last_warning, got.last_warning);
});

test('a test run names the zones without storing anything', async () => {
  gcp.down = ['us-east1-c', 'us-central1-a'];
  const t = ok(await s.api('POST', `/api/v1/sources/${src.id}/test`));
  gcp.down = [];
  assert.equal(t.ok, true, t.error);
  assert.ok(t.warnings.some((w) => /2 zones did not answer: .*zones\/us-east1-c/.test(w.message) && /zones\/us-central1-a/.test(w.message)),
    JSON.stringify(t.warnings));
  assert.equal(byName(await instances(), 'trainer-0').gone_at, null);
});

test('the next complete listing handles the zone as usual', async () => {
  gcp.omit = ['bastion'];
  const r = await run(src.id);
  gcp.omit = [];
  assert.equal(r.ok, true, r.error);
  const items = await instances();
  const bastion = byName(items, 'bastion');
  assert.notEqual(bastion.gone_at, null);
  assert.equal(await openRuns(bastion.instance_id), 0);
  assert.equal(byName(items, 'infer-1').gone_at, null, 'listed again, live again');
  assert.equal(byName(items, 'mystery-gpu').gone_at, null);
});
