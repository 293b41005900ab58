// Lists and writes of a token confined to data centers: every list of
// things of data centers (sync conflicts and pushes, room audits,
// Kubernetes nodes and pods, Slurm jobs, cloud instances, sources, the
// audit log, webhook deliveries, unowned GPUs, asset, resource, GPU and
// host lists, a label sheet of given tags) holds only what is in the
// token's data centers; a token
// of two data centers lists both without naming one, with the paging of
// an unconfined token; owner changes, opening and closing tickets and
// resolving a sync conflict outside the scope answer 404 exactly as for a
// missing thing and change nothing; lifecycle and ownership rules and
// owner imports are refused (403), and an ownership rule's dry run is
// narrowed.
// Pull-found rows (nodes, pods, jobs, instances, conflicts, pushes) are
// written straight into the database, tied to the hosts, GPUs and assets
// the test made.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, uniq, listAll, dbQuery } from './helpers.mjs';

const hex = (n, w) => n.toString(16).padStart(w, '0');
const now = () => Math.floor(Date.now() / 1000);
const sorted = (xs) => [...xs].sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));

describe('token data-center scope: lists and writes', () => {
  const h = useServer();
  let dcA, dcB, dcC, viewerA, editorA, both, hook, netbox;
  const A = {}, B = {};
  let seq = 0;
  const q = (sql) => dbQuery(h.s.db, sql);
  const one = async (sql) => (await q(sql)).trim();

  /** One data center's things: a pusher (its own source) reporting a host
   * with a GPU, linked to a server; an asset; a ticket on the asset; a
   * room audit; and, written into the database, a sync conflict and push
   * on the asset, a Kubernetes node and pod on the host, a Slurm job that
   * held the GPU and a cloud instance on the host. */
  async function populate(side, dc, letter) {
    side.pusher = await mkToken(h.s, 'pusher');
    side.hostname = uniq(`h${letter}`);
    seq += 1;
    side.uuid = `GPU-${hex(process.pid, 8)}-${hex(seq, 4)}-4000-8000-${hex(seq * 7919, 12)}`;
    ok(await h.s.api('POST', '/api/v1/ingest', {
      auth: side.pusher.token,
      body: {
        batch_id: `lists-${process.pid}-${seq}`, host: { hostname: side.hostname },
        gpus: [{ uuid: side.uuid, index: 0, name: 'NVIDIA H100 80GB HBM3', memory_total_mib: 81920 }],
        samples: [{ time: now() - 5, gpu: side.uuid, util_avg: 10, util_max: 20 }],
      },
    }), 201);
    side.res = await mkRes(h.s, dc.id);
    const host = ok(await h.s.api('GET', `/api/v1/hosts?q=${side.hostname}`)).items.find((x) => x.hostname === side.hostname);
    ok(await h.s.api('PUT', `/api/v1/hosts/${host.id}/link`, { body: { resource_id: side.res.id } }));
    side.hostId = host.id;
    side.source = ok(await h.s.api('GET', `/api/v1/gpus/${side.uuid}`)).source;
    side.sourceId = Number(await one(`SELECT id FROM sources WHERE name = '${side.source}'`));
    side.gpuId = Number(await one(`SELECT id FROM gpus WHERE uuid = '${side.uuid}'`));
    side.tag = uniq(`L${letter}`);
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: side.tag, kind: 'server', location: { datacenter: dc.name, room: 'r1' } } }), 201);
    side.assetId = Number(await one(`SELECT id FROM assets WHERE tag = '${side.tag}'`));
    side.ticket = ok(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: side.tag, title: `fans ${letter}` } }), 201);
    side.audit = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dc.name, room: 'r1' } } }), 201);
    const t = now();
    side.node = `node-${side.hostname}`;
    side.pod = `pod-${side.hostname}`;
    side.job = `${70000 + seq}`;
    side.instance = `i-${side.hostname}`;
    await q(`INSERT INTO sync_conflicts (asset_id, source_id, field, ours, theirs, detected_at) VALUES (${side.assetId}, ${netbox.id}, 'serial', 'a', 'b', ${t});
INSERT INTO sync_pushes (asset_id, source_id, reason, state, attempts, next_at, created_at) VALUES (${side.assetId}, ${netbox.id}, 'changed', 'failed', 1, ${t + 86400}, ${t});
INSERT INTO k8s_nodes (source_id, name, cluster, hostname, first_seen_at, last_seen_at) VALUES (${side.sourceId}, '${side.node}', 'k', '${side.hostname}', ${t}, ${t});
INSERT INTO k8s_pods (source_id, uid, namespace, name, node, gpus, first_seen_at, last_seen_at) VALUES (${side.sourceId}, 'uid-${side.pod}', 'ml', '${side.pod}', '${side.node}', 1, ${t}, ${t});
INSERT INTO slurm_jobs (source_id, cluster, job_id_raw, submit_at, job_id, started_at, first_seen_at, last_seen_at) VALUES (${side.sourceId}, 'hpc', ${side.job}, ${t - 60}, '${side.job}', ${t - 30}, ${t}, ${t});
INSERT INTO slurm_job_gpus (job_id, gpu_id, node, idx_known) SELECT id, ${side.gpuId}, '${side.hostname}', 1 FROM slurm_jobs WHERE job_id = '${side.job}';
INSERT INTO cloud_instances (source_id, provider, scope, instance_id, state, host_id, first_seen, last_seen) VALUES (${side.sourceId}, 'aws', 'us-east-1', '${side.instance}', 'running', ${side.hostId}, ${t}, ${t});`);
    side.conflictId = Number(await one(`SELECT id FROM sync_conflicts WHERE asset_id = ${side.assetId}`));
  }

  test('setup: three data centers, things in A and B, tokens of A and of A and B', async () => {
    dcA = await mkDc(h.s);
    dcB = await mkDc(h.s);
    dcC = await mkDc(h.s);
    // deliveries of every opened ticket, to a port nothing listens on
    // the asset manager the conflicts and pushes are with (never pulled)
    netbox = ok(await h.s.api('POST', '/api/v1/sources', { body: { name: uniq('nb'), kind: 'netbox', enabled: false, config: { url: 'http://127.0.0.1:9', token: 'x' } } }), 201);
    for (const name of ['ours', 'intruders']) ok(await h.s.api('POST', '/api/v1/teams', { body: { name } }), 201);
    hook = ok(await h.s.api('POST', '/api/v1/webhooks', { body: { name: uniq('hook'), url: 'http://127.0.0.1:9/', format: 'generic', events: ['ticket.opened'] } }), 201);
    await populate(A, dcA, 'A');
    await populate(B, dcB, 'B');
    viewerA = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('va'), role: 'viewer', datacenters: [dcA.id] } }), 201);
    editorA = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('ea'), role: 'editor', datacenters: [dcA.id] } }), 201);
    both = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('vab'), role: 'viewer', datacenters: [dcA.id, dcB.id] } }), 201);
  });

  /** Each list, and how its items name the test's things. */
  const lists = () => [
    ['/api/v1/sync-conflicts?state=all', (x) => x.asset, 'tag'],
    ['/api/v1/sync-pushes', (x) => x.asset, 'tag'],
    ['/api/v1/audits', (x) => x.id, (s) => s.audit.id],
    ['/api/v1/kubernetes/nodes', (x) => x.name, 'node'],
    ['/api/v1/kubernetes/pods', (x) => x.name, 'pod'],
    ['/api/v1/slurm/jobs', (x) => x.job_id, 'job'],
    ['/api/v1/cloud/instances', (x) => x.instance_id, 'instance'],
    ['/api/v1/sources', (x) => x.name, 'source'],
    [`/api/v1/webhooks/${hook.id}/deliveries`, (x) => x.ticket_id, (s) => s.ticket.id],
    ['/api/v1/tickets', (x) => x.id, (s) => s.ticket.id],
    ['/api/v1/ownership/unowned', (x) => x.uuid, 'uuid'],
  ];
  const key = (k, side) => (typeof k === 'function' ? k(side) : side[k]);
  async function names(path, pick, auth) {
    const sep = path.includes('?') ? '&' : '?';
    const paged = !path.includes('/nodes') && !path.endsWith('/sources');
    const r = await listAll(h.s, paged ? `${path}${sep}limit=1` : path, auth ? { auth } : {});
    assert.equal(r.items.length, r.total, `${path}: total`);
    return r.items.map(pick);
  }

  test('a token of A lists only A; the admin lists both', async () => {
    for (const [path, pick, k] of lists()) {
      const mine = await names(path, pick, viewerA.token);
      assert.deepEqual(mine, [key(k, A)], `${path} for a token of A`);
      const all = await names(path, pick);
      assert.ok(all.includes(key(k, A)) && all.includes(key(k, B)), `${path} for the admin`);
    }
  });

  test('a token of A and B lists both without datacenter, in the admin order and paging', async () => {
    for (const [path, pick, k] of lists()) {
      const ab = await names(path, pick, both.token);
      const all = await names(path, pick);
      const expect = all.filter((v) => v === key(k, A) || v === key(k, B));
      assert.deepEqual(ab, expect, `${path} for a token of A and B`);
      assert.equal(ab.length, 2, path);
    }
    for (const path of ['/api/v1/assets', '/api/v1/resources', '/api/v1/gpus', '/api/v1/hosts']) {
      const ab = await names(path, (x) => x.id ?? x.uuid, both.token);
      const allItems = (await listAll(h.s, `${path}?limit=1`)).items;
      const inAB = allItems.filter((x) => [dcA.id, dcB.id].includes(x.datacenter_id)).map((x) => x.id ?? x.uuid);
      assert.deepEqual(ab, inAB, path);
      assert.equal(ab.length, 2, path);
      const onlyB = await names(`${path}?datacenter=${dcB.id}`, (x) => x.datacenter_id, both.token);
      assert.deepEqual(onlyB, [dcB.id], path);
      // a data center outside the scope answers as it does for a token of one
      assertError(await h.s.api('GET', `${path}?datacenter=${dcC.id}`, { auth: both.token }), 403, { code: 'forbidden', field: 'datacenter' });
      assertError(await h.s.api('GET', `${path}?datacenter=${dcC.id}`, { auth: viewerA.token }), 403, { code: 'forbidden', field: 'datacenter' });
    }
  });

  test('the audit log of a token of A holds only entries about A', async () => {
    const all = (await listAll(h.s, '/api/v1/audit?limit=50')).items;
    const mine = (await listAll(h.s, '/api/v1/audit?limit=50', { auth: viewerA.token })).items;
    const about = (e, side, dc) => (e.entity === 'resource' && e.entity_id === side.res.id) ||
      (e.entity === 'datacenter' && e.entity_id === dc.id) || (e.entity === 'ticket' && e.entity_id === side.ticket.id) ||
      (e.entity === 'host' && e.entity_id === side.hostId) || (e.entity === 'gpu' && e.entity_id === side.gpuId);
    assert.deepEqual(mine.map((e) => e.id), all.filter((e) => about(e, A, dcA)).map((e) => e.id));
    // its resource's creation, the data center's creation, the ticket's opening
    assert.ok(mine.some((e) => e.entity === 'resource' && e.action === 'create'));
    assert.ok(mine.some((e) => e.entity === 'datacenter'));
    assert.ok(mine.some((e) => e.entity === 'ticket'));
    assert.ok(mine.some((e) => e.entity === 'host' && e.action === 'link'));
    assert.ok(all.some((e) => about(e, B, dcB)) && all.some((e) => e.entity === 'token'));
    const ab = (await listAll(h.s, '/api/v1/audit?limit=50', { auth: both.token })).items.map((e) => e.id);
    assert.deepEqual(ab, all.filter((e) => about(e, A, dcA) || about(e, B, dcB)).map((e) => e.id));
  });

  test("a source of B, and a label sheet naming B's asset, read as missing", async () => {
    const src = assertError(await h.s.api('GET', `/api/v1/sources/${B.sourceId}`, { auth: viewerA.token }), 404);
    assert.deepEqual(src, assertError(await h.s.api('GET', '/api/v1/sources/99999999', { auth: viewerA.token }), 404));
    ok(await h.s.api('GET', `/api/v1/sources/${A.sourceId}`, { auth: viewerA.token }));
    ok(await h.s.api('GET', `/api/v1/sources/${B.sourceId}`, { auth: both.token }));
    const sheet = await h.s.api('GET', `/api/v1/assets/labels.svg?paper=a4&tags=${A.tag}`, { auth: viewerA.token });
    assert.equal(sheet.status, 200, sheet.text);
    assert.ok(sheet.text.includes(A.tag));
    const out = assertError(await h.s.api('GET', `/api/v1/assets/labels.svg?paper=a4&tags=${A.tag},${B.tag}`, { auth: viewerA.token }), 404, { field: 'tags' });
    const miss = assertError(await h.s.api('GET', `/api/v1/assets/labels.svg?paper=a4&tags=${A.tag},NO-SUCH`, { auth: viewerA.token }), 404, { field: 'tags' });
    assert.equal(out.message.replace(B.tag, 'X'), miss.message.replace('NO-SUCH', 'X'));
    assert.equal((await h.s.api('GET', `/api/v1/assets/labels.svg?paper=a4&tags=${A.tag},${B.tag}`, { auth: both.token })).status, 200);
  });

  test("owner changes of B's GPU, host and resource are 404 as for missing ones, and change nothing", async () => {
    const targets = (side) => [`/api/v1/gpus/${side.uuid}/owner`, `/api/v1/hosts/${side.hostname}/owner`, `/api/v1/resources/${side.res.id}/owner`];
    const missing = ['/api/v1/gpus/GPU-00000000-0000-0000-0000-000000000000/owner', '/api/v1/hosts/no-such-host/owner', '/api/v1/resources/99999999/owner'];
    const tb = targets(B);
    for (let i = 0; i < tb.length; i++) {
      const r = await h.s.api('PUT', tb[i], { body: { team: 'intruders' }, auth: editorA.token });
      const m = await h.s.api('PUT', missing[i], { body: { team: 'intruders' }, auth: editorA.token });
      assert.equal(r.status, 404, `${tb[i]}: ${r.text}`);
      assert.deepEqual(r.json, m.json, tb[i]);
      assert.deepEqual(ok(await h.s.api('GET', tb[i])).items, [], `${tb[i]} unchanged`);
    }
    for (const p of targets(A)) {
      ok(await h.s.api('PUT', p, { body: { team: 'ours' }, auth: editorA.token }));
      assert.equal(ok(await h.s.api('GET', p)).items[0].team, 'ours', p);
    }
  });

  test("opening or closing a ticket of B is 404 as for a missing asset or ticket, and changes nothing", async () => {
    const before = (await listAll(h.s, '/api/v1/tickets')).total;
    const r = assertError(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: B.tag, title: 'x' }, auth: editorA.token }), 404);
    assert.deepEqual(r, assertError(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: 'NO-SUCH-TAG', title: 'x' }, auth: editorA.token }), 404));
    assertError(await h.s.api('POST', '/api/v1/tickets', { body: { gpu_uuid: B.uuid, title: 'x' }, auth: editorA.token }), 404);
    assertError(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: A.tag, gpu_uuid: B.uuid, title: 'x' }, auth: editorA.token }), 404);
    assert.equal((await listAll(h.s, '/api/v1/tickets')).total, before);
    const c = assertError(await h.s.api('POST', `/api/v1/tickets/${B.ticket.id}/close`, { auth: editorA.token }), 404);
    assert.deepEqual(c, assertError(await h.s.api('POST', '/api/v1/tickets/99999999/close', { auth: editorA.token }), 404));
    assert.equal(ok(await h.s.api('GET', `/api/v1/tickets/${B.ticket.id}`)).state, 'open');
    const mine = ok(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: A.tag, gpu_uuid: A.uuid, title: 'ours' }, auth: editorA.token }), 201);
    assert.equal(ok(await h.s.api('POST', `/api/v1/tickets/${mine.id}/close`, { auth: editorA.token })).state, 'closed');
  });

  test("resolving B's sync conflict is 404 and leaves it open", async () => {
    const r = assertError(await h.s.api('POST', `/api/v1/sync-conflicts/${B.conflictId}/resolve`, { body: { keep: 'ours' }, auth: editorA.token }), 404);
    assert.deepEqual(r, assertError(await h.s.api('POST', '/api/v1/sync-conflicts/99999999/resolve', { body: { keep: 'ours' }, auth: editorA.token }), 404));
    assert.equal(await one(`SELECT COUNT(*) FROM sync_conflicts WHERE id = ${B.conflictId} AND resolved_at IS NULL`), '1');
  });

  test("an ownership rule's dry run matches only A's GPUs for a token of A; ownership rules and owner imports are refused to it", async () => {
    const rule = { match: { kind: 'host_pattern', value: 'h?-*' }, set: { team: 'ours' } };
    const run = async (auth) => ok(await h.s.api('POST', '/api/v1/ownership-rules/dry-run', { body: rule, ...(auth ? { auth } : {}) }));
    const mine = await run(viewerA.token);
    assert.deepEqual(mine.items.map((x) => x.uuid), [A.uuid]);
    assert.equal(mine.total, 1);
    assert.deepEqual(sorted((await run(both.token)).items.map((x) => x.uuid)), sorted([A.uuid, B.uuid]));
    assert.equal((await run()).total, 2);
    const before = ok(await h.s.api('GET', '/api/v1/ownership-rules')).total;
    assertError(await h.s.api('POST', '/api/v1/ownership-rules', { body: { name: uniq('own'), ...rule }, auth: editorA.token }), 403, { code: 'forbidden', field: 'datacenter' });
    assert.equal(ok(await h.s.api('GET', '/api/v1/ownership-rules')).total, before);
    assertError(await h.s.api('POST', '/api/v1/ownership/import', { body: `gpu_uuid,team\n${B.uuid},intruders\n`, contentType: 'text/csv', auth: editorA.token }), 403, { code: 'forbidden' });
    assert.deepEqual(ok(await h.s.api('GET', `/api/v1/gpus/${B.uuid}/owner`)).items, []);
  });

  test('lifecycle rules are refused to a confined token and answer an unconfined one', async () => {
    const rule = { name: uniq('rule'), condition: { attr: 'stage', '=': 'spare' }, actions: [{ type: 'webhook' }] };
    const before = (await listAll(h.s, '/api/v1/lifecycle-rules')).total;
    assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', { body: rule, auth: editorA.token }), 403, { code: 'forbidden', field: 'datacenter' });
    assertError(await h.s.api('POST', '/api/v1/lifecycle-rules/dry-run', { body: rule, auth: editorA.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('POST', '/api/v1/lifecycle-rules/evaluate', { body: {}, auth: editorA.token }), 403, { code: 'forbidden' });
    assert.equal((await listAll(h.s, '/api/v1/lifecycle-rules')).total, before);
    const made = await h.s.api('POST', '/api/v1/lifecycle-rules', { body: rule });
    assert.equal(made.status, 201, made.text);
    for (const p of [`/api/v1/lifecycle-rules/${made.json.id}/dry-run`, `/api/v1/lifecycle-rules/${made.json.id}/run`]) {
      assertError(await h.s.api('POST', p, { auth: editorA.token }), 403, { code: 'forbidden' });
    }
    assertError(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${made.json.id}`, { body: { enabled: false }, auth: editorA.token }), 403);
    assertError(await h.s.api('DELETE', `/api/v1/lifecycle-rules/${made.json.id}`, { auth: editorA.token }), 403);
    ok(await h.s.api('GET', `/api/v1/lifecycle-rules/${made.json.id}`, { auth: editorA.token }));
    ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${made.json.id}/dry-run`));
  });
});
