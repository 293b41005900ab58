// The Kubernetes source against a local HTTP server that replays recorded
// API server responses: bearer auth, limit/continue paging, a continue
// token that expires (410) mid-listing, pods that end between pulls.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fx = (n) => readFileSync(path.join(here, '..', 'fixtures', 'k8s', n), 'utf8');
const TOKEN = 'k8s-reader-token';

let s;
let api;
let apiUrl;
let expireOnce = false;
let podsOnlyPage2 = false;
const seen = [];

before(async () => {
  api = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    seen.push(u.pathname + u.search);
    const send = (code, body) => res.writeHead(code, { 'Content-Type': 'application/json' }).end(body);
    if (req.headers.authorization !== 'Bearer ' + TOKEN) return send(403, fx('status-403.json'));
    if (!u.searchParams.get('limit')) return send(400, '{}');
    if (u.pathname === '/api/v1/nodes') return send(200, fx('nodes.json'));
    if (u.pathname === '/api/v1/pods') {
      if (podsOnlyPage2) return send(200, fx('pods-page2.json'));
      if (!u.searchParams.get('continue')) return send(200, fx('pods-page1.json'));
      if (expireOnce) { expireOnce = false; return send(410, fx('status-410.json')); }
      return send(200, fx('pods-page2.json'));
    }
    return send(404, '{}');
  });
  await new Promise((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = 'http://127.0.0.1:' + api.address().port;
  s = await startServer();
});

after(async () => {
  // The stand-in API is closed even when the server never started.
  try {
    if (s) {
      const { code } = await s.stop();
      assert.equal(code, 0, s.stderr);
    }
  } finally {
    api.close();
  }
});

test('nodes and GPU pods are listed page by page', async () => {
  const src = (await s.api('POST', '/api/v1/sources', { body: { name: 'k8s-prod', kind: 'kubernetes', cluster: 'prod-1', config: { url: apiUrl, bearer_token: TOKEN, page_size: 2 } } })).json;
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.json.run.ok, true, run.text);
  assert.equal(run.json.run.hosts, 5);
  assert.ok(seen.some((x) => x.includes('continue=')), 'paged with continue');
  assert.ok(seen.every((x) => x.includes('limit=2')), 'sent the page size');

  const nodes = (await s.api('GET', '/api/v1/kubernetes/nodes?cluster=prod-1')).json.items;
  assert.equal(nodes.length, 5);
  const dgx = nodes.find((n) => n.name === 'dgx-h100-01');
  assert.equal(dgx.physical_gpus, 8);
  assert.equal(dgx.gpu_capacity, 8);
  assert.equal(dgx.product, 'NVIDIA-H100-80GB-HBM3');
  assert.equal(dgx.gpus_requested, 8);
  const t4 = nodes.find((n) => n.name.startsWith('ip-10-0-41-17'));
  assert.equal(t4.gpu_capacity, 16);
  assert.equal(t4.physical_gpus, 4, 'time-slicing replicas do not inflate the GPU count');

  const pods = (await s.api('GET', '/api/v1/kubernetes/pods?active=true')).json.items;
  const names = pods.map((p) => p.name).sort();
  assert.ok(names.includes('llama-pretrain-worker-0'));
  assert.ok(!names.includes('coredns-5d78c9869d-4xk2p'), 'pods without GPUs are not kept');
  assert.ok(!names.includes('gpu-burnin-dgx-h100-01'), 'a finished pod is not active');
  const train = pods.find((p) => p.name === 'llama-pretrain-worker-0');
  assert.equal(train.gpus, 8);
  assert.equal(train.node, 'dgx-h100-01');
  assert.equal(train.cluster, 'prod-1');
});

test('GPUs on a node show the pods running there, and take the cluster', async () => {
  const push = (await s.api('POST', '/api/v1/tokens', { body: { name: 'a', role: 'pusher', source: 'agents-k8s' } })).json.token;
  const r = await s.api('POST', '/api/v1/ingest', { auth: push, body: { batch_id: 'k1', host: { hostname: 'dgx-h100-01' }, gpus: [{ uuid: 'GPU-k8s-0001', name: 'NVIDIA H100 80GB HBM3' }] } });
  assert.equal(r.status, 201, r.text);
  const src = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'k8s-prod');
  await s.api('POST', `/api/v1/sources/${src.id}/run`);
  const g = (await s.api('GET', '/api/v1/gpus/GPU-k8s-0001')).json;
  assert.equal(g.cluster, 'prod-1');
  assert.ok(g.node_pods.some((p) => p.name === 'llama-pretrain-worker-0'));
});

test('an expired continue token restarts the listing', async () => {
  const src = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'k8s-prod');
  expireOnce = true;
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.json.run.ok, true, run.text);
  assert.equal(expireOnce, false, 'the 410 was served');
  assert.ok((await s.api('GET', '/api/v1/kubernetes/pods?active=true')).json.items.some((p) => p.name === 'llama-pretrain-worker-0'));
});

test('pods that disappear are ended, not deleted', async () => {
  const src = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'k8s-prod');
  podsOnlyPage2 = true;
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  podsOnlyPage2 = false;
  assert.equal(run.json.run.ok, true, run.text);
  const ended = (await s.api('GET', '/api/v1/kubernetes/pods?active=false')).json.items;
  const train = ended.find((p) => p.name === 'llama-pretrain-worker-0');
  assert.ok(train && train.ended_at, 'the training pod has an end time');
});

test('a wrong token is reported as the API server said', async () => {
  const src = (await s.api('POST', '/api/v1/sources', { body: { name: 'k8s-bad', kind: 'kubernetes', config: { url: apiUrl, bearer_token: 'nope' } } })).json;
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.json.run.ok, false);
  assert.match(run.json.last_error, /403/);
});
