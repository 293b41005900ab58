// The current owner materialized on each GPU row (the GPU list, its team
// filter) stays current when what the rules match on changes without an
// ownership write: a host linked to another inventory resource, a
// resource's tags, a Kubernetes node's labels (or the node going), and an
// assignment or rule dated in the future coming into force (the
// owner:refresh job, every second here). A changed tag also re-attributes
// the usage of the hour in progress. MIG instances inherit their physical
// GPU's assignment unless they have their own.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { useServer, ok, mkToken, uniq, dbQuery, rollupAll } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const h = useServer({ args: ['--owner-refresh-s', '1'] });
const now = () => Math.floor(Date.now() / 1000);
const iso = (t) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const hex = (n, w) => n.toString(16).padStart(w, '0');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let push, src, seq = 0;
const rules = {};

/** Pushes one host with n GPUs (and extra GPU records); returns the UUIDs. */
async function report(hostname, n = 1, extra = []) {
  seq += 1;
  const base = [...hostname].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 7);
  const gpus = Array.from({ length: n }, (_, i) => ({
    uuid: `GPU-${hex(base, 8)}-${hex(i, 4)}-4000-8000-${hex(seq, 12)}`,
    index: i, name: 'NVIDIA A100 80GB PCIe', memory_total_mib: 81920,
  }));
  const all = [...gpus, ...extra];
  const samples = gpus.map((g) => ({ time: now() - 5, gpu: g.uuid, util_avg: 50, util_max: 60 }));
  const r = await h.s.api('POST', '/api/v1/ingest',
    { auth: push, body: { batch_id: `ref-${process.pid}-${seq}`, host: { hostname }, gpus: all, samples } });
  assert.equal(r.status, 201, r.text);
  return gpus.map((g) => g.uuid);
}

/** The owner a GPU's document shows (the one materialized on its row). */
const listed = async (uuid) => ok(await h.s.api('GET', `/api/v1/gpus/${uuid}`)).owner;
const teamCount = async (team, host) => ok(await h.s.api('GET', `/api/v1/gpus?team=${team}&host=${host}`)).total;
const mkDim = async (p, name) => ok(await h.s.api('POST', `/api/v1/${p}`, { body: { name } }), 201);
/** A rule in force since yesterday, so that it decides whole hours of today. */
const mkRule = async (body) => ok(await h.s.api('POST', '/api/v1/ownership-rules',
  { body: { effective_from: iso(now() - 86400), ...body } }), 201);
const mkServer = async (dc, name) => ok(await h.s.api('POST', '/api/v1/resources',
  { body: { datacenter_id: dc, kind: 'server', name, gpu_count: 1, gpu_model: 'A100' } }), 201);
/** A server whose tags another writer of the inventory stored straight
 * into the database (the API's own metadata.tags is tested below). */
async function taggedServer(dc, name, tags) {
  const r = await mkServer(dc, name);
  await dbQuery(h.s.db, `UPDATE resources SET metadata = '${JSON.stringify({ tags })}' WHERE id = ${r.id}`);
  return r;
}
const hostOf = async (name) => ok(await h.s.api('GET', `/api/v1/hosts?q=${name}`)).items.find((x) => x.hostname === name);

test('setup: tokens, source defaults, dimensions, rules on tags and node labels', async () => {
  const pt = await mkToken(h.s, 'pusher');
  push = pt.token;
  src = ok(await h.s.api('GET', '/api/v1/sources')).items.find((x) => x.name === 'src-' + pt.name);
  ok(await h.s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { team: 'legacy' } }));
  for (const t of ['alpha', 'beta', 'gamma', 'delta', 'epsilon']) await mkDim('teams', t);
  await mkDim('pools', 'batch');
  for (const t of ['alpha', 'beta', 'gamma']) {
    rules[t] = await mkRule({ match: { kind: 'cloud_tag', key: 'team', value: t }, set: { team: t } });
  }
  rules.delta = await mkRule({ match: { kind: 'node_label', key: 'example.com/owner', value: 'delta' }, set: { team: 'delta' } });
});

test('a host that comes to link another resource takes the owner the resource gives', async () => {
  const dc = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('dc') } }), 201);
  const plain = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('plain') } }), 201);
  const byDc = await mkRule({ match: { kind: 'datacenter', value: dc.name }, set: { team: 'gamma' } });
  const host = uniq('link');
  const [g] = await report(host);
  assert.deepEqual((await listed(g)).team, { value: 'legacy', by: `source:${src.id}` });

  // The server appears after the host: matching links them, the host
  // joins the server's data center, and the owner follows.
  await mkServer(dc.id, host);
  assert.deepEqual((await listed(g)).team, { value: 'gamma', by: `rule:${byDc.id}` });
  assert.equal(await teamCount('gamma', host), 1);

  // Linked by hand to another server, whose tags decide.
  const other = await taggedServer(plain.id, uniq('other'), { team: 'beta' });
  const hd = await hostOf(host);
  ok(await h.s.api('PUT', `/api/v1/hosts/${hd.id}/link`, { body: { resource_id: other.id } }));
  assert.deepEqual((await listed(g)).team, { value: 'beta', by: `rule:${rules.beta.id}` });
  assert.equal(await teamCount('beta', host), 1);
  assert.equal(await teamCount('gamma', host), 0);

  ok(await h.s.api('DELETE', `/api/v1/hosts/${hd.id}/link`));
  assert.deepEqual((await listed(g)).team, { value: 'legacy', by: `source:${src.id}` });
});

