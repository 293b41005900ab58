// One bad field never loses a batch: the push API drops what it cannot
// accept, says so in "warnings" and counts it on the source; anonymous
// processes (pid hidden) are kept; the agent run unprivileged stores its
// GPUs, and its --once exit status says when the server refused a batch.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { spawnSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir, BIN } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const FAKE = path.join(path.dirname(BIN), 'fake-nvml', 'libnvidia-ml.so.1');
const H100 = path.join(here, '..', 'fake-nvml', 'h100x8.json');
const SMI_UNPRIV = path.join(here, '..', 'fixtures', 'bin', 'nvidia-smi-unprivileged');
const SMI_NOAPPS = path.join(here, '..', 'fixtures', 'bin', 'nvidia-smi-noapps');
const LOST = path.join(here, '..', 'fake-nvml', 'lost.json');
const UNPRIV_NVML = path.join(here, '..', 'fake-nvml', 'unprivileged.json');

let s;
let token;
let sourceId;

const now = () => Math.floor(Date.now() / 1000);
const uuid = (host, i) => `GPU-${host}-0000-4000-8000-00000000000${i}`;
const gpu = (host, i) => ({ uuid: uuid(host, i), index: i, name: 'NVIDIA H100 80GB HBM3', serial: `${host}-${i}`,
  pci_bus_id: `0000:${(0x18 + i).toString(16)}:00.0`, memory_total_mib: 81559 });

function agent(args, env = {}) {
  const r = spawnSync(BIN, ['agent', ...args], { env: { ...process.env, FAKE_NVML_CONFIG: H100, ...env }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const source = async () => (await s.api('GET', `/api/v1/sources/${sourceId}`)).json;

before(async () => {
  s = await startServer();
  const r = await s.api('POST', '/api/v1/tokens', { body: { name: 'warned', role: 'pusher', source: 'warned-agents' } });
  assert.equal(r.status, 201, r.text);
  token = r.json.token;
  // The source exists once it has been pushed to.
  const first = await s.api('POST', '/api/v1/ingest', { auth: token, body: { batch_id: 'hello', host: { hostname: 'w-hello' } } });
  assert.equal(first.status, 201, first.text);
  assert.deepEqual(first.json.warnings, []);
  assert.equal(first.json.warnings_total, 0);
  sourceId = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'warned-agents').id;
});
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

test('a batch with bad fields is stored, the bad fields dropped and listed', async () => {
  const h = 'w0000001';
  const t = now() - 60;
  const gpus = [gpu(h, 0), gpu(h, 1), { ...gpu(h, 2), memory_total_mib: 'lots', pci_bus_id: 'not-a-bus', colour: 'red' }];
  const body = {
    batch_id: 'w-1',
    host: { hostname: 'w-node-1', serial: { nested: true } },
    gpus,
    samples: [
      { time: t, gpu: uuid(h, 0), util_avg: 40, temp_c: 55 },
      { time: t, gpu: uuid(h, 1), util_avg: 500, temp_c: 56 }, // util out of range: that field only
      { time: t, gpu: uuid(h, 2), util_avg: 60, power_avg_w: 'high' },
      { time: 'yesterday', gpu: uuid(h, 0), util_avg: 1 }, // no readable time: the sample only
      { time: t, gpu: 'GPU-nobody', util_avg: 1 }, // not in this batch
    ],
    processes: [
      { gpu: uuid(h, 0), pid: 4242, name: 'train.py', used_mib: 1000 },
      { gpu: uuid(h, 1), pid: -1, used_mib: 2000 }, // unreadable pid: kept anonymous
      { gpu: uuid(h, 2), pid: 77, used_mib: -5 },
    ],
    extra: 1,
  };
  const r = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.gpus, 3);
  assert.equal(r.json.samples, 3);
  assert.equal(r.json.processes, 3);
  const fields = r.json.warnings.map((w) => w.field).sort();
  assert.deepEqual(fields, [
    'extra', 'gpus[2].colour', 'gpus[2].memory_total_mib', 'gpus[2].pci_bus_id', 'host.serial',
    'processes[1].pid', 'processes[2].used_mib',
    'samples[1].util_avg', 'samples[2].power_avg_w', 'samples[3].time', 'samples[4].gpu',
  ].sort());
  assert.equal(r.json.warnings_total, fields.length);
  for (const w of r.json.warnings) assert.ok(w.message.startsWith(w.field), w.message);

  const g2 = (await s.api('GET', '/api/v1/gpus/' + uuid(h, 2))).json;
  assert.equal(g2.memory_total_mib, null);
  assert.equal(g2.pci_bus_id, null);
  assert.equal(g2.serial, `${h}-2`);
  assert.equal(g2.util_pct, 60);
  const g1 = (await s.api('GET', '/api/v1/gpus/' + uuid(h, 1))).json;
  assert.equal(g1.util_pct, null, 'the out-of-range value is absent, not clamped');
  assert.equal(g1.temp_c, 56);
  assert.deepEqual(g1.processes.map((p) => [p.pid, p.used_mib]), [[null, 2000]]);
  const g0 = (await s.api('GET', '/api/v1/gpus/' + uuid(h, 0))).json;
  assert.equal(g0.util_pct, 40);
  assert.equal(g0.processes[0].pid, 4242);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=w-node-1')).json.total, 3);

  const src = await source();
  assert.equal(src.warnings_total, fields.length);
  assert.match(src.last_warning, /\S/);
  assert.match(src.last_warning_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);

  // The same batch again is a duplicate: nothing stored, nothing counted.
  const again = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(again.status, 200);
  assert.equal(again.json.duplicate, true);
  assert.equal((await source()).warnings_total, fields.length);
});

test('a year-9999 process is dropped with a warning; the others are kept', async () => {
  const h = 'w0000002';
  const t = now() - 30;
  const body = {
    batch_id: 'w-9999', host: { hostname: 'w-node-2' }, gpus: [gpu(h, 0)],
    samples: [{ time: t, gpu: uuid(h, 0), util_avg: 90 }],
    processes: [
      { gpu: uuid(h, 0), pid: 9999, name: 'from-the-future', time: '9999-12-31T00:00:00Z' },
      { gpu: uuid(h, 0), pid: 1234, name: 'now', time: t },
    ],
  };
  const before = (await source()).warnings_total;
  const r = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.processes, 1);
  assert.deepEqual(r.json.warnings.map((w) => w.field), ['processes[0].time']);
  assert.match(r.json.warnings[0].message, /future/);
  const g = (await s.api('GET', '/api/v1/gpus/' + uuid(h, 0))).json;
  assert.deepEqual(g.processes.map((p) => p.pid), [1234]);
  assert.equal((await source()).warnings_total, before + 1);
  assert.match((await source()).last_warning, /processes\[0\]\.time/);
});

