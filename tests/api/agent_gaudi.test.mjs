// The agent on an Intel Gaudi host: a stand-in hl-smi on PATH (a recorded
// Gaudi3 node) read through the CSV query and the summary table, pushed to
// a real server; the GPUs, their samples and their processes arrive.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, existsSync, readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer, tempDir, BIN } from '../lib/server.mjs';
import { dbQuery } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const BINDIR = path.join(here, '..', 'fixtures', 'bin');
const HL = path.join(BINDIR, 'hl-smi');
const UUID1 = '01P4-HL3090A0-18-UBX204-02-08-01';

let s;
let token;

function agent(args, env = {}) {
  const r = spawnSync(BIN, ['agent', ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

before(async () => {
  s = await startServer();
  const r = await s.api('POST', '/api/v1/tokens', { body: { name: 'gaudi-agent', role: 'pusher', source: 'agents' } });
  assert.equal(r.status, 201, r.text);
  token = r.json.token;
});
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

test('--collector gaudi finds hl-smi on PATH and pushes GPUs, samples and processes', async () => {
  // HABANA_LOGS unset: the agent gives hl-smi a private log directory
  // (the stand-in refuses to run without a writable one).
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gaudi-tmp-'));
  const env = { PATH: `${BINDIR}:${process.env.PATH}`, HABANA_LOGS: '', TMPDIR: tmp };
  const r = agent(['--server', s.url, '--token', token, '--once', '--collector', 'gaudi',
    '--spool', tempDir('spool-'), '--hostname', 'gaudi3-01'], env);
  assert.equal(r.code, 0, r.err);
  assert.match(r.err, /reading GPUs with hl-smi/);
  assert.deepEqual(readdirSync(tmp), [], 'the log directory is removed again');

  const list = (await s.api('GET', '/api/v1/gpus?host=gaudi3-01')).json;
  assert.equal(list.total, 2);
  const g = (await s.api('GET', '/api/v1/gpus/' + UUID1)).json;
  assert.equal(g.vendor, 'intel');
  assert.equal(g.model, 'Intel Gaudi3 HL-325L');
  assert.equal(g.serial, 'AN50020112');
  assert.equal(g.pci_bus_id, '0000:9b:00.0');
  assert.equal(g.vbios, null, 'hl-smi -q names no firmware for this one');
  assert.equal(g.memory_total_mib, 131072);
  assert.equal(g.util_pct, 100);
  assert.ok(g.sample_at, 'the reading became a sample');
  assert.equal(g.processes.length, 1);
  assert.equal(g.processes[0].pid, 48211);

  const rows = await dbQuery(s.db, `SELECT x.util_avg, x.mem_used_mib, x.power_avg_w FROM gpu_samples x
    JOIN gpus g ON g.id = x.gpu_id WHERE g.uuid = '${UUID1}'`);
  assert.deepEqual(rows.trim().split('|').map(Number), [100, 119808, 712]);
  const idle = (await s.api('GET', '/api/v1/gpus/01P4-HL3090A0-18-UBX204-07-02-05')).json;
  assert.equal(idle.processes.length, 0, 'an N/A process row is no process');
  assert.equal(idle.vbios, 'hl-gaudi3-1.21.0-fw-58.1.1-sec-3', 'firmware from hl-smi -q');

  // ECC counters from the separate query, matched by bus id; N/A stays unknown.
  assert.equal(g.ecc_uncorrected, 2);
  assert.equal(g.ecc_corrected, 17);
  assert.equal(idle.ecc_uncorrected, 0);
  assert.equal(idle.ecc_corrected, null);
});

test('an hl-smi that refuses the ECC fields still gives the GPUs, with a warning', () => {
  const r = agent(['--print', '--once', '--collector', 'gaudi', '--hl-smi', HL, '--hostname', 'g-05'],
    { HABANA_LOGS: tempDir('hl-logs-'), HLSMI_NO_ECC: '1' });
  assert.equal(r.code, 0, r.err);
  const batch = JSON.parse(r.out);
  assert.equal(batch.gpus.length, 2);
  assert.ok(batch.gpus.every((x) => x.ecc_uncorrected === undefined || x.ecc_uncorrected === null));
  assert.match(JSON.stringify(batch.warnings || []) + r.err, /ECC query/);
});

test('auto detection reaches hl-smi when no NVIDIA or AMD tool is there', async () => {
  const r = agent(['--print', '--once', '--nvml', '/nonexistent/lib.so', '--nvidia-smi', '/nonexistent/nvidia-smi',
    '--amd-smi', '/nonexistent/amd-smi', '--rocm-smi', '/nonexistent/rocm-smi', '--hl-smi', HL, '--hostname', 'g-02'],
  { HABANA_LOGS: tempDir('hl-logs-') });
  assert.equal(r.code, 0, r.err);
  const batch = JSON.parse(r.out);
  assert.deepEqual(batch.gpus.map((x) => x.uuid).sort(), ['01P4-HL3090A0-18-UBX204-02-08-01', '01P4-HL3090A0-18-UBX204-07-02-05']);
  assert.ok(batch.gpus.every((x) => x.vendor === 'intel'));
});

test('an hl-smi that fails is named in the error', () => {
  const r = agent(['--print', '--once', '--collector', 'gaudi', '--hl-smi', HL, '--hostname', 'g-03'], { HLSMI_FAIL: '1' });
  assert.equal(r.code, 1);
  assert.match(r.err, /gaudi: .*cannot open \/dev\/accel\/accel0/);
});

test('the standalone gpuinv-agent reads Gaudi too', () => {
  const lean = path.join(path.dirname(BIN), 'gpuinv-agent');
  assert.ok(existsSync(lean));
  const r = spawnSync(lean, ['--print', '--once', '--collector', 'gaudi', '--hl-smi', HL, '--hostname', 'g-04'],
    { encoding: 'utf8', env: { ...process.env, HABANA_LOGS: tempDir('hl-logs-') } });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).gpus.length, 2);
});
