// Testing a source before saving it, the kind schemas a form is built
// from, and the prometheus-generic kind: a vendor-like exporter (its own
// metric names, labels and units) read through a declared mapping, both
// through a real Prometheus (Debian's package, started here on loopback)
// and scraped directly. A test pull stores nothing and records nothing.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir } from '../lib/server.mjs';
import { ok as okJson, assertError, stopClean, mkToken } from './helpers.mjs';

/** Asserts the status and gives the whole reply. */
const ok = (res, status = 200) => {
  okJson(res, status);
  return res;
};

const here = path.dirname(fileURLToPath(import.meta.url));
const fixture = (n) => readFileSync(path.join(here, '..', 'fixtures', 'prom', n));
const PROMETHEUS = process.env.PROMETHEUS_BIN || '/usr/bin/prometheus';
const SECRET = 'exporter-s3cret';
const sacctDir = (() => {
  const base = process.env.GPUINV_TMP || os.tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(path.join(base, 'sacct-'));
})();

let s;
let k8s;
let k8sUrl;
let exporter;
let exporterUrl;
let prom;
let promUrl;
const seenAuth = [];

/** The mapping of the vendor exporter in tests/fixtures/prom/vendor_gpu.prom. */
const MAPPING = {
  uuid_label: 'gpu_uuid',
  host_label: 'node',
  index_label: 'card',
  model: { label: 'model_name', metric: 'vendor_gpu_info' },
  utilization: { metric: 'vendor_gpu_busy_percent', unit: 'percent' },
  memory_used: { metric: 'vendor_gpu_memory_bytes', unit: 'bytes', match: { type: 'used' } },
  memory_total: { metric: 'vendor_gpu_memory_bytes', unit: 'bytes', match: { type: 'total' } },
  power: { metric: 'vendor_gpu_power_milliwatts', unit: 'milliwatts' },
  temperature: { metric: 'vendor_gpu_temperature_celsius', scale: 1 },
};

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

/**
 * Waits until Prometheus holds the exporter's three GPUs: a scrape that
 * failed on a loaded machine leaves the series stale for a moment.
 */
function promReady(what = 'Prometheus to hold the exporter\'s series') {
  return waitFor(async () => {
    const r = await fetch(promUrl + '/api/v1/query?query=count(vendor_gpu_info)');
    const j = await r.json();
    return j.data.result.length > 0 && Number(j.data.result[0].value[1]) === 3;
  }, what);
}

before(async () => {
  exporter = http.createServer((req, res) => {
    let body = null;
    if (req.url === '/metrics') body = fixture('vendor_gpu.prom');
    else if (req.url === '/broken/metrics') body = fixture('vendor_gpu_broken.prom');
    else if (req.url === '/secure/metrics') {
      seenAuth.push(req.headers.authorization || '');
      if (req.headers.authorization !== `Bearer ${SECRET}`) { res.writeHead(401).end('no'); return; }
      body = fixture('vendor_gpu.prom');
    }
    if (!body) { res.writeHead(404).end(); return; }
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(body);
  });
  exporterUrl = 'http://127.0.0.1:' + (await listen(exporter));

  const dir = tempDir('prom-generic-');
  const port = await freePort();
  writeFileSync(path.join(dir, 'prometheus.yml'), `global:
  scrape_interval: 2s
  scrape_timeout: 2s
  evaluation_interval: 2s
scrape_configs:
  - job_name: vendor
    honor_labels: true
    static_configs: [{ targets: ['${exporterUrl.replace('http://', '')}'] }]
`);
  prom = spawn(PROMETHEUS, ['--config.file=' + path.join(dir, 'prometheus.yml'),
    '--storage.tsdb.path=' + path.join(dir, 'data'), '--web.listen-address=127.0.0.1:' + port,
    '--log.level=warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let promErr = '';
  prom.stderr.on('data', (d) => { promErr += d; });
  promUrl = 'http://127.0.0.1:' + port;
  await promReady('Prometheus to scrape the exporter\n' + promErr);

  // A Kubernetes API server stand-in replaying recorded nodes and pods.
  const k8sFx = (n) => readFileSync(path.join(here, '..', 'fixtures', 'k8s', n), 'utf8');
  k8s = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const send = (code, body) => res.writeHead(code, { 'Content-Type': 'application/json' }).end(body);
    if (u.pathname === '/api/v1/nodes') return send(200, k8sFx('nodes.json'));
    if (u.pathname === '/api/v1/pods') return send(200, k8sFx(u.searchParams.get('continue') ? 'pods-page2.json' : 'pods-page1.json'));
    return send(404, '{}');
  });
  await new Promise((r) => k8s.listen(0, '127.0.0.1', r));
  k8sUrl = 'http://127.0.0.1:' + k8s.address().port;

  writeFileSync(path.join(sacctDir, 'reply'), '');
  s = await startServer({ env: { PATH: path.join(here, '..', 'lib', 'sacct') + ':' + process.env.PATH,
    SACCT_STANDIN_DIR: sacctDir } });
});

