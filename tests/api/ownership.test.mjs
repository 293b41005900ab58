// Ownership: dimensions (teams, environments, pools, clusters) with
// validation and in-use refusals, explicit assignments per GPU, host and
// resource with history, versioned mapping rules, the resolution order per
// field with what decided it, the unowned list, audit rows and roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkToken, uniq } from './helpers.mjs';

const h = useServer();
let push, pushSource, viewer;
let seq = 0;
const now = () => Math.floor(Date.now() / 1000);
const iso = (t) => new Date(t * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const hex = (n, w) => n.toString(16).padStart(w, '0');

/** Pushes one host with n GPUs; returns their UUIDs. */
async function report(hostname, n = 2) {
  seq += 1;
  const base = [...hostname].reduce((a, c) => (a * 31 + c.charCodeAt(0)) >>> 0, 11);
  const gpus = Array.from({ length: n }, (_, i) => ({
    uuid: `GPU-${hex(base, 8)}-${hex(i, 4)}-4000-8000-${hex(seq, 12)}`,
    index: i, name: 'NVIDIA H100 80GB HBM3', memory_total_mib: 81559,
  }));
  const samples = gpus.map((g) => ({ time: now() - 5, gpu: g.uuid, util_avg: 50, util_max: 60 }));
  const r = await h.s.api('POST', '/api/v1/ingest',
    { auth: push, body: { batch_id: `own-${process.pid}-${seq}`, host: { hostname }, gpus, samples } });
  assert.equal(r.status, 201, r.text);
  return gpus.map((g) => g.uuid);
}

const gpu = async (uuid) => ok(await h.s.api('GET', `/api/v1/gpus/${uuid}`));
const ownerAt = async (uuid, t) => ok(await h.s.api('GET', `/api/v1/gpus/${uuid}/owner?at=${iso(t)}`)).owner;
const mkDim = async (path, name, extra = {}) =>
  ok(await h.s.api('POST', `/api/v1/${path}`, { body: { name, ...extra } }), 201);
const mkRule = async (body) => ok(await h.s.api('POST', '/api/v1/ownership-rules', { body }), 201);

test('setup: tokens, the pushing source with its defaults, dimensions', async () => {
  const pt = await mkToken(h.s, 'pusher');
  push = pt.token;
  viewer = (await mkToken(h.s, 'viewer')).token;
  const src = ok(await h.s.api('GET', '/api/v1/sources')).items.find((x) => x.name === 'src-' + pt.name);
  assert.ok(src, 'the pusher token\'s source exists');
  pushSource = src;
  // The source's default team is not a dimension: it still resolves.
  ok(await h.s.api('PATCH', `/api/v1/sources/${src.id}`, { body: { team: 'legacy', env: 'lab' } }));
  for (const t of ['vision', 'nlp', 'search']) await mkDim('teams', t, { attrs: { manager: 'ann', cost_center: 'cc-1' } });
  for (const e of ['prod', 'dev']) await mkDim('environments', e);
  await mkDim('pools', 'batch');
  await mkDim('clusters', 'east', { attrs: { cloud: 'aws' } });
});

test('dimensions: CRUD, validation naming the field, duplicates', async () => {
  const t = ok(await h.s.api('GET', '/api/v1/teams/vision'));
  assert.equal(t.kind, 'team');
  assert.deepEqual(t.attrs, { manager: 'ann', cost_center: 'cc-1' });
  const p = ok(await h.s.api('PATCH', '/api/v1/teams/vision', { body: { display: 'Vision', description: 'CV models' } }));
  assert.equal(p.display, 'Vision');
  assert.equal(p.description, 'CV models');
  assert.deepEqual(p.attrs, { manager: 'ann', cost_center: 'cc-1' });
  assertError(await h.s.api('POST', '/api/v1/teams', { body: { name: 'vision' } }), 409, { field: 'name' });
  assertError(await h.s.api('POST', '/api/v1/teams', { body: { name: 'bad name' } }), 400, { field: 'name' });
  assertError(await h.s.api('POST', '/api/v1/teams', { body: { name: 'x', attrs: [1] } }), 400, { field: 'attrs' });
  assertError(await h.s.api('POST', '/api/v1/teams', { body: { name: 'x', colour: 'red' } }), 400);
  assertError(await h.s.api('PATCH', '/api/v1/teams/vision', { body: { name: 'other' } }), 400, { field: 'name' });
  assertError(await h.s.api('GET', '/api/v1/teams/nobody'), 404);
  const list = ok(await h.s.api('GET', '/api/v1/teams'));
  assert.deepEqual(list.items.map((x) => x.name), ['nlp', 'search', 'vision']);
  const envs = ok(await h.s.api('GET', '/api/v1/environments'));
  assert.deepEqual(envs.items.map((x) => x.name), ['dev', 'prod']);
  assert.equal(ok(await h.s.api('GET', '/api/v1/teams?q=vis')).total, 1);
});

let ruleHost;
test('precedence per field: GPU assignment > host assignment > rule > source, each with its by', async () => {
  const host = uniq('prec');
  const [g0, g1] = await report(host);
  // Only the source decides so far.
  let o = (await gpu(g0)).owner;
  assert.deepEqual(o.team, { value: 'legacy', by: `source:${pushSource.id}` });
  assert.deepEqual(o.env, { value: 'lab', by: `source:${pushSource.id}` });
  assert.deepEqual(o.pool, { value: null, by: null });

  ruleHost = mkRule({ match: { kind: 'host_pattern', value: 'PREC-*' }, set: { team: 'vision', pool: 'batch' } });
  ruleHost = await ruleHost;
  assert.equal(ruleHost.enabled, true);
  assert.deepEqual(ruleHost.match, { kind: 'host_pattern', value: 'PREC-*' });
  o = (await gpu(g0)).owner;
  assert.deepEqual(o.team, { value: 'vision', by: `rule:${ruleHost.id}` }, 'globs ignore case');
  assert.deepEqual(o.pool, { value: 'batch', by: `rule:${ruleHost.id}` });
  assert.deepEqual(o.env, { value: 'lab', by: `source:${pushSource.id}` });

  const hostDoc = ok(await h.s.api('GET', `/api/v1/hosts?q=${host}`)).items.find((x) => x.hostname === host);
  const ha = ok(await h.s.api('PUT', `/api/v1/hosts/${host}/owner`, { body: { env: 'prod' } }));
  assert.equal(ha.target, 'host');
  assert.equal(ha.env, 'prod');
  const ga = ok(await h.s.api('PUT', `/api/v1/gpus/${g0}/owner`, { body: { team: 'nlp' } }));
  assert.equal(ga.team, 'nlp');
  assert.equal(ga.effective_to, null);

  o = (await gpu(g0)).owner;
  assert.equal(o.team.value, 'nlp');
  assert.match(o.team.by, /^assignment:gpu:\d+$/);
  assert.deepEqual(o.env, { value: 'prod', by: `assignment:host:${hostDoc.id}` });
  assert.deepEqual(o.pool, { value: 'batch', by: `rule:${ruleHost.id}` });
  const o1 = (await gpu(g1)).owner;
  assert.deepEqual(o1.team, { value: 'vision', by: `rule:${ruleHost.id}` });
  assert.deepEqual(o1.env, { value: 'prod', by: `assignment:host:${hostDoc.id}` });

  // The list shows the same owner, and its team filter uses it.
  const l = ok(await h.s.api('GET', `/api/v1/gpus?host=${host}`));
  assert.deepEqual(l.items.find((x) => x.uuid === g0).owner, o);
  const byTeam = ok(await h.s.api('GET', `/api/v1/gpus?team=nlp&host=${host}`));
  assert.deepEqual(byTeam.items.map((x) => x.uuid), [g0]);
  const byEnv = ok(await h.s.api('GET', `/api/v1/gpus?env=prod&host=${host}`));
  assert.equal(byEnv.total, 2);

  // null clears a field: the next level decides again.
  ok(await h.s.api('PUT', `/api/v1/gpus/${g0}/owner`, { body: { team: null } }));
  o = (await gpu(g0)).owner;
  assert.deepEqual(o.team, { value: 'vision', by: `rule:${ruleHost.id}` });
});

test('unknown dimension values are refused naming the field; a rule needs a known kind', async () => {
  const [g] = await report(uniq('typo'), 1);
  assertError(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: 'visoin' } }), 400, { field: 'team' });
  assertError(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { env: 'staging' } }), 400, { field: 'env' });
  assertError(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { effective_from: 'yesterday' } }), 400, { field: 'effective_from' });
  assertError(await h.s.api('PUT', '/api/v1/gpus/GPU-nope/owner', { body: { team: 'nlp' } }), 404);
  assertError(await h.s.api('PUT', '/api/v1/hosts/no-such-host/owner', { body: { team: 'nlp' } }), 404);
  assertError(await h.s.api('POST', '/api/v1/ownership-rules',
    { body: { match: { kind: 'host_pattern', value: '*' }, set: { pool: 'nopool' } } }), 400, { field: 'set.pool' });
  assertError(await h.s.api('POST', '/api/v1/ownership-rules',
    { body: { match: { kind: 'moon_phase', value: '*' }, set: { team: 'nlp' } } }), 400, { field: 'match.kind' });
  assertError(await h.s.api('POST', '/api/v1/ownership-rules',
    { body: { match: { kind: 'node_label', value: '*' }, set: { team: 'nlp' } } }), 400, { field: 'match.key' });
  assertError(await h.s.api('POST', '/api/v1/ownership-rules',
    { body: { match: { kind: 'host_pattern', value: '*' }, set: {} } }), 400, { field: 'set' });
  // A cloud is a cluster's name or the cloud a cluster says it runs on.
  const r = await mkRule({ match: { kind: 'datacenter', value: 'nowhere-*' }, set: { cloud: 'aws' }, enabled: false });
  assert.equal(r.enabled, false);
  ok(await h.s.api('DELETE', `/api/v1/ownership-rules/${r.id}`), 204);
});