test('several anonymous processes on one GPU are all kept', async () => {
  const h = 'w0000003';
  const body = {
    batch_id: 'w-anon', host: { hostname: 'w-node-3' }, gpus: [gpu(h, 0)],
    samples: [{ time: now() - 10, gpu: uuid(h, 0), util_avg: 70 }],
    processes: [{ gpu: uuid(h, 0), used_mib: 100 }, { gpu: uuid(h, 0), used_mib: 200 }, { gpu: uuid(h, 0), pid: 7, used_mib: 300 }],
  };
  const r = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.processes, 3);
  assert.deepEqual(r.json.warnings, [], 'an absent pid is not an error');
  const procs = (await s.api('GET', '/api/v1/gpus/' + uuid(h, 0))).json.processes;
  assert.deepEqual(procs.map((p) => [p.pid, p.used_mib]).sort((a, b) => a[1] - b[1]), [[null, 100], [null, 200], [7, 300]]);
});

test('warnings are bounded: 100 listed, all counted', async () => {
  const h = 'w0000004';
  const t = now() - 100;
  const rows = Array.from({ length: 150 }, (_, i) => [t + (i % 60), 0, 101 + i]);
  const body = { batch_id: 'w-many', host: { hostname: 'w-node-4' }, gpus: [gpu(h, 0)], samples: { columns: ['time', 'gpu', 'util_avg'], rows } };
  const r = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.warnings.length, 100);
  assert.equal(r.json.warnings_total, 150);
  assert.equal(r.json.warnings[0].field, 'samples.rows[0].util_avg');
  assert.equal(r.json.samples, 60, 'every row kept, without its bad value');
});

