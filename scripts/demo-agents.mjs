// Simulated GPU hosts for the demo: for servers of the demo fleet, writes a
// stand-in NVML configuration (the server's GPUs, readings that continue
// the host's history, a few processes), a stand-in host identity (DMI
// serial, machine id) and /proc entries for those processes, and runs the
// real `gpuinv agent` against them, so the dashboard's GPUs update live and
// each host joins its inventory server. Who uses which host how is planned
// in demo-fleet.mjs; demo-history.mjs loads 30 days of history for the same
// hosts in the background, with the demo's ownership, price change and
// usage rollup. A few cases disagree with the inventory on purpose, so the
// Drift page has something to show: one server reports 6 of its 8 GPUs,
// one available server is busy, and one host is in no inventory at all.
// Usage: GPUINV_DEMO_TOKEN=ADMIN_TOKEN node scripts/demo-agents.mjs URL BUILD_DIR WORK_DIR [HOSTS]
// No token is ever an argument (of this script or of an agent), so none
// shows in `ps`: the admin token comes in the environment, and each agent
// reads its pusher token from a file only this user can read.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { STEP_S, planFleet, podOf, reading } from './demo-fleet.mjs';
import { adminApi, loadHistory, runRollup, setupOwnership, setupPrices } from './demo-history.mjs';
import { setupAssets, xidAt } from './demo-assets.mjs';

const DAYS = 30;
const [url, buildDir, workDir, hostsArg] = process.argv.slice(2);
const adminToken = process.env.GPUINV_DEMO_TOKEN;
if (!url || !buildDir || !workDir || !adminToken) {
  console.error('usage: GPUINV_DEMO_TOKEN=TOKEN node scripts/demo-agents.mjs URL BUILD_DIR WORK_DIR [HOSTS]');
  process.exit(2);
}
const hosts = Number(hostsArg || 12);
const H = { Authorization: 'Bearer ' + adminToken, 'Content-Type': 'application/json' };

async function call(method, p, body) {
  const r = await fetch(url + p, { method, headers: H, body: body && JSON.stringify(body) });
  const j = await r.json().catch(() => null);
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

mkdirSync(workDir, { recursive: true });
// The history ends when the first `make run` on this database started;
// later runs keep that end, so they push nothing again.
const stateFile = path.join(workDir, 'history.json');
let state = null;
try { state = JSON.parse(readFileSync(stateFile, 'utf8')); } catch { /* first run */ }
if (!state || !Number.isInteger(state.end)) {
  const now = Math.floor(Date.now() / 1000);
  state = { end: now - (now % STEP_S), days: DAYS, loaded: false };
  writeFileSync(stateFile, JSON.stringify(state) + '\n');
}

const servers = (await call('GET', '/api/v1/resources?kind=server&limit=1000')).items;
const plans = planFleet(servers, hosts, state.end);
const procs = [];
const log = openSync(path.join(workDir, 'agents.log'), 'a');
// One pusher token per source (one per owning team, and one without a team
// for the unowned host): a source's labels become its GPUs' defaults. Each
// token is written to WORK_DIR/token-NAME (mode 0600) for its agents; the
// history is pushed with the same tokens, so under the same sources.
const tokenFiles = new Map();
const tokens = new Map();
async function tokenFor(plan) {
  if (!tokenFiles.has(plan.source)) {
    const label = plan.team || 'unowned';
    const body = { name: `demo-agents-${label}`, role: 'pusher', source: plan.source, cluster: plan.name.slice(0, 4) };
    if (plan.team) Object.assign(body, { team: plan.team, env: plan.env });
    const made = await call('POST', '/api/v1/tokens', body);
    const file = path.join(workDir, `token-${label.replace(/[^A-Za-z0-9_-]/g, '_')}`);
    writeFileSync(file, `${made.token}\n`, { mode: 0o600 });
    chmodSync(file, 0o600); // a file left by an earlier run keeps its old mode otherwise
    tokenFiles.set(plan.source, file);
    tokens.set(plan.source, made.token);
  }
  return tokenFiles.get(plan.source);
}
for (const p of plans) await tokenFor(p);
// The agents get neither the admin token nor a token of the caller's.
const agentEnv = { ...process.env };
delete agentEnv.GPUINV_DEMO_TOKEN;
delete agentEnv.GPUINV_TOKEN;

// The host's identity as the agent reads it (DMI serial, machine id), and
// /proc entries for the processes on its GPUs (the agent maps each pid to
// its command, and a pod's processes to the pod by their cgroup).
function fakeRoot(plan, gpus) {
  const root = path.join(workDir, `${plan.name}.root`);
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'etc/machine-id'), plan.machineId + '\n');
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), plan.serial || 'To Be Filled By O.E.M.');
  const pod = plan.role === 'pod8' ? podOf(plan) : null;
  for (const g of gpus) {
    for (const p of g.procs) {
      const dir = path.join(root, 'proc', String(p.pid));
      mkdirSync(dir, { recursive: true });
      writeFileSync(path.join(dir, 'comm'), `${p.name}\n`);
      writeFileSync(path.join(dir, 'status'), `Name:\t${p.name}\nPid:\t${p.pid}\n`);
      writeFileSync(path.join(dir, 'cgroup'), pod
        ? `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${pod.pod_uid.replace(/-/g, '_')}.slice/cri-containerd-${pod.container}.scope\n`
        : '0::/user.slice/session-1.scope\n');
    }
  }
  return root;
}

