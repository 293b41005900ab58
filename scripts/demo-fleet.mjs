// The simulated GPU hosts of the demo, shared by the live agents
// (demo-agents.mjs) and the history loader (demo-history.mjs), so that
// both speak of the same hosts, GPUs (stable UUIDs) and sources, and the
// live readings continue the history.
//
// A host plan: {h, name, serverId, datacenter, cluster, model, team, env,
// source, role, machineId, serial, gpus: [{uuid, index, name, serial,
// pci_bus_id, memory_total_mib, power_limit_w}], gapHour, idleFrom}.
// `team` is the pushing source's default team (null: a source without
// one), `role` how its GPUs are used over time (see reading()):
//   office      jobs in working hours (09-19 UTC, Monday to Friday), a few
//               at night and at weekends; a process holds each busy GPU
//   serving     an inference service on every GPU: load follows the day,
//               never quite zero
//   idle-held   like office until `idleFrom`, then processes keep holding
//               memory on every GPU at 0 % (allocated but idle)
//   pod8        one Kubernetes pod holds all 8 GPUs; GPUs 0 and 1 train,
//               the other 6 stay near 0 %
//   maintenance like office until the hour `gapHour` (no data at all: the
//               maintenance window), idle after it
//   idle        no processes, 0 %
//   unowned     busy in working hours with no process anyone can see
// Readings are a pure function of (host, GPU, time): the same every run.

export const STEP_S = 300;
const DAY = 86400;
const WORKERS = ['alice', 'bob', 'chen', 'dana', 'eve', 'farid', 'gita', 'hugo'];

export const hex = (n, w) => n.toString(16).padStart(w, '0');
const memOf = (m) => (/80GB|H100|H200/.test(m) ? 81559 : /L40S/.test(m) ? 46068 : 40960);
const limitOf = (m) => (/H100|H200/.test(m) ? 700 : /A100/.test(m) ? 400 : 350);

/** A number in [0, 1) from its parts, the same for the same parts. */
export function rand(...parts) {
  let h = 0x811c9dc5;
  for (const p of parts) {
    const s = String(p);
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
    h = Math.imul(h ^ 0x7c, 0x01000193);
  }
  h ^= h >>> 16; h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13; h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) / 4294967296;
}

/** How much of the office works at ts: 1 in working hours on weekdays (UTC), 0 at night and weekends. */
export function workFactor(ts) {
  const d = new Date(ts * 1000);
  const day = d.getUTCDay();
  const hour = d.getUTCHours();
  if (day === 0 || day === 6) return 0;
  if (hour >= 9 && hour < 19) return 1;
  if (hour === 8 || hour === 19) return 0.4;
  return 0;
}

/** A hex string of n digits drawn from its parts. */
function hexOf(n, ...parts) {
  let s = '';
  for (let i = 0; s.length < n; i++) s += hex(Math.floor(rand(...parts, i) * 0x10000), 4);
  return s.slice(0, n);
}

/** The pod that holds all GPUs of a pod8 host: one pod UID and container per host. */
export function podOf(plan) {
  const u = hexOf(32, plan.name, 'pod');
  const ns = plan.team || 'ml-research';
  return {
    namespace: ns,
    pod: `${ns === 'ml-research' ? 'llm-pretrain' : ns + '-train'}-0`,
    pod_uid: `${u.slice(0, 8)}-${u.slice(8, 12)}-4${u.slice(13, 16)}-8${u.slice(17, 20)}-${u.slice(20, 32)}`,
    container: hexOf(64, plan.name, 'container'),
  };
}

/** The servers of the demo fleet that get a simulated host, spread over the data centers. */
function pickServers(servers, hosts) {
  const byDc = new Map();
  for (const s of servers) (byDc.get(s.datacenter_id) || byDc.set(s.datacenter_id, []).get(s.datacenter_id)).push(s);
  const picked = [];
  for (let i = 0; picked.length < hosts && i < servers.length; i++)
    for (const list of byDc.values()) if (list[i] && picked.length < hosts) picked.push(list[i]);
  return picked;
}

