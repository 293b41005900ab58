// Scans through the API: an asset found by tag (any case) or EPC moves to
// the scanned location with a "located" event, every scan is a "scan"
// event naming who, where and how it was identified, an unknown tag or EPC
// is a 404 naming which, a stage change rides along through the lifecycle
// (409 with the allowed stages, nothing written), and only editors scan.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkToken, uniq, dbQuery } from './helpers.mjs';

describe('scans', () => {
  const h = useServer();
  const scan = (body, auth) => h.s.api('POST', '/api/v1/scans', { body, auth });
  const events = async (tag) => ok(await h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tag)}/events?limit=100`)).items;
  let dc;
  let dc2;
  let editor;

  test('setup', async () => {
    dc = await mkDc(h.s);
    dc2 = await mkDc(h.s);
    editor = await mkToken(h.s, 'editor');
  });

  test('a scan by tag, in any case, moves the asset and records located and scan events', async () => {
    const tag = uniq('SCN');
    ok(await h.s.api('POST', '/api/v1/assets', { body: {
      tag, kind: 'server', model: 'R760', location: { datacenter: dc.name, room: 'hall-1', rack: 'R01', u: 4 },
    } }), 201);
    const r = ok(await scan({ tag: tag.toLowerCase(), location: { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30 }, note: 'moved for rebalancing' }, editor.token), 201);
    assert.equal(r.via, 'tag');
    assert.equal(r.located, true);
    assert.equal(r.asset.tag, tag);
    assert.deepEqual(r.asset.location, { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30, storage: null });
    assert.equal(r.asset.datacenter_id, dc2.id);
    const ev = await events(tag);
    const located = ev.find((e) => e.kind === 'located');
    assert.ok(located, JSON.stringify(ev));
    assert.deepEqual(located.detail.from, { datacenter: dc.name, room: 'hall-1', rack: 'R01', u: 4, storage: null });
    assert.deepEqual(located.detail.to, { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30, storage: null });
    assert.equal(located.actor, editor.name);
    const s = ev.find((e) => e.kind === 'scan');
    assert.deepEqual(s.detail, { location: located.detail.to, note: 'moved for rebalancing', via: 'tag' });
    assert.equal(s.actor, editor.name);
    assert.match(s.at, /^\d{4}-\d\d-\d\dT/);
  });

  test('a scan where the asset already is records only the scan; one without location too', async () => {
    const tag = uniq('SAME');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'gpu', location: { datacenter: dc.name, storage: 'shelf-3' } } }), 201);
    const r = ok(await scan({ tag, location: { datacenter: dc.name, storage: 'shelf-3' } }, editor.token), 201);
    assert.equal(r.located, false);
    const r2 = ok(await scan({ tag }, editor.token), 201);
    assert.equal(r2.located, false);
    assert.deepEqual(r2.asset.location, { datacenter: dc.name, room: null, rack: null, u: null, storage: 'shelf-3' });
    const ev = await events(tag);
    assert.equal(ev.filter((e) => e.kind === 'located').length, 0);
    const scans = ev.filter((e) => e.kind === 'scan');
    assert.equal(scans.length, 2);
    for (const e of scans) assert.equal(e.detail.location.storage, 'shelf-3');
  });

  test('the scanned location replaces the whole old one', async () => {
    const tag = uniq('REPL');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'ssd', location: { datacenter: dc.name, room: 'r', rack: 'k', u: 3 } } }), 201);
    const r = ok(await scan({ tag, location: { datacenter: dc.name, storage: 'spares cage' } }, editor.token), 201);
    assert.deepEqual(r.asset.location, { datacenter: dc.name, room: null, rack: null, u: null, storage: 'spares cage' });
  });

  test('a scan by EPC finds the asset carrying it, ignoring case', async () => {
    const tag = uniq('RFID');
    const epc = 'E28011700000020' + String(Date.now()).slice(-8) + 'AB';
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'psu', epc } }), 201);
    const r = ok(await scan({ epc: epc.toLowerCase(), location: { datacenter: dc.name, room: 'dock' } }, editor.token), 201);
    assert.equal(r.via, 'epc');
    assert.equal(r.asset.tag, tag);
    assert.equal(r.asset.location.room, 'dock');
    const s = (await events(tag)).find((e) => e.kind === 'scan');
    assert.equal(s.detail.via, 'epc');
  });

  test('an unknown tag or EPC is a 404 naming which; bad input a 400 naming the field', async () => {
    assertError(await scan({ tag: 'no-such-' + uniq(), location: { room: 'x' } }, editor.token), 404, { field: 'tag' });
    assertError(await scan({ epc: 'FFFF' + uniq(), location: { room: 'x' } }, editor.token), 404, { field: 'epc' });
    const tag = uniq('BAD');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'nic', location: { room: 'a' } } }), 201);
    assertError(await scan({}, editor.token), 400, { field: 'tag' });
    assertError(await scan({ tag, epc: 'AB' }, editor.token), 400);
    assertError(await scan({ tag, location: { datacenter: 'nowhere-' + uniq() } }, editor.token), 400, { field: 'location.datacenter' });
    assertError(await scan({ tag, location: { u: 'high' } }, editor.token), 400, { field: 'location.u' });
    assertError(await scan({ tag, location: { shelf: 1 } }, editor.token), 400);
    assertError(await scan({ tag, stage: 'broken' }, editor.token), 400, { field: 'stage' });
    // None of these wrote anything.
    const ev = await events(tag);
    assert.deepEqual(ev.map((e) => e.kind), ['created']);
    assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${tag}`)).location.room, 'a');
  });

  test('a stage change through a scan follows the lifecycle; a refused one writes nothing', async () => {
    const tag = uniq('STG');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'gpu', stage: 'active', location: { datacenter: dc.name, room: 'hall-1' } } }), 201);
    const r = ok(await scan({ tag, location: { datacenter: dc.name, room: 'repair bench' }, stage: 'diagnostic_repair', note: 'XID 79 on boot' }, editor.token), 201);
    assert.equal(r.asset.stage, 'diagnostic_repair');
    const st = (await events(tag)).find((e) => e.kind === 'stage');
    assert.equal(st.detail.from, 'active');
    assert.equal(st.detail.to, 'diagnostic_repair');
    assert.equal(st.detail.reason, 'XID 79 on boot');
    const bad = await scan({ tag, location: { datacenter: dc.name, room: 'elsewhere' }, stage: 'ordered' }, editor.token);
    assertError(bad, 409, { field: 'stage' });
    assert.equal(bad.json.stage, 'diagnostic_repair');
    assert.deepEqual(bad.json.allowed, ['active', 'spare', 'refurbishment_candidate', 'decommissioned']);
    const after = ok(await h.s.api('GET', `/api/v1/assets/${tag}`));
    assert.equal(after.location.room, 'repair bench');
    assert.equal(after.stage, 'diagnostic_repair');
  });

  test('only editors and admins scan; viewers read the events', async () => {
    const tag = uniq('ROLE');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'switch' } }), 201);
    const viewer = await mkToken(h.s, 'viewer');
    assertError(await scan({ tag, location: { room: 'x' } }, viewer.token), 403);
    assertError(await scan({ tag, location: { room: 'x' } }, 'not-a-token'), 401);
    const pusher = await mkToken(h.s, 'pusher');
    assertError(await scan({ tag }, pusher.token), 403);
    ok(await scan({ tag, location: { room: 'x' } }), 201);
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${tag}/events`, { auth: viewer.token })).items;
    assert.ok(ev.some((e) => e.kind === 'scan'));
  });

  test('the fields a scan set are marked as set by the scan', async () => {
    const tag = uniq('PROV');
    const a = ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'server', location: { room: 'old', rack: 'R1' } } }), 201);
    ok(await scan({ tag, location: { datacenter: dc.name, room: 'scanned-room', rack: 'R1' } }, editor.token), 201);
    const rows = (await dbQuery(h.s.db, `SELECT field, source FROM asset_fields WHERE asset_id = ${a.id} ORDER BY field`)).trim().split('\n');
    // room and datacenter changed (scan); rack stayed as the API set it.
    assert.ok(rows.includes('room|scan'), rows.join(','));
    assert.ok(rows.includes('datacenter_id|scan'), rows.join(','));
    assert.ok(rows.includes('rack|api'), rows.join(','));
  });
});