test('history: assignments at t1 and t2 resolve before, between and after; the past is not rewritten', async () => {
  const [g] = await report(uniq('hist'), 1);
  const t1 = now() - 10 * 86400, t2 = now() - 5 * 86400;
  ok(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: 'vision', env: 'dev', effective_from: iso(t1) } }));
  ok(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: 'search', effective_from: iso(t2) } }));
  const before = await ownerAt(g, t1 - 3600);
  assert.deepEqual(before.team, { value: 'legacy', by: `source:${pushSource.id}` });
  const between = await ownerAt(g, t1 + 3600);
  assert.equal(between.team.value, 'vision');
  assert.equal(between.env.value, 'dev');
  const after = await ownerAt(g, t2 + 1);
  assert.equal(after.team.value, 'search');
  assert.equal(after.env.value, 'dev', 'a field left out keeps what was in force');
  const hist = ok(await h.s.api('GET', `/api/v1/gpus/${g}/owner`));
  assert.equal(hist.items.length, 2);
  assert.equal(hist.items[0].team, 'search');
  assert.equal(hist.items[0].effective_from, iso(t2));
  assert.equal(hist.items[0].effective_to, null);
  assert.equal(hist.items[1].team, 'vision');
  assert.equal(hist.items[1].effective_from, iso(t1));
  assert.equal(hist.items[1].effective_to, iso(t2));
  assertError(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`,
    { body: { team: 'nlp', effective_from: iso(t1 + 60) } }), 409, { field: 'effective_from' });
  assert.equal(ok(await h.s.api('GET', `/api/v1/gpus/${g}/owner`)).items.length, 2);
  // Every change is audited with before and after.
  const audit = ok(await h.s.api('GET', '/api/v1/audit?entity=gpu')).items.filter((a) => a.action === 'owner_assign');
  const mine = audit.filter((a) => a.after && a.after.target === 'gpu' && a.after.team === 'search');
  assert.equal(mine.length, 1);
  assert.equal(mine[0].before.team, 'vision');
  assert.equal(mine[0].after.team, 'search');
});

test('a resource assignment reaches the GPUs of hosts linked to it', async () => {
  const dc = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: uniq('dc') } }), 201);
  const host = uniq('linked');
  const res = ok(await h.s.api('POST', '/api/v1/resources',
    { body: { datacenter_id: dc.id, kind: 'server', name: host, gpu_count: 2, gpu_model: 'H100' } }), 201);
  const [g] = await report(host, 2);
  assert.equal((await gpu(g)).resource_id, res.id, 'linked by host name');
  ok(await h.s.api('PUT', `/api/v1/resources/${res.id}/owner`, { body: { team: 'search', pool: 'batch' } }));
  const o = (await gpu(g)).owner;
  assert.deepEqual(o.team, { value: 'search', by: `assignment:resource:${res.id}` });
  const hist = ok(await h.s.api('GET', `/api/v1/resources/${res.id}/owner`));
  assert.equal(hist.items[0].team, 'search');
  assertError(await h.s.api('PUT', '/api/v1/resources/999999/owner', { body: { team: 'nlp' } }), 404);
});

test('editing a rule keeps the past: old version ends at the new effective time', async () => {
  const host = uniq('edit');
  const [g] = await report(host, 1);
  const t0 = now() - 20 * 86400, t3 = now() - 2 * 86400;
  const r = await mkRule({ match: { kind: 'host_pattern', value: host }, set: { team: 'nlp' }, effective_from: iso(t0), position: 0 });
  assert.equal(r.position, 0);
  assert.equal((await ownerAt(g, t0 + 60)).team.value, 'nlp');
  const u = ok(await h.s.api('PATCH', `/api/v1/ownership-rules/${r.id}`, { body: { set: { team: 'search' }, effective_from: iso(t3) } }));
  assert.equal(u.id, r.id);
  assert.notEqual(u.version, r.version);
  assert.deepEqual((await ownerAt(g, t0 + 60)).team, { value: 'nlp', by: `rule:${r.id}` });
  assert.deepEqual((await ownerAt(g, t3 + 60)).team, { value: 'search', by: `rule:${r.id}` });
  assert.equal((await gpu(g)).owner.team.value, 'search');
  const full = ok(await h.s.api('GET', `/api/v1/ownership-rules/${r.id}`));
  assert.equal(full.history.length, 2);
  assert.equal(full.history[1].effective_to, iso(t3));
  assert.equal(full.history[1].set.team, 'nlp');
  assertError(await h.s.api('PATCH', `/api/v1/ownership-rules/${r.id}`,
    { body: { enabled: false, effective_from: iso(t0) } }), 409, { field: 'effective_from' });
  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=ownership_rule&entity_id=${r.id}`)).items;
  assert.deepEqual(audit.map((a) => a.action).sort(), ['create', 'update']);
  // Disabled: the rule no longer decides from now on.
  ok(await h.s.api('PATCH', `/api/v1/ownership-rules/${r.id}`, { body: { enabled: false } }));
  assert.equal((await gpu(g)).owner.team.value, 'legacy');
  const list = ok(await h.s.api('GET', '/api/v1/ownership-rules'));
  assert.equal(list.items.find((x) => x.id === r.id).enabled, false);
  assert.equal(list.items[0].id, r.id, 'ordered by position');
});

