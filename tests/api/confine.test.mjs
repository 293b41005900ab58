// Sources stay in their lane: a host and its GPUs belong to the source that
// reports them (first reporter, or higher precedence); another source's
// differing identity is a conflict, never an overwrite; it cannot mark the
// owner's GPUs missing nor replace its samples; pusher tokens confined to
// host patterns or a cluster are refused elsewhere; a source's GPU count is
// the list its link opens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, runCli, dbQuery } from './helpers.mjs';

const h = useServer();
const now = () => Math.floor(Date.now() / 1000);

async function pusher(source, extra = {}) {
  const t = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + source, role: 'pusher', source, ...extra } }), 201);
  return t.token;
}

const gpu = (uuid, serial, idx = 0, model = 'NVIDIA H100 80GB HBM3') =>
  ({ uuid, serial, index: idx, name: model, pci_bus_id: `0000:${(0x18 + idx).toString(16)}:00.0` });

function batch(id, hostname, gpus, { samples, host = {} } = {}) {
  return { batch_id: id, host: { hostname, ...host }, gpus,
    samples: samples ?? gpus.map((g) => ({ time: now(), gpu: g.uuid, util_avg: 90 })) };
}

async function push(token, body, status = 201) {
  const r = await h.s.api('POST', '/api/v1/ingest', { body, auth: token });
  assert.equal(r.status, status, r.text);
  return r.json;
}

const getGpu = async (u) => ok(await h.s.api('GET', '/api/v1/gpus/' + u));

