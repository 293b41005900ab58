// Pull sources end to end: a dcgm-exporter scraped directly, and a real
// Prometheus (Debian's package, started here on loopback) that scrapes
// exporter fixtures served locally and is queried through its HTTP API.
// A failing source records its error and disturbs nothing else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (n) => readFileSync(path.join(here, '..', 'fixtures', 'prom', n));
const PROMETHEUS = process.env.PROMETHEUS_BIN || '/usr/bin/prometheus';

let s;
let exporter;
let exporterUrl;
let prom;
let promUrl;

function listen(server) {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

async function freePort() {
  const srv = http.createServer();
  const port = await listen(srv);
  await new Promise((r) => srv.close(r));
  return port;
}

async function waitFor(fn, what, ms = 60000) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      if (await fn()) return;
    } catch { /* not yet */ }
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await new Promise((r) => setTimeout(r, 300));
  }
}

before(async () => {
  // Two exporters' worth of fixtures: /a (8 x A100 host) and /b (shared L4 node with pods).
  exporter = http.createServer((req, res) => {
    const body = req.url === '/a/metrics' ? fixture('dcgm_a100_8gpu.prom')
      : req.url === '/b/metrics' ? fixture('dcgm_pods_shared.prom') : null;
    if (!body) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(body);
  });
  exporterUrl = 'http://127.0.0.1:' + (await listen(exporter));

  const dir = tempDir('prom-');
  const port = await freePort();
  const target = exporterUrl.replace('http://', '');
  writeFileSync(path.join(dir, 'prometheus.yml'), `global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: dcgm-a
    honor_labels: true
    metrics_path: /a/metrics
    static_configs: [{ targets: ['${target}'] }]
  - job_name: dcgm-b
    honor_labels: true
    metrics_path: /b/metrics
    static_configs: [{ targets: ['${target}'] }]
`);
  prom = spawn(PROMETHEUS, ['--config.file=' + path.join(dir, 'prometheus.yml'),
    '--storage.tsdb.path=' + path.join(dir, 'data'), '--web.listen-address=127.0.0.1:' + port,
    '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let promErr = '';
  prom.stderr.on('data', (d) => { promErr += d; });
  promUrl = 'http://127.0.0.1:' + port;
  await waitFor(async () => {
    const r = await fetch(promUrl + '/api/v1/query?query=count(DCGM_FI_DEV_GPU_UTIL)');
    const j = await r.json();
    return j.data.result.length > 0 && Number(j.data.result[0].value[1]) >= 10;
  }, 'Prometheus to scrape the exporters\n' + promErr);

  s = await startServer();
});

after(async () => {
  // Prometheus and the exporter are stopped even when the server never started.
  try {
    if (s) {
      const { code } = await s.stop();
      assert.equal(code, 0, s.stderr);
    }
  } finally {
    if (prom) prom.kill('SIGTERM');
    exporter.close();
  }
});

async function addSource(body) {
  const r = await s.api('POST', '/api/v1/sources', { body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

test('a dcgm-exporter source is scraped: GPUs, telemetry and pods', async () => {
  const src = await addSource({ name: 'exporter-a', kind: 'dcgm-exporter', config: { url: exporterUrl + '/a/metrics' }, cluster: 'onprem-a', team: 'research' });
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.status, 200);
  assert.equal(run.json.run.ok, true, run.text);
  assert.equal(run.json.run.gpus, 8);
  assert.equal(run.json.last_error, null);
  const list = await s.api('GET', '/api/v1/gpus?host=dgx-a100-01');
  assert.equal(list.json.total, 8);
  const g = list.json.items.find((x) => x.index === 0);
  assert.equal(g.model, 'NVIDIA A100-SXM4-80GB');
  assert.equal(g.pci_bus_id, '0000:07:00.0');
  assert.equal(g.cluster, 'onprem-a');
  assert.equal(g.source, 'exporter-a');
  assert.equal(typeof g.util_pct, 'number');

  const b = await addSource({ name: 'exporter-b', kind: 'dcgm-exporter', config: { url: exporterUrl + '/b/metrics' } });
  const runb = await s.api('POST', `/api/v1/sources/${b.id}/run`);
  assert.equal(runb.json.run.ok, true, runb.text);
  const l4 = await s.api('GET', '/api/v1/gpus?host=l4-node-2');
  assert.ok(l4.json.total >= 1);
  let pods = [];
  for (const x of l4.json.items) pods = pods.concat((await s.api('GET', '/api/v1/gpus/' + encodeURIComponent(x.uuid))).json.pods);
  assert.ok(pods.some((p) => p.pod === 'jupyter-alice'), JSON.stringify(pods));
});

test('two pulls of one source in the same second both count its GPUs', async () => {
  // Their batch ids are the same (source, host, second): the later pull
  // finds them applied and still reports, and records, the GPUs.
  const src = await addSource({ name: 'exporter-twice', kind: 'dcgm-exporter', enabled: false, config: { url: exporterUrl + '/a/metrics' } });
  for (let i = 0; i < 5; i++) {
    const runs = await Promise.all([0, 1].map(() => s.api('POST', `/api/v1/sources/${src.id}/run`)));
    for (const r of runs) {
      assert.equal(r.json.run.ok, true, r.text);
      assert.equal(r.json.run.gpus, 8, r.text);
    }
    assert.equal((await s.api('GET', `/api/v1/sources/${src.id}`)).json.gpus_last_report, 8);
  }
});

test('a Prometheus source queries the real Prometheus HTTP API', async () => {
  const src = await addSource({ name: 'prom-main', kind: 'prometheus', config: { url: promUrl }, cluster: 'prod-eu' });
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.json.run.ok, true, run.text);
  assert.ok(run.json.run.gpus >= 8, run.text);
  assert.ok(run.json.run.hosts >= 2, run.text);
  const uuid = 'GPU-5a1c0d00-1b2c-3d4e-8f70-9a8b7c6d5e40';
  const g = await s.api('GET', '/api/v1/gpus/' + uuid);
  assert.equal(g.status, 200);
  // The earlier exporter-a source saw it first and owns it: one record, not
  // two, and the same identity from a second source is no conflict.
  assert.equal(g.json.source, 'exporter-a');
  assert.deepEqual(g.json.conflicts, []);
  assert.ok(!g.json.events.some((e) => e.kind === 'conflict'), JSON.stringify(g.json.events));
  assert.equal((await s.api('GET', '/api/v1/gpus?host=dgx-a100-01')).json.total, 8);
  // A higher precedence makes the Prometheus source the owner at its next run.
  const up = await s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { precedence: 10 } });
  assert.equal(up.status, 200, up.text);
  assert.equal(up.json.precedence, 10);
  // (A pulled batch is named by its second: the next run must be a later one.)
  await new Promise((r) => setTimeout(r, 1100));
  assert.equal((await s.api('POST', `/api/v1/sources/${src.id}/run`)).json.run.ok, true);
  const g2 = (await s.api('GET', '/api/v1/gpus/' + uuid)).json;
  assert.equal(g2.source, 'prom-main');
  const prov = Object.fromEntries(g2.provenance.map((p) => [p.field, p.source]));
  assert.equal(prov.model, 'prom-main');
  assert.ok(g2.events.some((e) => e.kind === 'owner_changed' && e.detail.from === 'exporter-a'),
    JSON.stringify(g2.events));
});

test('a bad query is reported with Prometheus\'s own message', async () => {
  const src = await addSource({ name: 'prom-bad', kind: 'prometheus', config: { url: promUrl, query: 'rate(' } });
  const run = await s.api('POST', `/api/v1/sources/${src.id}/run`);
  assert.equal(run.json.run.ok, false);
  assert.match(run.json.last_error, /bad_data|parse error/i);
});

test('a failing source records its error and leaves the others alone', async () => {
  const bad = await addSource({ name: 'down', kind: 'dcgm-exporter', config: { url: 'http://127.0.0.1:9/metrics', timeout_s: 2 } });
  const run = await s.api('POST', `/api/v1/sources/${bad.id}/run`);
  assert.equal(run.json.run.ok, false);
  assert.ok(run.json.last_error);
  assert.equal(run.json.last_success_at, null);
  const sources = (await s.api('GET', '/api/v1/sources')).json.items;
  assert.equal(sources.find((x) => x.name === 'exporter-a').last_error, null);
  const metrics = await s.api('GET', '/metrics');
  assert.equal(metrics.status, 200);
  assert.match(metrics.text, /gpuinv_source_up\{source="down",kind="dcgm-exporter"\} 0/);
  assert.match(metrics.text, /gpuinv_source_up\{source="exporter-a",kind="dcgm-exporter"\} 1/);
  assert.match(metrics.text, /^gpuinv_gpus \d+$/m);
  assert.equal((await s.api('GET', '/healthz', { auth: null })).status, 200);
});

test('the scheduler pulls due sources by itself', async () => {
  const src = await addSource({ name: 'scheduled', kind: 'dcgm-exporter', config: { url: exporterUrl + '/a/metrics' }, interval_s: 10 });
  await waitFor(async () => (await s.api('GET', `/api/v1/sources/${src.id}`)).json.last_success_at, 'the scheduler', 20000);
});

test('source validation names the field, and secrets are write-only', async () => {
  const bad = await s.api('POST', '/api/v1/sources', { body: { name: 'x', kind: 'dcgm-exporter', config: { url: 'ftp://nope' } } });
  assert.equal(bad.status, 400);
  assert.equal(bad.json.error.field, 'config.url');
  const unknown = await s.api('POST', '/api/v1/sources', { body: { name: 'y', kind: 'dcgm-exporter', config: { url: 'http://a/metrics', colour: 1 } } });
  assert.equal(unknown.json.error.field, 'config.colour');
  const kind = await s.api('POST', '/api/v1/sources', { body: { name: 'z', kind: 'snmp', config: {} } });
  assert.equal(kind.json.error.field, 'kind');
  const sec = await addSource({ name: 'secret', kind: 'prometheus', config: { url: promUrl, bearer_token: 'hunter2' } });
  assert.equal(sec.config.bearer_token, '(set)');
  const patched = await s.api('PATCH', `/api/v1/sources/${sec.id}`, { body: { config: { bearer_token: '(set)', timeout_s: 5 } } });
  assert.equal(patched.status, 200, patched.text);
  const audit = await s.api('GET', `/api/v1/audit?entity=source&entity_id=${sec.id}`);
  assert.ok(!audit.text.includes('hunter2'), 'no secret in the audit trail');
  const viewer = (await s.api('POST', '/api/v1/tokens', { body: { name: 'v', role: 'viewer' } })).json.token;
  assert.equal((await s.api('POST', '/api/v1/sources', { body: { name: 'q', kind: 'prometheus', config: { url: promUrl } }, auth: viewer })).status, 403);
});
