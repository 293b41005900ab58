// Readings that are what they claim: freshness by the time a reading was
// taken, `unknown` for GPUs without telemetry, host-reported labels over
// source defaults, RFC 3339 times, summary figures over the whole filter,
// and team/env filters.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError } from './helpers.mjs';

const FRESHNESS = 600;
const h = useServer({ args: ['--freshness', String(FRESHNESS)] });
const now = () => Math.floor(Date.now() / 1000);
const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;

async function pusher(source, extra = {}) {
  return ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + source, role: 'pusher', source, ...extra } }), 201).token;
}
const gpu = (uuid, idx = 0) => ({ uuid, index: idx, name: 'NVIDIA A100-SXM4-80GB', serial: 'S-' + uuid.slice(-4) });
async function push(token, body) {
  const r = await h.s.api('POST', '/api/v1/ingest', { body, auth: token });
  assert.equal(r.status, 201, r.text);
  return r.json;
}
const getGpu = async (u) => ok(await h.s.api('GET', '/api/v1/gpus/' + u));

test('a batch whose newest sample is 2 h old leaves the GPU stale, not in use', async () => {
  const tok = await pusher('fr-late');
  const u = 'GPU-f0000000-0000-4000-8000-000000000001';
  const old = now() - 7200;
  await push(tok, { batch_id: 'late-1', host: { hostname: 'late-node' }, gpus: [gpu(u)],
    samples: [{ time: old - 60, gpu: u, util_avg: 95 }, { time: old, gpu: u, util_avg: 97 }] });
  const g = await getGpu(u);
  assert.equal(g.state, 'stale');
  assert.equal(g.stale, 1);
  assert.equal(g.util_pct, 97);
  assert.equal(Date.parse(g.observed_at) / 1000, old, 'freshness is when the reading was taken');
  assert.equal(g.newest_at, g.observed_at);
  assert.ok(Date.parse(g.last_seen_at) / 1000 >= now() - 60, 'last_seen_at is when it was reported');
  const list = ok(await h.s.api('GET', '/api/v1/gpus?host=late-node&state=in_use'));
  assert.equal(list.total, 0);
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus?host=late-node&stale=true')).total, 1);

  // A fresh reading makes it current again.
  await push(tok, { batch_id: 'late-2', host: { hostname: 'late-node' }, gpus: [gpu(u)],
    samples: [{ time: now(), gpu: u, util_avg: 97 }] });
  assert.equal((await getGpu(u)).state, 'in_use');
});

test('a GPU with no telemetry is unknown, never idle', async () => {
  const tok = await pusher('fr-bare');
  const bare = 'GPU-f0000000-0000-4000-8000-000000000002';
  const quiet = 'GPU-f0000000-0000-4000-8000-000000000003';
  const noUtil = 'GPU-f0000000-0000-4000-8000-000000000004';
  await push(tok, { batch_id: 'bare-1', host: { hostname: 'bare-node' }, gpus: [gpu(bare, 0), gpu(quiet, 1), gpu(noUtil, 2)],
    samples: [{ time: now(), gpu: quiet, util_avg: 0 }, { time: now(), gpu: noUtil, temp_c: 40 }] });
  assert.equal((await getGpu(bare)).state, 'unknown');
  assert.equal((await getGpu(noUtil)).state, 'unknown');
  assert.equal((await getGpu(quiet)).state, 'idle');
  const unknown = ok(await h.s.api('GET', '/api/v1/gpus?host=bare-node&state=unknown'));
  assert.deepEqual(unknown.items.map((x) => x.uuid).sort(), [bare, noUtil].sort());
  const idle = ok(await h.s.api('GET', '/api/v1/gpus?host=bare-node&state=idle'));
  assert.deepEqual(idle.items.map((x) => x.uuid), [quiet]);
  assertError(await h.s.api('GET', '/api/v1/gpus?state=asleep'), 400, { field: 'state' });
  const metrics = await h.s.api('GET', '/metrics');
  assert.equal(metrics.status, 200);
  const all = ok(await h.s.api('GET', '/api/v1/gpus?state=unknown&limit=1')).total;
  assert.match(metrics.text, new RegExp(`^gpuinv_gpus_unknown ${all}$`, 'm'));
});