test('another source cannot rewrite, hide or out-sample a GPU it does not own', async () => {
  const owner = await pusher('cf-owner');
  const intruder = await pusher('cf-intruder');
  const a = 'GPU-cf000000-0000-4000-8000-000000000001';
  const b = 'GPU-cf000000-0000-4000-8000-000000000002';
  const t = now() - 10;
  await push(owner, batch('o-1', 'fra1-gpu-001', [gpu(a, 'SER-A', 0), gpu(b, 'SER-B', 1)],
    { samples: [{ time: t, gpu: a, util_avg: 90 }, { time: t, gpu: b, util_avg: 80 }] }));

  // The intruder reports the owner's UUIDs on its own host, forged.
  const forged = (id) => batch(id, 'evil-1', [gpu(a, 'FORGED', 0, 'Forged GPU 9000')],
    { samples: [{ time: t, gpu: a, util_avg: 0 }, { time: now() + 200, gpu: a, util_avg: 1 }] });
  await push(intruder, forged('i-1'));
  const g = await getGpu(a);
  assert.equal(g.host, 'fra1-gpu-001');
  assert.equal(g.serial, 'SER-A');
  assert.equal(g.model, 'NVIDIA H100 80GB HBM3');
  assert.equal(g.source, 'cf-owner');
  const prov = Object.fromEntries(g.provenance.map((p) => [p.field, p]));
  assert.equal(prov.serial.source, 'cf-owner');
  assert.equal(prov.serial.value, 'SER-A');

  // Recorded as conflicts, one per field, shown on the GPU.
  const byField = Object.fromEntries(g.conflicts.map((c) => [c.field, c]));
  assert.deepEqual(Object.keys(byField).sort(), ['host', 'model', 'serial']);
  assert.deepEqual([byField.serial.source, byField.serial.theirs, byField.serial.ours],
    ['cf-intruder', 'FORGED', 'SER-A']);
  assert.deepEqual([byField.host.theirs, byField.host.ours], ['evil-1', 'fra1-gpu-001']);
  const conflicts = g.events.filter((e) => e.kind === 'conflict');
  assert.equal(conflicts.length, 3);
  const ev = conflicts.find((e) => e.detail.field === 'model');
  assert.deepEqual(ev.detail, { source: 'cf-intruder', field: 'model', theirs: 'Forged GPU 9000',
    ours: 'NVIDIA H100 80GB HBM3' });
  assert.equal(ev.source, 'cf-intruder');
  // The same disagreement again is not a new event.
  await push(intruder, forged('i-2'));
  assert.equal((await getGpu(a)).events.filter((e) => e.kind === 'conflict').length, 3);

  // Its samples are kept beside the owner's, never in their place.
  assert.equal(g.util_pct, 90);
  assert.equal(g.reading_source, 'cf-owner');
  const rows = await dbQuery(h.s.db, `SELECT s.name, x.util_avg FROM gpu_samples x JOIN gpus g ON g.id = x.gpu_id
    JOIN sources s ON s.id = x.source_id WHERE g.uuid = '${a}' AND x.ts = ${t} ORDER BY s.name`);
  assert.deepEqual(rows.trim().split('\n').map((l) => l.split('|')).map(([n, v]) => [n, Number(v)]),
    [['cf-intruder', 0], ['cf-owner', 90]]);
  // A sample "from the future" does not pre-empt the owner's next one.
  await push(owner, batch('o-2', 'fra1-gpu-001', [gpu(a, 'SER-A', 0), gpu(b, 'SER-B', 1)],
    { samples: [{ time: now(), gpu: a, util_avg: 70 }, { time: now(), gpu: b, util_avg: 60 }] }));
  assert.equal((await getGpu(a)).util_pct, 70);

  // Reporting the owner's host without its GPUs does not make them missing.
  await push(intruder, batch('i-3', 'fra1-gpu-001', [gpu('GPU-cf000000-0000-4000-8000-0000000000ff', 'MINE', 5)]));
  for (const u of [a, b]) {
    const x = await getGpu(u);
    assert.equal(x.missing_since, null, u);
    assert.notEqual(x.state, 'missing');
    assert.ok(!x.events.some((e) => e.kind === 'missing_from_host'), JSON.stringify(x.events));
  }
  // The owner's own report still does.
  await push(owner, batch('o-3', 'fra1-gpu-001', [gpu(a, 'SER-A', 0)]));
  assert.equal((await getGpu(b)).state, 'missing');
  assert.match((await getGpu(b)).missing_since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
});

test('a higher precedence moves ownership at the next report', async () => {
  const first = await pusher('pr-first');
  const second = await pusher('pr-second');
  const u = 'GPU-cf000000-0000-4000-8000-000000000010';
  await push(first, batch('p-1', 'ams1-gpu-001', [gpu(u, 'P-1', 0)]));
  await push(second, batch('p-2', 'ams1-gpu-002', [gpu(u, 'P-2', 0)]));
  assert.equal((await getGpu(u)).serial, 'P-1');

  const sources = ok(await h.s.api('GET', '/api/v1/sources')).items;
  const sid = sources.find((x) => x.name === 'pr-second').id;
  assert.equal(sources.find((x) => x.name === 'pr-second').precedence, 0);
  assertError(await h.s.api('PATCH', `/api/v1/sources/${sid}`, { body: { precedence: 'high' } }), 400,
    { field: 'precedence' });
  const up = ok(await h.s.api('PATCH', `/api/v1/sources/${sid}`, { body: { precedence: 5 } }));
  assert.equal(up.precedence, 5);

  await push(second, batch('p-3', 'ams1-gpu-002', [gpu(u, 'P-2', 0)]));
  const g = await getGpu(u);
  assert.equal(g.source, 'pr-second');
  assert.equal(g.serial, 'P-2');
  assert.equal(g.host, 'ams1-gpu-002');
  assert.deepEqual(g.conflicts, [], 'what the new owner disagreed on is now its own');
  const moved = g.events.find((e) => e.kind === 'owner_changed');
  assert.deepEqual(moved.detail, { from: 'pr-first', to: 'pr-second' });
  // The old owner is now the one whose differing report is a conflict.
  await push(first, batch('p-4', 'ams1-gpu-001', [gpu(u, 'P-1', 0)]));
  const after = await getGpu(u);
  assert.equal(after.serial, 'P-2');
  assert.ok(after.conflicts.some((c) => c.source === 'pr-first' && c.field === 'serial'));
});

test('a pusher token confined to host patterns is refused elsewhere, naming the host', async () => {
  const tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'fra-agents', role: 'pusher', source: 'hp-src', hosts: 'fra1-*,ams1-*' } }), 201);
  assert.equal(tok.hosts, 'fra1-*,ams1-*');
  const e = assertError(await h.s.api('POST', '/api/v1/ingest',
    { body: batch('h-1', 'lon1-gpu-001', [gpu('GPU-cf000000-0000-4000-8000-000000000020', 'H-1')]), auth: tok.token }),
  403, { code: 'forbidden', field: 'host.hostname' });
  assert.match(e.message, /lon1-gpu-001/);
  assert.equal((await h.s.api('GET', '/api/v1/gpus/GPU-cf000000-0000-4000-8000-000000000020')).status, 404);
  await push(tok.token, batch('h-2', 'FRA1-gpu-042', [gpu('GPU-cf000000-0000-4000-8000-000000000021', 'H-2')]));
  await push(tok.token, batch('h-3', 'ams1-gpu-042', [gpu('GPU-cf000000-0000-4000-8000-000000000022', 'H-3')]));

  // An array of patterns is the same; nonsense patterns and non-pushers are refused.
  const arr = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'arr', role: 'pusher', source: 'hp-arr', hosts: ['fra1-*', 'ams1-gpu-00?'] } }), 201);
  assert.equal(arr.hosts, 'fra1-*,ams1-gpu-00?');
  assertError(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'bad', role: 'pusher', source: 'hp-bad', hosts: 'fra1-*;rm -rf' } }), 400, { field: 'hosts' });
  assertError(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'v', role: 'viewer', hosts: 'fra1-*' } }), 400, { field: 'hosts' });

  // The command line confines the same way.
  const cli = await runCli(['token', 'create', '--db', h.s.db, '--role', 'pusher', '--name', 'cli-fra',
    '--source', 'hp-cli', '--hosts', 'fra1-*']);
  assert.equal(cli.code, 0, cli.stderr);
  const secret = cli.stdout.trim();
  const r = await h.s.api('POST', '/api/v1/ingest',
    { body: batch('h-4', 'par1-gpu-001', [gpu('GPU-cf000000-0000-4000-8000-000000000023', 'H-4')]), auth: secret });
  assertError(r, 403, { field: 'host.hostname' });
  assert.match(r.json.error.message, /par1-gpu-001/);
  const badCli = await runCli(['token', 'create', '--db', h.s.db, '--role', 'viewer', '--name', 'x', '--hosts', 'a*']);
  assert.equal(badCli.code, 2);
});