after(async () => {
  try {
    if (s) await stopClean(s);
  } finally {
    if (prom) prom.kill('SIGTERM');
    exporter.close();
    if (k8s) k8s.close();
  }
});

const testSource = (body, auth) => s.api('POST', '/api/v1/sources/test', auth === undefined ? { body } : { body, auth });

test('the kind schemas list every kind\'s keys from the table that validates them', async () => {
  const r = ok(await s.api('GET', '/api/v1/source-kinds'));
  const kinds = Object.fromEntries(r.json.items.map((k) => [k.kind, k]));
  for (const k of ['prometheus', 'dcgm-exporter', 'kubernetes', 'slurm', 'netbox', 'snipeit', 'prometheus-generic']) {
    assert.ok(kinds[k], `kind ${k} listed: ${r.text}`);
  }
  const key = (kind, name) => kinds[kind].keys.find((x) => x.name === name);
  assert.deepEqual(key('prometheus-generic', 'mapping'), { ...key('prometheus-generic', 'mapping'), type: 'object', required: true, secret: false });
  assert.match(key('prometheus-generic', 'mapping').help, /uuid_label/);
  assert.equal(key('prometheus-generic', 'url').group, 'either url or exporter_url');
  assert.equal(key('prometheus-generic', 'bearer_token').secret, true);
  assert.equal(key('prometheus-generic', 'bearer_token').type, 'secret');
  assert.equal(key('netbox', 'token').secret, true);
  assert.equal(key('dcgm-exporter', 'url').required, true);
  assert.deepEqual([key('dcgm-exporter', 'timeout_s').min, key('dcgm-exporter', 'timeout_s').max], [1, 300]);
  assert.equal(key('slurm', 'sacct').group, 'either sacct or slurmrestd_url');
  assert.equal(key('slurm', 'slurmrestd_url').group, 'either sacct or slurmrestd_url');
  // A viewer may read them (there is nothing secret in a schema).
  const viewer = (await mkToken(s, 'viewer')).token;
  ok(await s.api('GET', '/api/v1/source-kinds', { auth: viewer }));

  // Every listed key is a setting the validator knows, with the listed type:
  // a value of the wrong type is refused for that key, never as unknown.
  const wrong = { url: 5, string: 5, secret: 5, bool: 'yes', int: 'many', list: 'a', object: 'x' };
  for (const k of r.json.items) {
    for (const c of k.keys) {
      const res = await testSource({ kind: k.kind, config: { [c.name]: wrong[c.type] } });
      const e = assertError(res, 400, { field: `config.${c.name}` });
      assert.doesNotMatch(e.message, /is not a setting/, `${k.kind}.${c.name}: ${e.message}`);
    }
    const unknown = await testSource({ kind: k.kind, config: { no_such_key: 1 } });
    assertError(unknown, 400, { field: 'config.no_such_key' });
  }
});