test('the cluster a host reports about itself beats the token default', async () => {
  const tok = await pusher('fr-labels', { cluster: 'default-cl', team: 'ml' });
  const mine = 'GPU-f0000000-0000-4000-8000-000000000005';
  const plain = 'GPU-f0000000-0000-4000-8000-000000000006';
  await push(tok, { batch_id: 'lab-1', host: { hostname: 'own-label', cluster: 'host-cl' }, gpus: [gpu(mine)] });
  await push(tok, { batch_id: 'lab-2', host: { hostname: 'no-label' }, gpus: [gpu(plain)] });
  const g = await getGpu(mine);
  assert.equal(g.cluster, 'host-cl');
  assert.equal(g.team, 'ml', 'defaults still fill what the host leaves absent');
  assert.equal((await getGpu(plain)).cluster, 'default-cl');
  // A later report without the label does not hand it back to the default.
  await push(tok, { batch_id: 'lab-3', host: { hostname: 'own-label' }, gpus: [gpu(mine)] });
  assert.equal((await getGpu(mine)).cluster, 'host-cl');
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus?cluster=host-cl')).total, 1);
});

test('missing_since is RFC 3339 like every other time', async () => {
  const tok = await pusher('fr-times');
  const a = 'GPU-f0000000-0000-4000-8000-000000000007';
  const b = 'GPU-f0000000-0000-4000-8000-000000000008';
  await push(tok, { batch_id: 't-1', host: { hostname: 'time-node' }, gpus: [gpu(a, 0), gpu(b, 1)] });
  await push(tok, { batch_id: 't-2', host: { hostname: 'time-node' }, gpus: [gpu(a, 0)] });
  const g = await getGpu(b);
  assert.match(g.missing_since, RFC3339);
  const listed = ok(await h.s.api('GET', '/api/v1/gpus?host=time-node&state=missing')).items;
  assert.equal(listed.length, 1);
  assert.match(listed[0].missing_since, RFC3339);
  for (const [k, v] of Object.entries(g)) {
    if (/_at$|_since$/.test(k) && v !== null) assert.match(v, RFC3339, k);
  }
});

test('summary figures cover the whole filter, not the page', async () => {
  const tok = await pusher('fr-sum');
  const u = (i) => `GPU-f0000000-0000-4000-8000-00000000010${i}`;
  await push(tok, { batch_id: 's-1', host: { hostname: 'sum-node' }, gpus: [0, 1, 2, 3].map((i) => gpu(u(i), i)),
    samples: [{ time: now(), gpu: u(0), util_avg: 90 }, { time: now(), gpu: u(1), util_avg: 2 },
      { time: now() - 7200, gpu: u(3), util_avg: 50 }] });
  const page = ok(await h.s.api('GET', '/api/v1/gpus?host=sum-node&limit=1'));
  assert.equal(page.items.length, 1);
  assert.equal(page.total, 4);
  assert.equal(page.freshness_s, FRESHNESS);
  // The source has no team and no rule maps one: all four are unowned.
  assert.deepEqual(page.summary, { total: 4, in_use: 1, idle: 1, unknown: 1, stale: 1, missing: 0, util_avg: 46, unowned: 4 });
  const none = ok(await h.s.api('GET', '/api/v1/gpus?host=nowhere'));
  assert.deepEqual(none.summary, { total: 0, in_use: 0, idle: 0, unknown: 0, stale: 0, missing: 0, util_avg: null, unowned: 0 });
});

test('team and env filter the GPU list', async () => {
  const speech = await pusher('fr-speech', { team: 'speech', env: 'prod' });
  const vision = await pusher('fr-vision', { team: 'vision', env: 'dev' });
  await push(speech, { batch_id: 'te-1', host: { hostname: 'speech-1' }, gpus: [gpu('GPU-f0000000-0000-4000-8000-000000000201')] });
  await push(vision, { batch_id: 'te-2', host: { hostname: 'vision-1' },
    gpus: [gpu('GPU-f0000000-0000-4000-8000-000000000202', 0), gpu('GPU-f0000000-0000-4000-8000-000000000203', 1)] });
  const all = ok(await h.s.api('GET', '/api/v1/gpus')).total;
  const t = ok(await h.s.api('GET', '/api/v1/gpus?team=speech'));
  assert.equal(t.total, 1);
  assert.ok(t.total < all);
  assert.deepEqual(t.items.map((x) => x.team), ['speech']);
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus?env=dev')).total, 2);
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus?team=vision&env=prod')).total, 0);
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus?team=nobody')).summary.total, 0);
});
