// Room audits through the API: what is recorded in a room when the audit
// opens is expected; scans mark assets found; missing (expected, not
// found) and unexpected (found, recorded elsewhere) follow every scan;
// closing with relocate_unexpected moves the unexpected ones into the
// room with located events; a closed audit takes no more scans.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkToken, uniq } from './helpers.mjs';

describe('room audits', () => {
  const h = useServer();
  const mk = (body) => h.s.api('POST', '/api/v1/assets', { body });
  let dc;
  let editor;

  test('setup', async () => {
    dc = await mkDc(h.s);
    editor = await mkToken(h.s, 'editor');
  });

  test('expected, found, missing and unexpected; close relocates the unexpected', async () => {
    const room = uniq('room');
    const tags = [uniq('A1'), uniq('A2'), uniq('A3')];
    for (const tag of tags) ok(await mk({ tag, kind: 'server', location: { datacenter: dc.name, room, rack: 'R1' } }), 201);
    const gone = uniq('DEC');
    ok(await mk({ tag: gone, kind: 'gpu', stage: 'decommissioned', location: { datacenter: dc.name, room } }), 201);
    const stray = uniq('STRAY');
    const epc = 'E2' + String(Date.now()).slice(-10) + 'CD';
    ok(await mk({ tag: stray, kind: 'psu', epc, location: { datacenter: dc.name, room: 'other-room', rack: 'Z9', u: 7 } }), 201);

    const a = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dc.name, room }, note: 'quarterly' }, auth: editor.token }), 201);
    assert.equal(a.state, 'open');
    assert.deepEqual(a.location, { datacenter: dc.name, room, rack: null });
    assert.deepEqual(a.expected.map((x) => x.tag), [...tags].sort());
    assert.deepEqual(a.missing.map((x) => x.tag), [...tags].sort());
    assert.deepEqual(a.found, []);
    assert.deepEqual(a.unexpected, []);
    assert.deepEqual(a.counts, { expected: 3, found: 0, missing: 3, unexpected: 0 });

    const scan = (body) => h.s.api('POST', `/api/v1/audits/${a.id}/scans`, { body, auth: editor.token });
    let r = ok(await scan({ tag: tags[0].toLowerCase() }));
    assert.deepEqual(r.scanned, { tag: tags[0], expected: true });
    r = ok(await scan({ tag: tags[1] }));
    r = ok(await scan({ tag: tags[1] })); // a second scan of the same asset counts once
    r = ok(await scan({ epc }));
    assert.deepEqual(r.scanned, { tag: stray, expected: false });
    assertError(await scan({ tag: 'nope-' + uniq() }), 404, { field: 'tag' });
    assertError(await scan({}), 400);

    const g = ok(await h.s.api('GET', `/api/v1/audits/${a.id}`));
    assert.deepEqual(g.counts, { expected: 3, found: 3, missing: 1, unexpected: 1 });
    assert.deepEqual(g.missing.map((x) => x.tag), [tags[2]]);
    assert.deepEqual(g.found.map((x) => x.tag).sort(), [tags[0], tags[1], stray].sort());
    assert.equal(g.unexpected.length, 1);
    assert.equal(g.unexpected[0].tag, stray);
    assert.deepEqual(g.unexpected[0].location, { datacenter: dc.name, room: 'other-room', rack: 'Z9', u: 7, storage: null });
    assert.equal(g.found.find((x) => x.tag === tags[0]).found_by, editor.name);
    // Audit scans are scan events; they do not move the asset.
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${stray}/events`)).items;
    const sc = ev.find((e) => e.kind === 'scan');
    assert.equal(sc.detail.audit, a.id);
    assert.equal(sc.detail.via, 'epc');
    assert.equal(ev.filter((e) => e.kind === 'located').length, 0);

    const open = ok(await h.s.api('GET', '/api/v1/audits?state=open')).items;
    assert.ok(open.some((x) => x.id === a.id && x.counts.missing === 1));

    const c = ok(await h.s.api('POST', `/api/v1/audits/${a.id}/close`, { body: { relocate_unexpected: true }, auth: editor.token }));
    assert.equal(c.state, 'closed');
    assert.equal(c.closed_by, editor.name);
    assert.deepEqual(c.relocated, [stray]);
    const moved = ok(await h.s.api('GET', `/api/v1/assets/${stray}`));
    assert.deepEqual(moved.location, { datacenter: dc.name, room, rack: null, u: null, storage: null });
    const loc = ok(await h.s.api('GET', `/api/v1/assets/${stray}/events`)).items.find((e) => e.kind === 'located');
    assert.equal(loc.detail.from.room, 'other-room');
    assert.equal(loc.detail.to.room, room);
    assert.equal(loc.actor, editor.name);
    // The missing one stays where it is recorded.
    assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${tags[2]}`)).location.room, room);

    assertError(await scan({ tag: tags[2] }), 409);
    assertError(await h.s.api('POST', `/api/v1/audits/${a.id}/close`, { auth: editor.token }), 409);
    assert.ok(!ok(await h.s.api('GET', '/api/v1/audits?state=open')).items.some((x) => x.id === a.id));
  });

  test('closing without relocation moves nothing; a rack audit expects only that rack', async () => {
    const room = uniq('room');
    const inRack = uniq('RK');
    const other = uniq('OR');
    ok(await mk({ tag: inRack, kind: 'server', location: { datacenter: dc.name, room, rack: 'R5' } }), 201);
    ok(await mk({ tag: other, kind: 'server', location: { datacenter: dc.name, room, rack: 'R6' } }), 201);
    const a = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dc.name, room, rack: 'R5' } } }), 201);
    assert.deepEqual(a.expected.map((x) => x.tag), [inRack]);
    ok(await h.s.api('POST', `/api/v1/audits/${a.id}/scans`, { body: { tag: other } }));
    const c = ok(await h.s.api('POST', `/api/v1/audits/${a.id}/close`));
    assert.deepEqual(c.relocated, []);
    assert.deepEqual(c.unexpected.map((x) => x.tag), [other]);
    assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${other}`)).location.rack, 'R6');
  });

  test('bad input names the field; viewers read but do not audit', async () => {
    assertError(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dc.name } } }), 400, { field: 'location' });
    assertError(await h.s.api('POST', '/api/v1/audits', { body: {} }), 400, { field: 'location' });
    assertError(await h.s.api('POST', '/api/v1/audits', { body: { location: { room: 'x', u: 3 } } }), 400);
    assertError(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: 'nowhere-' + uniq(), room: 'x' } } }), 400,
      { field: 'location.datacenter' });
    assertError(await h.s.api('GET', '/api/v1/audits/999999'), 404);
    assertError(await h.s.api('POST', '/api/v1/audits/999999/scans', { body: { tag: 'x' } }), 404);
    assertError(await h.s.api('GET', '/api/v1/audits?state=maybe'), 400, { field: 'state' });
    const viewer = await mkToken(h.s, 'viewer');
    assertError(await h.s.api('POST', '/api/v1/audits', { body: { location: { room: 'x' } }, auth: viewer.token }), 403);
    const a = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { room: uniq('r') } } }), 201);
    ok(await h.s.api('GET', `/api/v1/audits/${a.id}`, { auth: viewer.token }));
    assertError(await h.s.api('POST', `/api/v1/audits/${a.id}/close`, { auth: viewer.token }), 403);
  });
});
