// Tokens confined to data centers: a token created with `datacenters`
// changes assets and resources only inside them (before and after the
// change), lists only their assets and resources, and is listed with its
// scope; an unconfined token still reaches every data center, and a bad
// `datacenters` entry is a 400 naming its index.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, uniq, listAll } from './helpers.mjs';

describe('token data-center scope', () => {
  const h = useServer();
  let dcA;
  let dcB;
  let scanner;
  let editor;
  let tagA;
  let tagB;

  const asset = async (tag) => ok(await h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tag)}`));

  test('setup: two data centers, an asset in each, a scanner token for A', async () => {
    dcA = await mkDc(h.s);
    dcB = await mkDc(h.s);
    editor = await mkToken(h.s, 'editor');
    tagA = uniq('SA');
    tagB = uniq('SB');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagA, kind: 'server', location: { datacenter: dcA.name, room: 'r1' } } }), 201);
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagB, kind: 'server', location: { datacenter: dcB.name, room: 'r9' } } }), 201);
    // one by id, one by name: both resolve to A, kept once
    scanner = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('scanner'), role: 'editor', datacenters: [dcA.id, dcA.name] } }), 201);
    assert.deepEqual(scanner.datacenters, [dcA.id]);
  });

  test('the token list shows the scope; an unconfined token lists []', async () => {
    const { items } = await listAll(h.s, '/api/v1/tokens');
    const mine = items.find((t) => t.id === scanner.id);
    assert.deepEqual(mine.datacenters, [dcA.id]);
    const other = items.find((t) => t.id === editor.id);
    assert.deepEqual(other.datacenters, []);
  });

  test('a bad datacenters entry is a 400 naming its index; an admin is never confined', async () => {
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('x'), role: 'editor', datacenters: [dcA.id, dcB.name, 'no-such-dc'] } }), 400, { code: 'validation_failed', field: 'datacenters[2]' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('x'), role: 'editor', datacenters: [999999] } }), 400, { field: 'datacenters[0]' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('x'), role: 'editor', datacenters: 'a' } }), 400, { field: 'datacenters' });
    assertError(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('x'), role: 'admin', datacenters: [dcA.id] } }), 400, { field: 'datacenters' });
  });

  test('the scanner scans an asset of its data center', async () => {
    const r = ok(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagA, location: { datacenter: dcA.name, room: 'r2', rack: 'K1' } }, auth: scanner.token }), 201);
    assert.equal(r.asset.datacenter_id, dcA.id);
    assert.equal(r.asset.location.room, 'r2');
  });

  test('a scan of an asset in B is 403 naming B, and the asset is unchanged', async () => {
    const before = await asset(tagB);
    const e = assertError(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagB, location: { datacenter: dcB.name, room: 'r3' } }, auth: scanner.token }), 403, { code: 'forbidden', field: 'datacenter' });
    assert.ok(e.message.includes(dcB.name), e.message);
    assertError(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagB }, auth: scanner.token }), 403, { code: 'forbidden' });
    const afterwards = await asset(tagB);
    assert.deepEqual(afterwards.location, before.location);
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tagB)}/events?limit=100`)).items;
    assert.equal(ev.filter((x) => x.kind === 'scan').length, 0);
  });

  test('the scanner cannot move an asset from A to B, by scan or by PATCH, nor out of any data center', async () => {
    const e = assertError(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagA, location: { datacenter: dcB.name, room: 'r1' } }, auth: scanner.token }), 403, { code: 'forbidden' });
    assert.ok(e.message.includes(dcB.name), e.message);
    assertError(await h.s.api('PATCH', `/api/v1/assets/${tagA}`, { body: { location: { datacenter: dcB.name } }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('PATCH', `/api/v1/assets/${tagA}`, { body: { datacenter_id: dcB.id }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagA, location: { storage: 'van' } }, auth: scanner.token }), 403, { code: 'forbidden' });
    assert.equal((await asset(tagA)).datacenter_id, dcA.id);
    // inside A it may change the asset
    ok(await h.s.api('PATCH', `/api/v1/assets/${tagA}`, { body: { model: 'R760', location: { datacenter: dcA.name, room: 'r4' } }, auth: scanner.token }));
    assert.equal((await asset(tagA)).model, 'R760');
  });

  test('asset create, stage and import obey the scope', async () => {
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: uniq('NA'), kind: 'gpu', location: { datacenter: dcA.name } }, auth: scanner.token }), 201);
    const tagX = uniq('NB');
    assertError(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagX, kind: 'gpu', location: { datacenter: dcB.name } }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('POST', '/api/v1/assets', { body: { tag: tagX, kind: 'gpu' }, auth: scanner.token }), 403, { code: 'forbidden' });
    assert.equal((await h.s.api('GET', `/api/v1/assets/${tagX}`)).status, 404);
    assertError(await h.s.api('POST', `/api/v1/assets/${tagB}/stage`, { body: { stage: 'spare', reason: 'x' }, auth: scanner.token }), 403, { code: 'forbidden' });
    assert.equal((await asset(tagB)).stage, 'active');
    ok(await h.s.api('POST', `/api/v1/assets/${tagA}/stage`, { body: { stage: 'spare', reason: 'pool' }, auth: scanner.token }));
    const csv = `asset tag,serial,model,location\n${uniq('IM')},S1,R760,${dcB.name}\n`;
    assertError(await h.s.api('POST', '/api/v1/assets/import', { body: csv, contentType: 'text/csv', auth: scanner.token }), 403, { code: 'forbidden' });
  });

  test('the scanner sees only the assets of A, even when it asks for B', async () => {
    const { items } = await listAll(h.s, '/api/v1/assets?limit=100', { auth: scanner.token });
    assert.ok(items.length >= 2);
    for (const a of items) assert.equal(a.datacenter_id, dcA.id, JSON.stringify(a));
    assert.ok(items.some((a) => a.tag === tagA));
    assertError(await h.s.api('GET', `/api/v1/assets?datacenter=${dcB.id}`, { auth: scanner.token }), 403, { code: 'forbidden' });
    const all = await listAll(h.s, '/api/v1/assets?limit=100', { auth: editor.token });
    assert.ok(all.items.some((a) => a.tag === tagB));
  });

  test('the stage counts, the event export and a label sheet by filter are narrowed too', async () => {
    const counts = ok(await h.s.api('GET', '/api/v1/asset-stages', { auth: scanner.token }));
    const mine = (await listAll(h.s, '/api/v1/assets?limit=100', { auth: scanner.token })).items.length;
    assert.equal(counts.total, mine);
    const ev = await listAll(h.s, '/api/v1/asset-events?limit=100', { auth: scanner.token });
    assert.ok(ev.items.some((e) => e.tag === tagA));
    assert.ok(!ev.items.some((e) => e.tag === tagB), 'an event of B was listed');
    assertError(await h.s.api('GET', `/api/v1/asset-events?datacenter=${dcB.id}`, { auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('GET', `/api/v1/assets/labels.svg?paper=a4&datacenter=${dcB.name}`, { auth: scanner.token }), 403, { code: 'forbidden' });
    const sheet = await h.s.api('GET', '/api/v1/assets/labels.svg?paper=a4', { auth: scanner.token });
    assert.equal(sheet.status, 200);
    assert.ok(sheet.text.includes(tagA));
    assert.ok(!sheet.text.includes(tagB));
  });

  test('a token of two data centers lists both without datacenter, or one with it', async () => {
    const two = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('two'), role: 'viewer', datacenters: [dcA.name, dcB.id] } }), 201);
    assert.deepEqual(two.datacenters, [dcA.id, dcB.id]);
    const union = (await listAll(h.s, '/api/v1/assets?limit=1', { auth: two.token })).items.map((a) => a.tag);
    const inAB = (await listAll(h.s, '/api/v1/assets?limit=100')).items.filter((a) => [dcA.id, dcB.id].includes(a.datacenter_id)).map((a) => a.tag);
    assert.deepEqual(union, inAB);
    assert.ok(union.includes(tagA) && union.includes(tagB));
    // the kept stage counts and the event export are those of the union too
    assert.equal(ok(await h.s.api('GET', '/api/v1/asset-stages', { auth: two.token })).total, union.length);
    const inA = (await listAll(h.s, '/api/v1/assets?limit=100')).items.filter((x) => x.datacenter_id === dcA.id);
    assert.equal(ok(await h.s.api('GET', '/api/v1/asset-stages', { auth: scanner.token })).total, inA.length);
    const ev = (await listAll(h.s, '/api/v1/asset-events?limit=100', { auth: two.token })).items;
    assert.ok(ev.some((e) => e.tag === tagA) && ev.some((e) => e.tag === tagB));
    for (const e of ev) assert.ok(inAB.includes(e.tag), e.tag);
    const sheet = await h.s.api('GET', '/api/v1/assets/labels.svg?paper=a4', { auth: two.token });
    assert.equal(sheet.status, 200);
    assert.ok(sheet.text.includes(tagA) && sheet.text.includes(tagB));
    const b = await listAll(h.s, `/api/v1/assets?limit=100&datacenter=${dcB.id}`, { auth: two.token });
    assert.ok(b.items.some((a) => a.tag === tagB));
    for (const a of b.items) assert.equal(a.datacenter_id, dcB.id);
  });

  test('resources and allocations: not in B', async () => {
    const resA = await mkRes(h.s, dcA.id);
    const resB = await mkRes(h.s, dcB.id);
    assertError(await h.s.api('POST', '/api/v1/allocations', { body: { datacenter_id: dcB.id, tenant: 't1' }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('POST', `/api/v1/resources/${resB.id}/allocate`, { body: { tenant: 't1' }, auth: scanner.token }), 403, { code: 'forbidden' });
    assert.equal(ok(await h.s.api('GET', `/api/v1/resources/${resB.id}`)).state, 'available');
    assertError(await h.s.api('PATCH', `/api/v1/resources/${resB.id}`, { body: { name: uniq('ren') }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('PATCH', `/api/v1/resources/${resA.id}`, { body: { datacenter_id: dcB.id }, auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('DELETE', `/api/v1/resources/${resB.id}`, { auth: scanner.token }), 403, { code: 'forbidden' });
    assertError(await h.s.api('POST', '/api/v1/resources', { body: { datacenter_id: dcB.id, kind: 'server', name: uniq('res') }, auth: scanner.token }), 403, { code: 'forbidden' });
    ok(await h.s.api('POST', `/api/v1/resources/${resA.id}/allocate`, { body: { tenant: 't1' }, auth: scanner.token }));
    ok(await h.s.api('POST', `/api/v1/resources/${resA.id}/release`, { auth: scanner.token }));
    const { items } = await listAll(h.s, '/api/v1/resources?limit=100', { auth: scanner.token });
    assert.ok(items.some((x) => x.id === resA.id));
    for (const x of items) assert.equal(x.datacenter_id, dcA.id);
  });

  test('an unconfined editor token still works everywhere', async () => {
    ok(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagB, location: { datacenter: dcB.name, room: 'r5' } }, auth: editor.token }), 201);
    ok(await h.s.api('POST', '/api/v1/scans', { body: { tag: tagB, location: { datacenter: dcA.name, room: 'r5' } }, auth: editor.token }), 201);
    assert.equal((await asset(tagB)).datacenter_id, dcA.id);
    const resB = await mkRes(h.s, dcB.id);
    ok(await h.s.api('POST', `/api/v1/resources/${resB.id}/allocate`, { body: { tenant: 't2' }, auth: editor.token }));
  });

  test('room audits: a confined token audits only its data centers', async () => {
    assertError(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dcB.name, room: 'r9' } }, auth: scanner.token }), 403, { code: 'forbidden' });
    const audB = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dcB.name, room: 'r9' } }, auth: editor.token }), 201);
    assertError(await h.s.api('POST', `/api/v1/audits/${audB.id}/close`, { auth: scanner.token }), 403, { code: 'forbidden' });
    const audA = ok(await h.s.api('POST', '/api/v1/audits', { body: { location: { datacenter: dcA.name, room: 'r4' } }, auth: scanner.token }), 201);
    ok(await h.s.api('POST', `/api/v1/audits/${audA.id}/scans`, { body: { tag: tagA }, auth: scanner.token }));
  });
});
