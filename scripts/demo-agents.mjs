// Simulated GPU hosts for the demo: for servers of the demo fleet, writes a
// stand-in NVML configuration (8 GPUs of the server's model, utilization
// moving as sine waves, a few processes) and a stand-in host identity (DMI
// serial, machine id), and runs the real `gpuinv agent` against them, so the
// dashboard's GPUs update live and each host joins its inventory server.
// A few cases disagree with the inventory on purpose, so the Drift page has
// something to show: one server reports 6 of its 8 GPUs, one available
// server is busy, and one host is in no inventory at all.
// Usage: node scripts/demo-agents.mjs URL ADMIN_TOKEN BUILD_DIR WORK_DIR [HOSTS]
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const [url, adminToken, buildDir, workDir, hostsArg] = process.argv.slice(2);
const hosts = Number(hostsArg || 12);
const H = { Authorization: 'Bearer ' + adminToken, 'Content-Type': 'application/json' };

async function call(method, p, body) {
  const r = await fetch(url + p, { method, headers: H, body: body && JSON.stringify(body) });
  const j = await r.json().catch(() => null);
  if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${JSON.stringify(j)}`);
  return j;
}

const servers = (await call('GET', '/api/v1/resources?kind=server&limit=1000')).items;
// Spread the simulated hosts over the data centers.
const byDc = new Map();
for (const s of servers) (byDc.get(s.datacenter_id) || byDc.set(s.datacenter_id, []).get(s.datacenter_id)).push(s);
const picked = [];
for (let i = 0; picked.length < hosts && i < servers.length; i++)
  for (const list of byDc.values()) if (list[i] && picked.length < hosts) picked.push(list[i]);

const memOf = (m) => (/80GB|H100/.test(m) ? 81559 : /L40S/.test(m) ? 46068 : 40960);
const hex = (n, w) => n.toString(16).padStart(w, '0');
const procs = [];
mkdirSync(workDir, { recursive: true });
const log = openSync(path.join(workDir, 'agents.log'), 'a');
// One pusher token per owning team: a source's labels become its GPUs' defaults.
const tokens = new Map();
async function tokenFor(s) {
  const team = s.tenant || 'platform';
  if (!tokens.has(team)) {
    const env = team === 'platform' ? 'dev' : 'prod';
    tokens.set(team, (await call('POST', '/api/v1/tokens', { name: `demo-agents-${team}`, role: 'pusher', source: `agents-${team}`, team, env, cluster: s.name.slice(0, 4) })).token);
  }
  return tokens.get(team);
}
for (const s of picked) await tokenFor(s);

// A host the inventory does not know, reporting under an existing team.
if (picked.length > 0)
  picked.push({ ...picked[0], id: 0xfff, name: `${picked[0].name.slice(0, 4)}-gpu-spare`, serial: null, gpu_count: 4, state: 'available' });
const unallocatedBusy = picked.find((s) => s.state === 'available' && s.id !== 0xfff);

// The host's identity as the agent reads it: DMI serial and machine id.
// Every fourth host has no readable serial and is matched by its name.
function fakeRoot(s, h) {
  const root = path.join(workDir, `${s.name}.root`);
  mkdirSync(path.join(root, 'etc'), { recursive: true });
  mkdirSync(path.join(root, 'sys/class/dmi/id'), { recursive: true });
  writeFileSync(path.join(root, 'etc/machine-id'), hex(0x5eed0000 + h, 8) + hex(s.id, 24) + '\n');
  writeFileSync(path.join(root, 'sys/class/dmi/id/product_serial'), (h % 4 === 2 ? null : s.serial) || 'To Be Filled By O.E.M.');
  return root;
}

picked.forEach((s, h) => {
  const busy = s.state === 'in_use' || s === unallocatedBusy;
  // One server reports fewer GPUs than it declares (two fell off the bus).
  const count = h === 1 ? 6 : s.gpu_count || 8;
  const gpus = Array.from({ length: count }, (_, g) => ({
    uuid: `GPU-${hex(0xdeed0000 + h, 8)}-${hex(g, 4)}-4000-8000-${hex(s.id, 12)}`,
    name: s.gpu_model,
    serial: `16549${hex(h, 3)}${hex(g, 2)}`.replace(/[a-f]/g, '7'),
    bus_id: `00000000:${hex([0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb][g % 8], 2).toUpperCase()}:00.0`,
    memory_total_mib: memOf(s.gpu_model),
    memory_used_mib: busy ? { min: memOf(s.gpu_model) * 0.5, max: memOf(s.gpu_model) * 0.95, period_s: 300 + 17 * g } : 512,
    util_gpu: busy ? { min: 35 + (g * 7) % 30, max: 100, period_s: 180 + 13 * g + 7 * h } : (g % 3 === 0 ? { min: 0, max: 4, period_s: 600 } : 0),
    util_mem: busy ? { min: 10, max: 60, period_s: 240 } : 0,
    temp_c: busy ? { min: 55, max: 78, period_s: 200 + g } : 33,
    power_w: busy ? { min: 280, max: 650, period_s: 180 + 13 * g + 7 * h } : 75,
    power_limit_w: /H100/.test(s.gpu_model) ? 700 : /A100/.test(s.gpu_model) ? 400 : 350,
    ecc_corrected: 0,
    ecc_uncorrected: 0,
    mig_mode: 0,
    processes: busy ? [{ pid: 10000 + h * 100 + g, used_mib: 30000 }] : [],
  }));
  const cfg = path.join(workDir, `${s.name}.json`);
  writeFileSync(cfg, JSON.stringify({ driver: '550.54.15', gpus }, null, 1));
  const spool = path.join(workDir, `${s.name}.spool`);
  const child = spawn(path.join(buildDir, 'gpuinv-agent'), ['--server', url, '--token', tokens.get(s.tenant || 'platform'),
    '--nvml', path.join(buildDir, 'fake-nvml', 'libnvidia-ml.so.1'), '--hostname', s.name,
    '--datacenter', s.datacenter, '--cluster', `${s.name.slice(0, 4)}-gpu`, '--spool', spool, '--interval', '5', '--push-interval', '15',
    '--root', fakeRoot(s, h)],
  { env: { ...process.env, FAKE_NVML_CONFIG: cfg }, stdio: ['ignore', 'ignore', log] });
  procs.push(child);
});
console.log(`gpuinv: ${procs.length} simulated GPU hosts report through the real agent (log: ${path.join(workDir, 'agents.log')})`);
const stop = () => { for (const p of procs) p.kill('SIGTERM'); process.exit(0); };
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
setInterval(() => {}, 1 << 30);