test('deleting a dimension in use answers 409 naming what uses it', async () => {
  await mkDim('teams', 'doomed');
  const r = await mkRule({ match: { kind: 'source', value: 'no-such-source' }, set: { team: 'doomed' } });
  const [g] = await report(uniq('doom'), 1);
  const a = ok(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: 'doomed' } }));
  let e = assertError(await h.s.api('DELETE', '/api/v1/teams/doomed'), 409, { code: 'conflict' });
  assert.deepEqual(e.used_by.rules, [r.id]);
  assert.deepEqual(e.used_by.assignments.map((x) => x.id), [a.id]);
  ok(await h.s.api('DELETE', `/api/v1/ownership-rules/${r.id}`), 204);
  assertError(await h.s.api('GET', `/api/v1/ownership-rules/${r.id}`), 404);
  e = assertError(await h.s.api('DELETE', '/api/v1/teams/doomed'), 409);
  assert.deepEqual(e.used_by.rules, []);
  ok(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { body: { team: null } }));
  ok(await h.s.api('DELETE', '/api/v1/teams/doomed'), 204);
  assertError(await h.s.api('GET', '/api/v1/teams/doomed'), 404);
  const audit = ok(await h.s.api('GET', '/api/v1/audit?entity=team')).items;
  assert.ok(audit.some((x) => x.action === 'delete' && x.before.name === 'doomed'));
});