/**
 * The host plans for `hosts` servers of the demo fleet (the inventory's
 * server list), plus one host the inventory does not know. `end` (unix
 * seconds) anchors the times of events in the history (the maintenance
 * window, when the idle-held GPUs went idle).
 */
export function planFleet(servers, hosts, end) {
  const picked = pickServers(servers, hosts);
  const plans = [];
  const teamsInUse = new Map();
  for (const s of picked) if (s.state === 'in_use' && s.tenant) teamsInUse.set(s.tenant, (teamsInUse.get(s.tenant) || 0) + 1);
  let pod8 = picked.find((s) => s.state === 'in_use' && s.tenant === 'ml-research');
  // The idle-held host: the last in-use server of the first team holding two or more.
  const holder = [...teamsInUse].find(([t, n]) => n >= 2 && t !== (pod8 && pod8.tenant));
  const idleHeld = holder ? picked.filter((s) => s.state === 'in_use' && s.tenant === holder[0]).pop() : null;
  if (!pod8) pod8 = picked.filter((s) => s.state === 'in_use' && s !== idleHeld)[2] || null;
  const unallocatedBusy = picked.find((s) => s.state === 'available');
  picked.forEach((s, h) => {
    let role = 'idle';
    if (s === pod8) role = 'pod8';
    else if (s === idleHeld) role = 'idle-held';
    else if (s.state === 'in_use') role = s.tenant === 'inference' ? 'serving' : 'office';
    else if (s === unallocatedBusy) role = 'office';
    else if (s.state === 'maintenance' && h === 1) role = 'maintenance';
    const team = s.tenant || 'platform';
    plans.push(hostPlan(s, h, {
      role, team, env: team === 'platform' ? 'dev' : 'prod',
      // One server reports fewer GPUs than it declares (two fell off the bus).
      count: h === 1 ? 6 : s.gpu_count || 8,
      // Every fourth host has no readable serial and is matched by its name.
      serial: h % 4 === 2 ? null : s.serial,
    }, end));
  });
  // A host the inventory does not know, pushing under a source that names no team.
  if (picked.length > 0) {
    const s = { ...picked[0], id: 0xfff, name: `${picked[0].name.slice(0, 4)}-gpu-spare` };
    plans.push(hostPlan(s, picked.length, { role: 'unowned', team: null, env: null, count: 4, serial: null }, end));
  }
  return plans;
}

/**
 * One host plan. s: {id, name, datacenter, gpu_model}; h: its number (it
 * makes the GPU UUIDs); o: {role, team, env, count, serial, source?,
 * cluster?}; end: as planFleet's. Exported for tests, which plan small
 * fleets of their own.
 */
export function hostPlan(s, h, o, end) {
  const model = s.gpu_model || 'NVIDIA H100 80GB HBM3';
  const gpus = Array.from({ length: o.count }, (_, g) => ({
    uuid: `GPU-${hex(0xdeed0000 + h, 8)}-${hex(g, 4)}-4000-8000-${hex(s.id, 12)}`,
    index: g,
    name: model,
    serial: `16549${String(h).padStart(3, '0')}${String(g).padStart(2, '0')}`,
    pci_bus_id: `00000000:${hex([0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb][g % 8], 2).toUpperCase()}:00.0`,
    memory_total_mib: memOf(model),
    power_limit_w: limitOf(model),
  }));
  // Events of the history, on whole hours: the maintenance window three
  // days before the end, the idle-held GPUs idle for the last nine days
  // (both nearer the end when the history is shorter).
  const hourOf = (t) => t - (t % 3600);
  const days = o.days || 30;
  return {
    h, name: s.name, serverId: s.id, datacenter: s.datacenter, cluster: o.cluster || `${s.name.slice(0, 4)}-gpu`,
    model, team: o.team, env: o.env, role: o.role, state: s.state || null,
    source: o.source || (o.team ? `agents-${o.team}` : 'agents-unowned'),
    machineId: hex(0x5eed0000 + h, 8) + hex(s.id, 24),
    serial: o.serial || null,
    gpus,
    gapHour: o.role === 'maintenance' || o.gap ? hourOf(end - Math.min(3, days / 2) * DAY) : null,
    idleFrom: o.role === 'idle-held' ? hourOf(end - Math.min(9, days / 2) * DAY) : null,
  };
}