test('bad rows of columnar samples are dropped, the rest kept', async () => {
  const h = 'w0000005';
  const t = now() - 100;
  const body = { batch_id: 'w-rows', host: { hostname: 'w-node-5' }, gpus: [gpu(h, 0)],
    samples: { columns: ['time', 'gpu', 'util_avg', 'colour'], rows: [[t, 0, 5, 'x'], [t + 1, 7, 5, 'x'], [t + 2, 0], ['soon', 0, 1, 'x'], [t + 3, 0, 9, 'x']] } };
  const r = await s.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  assert.equal(r.json.samples, 2);
  assert.deepEqual(r.json.warnings.map((w) => w.field),
    ['samples.columns[3]', 'samples.rows[1].gpu', 'samples.rows[2]', 'samples.rows[3].time']);
  assert.equal((await s.api('GET', '/api/v1/gpus/' + uuid(h, 0))).json.util_pct, 9);
});

test('an agent run without privileges stores every GPU and the anonymous processes', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--collector', 'nvidia-smi', '--nvidia-smi', SMI_UNPRIV,
    '--spool', tempDir('spool-'), '--hostname', 'w-unpriv']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /could not be read and are reported as absent/);
  const list = (await s.api('GET', '/api/v1/gpus?host=w-unpriv')).json;
  assert.equal(list.total, 4);
  const g0 = (await s.api('GET', '/api/v1/gpus/GPU-d0000000-0000-4000-8000-000000000000')).json;
  assert.equal(g0.temp_c, null, 'ERR! is absent');
  assert.equal(g0.power_w, null, '[Unknown Error] is absent');
  assert.equal(g0.util_pct, 37);
  assert.deepEqual(g0.processes.map((p) => [p.pid, p.used_mib]).sort((a, b) => a[1] - b[1]),
    [[null, 4096], [null, 8192], [4242, 20480]]);
  const g1 = (await s.api('GET', '/api/v1/gpus/GPU-d0000000-0000-4000-8000-000000000001')).json;
  assert.deepEqual(g1.processes.map((p) => [p.pid, p.used_mib]), [[null, null]]);
  const g2 = (await s.api('GET', '/api/v1/gpus/GPU-d0000000-0000-4000-8000-000000000002')).json;
  assert.equal(g2.util_pct, null, '150 % is not believed');
  assert.deepEqual(g2.processes.map((p) => p.pid), [5151], 'found by its bus id');
});

test('an nvidia-smi that may not list processes still reports its GPUs, and says so', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--collector', 'nvidia-smi', '--nvidia-smi', SMI_NOAPPS,
    '--spool', tempDir('spool-'), '--hostname', 'w-noapps']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /query-compute-apps: .*Insufficient Permissions.*; processes not reported/);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=w-noapps')).json.total, 8);
});

test('GPUs NVML cannot identify are left out, not a reason to lose the batch', async () => {
  // Two of four GPUs are lost before NVML tells their uuid.
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', tempDir('spool-'), '--hostname', 'w-lost'],
    { FAKE_NVML_CONFIG: LOST });
  assert.equal(r.code, 0, r.err);
  const list = (await s.api('GET', '/api/v1/gpus?host=w-lost')).json;
  assert.deepEqual(list.items.map((g) => g.uuid).sort(),
    ['GPU-10000000-0000-4000-8000-000000000000', 'GPU-10000000-0000-4000-8000-000000000003']);
});

test('NVML unprivileged: refused process lists and broken readings leave the GPUs whole', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', tempDir('spool-'), '--hostname', 'w-nvml'],
    { FAKE_NVML_CONFIG: UNPRIV_NVML });
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /could not be read and are reported as absent/);
  const g0 = (await s.api('GET', '/api/v1/gpus/GPU-f0000000-0000-4000-8000-000000000000')).json;
  assert.equal(g0.host, 'w-nvml');
  assert.equal(g0.temp_c, null);
  assert.equal(g0.util_pct, null);
  assert.equal(g0.power_w, 88);
  assert.deepEqual(g0.processes, []);
  const g1 = (await s.api('GET', '/api/v1/gpus/GPU-f0000000-0000-4000-8000-000000000001')).json;
  assert.equal(g1.power_w, null);
  assert.deepEqual(g1.processes.map((p) => [p.pid, p.used_mib]).sort((a, b) => a[1] - b[1]), [[5150, 1024], [null, 2048]]);
});

