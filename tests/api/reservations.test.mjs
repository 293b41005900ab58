// Spare reservations through the API: a reserve_spare rule reserves a
// spare per failing asset; the list filters by data center, model, state
// and asset; a release (editor only, confined to the token's data
// centers) frees the spare, is an event on both assets and an audit row,
// and cannot happen twice; the spare going active consumes its
// reservation; a released spare can be reserved again.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkDc, mkToken, uniq } from './helpers.mjs';

const h = useServer();
const model = uniq('H100-resv');
const w = {};

async function mkAsset(fields) {
  return ok(await h.s.api('POST', '/api/v1/assets', { body: { kind: 'gpu', model, ...fields } }), 201);
}

async function events(tag, kind) {
  return ok(await h.s.api('GET', `/api/v1/assets/${tag}/events?limit=500`)).items.filter((e) => e.kind === kind);
}

async function list(query, auth) {
  return ok(await h.s.api('GET', `/api/v1/reservations?${query}`, auth ? { auth } : {}));
}

async function runRule() {
  return ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${w.rule.id}/run`));
}

test('setup: a failing asset and a spare in each of two data centers, one reserve_spare rule', async () => {
  w.dcA = await mkDc(h.s);
  w.dcB = await mkDc(h.s);
  w.failA = (await mkAsset({ tag: uniq('FA'), location: { datacenter: w.dcA.name } })).tag;
  w.spareA = (await mkAsset({ tag: uniq('SA'), stage: 'spare', location: { datacenter: w.dcA.name } })).tag;
  w.failB = (await mkAsset({ tag: uniq('FB'), location: { datacenter: w.dcB.name } })).tag;
  w.spareB = (await mkAsset({ tag: uniq('SB'), stage: 'spare', location: { datacenter: w.dcB.name } })).tag;
  w.rule = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('reserve'), condition: { attr: 'tag', in: [w.failA, w.failB] }, actions: [{ type: 'reserve_spare' }] },
  }), 201);
  const rep = await runRule();
  assert.equal(rep.matched, 2);
  const got = Object.fromEntries(rep.matches.map((m) => [m.asset, m.actions[0]]));
  assert.deepEqual(got[w.failA], { type: 'reserve_spare', result: 'reserved', spare: w.spareA });
  assert.deepEqual(got[w.failB], { type: 'reserve_spare', result: 'reserved', spare: w.spareB });
});

test('the list filters by model, data center, state and asset', async () => {
  const all = await list(`model=${model}`);
  assert.equal(all.total, 2);
  for (const v of all.items) {
    assert.equal(v.state, 'reserved');
    assert.equal(v.model, model);
    assert.equal(v.rule_id, w.rule.id);
    assert.equal(v.ended_at, null);
    assert.match(v.reserved_at, /^\d{4}-\d\d-\d\dT/);
  }
  const a = await list(`model=${model}&datacenter=${w.dcA.id}`);
  assert.equal(a.total, 1);
  assert.equal(a.items[0].spare, w.spareA);
  assert.equal(a.items[0].for_asset, w.failA);
  assert.equal(a.items[0].datacenter, w.dcA.name);
  assert.equal(a.items[0].spare_stage, 'spare');
  assert.equal(a.items[0].for_stage, 'active');
  w.resvA = a.items[0].id;
  const byName = await list(`model=${model}&datacenter=${encodeURIComponent(w.dcB.name)}`);
  assert.deepEqual(byName.items.map((v) => v.spare), [w.spareB]);
  w.resvB = byName.items[0].id;
  assert.equal((await list(`model=${model}&state=released`)).total, 0);
  // an asset's reservations, as the spare and as the asset replaced
  assert.deepEqual((await list(`asset=${w.spareA}`)).items.map((v) => v.id), [w.resvA]);
  assert.deepEqual((await list(`asset=${w.failA}`)).items.map((v) => v.id), [w.resvA]);
  assertError(await h.s.api('GET', '/api/v1/reservations?state=gone'), 400, { code: 'invalid_parameter', field: 'state' });
  assertError(await h.s.api('GET', '/api/v1/reservations?asset=no-such-asset'), 404);
});

test('roles and data-center scope', async () => {
  const viewer = await mkToken(h.s, 'viewer');
  ok(await h.s.api('GET', `/api/v1/reservations?model=${model}`, { auth: viewer.token }));
  assertError(await h.s.api('POST', `/api/v1/reservations/${w.resvA}/release`, { auth: viewer.token, body: {} }), 403);
  w.editorB = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('eb'), role: 'editor', datacenters: [w.dcB.id] } }), 201);
  // the confined token's list is its data center's; A's is out of reach
  const mine = await list(`model=${model}`, w.editorB.token);
  assert.deepEqual(mine.items.map((v) => v.id), [w.resvB]);
  assertError(await h.s.api('GET', `/api/v1/reservations?datacenter=${w.dcA.id}`, { auth: w.editorB.token }), 403, { field: 'datacenter' });
  assertError(await h.s.api('GET', `/api/v1/reservations?asset=${w.spareA}`, { auth: w.editorB.token }), 404);
  assertError(await h.s.api('POST', `/api/v1/reservations/${w.resvA}/release`, { auth: w.editorB.token, body: {} }), 404);
  assert.equal((await list(`asset=${w.spareA}`)).items[0].state, 'reserved');
  assertError(await h.s.api('POST', '/api/v1/reservations/99999999/release', { body: {} }), 404);
  assertError(await h.s.api('POST', `/api/v1/reservations/${w.resvB}/release`, { body: { why: 'x' } }), 400);
});

test('a release frees the spare: events on both assets, audited, not twice', async () => {
  const r = ok(await h.s.api('POST', `/api/v1/reservations/${w.resvB}/release`,
    { auth: w.editorB.token, body: { reason: 'the GPU was reseated' } }));
  assert.equal(r.id, w.resvB);
  assert.equal(r.state, 'released');
  assert.equal(r.ended_by, w.editorB.name);
  assert.equal(r.end_reason, 'the GPU was reseated');
  assert.match(r.ended_at, /^\d{4}-\d\d-\d\dT/);
  for (const tag of [w.spareB, w.failB]) {
    const ev = await events(tag, 'reservation');
    assert.equal(ev.length, 1, tag);
    assert.equal(ev[0].actor, w.editorB.name);
    assert.deepEqual(ev[0].detail, { reservation_id: w.resvB, state: 'released', spare: w.spareB, for: w.failB, reason: 'the GPU was reseated' });
  }
  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=reservation&entity_id=${w.resvB}`)).items;
  assert.deepEqual(audit.map((a) => a.action), ['release']);
  assertError(await h.s.api('POST', `/api/v1/reservations/${w.resvB}/release`, { body: {} }), 409, { code: 'conflict', field: 'state' });
  assert.deepEqual((await list(`model=${model}&state=released`)).items.map((v) => v.id), [w.resvB]);
  assert.deepEqual((await list(`model=${model}&state=reserved`)).items.map((v) => v.id), [w.resvA]);
});