test('a resource whose tags or data center change: its hosts\' GPUs and the hour in progress follow', async () => {
  const dc = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('dc') } }), 201);
  const dcMoved = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('moved') } }), 201);
  const moved = await mkRule({ match: { kind: 'datacenter', value: dcMoved.name }, set: { team: 'epsilon' } });
  const host = uniq('tags');
  const created = await mkServer(dc.id, host);
  // The resource's tags through the API (metadata.tags, an object of text values).
  const res = ok(await h.s.api('PATCH', `/api/v1/resources/${created.id}`,
    { body: { metadata: { tags: { team: 'alpha', 'cost-center': 'cc-9' } }, version: created.version } }));
  assert.deepEqual(res.metadata.tags, { team: 'alpha', 'cost-center': 'cc-9' });
  for (const [tags, why] of [[{ team: 5 }, /metadata\.tags\.team must be a string/], [{ '': 'x' }, /key is empty/],
    [{ team: 'x'.repeat(257) }, /at most 256 bytes/], [Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])), /more than 64 keys/]]) {
    const bad = await h.s.api('PATCH', `/api/v1/resources/${created.id}`, { body: { metadata: { tags }, version: res.version } });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.field, 'metadata');
    assert.match(bad.json.error.message, why);
  }
  const [g] = await report(host);
  assert.deepEqual((await listed(g)).team, { value: 'alpha', by: `rule:${rules.alpha.id}` });

  const hour = now() - (now() % 3600);
  const usage = async (dcName) => {
    const r = await rollupAll(h.s);
    assert.equal(r.dirty_left, 0);
    const u = ok(await h.s.api('GET',
      `/api/v1/usage?group_by=team&datacenter=${dcName}&from=${iso(hour)}&to=${iso(hour + 3600)}`));
    return u.items.map((x) => x.group);
  };
  assert.deepEqual(await usage(dc.name), ['alpha']);

  // The tags go: the rule no longer matches.
  const p = ok(await h.s.api('PATCH', `/api/v1/resources/${res.id}`,
    { body: { metadata: { note: 'retagged' }, version: res.version } }));
  assert.equal(p.metadata.tags, undefined);
  assert.deepEqual((await listed(g)).team, { value: 'legacy', by: `source:${src.id}` });
  assert.equal(await teamCount('alpha', host), 0);
  assert.deepEqual(await usage(dc.name), ['legacy'], 'the hour in progress is re-attributed');

  // The server moves to another data center, and its host with it.
  const q = ok(await h.s.api('PATCH', `/api/v1/resources/${res.id}`,
    { body: { datacenter_id: dcMoved.id, version: p.version } }));
  assert.equal(q.datacenter_id, dcMoved.id);
  assert.deepEqual((await listed(g)).team, { value: 'epsilon', by: `rule:${moved.id}` });
  assert.equal(await teamCount('epsilon', host), 1);

  // An edit that changes neither leaves the owner alone.
  ok(await h.s.api('PATCH', `/api/v1/resources/${res.id}`, { body: { rack: 'R9', version: q.version } }));
  assert.equal((await listed(g)).team.value, 'epsilon');
});

// A stand-in Kubernetes API serving one node, whose labels the test sets.
let api, apiUrl, node = null;
const nodeFx = JSON.parse(readFileSync(path.join(here, '..', 'fixtures', 'k8s', 'nodes.json'), 'utf8')).items[0];
before(async () => {
  api = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const send = (body) => res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(body));
    if (u.pathname === '/api/v1/nodes') {
      return send({ kind: 'NodeList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: node ? [node] : [] });
    }
    if (u.pathname === '/api/v1/pods') return send({ kind: 'PodList', apiVersion: 'v1', metadata: { resourceVersion: '1' }, items: [] });
    return res.writeHead(404).end('{}');
  });
  await new Promise((r) => api.listen(0, '127.0.0.1', r));
  apiUrl = 'http://127.0.0.1:' + api.address().port;
});
after(() => api.close());

function setNode(host, owner) {
  const n = structuredClone(nodeFx);
  n.metadata.name = host;
  n.metadata.labels['kubernetes.io/hostname'] = host;
  if (owner) n.metadata.labels['example.com/owner'] = owner;
  node = n;
}