test('agent --once exits 4 and logs the reason when the server refuses a batch', async () => {
  // A refused token: the batch stays spooled for a run with a good one.
  const spool = tempDir('spool-');
  const denied = agent(['--server', s.url, '--token', 'gpi_not-a-token', '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'w-denied']);
  assert.equal(denied.code, 4, denied.err);
  assert.match(denied.err, /HTTP 401/);
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 1);
  const ok = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'w-denied']);
  assert.equal(ok.code, 0, ok.err);
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 0);

  // A batch the server cannot read: set aside as .rejected, the reason logged.
  const spool2 = tempDir('spool-');
  writeFileSync(path.join(spool2, '0000000000000001.json'), '{"batch_id":"junk","host":"not an object"}');
  const refused = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', spool2, '--hostname', 'w-refused']);
  assert.equal(refused.code, 4, refused.err);
  assert.match(refused.err, /HTTP 400: host: host is required and must be an object/);
  assert.deepEqual(readdirSync(spool2).filter((f) => f.endsWith('.rejected')), ['0000000000000001.rejected']);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=w-refused')).json.total, 8, 'the good batch of the same run was stored');
});

test('the agent logs what the server dropped from a batch it stored', () => {
  const spool = tempDir('spool-');
  const t = now() - 30;
  writeFileSync(path.join(spool, '0000000000000001.json'), JSON.stringify({
    batch_id: 'w-spooled', host: { hostname: 'w-logged' }, gpus: [{ uuid: 'GPU-w-logged', memory_total_mib: -1 }],
    samples: [{ time: t, gpu: 'GPU-w-logged', util_avg: 12 }],
  }));
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'w-logged']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /server stored the batch but dropped 1 field\(s\) or record\(s\)/);
  assert.match(r.err, /gpus\[0\]\.memory_total_mib must be between 0 and/);
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json') || f.endsWith('.rejected')).length, 0);
});

test('a dcgm-exporter pull degrades per field and counts what it could not use', async () => {
  const labels = (i) => `{gpu="${i}",UUID="GPU-e1000000-0000-4000-8000-00000000000${i}",Hostname="w-dcgm",modelName="NVIDIA H100 80GB HBM3"}`;
  const text = [
    `DCGM_FI_DEV_GPU_UTIL${labels(0)} 250`, // out of range
    `DCGM_FI_DEV_GPU_TEMP${labels(0)} 4294967295`, // out of range
    `DCGM_FI_DEV_POWER_USAGE${labels(0)} NaN`, // absent
    `DCGM_FI_DEV_FB_USED${labels(0)} 1024`,
    `DCGM_FI_DEV_GPU_UTIL${labels(1)} 42`,
    `DCGM_FI_DEV_GPU_TEMP${labels(1)} 61`,
    '',
  ].join('\n');
  const exporter = http.createServer((req, res) => res.writeHead(200, { 'Content-Type': 'text/plain' }).end(text));
  const port = await new Promise((r) => exporter.listen(0, '127.0.0.1', () => r(exporter.address().port)));
  try {
    const src = await s.api('POST', '/api/v1/sources', { body: { name: 'w-exporter', kind: 'dcgm-exporter', enabled: false, config: { url: `http://127.0.0.1:${port}/metrics` } } });
    assert.equal(src.status, 201, src.text);
    const run = await s.api('POST', `/api/v1/sources/${src.json.id}/run`);
    assert.equal(run.status, 200, run.text);
    assert.equal(run.json.run.ok, true, run.text);
    assert.equal(run.json.run.gpus, 2);
    const g0 = (await s.api('GET', '/api/v1/gpus/GPU-e1000000-0000-4000-8000-000000000000')).json;
    assert.equal(g0.util_pct, null);
    assert.equal(g0.temp_c, null);
    assert.equal(g0.power_w, null);
    assert.equal(g0.mem_used_mib, 1024);
    const g1 = (await s.api('GET', '/api/v1/gpus/GPU-e1000000-0000-4000-8000-000000000001')).json;
    assert.equal(g1.util_pct, 42);
    const doc = (await s.api('GET', `/api/v1/sources/${src.json.id}`)).json;
    assert.equal(doc.warnings_total, 2);
    assert.match(doc.last_warning, /out of range/);
  } finally {
    exporter.close();
  }
});