test('unowned GPUs: listed, counted in the GPU summary, gone once owned', async () => {
  // A source without a default team.
  const pt = await mkToken(h.s, 'pusher');
  const saved = push;
  push = pt.token;
  const host = uniq('orphan');
  const uuids = await report(host, 2);
  push = saved;
  let un = ok(await h.s.api('GET', '/api/v1/ownership/unowned?limit=1000'));
  for (const u of uuids) assert.ok(un.items.some((x) => x.uuid === u), `${u} unowned`);
  const before = un.total;
  const summary = ok(await h.s.api('GET', '/api/v1/gpus')).summary;
  assert.equal(summary.unowned, before);
  ok(await h.s.api('PUT', `/api/v1/hosts/${host}/owner`, { body: { team: 'vision' } }));
  un = ok(await h.s.api('GET', '/api/v1/ownership/unowned?limit=1000'));
  assert.equal(un.total, before - 2);
  assert.ok(!un.items.some((x) => uuids.includes(x.uuid)));
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus')).summary.unowned, before - 2);
});

test('dry run lists the GPUs a rule would match, writing nothing', async () => {
  const host = uniq('dry');
  const uuids = await report(host, 2);
  const rulesBefore = ok(await h.s.api('GET', '/api/v1/ownership-rules')).total;
  const d = ok(await h.s.api('POST', '/api/v1/ownership-rules/dry-run',
    { body: { match: { kind: 'host_pattern', value: host.slice(0, -1) + '?' }, set: { team: 'nlp' } } }));
  assert.equal(d.total, 2);
  assert.deepEqual(d.items.map((x) => x.uuid).sort(), [...uuids].sort());
  assert.equal(ok(await h.s.api('GET', '/api/v1/ownership-rules')).total, rulesBefore);
});