test('a prometheus-generic source is tested through the real Prometheus: found, and nothing stored', async () => {
  await promReady();
  const r = ok(await testSource({ kind: 'prometheus-generic', config: { url: promUrl, mapping: MAPPING } }));
  assert.equal(r.json.ok, true, r.text);
  assert.equal(r.json.error, null);
  assert.deepEqual(r.json.found, { hosts: 2, gpus: 3 });
  // NaN, +Inf and the sample without a GPU are told, counted together.
  assert.equal(r.json.warnings.length, 1, r.text);
  assert.equal(r.json.warnings[0].count, 3, r.text);
  assert.match(r.json.warnings[0].message, /VND-|left out/);
  assert.equal((await s.api('GET', '/api/v1/gpus')).json.total, 0, 'a test stores no GPU');
  assert.equal((await s.api('GET', '/api/v1/sources')).json.items.length, 0, 'a test creates no source');
});

test('the mapping is validated with field names', async () => {
  const cfg = (mapping, extra = {}) => ({ kind: 'prometheus-generic', config: { url: promUrl, mapping, ...extra } });
  const cases = [
    [{ ...MAPPING, utilization: { unit: 'percent' } }, 'config.mapping.utilization.metric'],
    [{ ...MAPPING, utilization: { metric: 'busy', unit: 'furlongs' } }, 'config.mapping.utilization.unit'],
    [{ ...MAPPING, power: { metric: 'p' } }, 'config.mapping.power.unit'],
    [{ ...MAPPING, power: { metric: 'p', unit: 'watts', scale: 2 } }, 'config.mapping.power.unit'],
    [{ ...MAPPING, temperature: { metric: 't', scale: 0 } }, 'config.mapping.temperature.scale'],
    [{ ...MAPPING, memory_used: { metric: 'bad metric', unit: 'bytes' } }, 'config.mapping.memory_used.metric'],
    [{ ...MAPPING, memory_used: { metric: 'm', unit: 'bytes', colour: 1 } }, 'config.mapping.memory_used.colour'],
    [{ ...MAPPING, uuid_label: undefined }, 'config.mapping.uuid_label'],
    [{ ...MAPPING, host_label: 'not-a-label' }, 'config.mapping.host_label'],
    [{ ...MAPPING, fan: {} }, 'config.mapping.fan'],
    [{ uuid_label: 'u', host_label: 'h' }, 'config.mapping'],
  ];
  for (const [mapping, field] of cases) {
    assertError(await testSource(cfg(JSON.parse(JSON.stringify(mapping)))), 400, { field });
  }
  assertError(await testSource({ kind: 'prometheus-generic', config: { url: promUrl } }), 400, { field: 'config.mapping' });
  assertError(await testSource({ kind: 'prometheus-generic', config: { mapping: MAPPING } }), 400, { field: 'config.url' });
  assertError(await testSource(cfg(MAPPING, { exporter_url: exporterUrl + '/metrics' })), 400, { field: 'config.exporter_url' });
  // Creating validates alike.
  assertError(await s.api('POST', '/api/v1/sources', { body: { name: 'g', ...cfg({ ...MAPPING, power: { metric: 'p' } }) } }),
    400, { field: 'config.mapping.power.unit' });
});

