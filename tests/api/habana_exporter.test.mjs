// The habanalabs-exporter pull source end to end: a stand-in node serves
// recorded gaudi-metric-exporter pages (a Gaudi2 node in Kubernetes, a
// bare-metal Gaudi3, a scrape where HLML failed, the exporter's 429).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (n) => readFileSync(path.join(here, '..', 'fixtures', 'gaudi', n));
const pages = {
  '/k8s/metrics': 'exporter_gaudi2.prom',
  '/bare/metrics': 'exporter_gaudi3_baremetal.prom',
  '/failed/metrics': 'exporter_hlml_failed.prom',
};

let s;
let node;
let base;
let hits = 0;

before(async () => {
  node = http.createServer((req, res) => {
    if (req.url === '/busy/metrics') {
      res.writeHead(429, { 'Content-Type': 'text/plain' }).end('rate limiting exceeded\n');
      return;
    }
    const f = pages[req.url];
    if (!f) { res.writeHead(404).end(); return; }
    hits++;
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(fixture(f));
  });
  await new Promise((r) => node.listen(0, '127.0.0.1', r));
  base = 'http://127.0.0.1:' + node.address().port;
  s = await startServer();
});

after(async () => {
  try {
    if (s) {
      const { code } = await s.stop();
      assert.equal(code, 0, s.stderr);
    }
  } finally {
    node.close();
  }
});

async function addSource(body) {
  const r = await s.api('POST', '/api/v1/sources', { body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}
const run = async (src) => (await s.api('POST', `/api/v1/sources/${src.id}/run`)).json;

test('a Gaudi2 node in Kubernetes: devices, readings, workload and node', async () => {
  const src = await addSource({ name: 'gaudi-k8s', kind: 'habanalabs-exporter', config: { url: base + '/k8s/metrics' }, team: 'nlp' });
  const r = await run(src);
  assert.equal(r.run.ok, true, JSON.stringify(r));
  // The device without UUID or serial is skipped, and counted as a warning.
  const list = (await s.api('GET', '/api/v1/gpus?host=gaudi-node-07')).json;
  assert.equal(list.total, 3);
  assert.match(r.last_warning, /named no device/);
  const g = (await s.api('GET', '/api/v1/gpus/01P0-HL2080A0-15-TG1C07-11-06-02')).json;
  assert.equal(g.vendor, 'intel');
  assert.equal(g.model, 'Intel Gaudi2');
  assert.equal(g.serial, 'AM50017388');
  assert.equal(g.util_pct, 96);
  assert.equal(g.power_w, 431);
  assert.equal(g.memory_total_mib, 98304);
  assert.ok(g.pods.some((p) => p.pod === 'llm-train-7d9c5-0' && p.namespace === 'team-nlp'), JSON.stringify(g.pods));
  const bySerial = (await s.api('GET', '/api/v1/gpus/HL-SN-AM50017391')).json;
  assert.equal(bySerial.power_w, null, 'a 0 from a failed read is absent');
});

test('a bare-metal exporter is known by its address, or by the configured host name', async () => {
  const a = await addSource({ name: 'gaudi-bare', kind: 'habanalabs-exporter', config: { url: base + '/bare/metrics' } });
  assert.equal((await run(a)).run.ok, true);
  const g = (await s.api('GET', '/api/v1/gpus/01P4-HL3090A0-18-UBX204-02-08-01')).json;
  assert.equal(g.host, '127.0.0.1');
  assert.equal(g.model, 'Intel Gaudi3');
  const b = await addSource({ name: 'gaudi-bare-named', kind: 'habanalabs-exporter', config: { url: base + '/bare/metrics', hostname: 'g3-rack2-05' }, precedence: 10 });
  assert.equal((await run(b)).run.ok, true);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=g3-rack2-05')).json.total, 1);
});

test('a scrape without device series and a 429 are errors on the source, and change nothing', async () => {
  const before = (await s.api('GET', '/api/v1/gpus?host=gaudi-node-07')).json.total;
  const failed = await addSource({ name: 'gaudi-failed', kind: 'habanalabs-exporter', config: { url: base + '/failed/metrics' } });
  const r = await run(failed);
  assert.equal(r.run.ok, false);
  assert.match(r.last_error, /no habanalabs_ device series/);
  const busy = await addSource({ name: 'gaudi-busy', kind: 'habanalabs-exporter', config: { url: base + '/busy/metrics' } });
  const b = await run(busy);
  assert.equal(b.run.ok, false);
  assert.match(b.last_error, /HTTP 429.*one scrape per 5 s/);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=gaudi-node-07')).json.total, before);
  const sources = (await s.api('GET', '/api/v1/sources')).json.items;
  assert.equal(sources.find((x) => x.name === 'gaudi-k8s').last_error, null);
});

test('the config is validated', async () => {
  const bad = await s.api('POST', '/api/v1/sources', { body: { name: 'x', kind: 'habanalabs-exporter', config: { url: base + '/k8s/metrics', port: 41611 } } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.field, 'config.port');
  const none = await s.api('POST', '/api/v1/sources', { body: { name: 'y', kind: 'habanalabs-exporter', config: {} } });
  assert.equal(none.json.error.field, 'config.url');
  assert.ok(hits >= 3);
});
