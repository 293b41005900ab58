// The fleet of the tests of a token confined to several data centers
// (token_scope_usage, token_scope_insights): three data centers, each with
// one host of a team of its own (the pushing source's default owner),
// linked to an inventory server there, readings every minute from t0 for
// `hours` hours, and a viewer token of the first two data centers.
import { ok, mkDc, mkRes, uniq, rollupAll } from './helpers.mjs';

const hex = (n, w) => n.toString(16).padStart(w, '0');
let seq = 0;

/**
 * Pushes and rolls up the fleet. counts: the GPUs of each data center;
 * gpu(d, i): what GPU i of data center d does, {util, pod} (pod: the name
 * of a Kubernetes pod that holds it from the second reading on, or null).
 * hostname(d) and server(d): data center d's host name and the fields of
 * its inventory server (default: a unique name, no fields).
 * Returns {dcs, teams, hosts, gpus (their UUIDs per data center), two (the
 * token of the first two data centers)}.
 */
export async function scopeFleet(s, { model, t0, hours = 2, counts = [1, 2, 4], gpu = () => ({ util: 50, pod: null }),
  hostname: nameOf = (d) => uniq(`hu${d}`), server = () => ({}) }) {
  const out = { dcs: [], teams: [], hosts: [], gpus: [] };
  for (let d = 0; d < counts.length; d++) {
    const dc = await mkDc(s);
    out.dcs.push(dc);
    out.teams.push(uniq(`team${d}`));
    const src = uniq(`su${d}`);
    const pusher = ok(await s.api('POST', '/api/v1/tokens', { body: { name: 'tok-' + src, role: 'pusher', source: src, team: out.teams[d] } }), 201);
    const hostname = nameOf(d);
    const gpus = [];
    for (let i = 0; i < counts[d]; i++) {
      seq += 1;
      gpus.push({ uuid: `GPU-${hex(process.pid, 8)}-${hex(seq, 4)}-4000-8000-${hex(seq * 7919, 12)}`, index: i, name: model });
    }
    out.gpus.push(gpus.map((g) => g.uuid));
    out.hosts.push(hostname);
    ok(await s.api('POST', '/api/v1/ingest', { auth: pusher.token, body: { batch_id: uniq('b'), host: { hostname }, gpus, samples: [] } }), 201);
    const res = await mkRes(s, dc.id, server(d));
    const host = ok(await s.api('GET', `/api/v1/hosts?q=${hostname}`)).items.find((x) => x.hostname === hostname);
    ok(await s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: res.id } }));
    const samples = [];
    const processes = [];
    for (let t = t0; t <= t0 + hours * 3600; t += 60) {
      gpus.forEach((g, i) => {
        const { util, pod } = gpu(d, i);
        samples.push({ time: t, gpu: g.uuid, util_avg: util, util_max: util + 10 * (util > 0) });
        if (pod && t > t0) processes.push({ gpu: g.uuid, pid: 200 + i, name: 'python', time: t, namespace: 'ns', pod, container: 'main' });
      });
    }
    ok(await s.api('POST', '/api/v1/ingest', { auth: pusher.token, body: { batch_id: uniq('b'), host: { hostname }, gpus, samples, processes } }), 201);
  }
  await rollupAll(s);
  out.two = ok(await s.api('POST', '/api/v1/tokens', { body: { name: uniq('two'), role: 'viewer', datacenters: [out.dcs[0].id, out.dcs[1].id] } }), 201);
  return out;
}
