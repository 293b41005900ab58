// The agent end to end: the real dlopen path against the stand-in
// libnvidia-ml.so.1, the nvidia-smi fallback, the spool that keeps batches
// while the server is away, and delivery in order when it returns.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir, BIN } from '../lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const FAKE = path.join(path.dirname(BIN), 'fake-nvml', 'libnvidia-ml.so.1');
const H100 = path.join(here, '..', 'fake-nvml', 'h100x8.json');
const MIG = path.join(here, '..', 'fake-nvml', 'a100-mig.json');
const SMI = path.join(here, '..', 'fixtures', 'bin', 'nvidia-smi');
const SMI_XML = path.join(here, '..', 'fixtures', 'bin', 'nvidia-smi-xml');
const AMD = path.join(here, '..', 'fixtures', 'bin', 'amd-smi');

let s;
let token;

function agent(args, env = {}) {
  const r = spawnSync(BIN, ['agent', ...args], {
    env: { ...process.env, FAKE_NVML_CONFIG: H100, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

before(async () => {
  s = await startServer();
  const r = await s.api('POST', '/api/v1/tokens', { body: { name: 'agent', role: 'pusher', source: 'agents', team: 'ml-platform', env: 'prod' } });
  assert.equal(r.status, 201, r.text);
  token = r.json.token;
});
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

test('--once reads the stand-in NVML through dlopen and pushes', async () => {
  const spool = tempDir('spool-');
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'dgx-01']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /reading GPUs with nvml/);
  const list = await s.api('GET', '/api/v1/gpus?host=dgx-01');
  assert.equal(list.json.total, 8);
  const g = list.json.items.find((x) => x.index === 0);
  assert.equal(g.model, 'NVIDIA H100 80GB HBM3');
  assert.equal(g.team, 'ml-platform');
  assert.ok(g.sample_at, 'the reading became a sample');
  assert.equal(typeof g.util_pct, 'number');
  const detail = await s.api('GET', '/api/v1/gpus/' + g.uuid);
  assert.equal(detail.json.provenance.find((p) => p.field === 'serial').source, 'agents');
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 0, 'spool drained');
});

test('the standalone gpuinv-agent binary does the same', async () => {
  const lean = path.join(path.dirname(BIN), 'gpuinv-agent');
  const r = spawnSync(lean, ['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', tempDir('spool-'), '--hostname', 'lean-01'],
    { env: { ...process.env, FAKE_NVML_CONFIG: H100 }, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=lean-01')).json.total, 8);
});

test('a running agent keeps reading while a child process sends its spool', async () => {
  const spool = tempDir('spool-');
  const child = spawn(BIN, ['agent', '--server', s.url, '--token', token, '--nvml', FAKE, '--spool', spool, '--interval', '1', '--push-interval', '2', '--hostname', 'live-01'], { env: { ...process.env, FAKE_NVML_CONFIG: H100 } });
  try {
    const end = Date.now() + 15000;
    let g;
    while (Date.now() < end) {
      g = (await s.api('GET', '/api/v1/gpus?host=live-01')).json;
      if (g.total === 8 && g.items.every((x) => x.sample_at)) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    assert.equal(g.total, 8);
  } finally {
    child.kill('SIGTERM');
    assert.equal(await new Promise((r) => child.on('exit', (c) => r(c))), 0);
  }
});

test('MIG instances are reported as children of their GPU', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', tempDir('spool-'), '--hostname', 'mig-01'], { FAKE_NVML_CONFIG: MIG });
  assert.equal(r.code, 0, r.err);
  const list = await s.api('GET', '/api/v1/gpus?host=mig-01&limit=100');
  const children = list.json.items.filter((x) => x.parent_uuid);
  assert.ok(children.length > 0, 'MIG instances present');
  const parent = await s.api('GET', '/api/v1/gpus/' + children[0].parent_uuid);
  assert.ok(parent.json.mig_instances.some((m) => m.uuid === children[0].uuid));
});

test('falls back to nvidia-smi when NVML cannot be loaded', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', '/nonexistent/libnvidia-ml.so.1', '--nvidia-smi', SMI, '--spool', tempDir('spool-'), '--hostname', 'smi-01']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /reading GPUs with nvidia-smi/);
  const list = await s.api('GET', '/api/v1/gpus?host=smi-01');
  assert.equal(list.json.total, 8);
  const g = await s.api('GET', '/api/v1/gpus/GPU-4f9c1a2e-7b3d-5e60-8a91-0c2d3e4f5a61');
  assert.equal(g.json.pci_bus_id, '0000:18:00.0');
  assert.equal(g.json.util_pct, 100);
  assert.equal(g.json.processes.length, 1);
  assert.equal(g.json.processes[0].pid, 48211);
});

test('an nvidia-smi that refuses the CSV query is read through -q -x', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--collector', 'nvidia-smi', '--nvidia-smi', SMI_XML, '--spool', tempDir('spool-'), '--hostname', 'xml-01']);
  assert.equal(r.code, 0, r.err);
  const g = await s.api('GET', '/api/v1/gpus/GPU-1d0e2a6b-9c3f-4b1e-8a27-5f6d4c3b2a19');
  assert.equal(g.status, 200, g.text);
  assert.equal(g.json.host, 'xml-01');
  assert.ok(g.json.model.includes('V100'), g.json.model);
});

test('AMD GPUs are read through amd-smi', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--collector', 'amd', '--amd-smi', AMD, '--spool', tempDir('spool-'), '--hostname', 'mi300-01']);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /reading GPUs with amd-smi/);
  const list = (await s.api('GET', '/api/v1/gpus?host=mi300-01')).json;
  assert.equal(list.total, 2);
  const g = list.items.find((x) => x.uuid === '0x18a5e2b3c4d5e6f7');
  assert.ok(g, JSON.stringify(list.items.map((x) => x.uuid)));
  assert.equal(g.vendor, 'amd');
  assert.match(g.model, /MI300X/);
});