// What a GPU reads live: its history's reading now, moving a little.
const now = Math.floor(Date.now() / 1000);
function liveGpu(plan, g) {
  const gpu = plan.gpus[g];
  const r = reading(plan, g, now) || reading(plan, g, now + 3600);
  const busy = r.util >= 5;
  const wave = (lo, hi, period) => ({ min: Math.max(0, Math.round(lo)), max: Math.round(hi), period_s: period });
  const period = 180 + 13 * g + 7 * plan.h;
  return {
    uuid: gpu.uuid, name: gpu.name, serial: gpu.serial, bus_id: gpu.pci_bus_id,
    memory_total_mib: gpu.memory_total_mib,
    memory_used_mib: r.mem,
    util_gpu: busy ? wave(Math.max(5, r.util - 15), Math.min(100, r.util + 10), period) : r.util > 0 ? wave(0, 1, 600) : 0,
    util_mem: busy ? wave(10, 60, 240) : 0,
    temp_c: busy ? wave(r.temp - 5, r.temp + 5, 200 + g) : r.temp,
    power_w: busy ? wave(r.power * 0.85, Math.min(gpu.power_limit_w, r.power * 1.15), period) : r.power,
    power_limit_w: gpu.power_limit_w,
    ecc_corrected: 0,
    ecc_uncorrected: 0,
    mig_mode: 0,
    processes: r.procs.map((p) => ({ pid: p.pid, used_mib: p.used_mib })),
    procs: r.procs,
  };
}

for (const plan of plans) {
  const gpus = plan.gpus.map((_, g) => liveGpu(plan, g));
  const root = fakeRoot(plan, gpus);
  const cfg = path.join(workDir, `${plan.name}.json`);
  writeFileSync(cfg, JSON.stringify({ driver: '550.54.15', gpus: gpus.map(({ procs: _, ...g }) => g) }, null, 1));
  const spool = path.join(workDir, `${plan.name}.spool`);
  const child = spawn(path.join(buildDir, 'gpuinv-agent'), ['--server', url, '--token-file', tokenFiles.get(plan.source),
    '--nvml', path.join(buildDir, 'fake-nvml', 'libnvidia-ml.so.1'), '--hostname', plan.name,
    '--datacenter', plan.datacenter, '--cluster', plan.cluster, '--spool', spool, '--interval', '5', '--push-interval', '15',
    '--root', root],
  { env: { ...agentEnv, FAKE_NVML_CONFIG: cfg }, stdio: ['ignore', 'ignore', log] });
  procs.push(child);
}
console.log(`gpuinv: ${procs.length} simulated GPU hosts report through the real agent (log: ${path.join(workDir, 'agents.log')})`);
const stop = () => { for (const p of procs) p.kill('SIGTERM'); process.exit(0); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);

// In the background: ownership, the price change and the hardware assets
// first (so the rollup attributes and prices the history as it goes), then
// the history (one GPU with rising XID errors), then the rollup. Nothing here stops the live demo: each step says what it
// could not do and the next one runs.
const say = (line) => console.log(`gpuinv: ${line}`);
const api = adminApi(url, adminToken);
const start = state.end - state.days * 86400;
const midMonth = state.end - (state.end % 3600) - 15 * 86400;
async function background() {
  for (const step of [() => setupOwnership(api, plans, start), () => setupPrices(api, plans, midMonth),
    () => setupAssets(api, plans, state.end)]) {
    try { say(await step()); } catch (e) { say(`demo setup: ${e.message}`); }
  }
  if (state.loaded) {
    say(`the ${state.days} days of demo history are already loaded (rm -rf ${path.dirname(workDir)} starts afresh)`);
  } else {
    const t0 = Date.now();
    say(`loading ${state.days} days of history for ${plans.length} hosts in the background ...`);
    const r = await loadHistory({ url, plans, tokens, end: state.end, days: state.days,
      xid: (plan, g, ts) => xidAt(plans, plan, g, ts, state.end) });
    state.loaded = true;
    writeFileSync(stateFile, JSON.stringify(state) + '\n');
    say(`history loaded: ${r.samples} samples and ${r.processes} process readings in ${r.batches} new batches` +
      `${r.duplicates ? ` (${r.duplicates} were there already)` : ''}, ${Math.round((Date.now() - t0) / 1000)} s`);
  }
  say(await runRollup(url, adminToken));
}
background().catch((e) => say(`demo history: ${e.message}; the live demo goes on`));