test('an exporter scraped directly: an unreadable line loses only its field', async () => {
  const r = ok(await testSource({ kind: 'prometheus-generic',
    config: { exporter_url: exporterUrl + '/broken/metrics', mapping: MAPPING } }));
  assert.equal(r.json.ok, true, r.text);
  assert.deepEqual(r.json.found, { hosts: 2, gpus: 3 });
  // One more than through Prometheus (which never stores such a line): the
  // unreadable power value of line 25.
  assert.equal(r.json.warnings[0].count, 4, r.text);

  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'vendor-direct', kind: 'prometheus-generic',
    config: { exporter_url: exporterUrl + '/broken/metrics', mapping: MAPPING } } }), 201).json;
  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).json;
  assert.equal(run.run.ok, true, JSON.stringify(run));
  const g = ok(await s.api('GET', '/api/v1/gpus/VND-2222-0')).json;
  assert.equal(g.power_w, null, 'the unreadable power value is absent');
  assert.equal(g.util_pct, null, '+Inf utilization is absent');
  assert.equal(g.temp_c, 55);
  assert.equal(g.mem_used_mib, 1024);
  assert.equal(g.memory_total_mib, 32768);
  assert.equal(g.host, 'accel-02');
  assert.equal(g.model, 'Acme X500 32GB');
  ok(await s.api('DELETE', `/api/v1/sources/${src.id}`), 204);
});

test('a saved prometheus-generic source stores what the mapping reads', async () => {
  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'vendor-prom', kind: 'prometheus-generic',
    config: { url: promUrl, mapping: MAPPING }, cluster: 'lab' } }), 201).json;
  await promReady();
  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).json;
  assert.equal(run.run.ok, true, JSON.stringify(run));
  assert.equal(run.run.gpus, 3);
  assert.equal(run.run.hosts, 2);
  const a = ok(await s.api('GET', '/api/v1/gpus/VND-1111-0')).json;
  assert.equal(a.util_pct, 37.5);
  assert.equal(a.mem_used_mib, 8192);
  assert.equal(a.memory_total_mib, 65536);
  assert.equal(a.power_w, 215);
  assert.equal(a.temp_c, 61);
  assert.equal(a.index, 0);
  assert.equal(a.model, 'Acme X1000 64GB');
  assert.equal(a.host, 'accel-01');
  assert.equal(a.cluster, 'lab');
  assert.equal(a.source, 'vendor-prom');
  const b = ok(await s.api('GET', '/api/v1/gpus/VND-1111-1')).json;
  assert.equal(b.temp_c, null, 'a NaN temperature is absent');
  assert.equal(b.power_w, 90);
  assert.equal(b.util_pct, 0);
  assert.equal(b.index, 1);
  const saved = ok(await s.api('GET', `/api/v1/sources/${src.id}`)).json;
  assert.ok(saved.warnings_total >= 3, JSON.stringify(saved));
  assert.equal(saved.hosts_reported, 2);
  assert.equal(saved.gpus_reported, 3);
  assert.deepEqual(saved.config.mapping, MAPPING);
});

test('a saved source is re-tested with its secret, which does not follow a new URL', async () => {
  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'vendor-secure', kind: 'prometheus-generic', enabled: false,
    config: { exporter_url: exporterUrl + '/secure/metrics', bearer_token: SECRET, mapping: MAPPING } } }), 201).json;
  assert.equal(src.config.bearer_token, '(set)');
  seenAuth.length = 0;
  const t = ok(await s.api('POST', `/api/v1/sources/${src.id}/test`)).json;
  assert.equal(t.ok, true, JSON.stringify(t));
  assert.equal(t.found.gpus, 3);
  assert.deepEqual(seenAuth, [`Bearer ${SECRET}`]);
  // A change to try: the same URL keeps the secret ...
  const t2 = ok(await s.api('POST', `/api/v1/sources/${src.id}/test`, { body: { config: { timeout_s: 5 } } })).json;
  assert.equal(t2.ok, true, JSON.stringify(t2));
  // ... another URL does not get it, and the reply says so.
  const t3 = ok(await s.api('POST', `/api/v1/sources/${src.id}/test`,
    { body: { config: { exporter_url: exporterUrl.replace('127.0.0.1', 'localhost') + '/secure/metrics' } } })).json;
  assert.equal(t3.ok, false);
  assert.match(t3.error, /401/);
  assert.ok(t3.warnings.some((w) => w.field === 'config.bearer_token'), JSON.stringify(t3));
  assert.equal(seenAuth.at(-1), '', 'no secret was sent to the new URL');
  // Testing records nothing on the source, and changes nothing stored.
  const after = ok(await s.api('GET', `/api/v1/sources/${src.id}`)).json;
  assert.equal(after.last_attempt_at, null);
  assert.equal(after.config.exporter_url, exporterUrl + '/secure/metrics');
  assert.equal(after.config.bearer_token, '(set)');
  assert.equal(after.config.timeout_s, undefined);
  assertError(await s.api('POST', '/api/v1/sources/999999/test'), 404);
});