test('no GPU source: a clear error, exit 1', () => {
  const r = agent(['--print', '--once', '--nvml', '/nonexistent/lib.so', '--nvidia-smi', '/nonexistent/nvidia-smi', '--amd-smi', '/nonexistent/amd-smi', '--rocm-smi', '/nonexistent/rocm-smi']);
  assert.equal(r.code, 1);
  assert.match(r.err, /no GPUs can be read on this host/);
});

test('--print writes a batch the push API accepts', async () => {
  const r = agent(['--print', '--once', '--nvml', FAKE, '--hostname', 'print-01']);
  assert.equal(r.code, 0, r.err);
  const batch = JSON.parse(r.out);
  assert.equal(batch.gpus.length, 8);
  assert.equal(batch.samples.rows.length, 8);
  assert.deepEqual(batch.samples.columns.slice(0, 2), ['time', 'gpu']);
  const pushed = await s.api('POST', '/api/v1/ingest', { body: batch, auth: token });
  assert.equal(pushed.status, 201, pushed.text);
});

test('usage errors exit 2', () => {
  assert.equal(agent(['--bogus']).code, 2);
  assert.equal(agent(['--once']).code, 2, 'server and token are required');
  assert.equal(agent(['--print', '--interval', '0']).code, 2);
});

test('while the server is away batches are spooled, then delivered in order', async () => {
  const spool = tempDir('spool-');
  const down = 'http://127.0.0.1:9'; // discard port: nothing listens
  for (let i = 0; i < 3; i++) {
    const r = agent(['--server', down, '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'offline-01']);
    assert.equal(r.code, 3, r.err);
  }
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 3);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=offline-01')).json.total, 0);
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--hostname', 'offline-01']);
  assert.equal(r.code, 0, r.err);
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 0);
  const src = (await s.api('GET', '/api/v1/sources')).json.items.find((x) => x.name === 'agents');
  assert.ok(src.last_success_at);
  assert.equal((await s.api('GET', '/api/v1/gpus?host=offline-01')).json.total, 8);
});

test('the spool is bounded: the oldest batches are dropped and counted', () => {
  const spool = tempDir('spool-');
  for (let i = 0; i < 12; i++) {
    agent(['--server', 'http://127.0.0.1:9', '--token', token, '--once', '--nvml', FAKE, '--spool', spool, '--spool-max', '65536', '--hostname', 'tiny-01']);
  }
  const files = readdirSync(spool).filter((f) => f.endsWith('.json'));
  assert.ok(files.length < 12, `kept ${files.length}`);
  assert.ok(existsSync(path.join(spool, 'dropped')));
});

test('SIGTERM spools the interval in progress', async () => {
  const spool = tempDir('spool-');
  const child = spawn(BIN, ['agent', '--server', 'http://127.0.0.1:9', '--token', token, '--nvml', FAKE, '--spool', spool, '--interval', '1', '--push-interval', '3600', '--hostname', 'term-01'], { env: { ...process.env, FAKE_NVML_CONFIG: H100 } });
  await new Promise((r) => setTimeout(r, 1500));
  child.kill('SIGTERM');
  const code = await new Promise((r) => child.on('exit', (c) => r(c)));
  assert.equal(code, 0);
  assert.equal(readdirSync(spool).filter((f) => f.endsWith('.json')).length, 1);
});