test('a pusher token confined to a cluster reports only hosts of that cluster', async () => {
  const tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'prod-agents', role: 'pusher', source: 'cl-src', limit_cluster: 'prod' } }), 201);
  const u = (i) => `GPU-cf000000-0000-4000-8000-00000000003${i}`;
  const e = assertError(await h.s.api('POST', '/api/v1/ingest',
    { body: batch('c-1', 'dev-node-1', [gpu(u(1), 'C-1')], { host: { cluster: 'dev' } }), auth: tok.token }),
  403, { field: 'host.cluster' });
  assert.match(e.message, /dev-node-1/);
  await push(tok.token, batch('c-2', 'prod-node-1', [gpu(u(2), 'C-2')], { host: { cluster: 'prod' } }));
  // A host another source put in another cluster is outside, even unnamed.
  const other = await pusher('cl-other');
  await push(other, batch('c-3', 'dev-node-2', [gpu(u(3), 'C-3')], { host: { cluster: 'dev' } }));
  assertError(await h.s.api('POST', '/api/v1/ingest',
    { body: batch('c-4', 'dev-node-2', [gpu(u(4), 'C-4')]), auth: tok.token }), 403, { field: 'host.cluster' });
});

test("a source's GPU count is the list its link opens", async () => {
  const sources = ok(await h.s.api('GET', '/api/v1/sources')).items;
  assert.ok(sources.length >= 4);
  for (const src of sources) {
    const list = ok(await h.s.api('GET', `/api/v1/gpus?source=${src.id}&limit=1`));
    assert.equal(src.gpus_reported, list.total, src.name);
  }
  // The intruder reported three GPUs but owns only the one it created.
  const intruder = sources.find((x) => x.name === 'cf-intruder');
  assert.equal(intruder.gpus_reported, 1);
  const owner = sources.find((x) => x.name === 'cf-owner');
  assert.equal(owner.gpus_reported, 2, 'missing GPUs are still its own, and listed');
});