test('a failing test reports the error; testing is for admins only', async () => {
  const r = ok(await testSource({ kind: 'dcgm-exporter', config: { url: 'http://127.0.0.1:9/metrics', timeout_s: 2 } }));
  assert.equal(r.json.ok, false);
  assert.ok(r.json.error.length > 0);
  const bad = ok(await testSource({ kind: 'prometheus', config: { url: promUrl, query: 'rate(' } }));
  assert.equal(bad.json.ok, false);
  assert.match(bad.json.error, /bad_data|parse error/i);
  for (const role of ['viewer', 'editor']) {
    const tok = (await mkToken(s, role)).token;
    assertError(await testSource({ kind: 'prometheus', config: { url: promUrl } }, tok), 403);
  }
  assertError(await testSource({ kind: 'snmp', config: {} }), 400, { field: 'kind' });
});

test('a kind that stores by itself stores nothing when tested (slurm through a stand-in sacct)', async () => {
  const US = '\x1f';
  const t0 = Math.floor(Date.now() / 1000) - 7200;
  const row = (raw, nodes, tres) => [raw, raw, 'hpc1', 'alice', 'ml', 'gpu', 'normal', nodes, t0 - 60, t0, t0 + 600,
    600, 'COMPLETED', tres, '', '', 'job'].join(US);
  writeFileSync(path.join(sacctDir, 'reply'), [row(8001, 'gpu01', 'cpu=8,gres/gpu=2,node=1'),
    row(8002, 'gpu02', 'cpu=1,gres/gpu=1,node=1')].join('\n') + '\n');
  const r = ok(await testSource({ kind: 'slurm', config: { cluster: 'hpc1', format: 'parsable2' } }));
  assert.equal(r.json.ok, true, r.text);
  assert.equal(r.json.found.jobs, 2);
  assert.equal(r.json.found.gpus, 3);
  assert.equal(ok(await s.api('GET', '/api/v1/slurm/jobs')).json.items.length, 0, 'a test stores no job');
});

test('a Kubernetes test counts nodes, GPUs and GPU pods and stores none; a real run finds the same', async () => {
  const r = ok(await testSource({ kind: 'kubernetes', cluster: 'k-test', config: { url: k8sUrl } }));
  assert.equal(r.json.ok, true, r.text);
  assert.ok(r.json.found.hosts > 0 && r.json.found.gpus > 0 && r.json.found.pods > 0, r.text);
  assert.equal(ok(await s.api('GET', '/api/v1/kubernetes/nodes')).json.items.length, 0, 'a test stores no node');
  assert.equal(ok(await s.api('GET', '/api/v1/kubernetes/pods')).json.items.length, 0, 'a test stores no pod');

  const src = ok(await s.api('POST', '/api/v1/sources', { body: { name: 'k-real', kind: 'kubernetes', cluster: 'k-test',
    config: { url: k8sUrl } } }), 201).json;
  const run = ok(await s.api('POST', `/api/v1/sources/${src.id}/run`)).json.run;
  assert.equal(run.ok, true, JSON.stringify(run));
  assert.equal(run.hosts, r.json.found.hosts);
  assert.equal(run.gpus, r.json.found.gpus);
  assert.equal(ok(await s.api('GET', '/api/v1/kubernetes/pods')).json.items.length, r.json.found.pods);
});