test('roles: a viewer reads ownership but writes none of it', async () => {
  const [g] = await report(uniq('roles'), 1);
  for (const p of ['/api/v1/teams', '/api/v1/environments', '/api/v1/pools', '/api/v1/clusters',
    '/api/v1/ownership-rules', '/api/v1/ownership/unowned', `/api/v1/gpus/${g}/owner`]) {
    assert.equal((await h.s.api('GET', p, { auth: viewer })).status, 200, p);
  }
  assertError(await h.s.api('POST', '/api/v1/teams', { auth: viewer, body: { name: 'v' } }), 403);
  assertError(await h.s.api('PATCH', '/api/v1/teams/vision', { auth: viewer, body: { display: 'x' } }), 403);
  assertError(await h.s.api('DELETE', '/api/v1/pools/batch', { auth: viewer }), 403);
  assertError(await h.s.api('PUT', `/api/v1/gpus/${g}/owner`, { auth: viewer, body: { team: 'nlp' } }), 403);
  assertError(await h.s.api('POST', '/api/v1/ownership-rules',
    { auth: viewer, body: { match: { kind: 'host_pattern', value: '*' }, set: { team: 'nlp' } } }), 403);
  assertError(await h.s.api('GET', '/api/v1/teams', { auth: push }), 403);
});

test('CSV import: assignments all or none, with a dry run', async () => {
  const host = uniq('csvhost');
  const [g0, g1] = await report(host, 2);
  const csv = (text) => h.s.api('POST', '/api/v1/ownership/import', { body: text, contentType: 'text/csv' });
  const csvDry = (text) => h.s.api('POST', '/api/v1/ownership/import?dry_run=true', { body: text, contentType: 'text/csv' });
  const good = `gpu_uuid,host,team,env,effective_from\n${g0},,nlp,dev,\n,${host},search,,\n`;
  const dry = ok(await csvDry(good));
  assert.equal(dry.dry_run, true);
  assert.equal(dry.would_import, 2);
  assert.equal(ok(await h.s.api('GET', `/api/v1/gpus/${g0}/owner`)).items.length, 0, 'a dry run writes nothing');
  // An unknown team: 422 naming the line and column; nothing written.
  const badRes = await csv(`gpu_uuid,team\n${g0},nlp\n${g1},nlpp\n`);
  assertError(badRes, 422);
  assert.ok(badRes.json.errors.some((e) => e.line === 3 && e.column === 'team'), badRes.text);
  assert.equal(ok(await h.s.api('GET', `/api/v1/gpus/${g0}/owner`)).items.length, 0, 'all or none');
  assertError(await csv(`gpu_uuid,host,team\n${g0},${host},nlp\n`), 422);
  assertError(await csv(`gpu_uuid,colour\n${g0},red\n`), 422);
  assertError(await csv(`gpu_uuid,team\nGPU-missing,nlp\n`), 409);
  const done = ok(await csv(good), 201);
  assert.equal(done.imported, 2);
  const o0 = (await gpu(g0)).owner, o1 = (await gpu(g1)).owner;
  assert.equal(o0.team.value, 'nlp');
  assert.match(o0.team.by, /^assignment:gpu:/);
  assert.equal(o0.env.value, 'dev');
  assert.equal(o1.team.value, 'search');
  assert.match(o1.team.by, /^assignment:host:/);
});
