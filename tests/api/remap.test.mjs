// Row remapping from the stand-in NVML to the server: the agent reads
// nvmlDeviceGetRemappedRows (absent where NVML answers NOT_SUPPORTED or the
// library has no such function) and pushes it; the GPU stores it and a
// failure becomes a remap_failure event.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir, BIN } from '../lib/server.mjs';
import { dbQuery } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const FAKE = path.join(path.dirname(BIN), 'fake-nvml', 'libnvidia-ml.so.1');
const LEGACY = path.join(path.dirname(BIN), 'fake-nvml-legacy', 'libnvidia-ml.so.1');
const CONFIG = path.join(here, '..', 'fake-nvml', 'a100-remap.json');
const FAILED = 'GPU-7a1c0e2d-3b4f-4a5e-9c6d-0000000000a0';

let s;
let token;

function agent(args) {
  const r = spawnSync(BIN, ['agent', ...args], { env: { ...process.env, FAKE_NVML_CONFIG: CONFIG }, encoding: 'utf8' });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

before(async () => {
  s = await startServer();
  const r = await s.api('POST', '/api/v1/tokens', { body: { name: 'remap-agent', role: 'pusher', source: 'agents' } });
  assert.equal(r.status, 201, r.text);
  token = r.json.token;
});
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

test('the batch carries what NVML says, and nothing where it cannot say', () => {
  const r = agent(['--print', '--once', '--nvml', FAKE, '--hostname', 'a100-remap']);
  assert.equal(r.code, 0, r.err);
  const gpus = JSON.parse(r.out).gpus;
  const by = (suffix) => gpus.find((g) => g.uuid.endsWith(suffix));
  assert.deepEqual([by('a0').remap_failure, by('a0').remap_uncorrectable, by('a0').remap_pending], [true, 8, false]);
  assert.deepEqual([by('a1').remap_failure, by('a1').remap_corrected, by('a1').remap_pending], [false, 2, true]);
  assert.equal(by('a2').remap_failure, undefined, 'NOT_SUPPORTED is absent');
  const old = agent(['--print', '--once', '--nvml', LEGACY, '--hostname', 'a100-remap']);
  assert.equal(old.code, 0, old.err);
  assert.ok(JSON.parse(old.out).gpus.every((g) => g.remap_failure === undefined), 'no symbol: absent');
});

test('pushed, the failure is stored on the GPU with an event', async () => {
  const r = agent(['--server', s.url, '--token', token, '--once', '--nvml', FAKE, '--spool', tempDir('spool-'), '--hostname', 'a100-remap']);
  assert.equal(r.code, 0, r.err);
  const rows = await dbQuery(s.db, `SELECT uuid, remap_failure, remap_uncorrectable, remap_pending,
    CASE WHEN remap_failure_since IS NULL THEN 0 ELSE 1 END FROM gpus WHERE host_id IS NOT NULL ORDER BY uuid`);
  assert.deepEqual(rows.trim().split('\n').map((l) => l.replace(/^GPU-7a1c0e2d-3b4f-4a5e-9c6d-0000000000/, '')),
    ['a0|1|8|0|1', 'a1|0|0|1|0', 'a2||||0']);
  const g = (await s.api('GET', '/api/v1/gpus/' + FAILED)).json;
  const ev = g.events.find((e) => e.kind === 'remap_failure');
  assert.ok(ev, JSON.stringify(g.events));
  assert.equal(ev.detail.uncorrectable_rows, 8);
});
