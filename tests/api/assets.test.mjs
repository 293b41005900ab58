// Hardware assets through the API: create, read, change, list with filters
// and paging, roles, the lifecycle (409 naming the allowed stages, the
// admin's override), the events that record who, when and why, the
// compliance export, discovery matching, energy per asset, and
// `gpuinv audit verify` finding a row altered in the database.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkToken, listAll, uniq, dbQuery, runCli, isPg, parseCsv } from './helpers.mjs';

describe('assets', () => {
  const h = useServer();
  const post = (body, auth) => h.s.api('POST', '/api/v1/assets', { body, auth });
  const get = (tag, q = '') => h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tag)}${q}`);
  const stage = (tag, body, auth) => h.s.api('POST', `/api/v1/assets/${encodeURIComponent(tag)}/stage`, { body, auth });
  let dc;
  let dc2;

  test('setup', async () => {
    dc = await mkDc(h.s);
    dc2 = await mkDc(h.s);
  });

  test('an asset is created with its fields and reads back the same', async () => {
    const tag = uniq('SRV');
    const a = ok(await post({
      tag, kind: 'server', serial: 'SN-' + tag, vendor: 'Dell', model: 'R760xa',
      location: { datacenter: dc.name, room: 'hall-1', rack: 'R07', u: 12 },
      purchase_date: '2024-03-01', purchase_cost: { amount: '25000.00', currency: 'USD' },
      supplier: 'Acme', order_number: 'PO-77', warranty_end: '2027-03-01', lease_end: '2028-01-01',
      depreciation_years: 5, salvage: '1000', custom: { owner: 'infra', cores: 96 },
    }), 201);
    assert.equal(a.tag, tag);
    assert.equal(a.kind, 'server');
    assert.equal(a.stage, 'active');
    assert.equal(a.source, 'api');
    assert.equal(a.datacenter_id, dc.id);
    assert.deepEqual(a.location, { datacenter: dc.name, room: 'hall-1', rack: 'R07', u: 12, storage: null });
    assert.deepEqual(a.purchase_cost, { amount: '25000.00', currency: 'USD' });
    assert.equal(a.purchase_cost_micros, 25000000000);
    assert.deepEqual(a.custom, { owner: 'infra', cores: 96 });
    assert.equal(a.warranty.end, '2027-03-01');
    assert.ok(['in_warranty', 'expiring', 'expired'].includes(a.warranty.status));
    assert.equal(typeof a.book_value.amount, 'string');
    assert.ok(Number(a.book_value.amount) <= 25000 && Number(a.book_value.amount) >= 1000);
    const back = ok(await get(tag));
    assert.deepEqual(back.children, []);
    delete back.children;
    assert.deepEqual(back, a);
  });

  test('a tag is generated when none is given; validation names the field', async () => {
    const a = ok(await post({ kind: 'psu', model: 'PWS-2K' }), 201);
    assert.match(a.tag, /^GI-\d{6}$/);
    assertError(await post({ model: 'x' }), 400, { field: 'kind' });
    assertError(await post({ kind: 'toaster' }), 400, { field: 'kind' });
    assertError(await post({ kind: 'gpu', purchase_date: '2024-02-30' }), 400, { field: 'purchase_date' });
    assertError(await post({ kind: 'gpu', location: { datacenter: 'nowhere-' + uniq() } }), 400,
      { field: 'location.datacenter' });
    assertError(await post({ kind: 'gpu', tag: 'has space' }), 400, { field: 'tag' });
    assertError(await post({ kind: 'gpu', purchase_cost: { amount: 'lots', currency: 'USD' } }), 400,
      { field: 'purchase_cost' });
    assertError(await post({ kind: 'gpu', colour: 'red' }), 400);
    const tag = uniq('DUP');
    ok(await post({ tag, kind: 'gpu' }), 201);
    assertError(await post({ tag, kind: 'gpu' }), 409, { field: 'tag' });
    const epc = 'E2801170' + Date.now();
    ok(await post({ kind: 'ssd', epc }), 201);
    assertError(await post({ kind: 'ssd', epc }), 409, { field: 'epc' });
    assertError(await get('no-such-tag'), 404);
  });

  test('PATCH changes the given fields and records each old and new value', async () => {
    const tag = uniq('P');
    ok(await post({ tag, kind: 'gpu', model: 'A100', custom: { a: '1', b: '2' } }), 201);
    const editor = await mkToken(h.s, 'editor');
    const before = Math.floor(Date.now() / 1000) - 1;
    const r = ok(await h.s.api('PATCH', `/api/v1/assets/${tag}`,
      { body: { model: 'H100', custom: { a: null, c: 'x' }, location: { datacenter: dc2.name } }, auth: editor.token }));
    assert.equal(r.model, 'H100');
    assert.deepEqual(r.custom, { b: '2', c: 'x' });
    assert.equal(r.location.datacenter, dc2.name);
    assertError(await h.s.api('PATCH', `/api/v1/assets/${tag}`, { body: { stage: 'spare' } }), 400, { field: 'stage' });
    assertError(await h.s.api('PATCH', '/api/v1/assets/none-such', { body: { model: 'x' } }), 404);
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${tag}/events`));
    assert.equal(ev.total, 2);
    const [upd, created] = ev.items;
    assert.equal(created.kind, 'created');
    assert.equal(created.detail.model, 'A100');
    assert.equal(upd.kind, 'updated');
    assert.equal(upd.actor, editor.name);
    assert.ok(Date.parse(upd.at) / 1000 >= before);
    assert.deepEqual(upd.detail.model, ['A100', 'H100']);
    assert.deepEqual(upd.detail['custom.a'], ['1', null]);
    assert.deepEqual(upd.detail.datacenter_id, [null, dc2.id]);
    assert.equal(upd.prev_hash, created.hash);
  });

  test('filters, sorting and paging', async () => {
    const model = uniq('M');
    const parent = uniq('PAR');
    ok(await post({ tag: parent, kind: 'server', model, location: { datacenter: dc.name } }), 201);
    const tags = [];
    for (let i = 0; i < 7; i++) {
      const tag = `${model}-g${i}`;
      tags.push(tag);
      ok(await post({
        tag, kind: 'gpu', model, serial: `SER-${model}-${i}`, parent,
        location: { datacenter: i < 4 ? dc.name : dc2.name },
        warranty_end: i < 3 ? '2025-01-01' : '2030-01-01', stage: i === 6 ? 'spare' : 'active',
      }), 201);
    }
    const q = (p) => listAll(h.s, `/api/v1/assets?model=${model}&${p}`);
    assert.equal((await q('limit=2')).total, 8);
    const page = ok(await h.s.api('GET', `/api/v1/assets?model=${model}&limit=3`));
    assert.equal(page.items.length, 3);
    assert.equal(page.next, '3');
    const all = await q('limit=3');
    assert.deepEqual(all.items.map((a) => a.tag), [...tags, parent].sort());
    assert.deepEqual((await q('kind=gpu&sort=-tag')).items.map((a) => a.tag), [...tags].sort().reverse());
    assert.equal((await q(`datacenter=${dc2.id}`)).total, 3);
    assert.equal((await q(`datacenter=${encodeURIComponent(dc.name)}`)).total, 5);
    assert.equal((await q('datacenter=no-such-dc')).total, 0);
    assert.equal((await q('stage=spare')).items[0].tag, tags[6]);
    assert.equal((await q('warranty_before=2026-01-01')).total, 3);
    assert.equal((await q(`parent=${parent}`)).total, 7);
    assert.deepEqual((await q(`q=${encodeURIComponent(`SER-${model}-5`)}`)).items.map((a) => a.tag), [tags[5]]);
    assert.equal((await q(`q=${model.toLowerCase()}-G1`)).total, 1);
    const p = ok(await get(parent));
    assert.deepEqual(p.children, [...tags].sort());
    assert.equal(ok(await get(tags[0])).parent, parent);
    assertError(await h.s.api('GET', '/api/v1/assets?kind=toaster'), 400, { field: 'kind' });
    assertError(await h.s.api('GET', '/api/v1/assets?stage=broken'), 400, { field: 'stage' });
    assertError(await h.s.api('GET', '/api/v1/assets?warranty_before=soon'), 400, { field: 'warranty_before' });
    assertError(await h.s.api('GET', '/api/v1/assets?sort=price'), 400);
  });

  test('roles: viewers read, editors write, only admins override', async () => {
    const viewer = await mkToken(h.s, 'viewer');
    const editor = await mkToken(h.s, 'editor');
    const tag = uniq('R');
    assertError(await post({ tag, kind: 'nic' }, viewer.token), 403);
    ok(await post({ tag, kind: 'nic' }, editor.token), 201);
    ok(await h.s.api('GET', `/api/v1/assets/${tag}`, { auth: viewer.token }));
    ok(await h.s.api('GET', '/api/v1/assets?kind=nic', { auth: viewer.token }));
    ok(await h.s.api('GET', `/api/v1/assets/${tag}/events`, { auth: viewer.token }));
    assertError(await h.s.api('PATCH', `/api/v1/assets/${tag}`, { body: { model: 'x' }, auth: viewer.token }), 403);
    assertError(await stage(tag, { stage: 'spare' }, viewer.token), 403);
    ok(await stage(tag, { stage: 'decommissioned', reason: 'dead on arrival' }, editor.token));
    assertError(await stage(tag, { stage: 'spare', reason: 'found working', override: true }, editor.token), 403,
      { field: 'override' });
    assertError(await h.s.api('GET', '/api/v1/assets', { auth: null }), 401);
  });

  test('the lifecycle: refused moves answer 409 with the allowed stages; an admin overrides with a reason', async () => {
    const tag = uniq('L');
    const editor = await mkToken(h.s, 'editor');
    ok(await post({ tag, kind: 'gpu', stage: 'ordered' }), 201);
    const refused = await stage(tag, { stage: 'active', reason: 'too early' }, editor.token);
    assert.equal(refused.status, 409);
    assert.equal(refused.json.error.code, 'conflict');
    assert.equal(refused.json.stage, 'ordered');
    assert.deepEqual(refused.json.allowed, ['received', 'decommissioned']);
    const moved = ok(await stage(tag, { stage: 'received', reason: 'delivered' }, editor.token));
    assert.equal(moved.stage, 'received');
    ok(await stage(tag, { stage: 'active', reason: 'racked' }, editor.token));
    const r2 = await stage(tag, { stage: 'received' }, editor.token);
    assert.equal(r2.status, 409);
    assert.deepEqual(r2.json.allowed, ['spare', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned']);
    ok(await stage(tag, { stage: 'decommissioned', reason: 'burnt' }, editor.token));
    const fin = await stage(tag, { stage: 'spare', reason: 'x' }, editor.token);
    assert.equal(fin.status, 409);
    assert.deepEqual(fin.json.allowed, []);
    assertError(await stage(tag, { stage: 'spare', override: true }), 400, { field: 'reason' });
    const back = ok(await stage(tag, { stage: 'spare', reason: 'RMA returned it repaired', override: true }));
    assert.equal(back.stage, 'spare');
    assertError(await stage(tag, { stage: 'broken' }), 400, { field: 'stage' });
    assertError(await stage('no-such', { stage: 'spare' }), 404);
    // Each move is an event with who, when and why.
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${tag}/events`)).items.filter((e) => e.kind === 'stage');
    assert.deepEqual(ev.map((e) => [e.detail.from, e.detail.to, e.detail.reason, e.detail.override]), [
      ['decommissioned', 'spare', 'RMA returned it repaired', true],
      ['active', 'decommissioned', 'burnt', false],
      ['received', 'active', 'racked', false],
      ['ordered', 'received', 'delivered', false],
    ]);
    assert.equal(ev[1].actor, editor.name);
    assert.match(ev[1].at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const a = ok(await get(tag));
    assert.ok(Date.parse(a.stage_since) >= Date.parse(ev[0].at));
  });

  test('the compliance export: every event of a range in chain order, as CSV', async () => {
    const from = new Date(Date.now() - 3600e3).toISOString().slice(0, 19) + 'Z';
    const all = await listAll(h.s, `/api/v1/asset-events?from=${from}&limit=50`);
    assert.ok(all.total >= 10);
    all.items.forEach((e, i) => {
      if (i > 0) {
        assert.equal(e.seq, all.items[i - 1].seq + 1);
        assert.equal(e.prev_hash, all.items[i - 1].hash);
      }
    });
    const res = await h.s.api('GET', `/api/v1/asset-events?from=${from}&format=csv`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type'), /^text\/csv/);
    const rows = parseCsv(res.text);
    const head = rows[0];
    for (const c of ['seq', 'tag', 'at', 'kind', 'actor', 'detail', 'prev_hash', 'hash']) assert.ok(head.includes(c), c);
    assert.equal(rows.length - 1, all.total);
    const d = JSON.parse(rows[1][head.indexOf('detail')]);
    assert.equal(typeof d, 'object');
    const none = ok(await h.s.api('GET', '/api/v1/asset-events?from=2001-01-01T00:00:00Z&to=2001-01-02T00:00:00Z'));
    assert.equal(none.total, 0);
    assertError(await h.s.api('GET', '/api/v1/asset-events?from=yesterday'), 400, { field: 'from' });
  });

  test('discovery: a GPU asset takes the UUID of the discovered GPU with its serial, a server its host', async () => {
    const pusher = await mkToken(h.s, 'pusher');
    const uuid = 'GPU-a55e7000-0000-0000-0000-' + String(Date.now()).slice(-12).padStart(12, '0');
    const gserial = uniq('GS');
    const hserial = uniq('HS');
    const batch = {
      batch_id: uniq('b'), host: { hostname: uniq('node'), machine_id: uniq('mid'), serial: hserial },
      gpus: [{ uuid, serial: gserial, index: 0, name: 'NVIDIA H100 80GB HBM3' }], samples: [],
    };
    ok(await h.s.api('POST', '/api/v1/ingest', { body: batch, auth: pusher.token }), 201);
    const gpuAsset = ok(await post({ kind: 'gpu', serial: gserial }), 201);
    assert.equal(gpuAsset.gpu_uuid, uuid);
    assert.ok(gpuAsset.last_seen);
    const server = ok(await post({ kind: 'server', serial: hserial }), 201);
    assert.equal(typeof server.host_id, 'number');
    const hostRow = (await dbQuery(h.s.db, `SELECT id FROM hosts WHERE serial = '${hserial}'`)).trim();
    assert.equal(String(server.host_id), hostRow);
    // A placeholder serial matches nothing.
    assert.equal(ok(await post({ kind: 'server', serial: 'To Be Filled By O.E.M.' }), 201).host_id, null);

    // Energy: the GPU's rollups summed; the server sums its GPUs'.
    ok(await h.s.api('PATCH', `/api/v1/assets/${gpuAsset.tag}`, { body: { parent: server.tag } }));
    const gid = (await dbQuery(h.s.db, `SELECT id FROM gpus WHERE uuid = '${uuid}'`)).trim();
    const row = (hour, wh) => `INSERT INTO usage_hourly (gpu_id, hour, owned_s, allocated_s, busy_s, alloc_idle_s, ` +
      `idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, updated_at) VALUES ` +
      `(${gid}, ${hour}, 3600, 0, 0, 0, 3600, 0, 3600, 0, 0, ${wh}, 1, ${hour});`;
    await dbQuery(h.s.db, row(1767225600, 500.5) + row(1767229200, 250));
    assert.equal(ok(await get(gpuAsset.tag)).energy_wh, 750.5);
    assert.equal(ok(await get(server.tag)).energy_wh, 750.5);
    assert.equal(ok(await get(gpuAsset.tag, '?from=2026-01-01T01:00:00Z')).energy_wh, 250);
    assert.equal(ok(await get(gpuAsset.tag, '?to=2026-01-01T01:00:00Z')).energy_wh, 500.5);
    const psu = ok(await post({ kind: 'psu' }), 201);
    assert.equal(ok(await get(psu.tag)).energy_wh, undefined);
  });

  test('gpuinv audit verify: 0 while intact, 1 naming the seq once a row is altered in the database', async () => {
    const tag = uniq('AV');
    ok(await post({ tag, kind: 'switch', model: 'SN4700' }), 201);
    const good = await runCli(['audit', 'verify', '--db', h.s.db]);
    assert.equal(good.code, 0, good.stderr + good.stdout);
    assert.match(good.stdout, /^intact: \d+ events/);
    const seq = (await dbQuery(h.s.db,
      `SELECT e.seq FROM asset_events e JOIN assets a ON a.id = e.asset_id WHERE a.tag = '${tag}'`)).trim();
    // The trigger refuses the change; an attacker would drop it first.
    await assert.rejects(dbQuery(h.s.db, `UPDATE asset_events SET actor = 'mallory' WHERE seq = ${seq}`));
    await dbQuery(h.s.db, isPg(h.s.db)
      ? 'DROP TRIGGER asset_events_no_update ON asset_events'
      : 'DROP TRIGGER asset_events_no_update');
    await dbQuery(h.s.db, `UPDATE asset_events SET actor = 'mallory' WHERE seq = ${seq}`);
    const bad = await runCli(['audit', 'verify', '--db', h.s.db]);
    assert.equal(bad.code, 1, bad.stderr + bad.stdout);
    assert.match(bad.stdout, new RegExp(`^broken at seq ${seq}:`));
    assert.equal((await runCli(['audit', 'verify'])).code, 2);
  });
});