const round1 = (x) => Math.round(x * 10) / 10;

/** An office-style job on GPU g at ts: whether one runs, in 2-hour blocks. */
function officeBusy(plan, gpu, ts, share = 0.88) {
  const w = workFactor(ts);
  const p = w > 0 ? 0.06 + share * w : 0.07;
  return rand(gpu.uuid, 'job', Math.floor(ts / 7200)) < p;
}

/**
 * What GPU g of a host reads at ts: {util, util_max, mem, power, temp,
 * procs: [{pid, name, user, container?, pod_uid?, pod?, namespace?,
 * used_mib}]}, or null inside the host's maintenance window.
 */
export function reading(plan, g, ts) {
  const gpu = plan.gpus[g];
  if (plan.gapHour !== null && ts >= plan.gapHour && ts < plan.gapHour + 3600) return null;
  const noise = (k) => rand(gpu.uuid, k, ts);
  const block = Math.floor(ts / 7200);
  const total = gpu.memory_total_mib;
  let util = 0;
  let mem = 0;
  const procs = [];
  let role = plan.role;
  // An office job is a new process every 2 hours; the others run for days.
  const job = (name, used, extra = {}) => {
    const key = role === 'office' ? block : 0;
    procs.push({
      pid: 20000 + Math.floor(rand(gpu.uuid, 'pid', key) * 30000),
      name, user: WORKERS[Math.floor(rand(plan.name, 'user', key, extra.pod_uid ? 0 : g) * WORKERS.length)],
      ...extra, used_mib: Math.round(used),
    });
  };
  if (role === 'maintenance') role = ts < plan.gapHour ? 'office' : 'idle';
  if (role === 'idle-held' && ts < plan.idleFrom) role = 'office';
  switch (role) {
    case 'office':
    case 'unowned':
      if (officeBusy(plan, gpu, ts, role === 'unowned' ? 0.6 : 0.88)) {
        util = 55 + 42 * noise('u');
        mem = total * (0.55 + 0.35 * rand(gpu.uuid, 'mem', block));
        if (role === 'office') job('python3', mem - 600);
      } else {
        util = noise('u') < 0.6 ? 0 : 2 * noise('v');
      }
      break;
    case 'serving': {
      const w = workFactor(ts) || (new Date(ts * 1000).getUTCDay() % 6 === 0 ? 0.2 : 0.05);
      util = 12 + 62 * w + 12 * noise('u');
      mem = total * 0.62;
      job('tritonserver', mem - 800);
      break;
    }
    case 'idle-held':
      util = noise('u') < 0.85 ? 0 : 0.5;
      mem = 30720 + 2048 * rand(gpu.uuid, 'mem');
      job('python3', mem - 400);
      break;
    case 'pod8': {
      const pod = podOf(plan);
      if (g < 2) {
        util = 86 + 13 * noise('u');
        mem = total * 0.9;
      } else {
        util = noise('u') < 0.8 ? 0 : 0.6 * noise('v');
        mem = 1536;
      }
      job('python3', mem - 300, pod);
      break;
    }
    default:
      util = 0;
  }
  util = Math.min(100, round1(util));
  const busy = util >= 5;
  const umax = util <= 1 ? round1(Math.min(1, util + noise('m'))) : Math.min(100, round1(util + 3 + 15 * noise('m')));
  const power = 62 + (mem > 0 ? 25 : 0) + (gpu.power_limit_w - 90) * (util / 100) * (0.85 + 0.15 * noise('p'));
  return {
    util, util_max: umax, mem: Math.round(mem), power: round1(power),
    temp: Math.round(31 + (busy ? 44 * util / 100 : 2) + 3 * noise('t')), procs,
  };
}