test('a node whose labels change, and a node that goes, move its host\'s GPUs', async () => {
  const host = uniq('node');
  const [g] = await report(host);
  const k = ok(await h.s.api('POST', '/api/v1/sources', { body: { name: uniq('k8s'), kind: 'kubernetes', cluster: 'kc', config: { url: apiUrl, bearer_token: 'x', page_size: 50 } } }), 201);
  const pull = async () => {
    const r = ok(await h.s.api('POST', `/api/v1/sources/${k.id}/run`));
    assert.equal(r.run.ok, true, JSON.stringify(r));
  };
  setNode(host, 'delta');
  await pull();
  assert.deepEqual((await listed(g)).team, { value: 'delta', by: `rule:${rules.delta.id}` });
  assert.equal(await teamCount('delta', host), 1);

  setNode(host, 'nobody');
  await pull();
  assert.deepEqual((await listed(g)).team, { value: 'legacy', by: `source:${src.id}` });

  setNode(host, 'delta');
  await pull();
  assert.equal((await listed(g)).team.value, 'delta');
  node = null;
  await pull();
  assert.deepEqual((await listed(g)).team, { value: 'legacy', by: `source:${src.id}` });
});

test('an assignment and a rule dated in the future take over when their time comes', async () => {
  const host = uniq('future');
  const [g0, g1] = await report(host, 2);
  const at = now() + 3;
  ok(await h.s.api('PUT', `/api/v1/gpus/${g0}/owner`, { body: { team: 'epsilon', effective_from: iso(at) } }));
  const r = await mkRule({ match: { kind: 'host_pattern', value: host }, set: { team: 'beta' }, effective_from: iso(at) });
  assert.equal((await listed(g0)).team.value, 'legacy', 'not yet in force');
  assert.equal((await listed(g1)).team.value, 'legacy');
  let o0, o1;
  for (let i = 0; i < 60; i++) {
    o0 = await listed(g0);
    o1 = await listed(g1);
    if (o0.team.value !== 'legacy' && o1.team.value !== 'legacy') break;
    await sleep(500);
  }
  assert.ok(now() >= at, 'the change shows only once in force');
  assert.equal(o0.team.value, 'epsilon');
  assert.match(o0.team.by, /^assignment:gpu:\d+$/);
  assert.deepEqual(o1.team, { value: 'beta', by: `rule:${r.id}` });
  assert.equal(await teamCount('beta', host), 1);
});

test('MIG instances inherit their physical GPU\'s assignment unless they have their own', async () => {
  const host = uniq('mig');
  const tag = hex(seq + 1000, 8);
  const parent = `GPU-${tag}-0000-4000-8000-000000000001`;
  const mig = (i) => ({ uuid: `MIG-${tag}-000${i}-5000-8000-000000000000`, parent_uuid: parent,
    mig_profile: '3g.40gb', mig_instance: i, name: 'NVIDIA A100 80GB PCIe' });
  const pg = { uuid: parent, index: 0, name: 'NVIDIA A100 80GB PCIe', memory_total_mib: 81920 };
  await report(host, 0, [pg, mig(1), mig(2)]);
  const m1 = mig(1).uuid, m2 = mig(2).uuid;

  ok(await h.s.api('PUT', `/api/v1/gpus/${parent}/owner`, { body: { team: 'alpha' } }));
  const by = (await listed(parent)).team.by;
  assert.match(by, /^assignment:gpu:\d+$/);
  assert.equal((await listed(parent)).team.parent, undefined, 'the GPU\'s own assignment names no parent');
  for (const m of [m1, m2]) {
    assert.deepEqual((await listed(m)).team, { value: 'alpha', by, parent });
  }
  const at = ok(await h.s.api('GET', `/api/v1/gpus/${m1}/owner?at=${iso(now())}`)).owner;
  assert.deepEqual(at.team, { value: 'alpha', by, parent });
  assert.equal(await teamCount('alpha', host), 3);

  // The instance's own assignment wins; the parent's outranks the host's.
  ok(await h.s.api('PUT', `/api/v1/gpus/${m2}/owner`, { body: { team: 'beta' } }));
  ok(await h.s.api('PUT', `/api/v1/hosts/${host}/owner`, { body: { team: 'gamma', pool: 'batch' } }));
  const hd = await hostOf(host);
  const o2 = await listed(m2);
  assert.equal(o2.team.value, 'beta');
  assert.notEqual(o2.team.by, by);
  assert.equal(o2.team.parent, undefined);
  const o1 = await listed(m1);
  assert.deepEqual(o1.team, { value: 'alpha', by, parent });
  assert.deepEqual(o1.pool, { value: 'batch', by: `assignment:host:${hd.id}` });

  // A change of the parent's assignment reaches the instances without their own.
  ok(await h.s.api('PUT', `/api/v1/gpus/${parent}/owner`, { body: { team: 'delta' } }));
  assert.deepEqual((await listed(m1)).team, { value: 'delta', by, parent });
  assert.equal((await listed(m2)).team.value, 'beta');

  // An instance that appears later inherits at once.
  await report(host, 0, [pg, mig(1), mig(2), mig(3)]);
  assert.deepEqual((await listed(mig(3).uuid)).team, { value: 'delta', by, parent });
});