test('the spare going active consumes its reservation', async () => {
  ok(await h.s.api('POST', `/api/v1/assets/${w.spareA}/stage`, { body: { stage: 'active', reason: 'swapped in' } }));
  const [v] = (await list(`asset=${w.spareA}`)).items;
  assert.equal(v.id, w.resvA);
  assert.equal(v.state, 'consumed');
  assert.equal(v.spare_stage, 'active');
  for (const tag of [w.spareA, w.failA]) {
    const ev = await events(tag, 'reservation');
    assert.equal(ev.length, 1, tag);
    assert.equal(ev[0].detail.state, 'consumed');
    assert.equal(ev[0].detail.reservation_id, w.resvA);
  }
  assertError(await h.s.api('POST', `/api/v1/reservations/${w.resvA}/release`, { body: {} }), 409);
  // the asset that was replaced going active consumes nothing
  assert.equal((await list(`model=${model}&state=consumed`)).total, 1);
});

test('a released spare is reserved again; a consumed one (now active) is not', async () => {
  const rep = await runRule();
  const got = Object.fromEntries(rep.matches.map((m) => [m.asset, m.actions[0]]));
  assert.deepEqual(got[w.failB], { type: 'reserve_spare', result: 'reserved', spare: w.spareB });
  assert.equal(got[w.failA].result, 'none_available');
  const open = await list(`model=${model}&state=reserved`);
  assert.equal(open.total, 1);
  assert.notEqual(open.items[0].id, w.resvB);
  assert.equal(open.items[0].spare, w.spareB);
  assert.equal((await list(`model=${model}`)).total, 3);
});
