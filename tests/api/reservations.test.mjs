// Spare reservations through the API: a reserve_spare rule reserves a
// spare per failing asset; the list filters by data center, model, state
// and asset; a release (editor only, confined to the token's data
// centers) frees the spare, is an event on both assets and an audit row,
// and cannot happen twice; the spare going active consumes its
// reservation; a released spare can be reserved again. Every other end:
// the spare going to another stage than spare or leaving the failing
// asset's data center (by a scan, a PATCH, its data center's deletion)
// cancels it, the failing asset returning to active or spare makes it
// not_needed, an expiry (expire_days, PATCH expires_at) makes it expired
// at the next rules run; each an event on both assets.
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

// ---- every other way a reservation ends ----

/** A failing asset and a spare in a data center of their own, one
 * reserve_spare rule over the failing one (extra: the action's fields)
 * run by editor w.ed: {dc, fail, spare, rule, resv (the reservation)}. */
async function pair(extra = {}) {
  const dc = await mkDc(h.s);
  const fail = (await mkAsset({ tag: uniq('F'), location: { datacenter: dc.name, room: 'r1' } })).tag;
  const spare = (await mkAsset({ tag: uniq('S'), stage: 'spare', location: { datacenter: dc.name, room: 'r1' } })).tag;
  const rule = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('reserve'), condition: { attr: 'tag', in: [fail] }, actions: [{ type: 'reserve_spare', ...extra }] },
  }), 201);
  const p = { dc, fail, spare, rule };
  const rep = await runPair(p);
  assert.deepEqual(rep.matches[0].actions[0], { type: 'reserve_spare', result: 'reserved', spare });
  [p.resv] = (await list(`asset=${fail}&state=reserved`)).items;
  return p;
}

async function runPair(p) {
  return ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${p.rule.id}/run`, { auth: w.ed.token }));
}

/** A stage move by the editor w.ed, or by the admin when admin is set. */
async function stage(tag, body, admin = false) {
  return ok(await h.s.api('POST', `/api/v1/assets/${tag}/stage`, admin ? { body } : { auth: w.ed.token, body }));
}

async function resv(id) {
  return ok(await h.s.api('GET', `/api/v1/reservations?model=${model}&limit=500`)).items.find((v) => v.id === id);
}

/** Checks that reservation p.resv ended as `as` by `by` for `reason`, with
 * its one end event (the last `reservation` one) on both assets. */
async function assertEnded(p, as, reason, by = w.ed.name) {
  const v = await resv(p.resv.id);
  assert.equal(v.state, as);
  assert.equal(v.ended_by, by);
  assert.equal(v.end_reason, reason);
  assert.match(v.ended_at, /^\d{4}-\d\d-\d\dT/);
  for (const tag of [p.spare, p.fail]) {
    const ev = await events(tag, 'reservation');
    assert.equal(ev[0].actor, by, tag);
    assert.deepEqual(ev[0].detail, { reservation_id: p.resv.id, state: as, spare: p.spare, for: p.fail, reason }, tag);
  }
  return v;
}

test('the spare leaving the Spare stage cancels it; back in spare, it is reserved again', async () => {
  w.ed = await mkToken(h.s, 'editor');
  const p = await pair();
  await stage(p.spare, { stage: 'diagnostic_repair', reason: 'fan noise' });
  await assertEnded(p, 'cancelled', 'the spare moved to diagnostic_repair');
  // not a spare now: nothing to reserve for the failing asset
  assert.equal((await runPair(p)).matches[0].actions[0].result, 'none_available');
  await stage(p.spare, { stage: 'spare', reason: 'fixed' });
  assert.deepEqual((await runPair(p)).matches[0].actions[0], { type: 'reserve_spare', result: 'reserved', spare: p.spare });
  [p.resv] = (await list(`asset=${p.fail}&state=reserved`)).items;
  // decommissioned, and an admin's override, cancel as well
  await stage(p.spare, { stage: 'decommissioned', reason: 'cracked board' });
  await assertEnded(p, 'cancelled', 'the spare moved to decommissioned');
  const q = await pair();
  const admin = (await events(q.fail, 'created'))[0].actor;
  await stage(q.spare, { stage: 'received', reason: 'sent back to the vendor', override: true }, true);
  await assertEnded(q, 'cancelled', 'the spare moved to received', admin);
  assert.deepEqual((await list(`model=${model}&state=cancelled`)).items.map((v) => v.id).sort(), [p.resv.id, q.resv.id, (await list(`asset=${p.spare}&state=cancelled`)).items[1].id].sort());
});

test('a move within the data center keeps it; leaving the data center cancels it', async () => {
  const p = await pair();
  ok(await h.s.api('PATCH', `/api/v1/assets/${p.spare}`, { auth: w.ed.token, body: { location: { datacenter: p.dc.name, room: 'r2', rack: 'R9' } } }));
  ok(await h.s.api('POST', '/api/v1/scans', { auth: w.ed.token, body: { tag: p.spare, location: { datacenter: p.dc.name, rack: 'R3' } } }), 201);
  assert.equal((await resv(p.resv.id)).state, 'reserved');
  assert.deepEqual(await events(p.spare, 'reservation'), []);
  // a scan check-in at another data center
  const other = await mkDc(h.s);
  ok(await h.s.api('POST', '/api/v1/scans', { auth: w.ed.token, body: { tag: p.spare, location: { datacenter: other.name } } }), 201);
  await assertEnded(p, 'cancelled', `the spare moved to data center ${other.name}`);
  // the spare is in another data center: none for the failing asset now
  assert.equal((await runPair(p)).matches[0].actions[0].result, 'none_available');
  // a PATCH of the data center
  const q = await pair();
  ok(await h.s.api('PATCH', `/api/v1/assets/${q.spare}`, { auth: w.ed.token, body: { location: { datacenter: other.name } } }));
  await assertEnded(q, 'cancelled', `the spare moved to data center ${other.name}`);
  // the failing asset moving keeps it (the spare still replaces it where it was)
  const r = await pair();
  ok(await h.s.api('PATCH', `/api/v1/assets/${r.fail}`, { auth: w.ed.token, body: { location: { datacenter: other.name } } }));
  assert.equal((await resv(r.resv.id)).state, 'reserved');
  // the data center's deletion takes the spare out of every one
  const d = await pair();
  ok(await h.s.api('DELETE', `/api/v1/datacenters/${d.dc.id}?force=true`, { auth: w.ed.token }), 204);
  await assertEnded(d, 'cancelled', 'the spare no longer has a data center');
});

test('a CSV import that moves the spare to another data center cancels it; its dry run does not', async () => {
  const p = await pair();
  const other = await mkDc(h.s);
  const csv = `Asset Tag,Location\r\n${p.spare},${other.name}\r\n`;
  const imp = (q = '') => h.s.api('POST', `/api/v1/assets/import${q}`, { auth: w.ed.token, body: csv, contentType: 'text/csv' });
  const dry = ok(await imp('?dry_run=true'));
  assert.deepEqual([dry.updated, dry.dry_run], [1, true]);
  assert.equal((await resv(p.resv.id)).state, 'reserved');
  assert.deepEqual(await events(p.spare, 'reservation'), []);
  assert.deepEqual(ok(await imp()).updated, 1);
  await assertEnded(p, 'cancelled', `the spare moved to data center ${other.name}`);
  // the same file again changes nothing and ends nothing twice
  assert.deepEqual(ok(await imp()).unchanged, 1);
  assert.equal((await events(p.spare, 'reservation')).length, 1);
});

test('the failing asset recovering makes it not needed; decommissioned keeps it', async () => {
  const p = await pair();
  await stage(p.fail, { stage: 'diagnostic_repair', reason: 'xid 79' });
  assert.equal((await resv(p.resv.id)).state, 'reserved');
  await stage(p.fail, { stage: 'active', reason: 'reseated' });
  const v = await assertEnded(p, 'not_needed', 'the asset returned to active');
  assert.equal(v.spare_stage, 'spare');
  assert.deepEqual((await list(`model=${model}&state=not_needed`)).items.map((x) => x.id), [p.resv.id]);
  // the spare is free: another failing asset there gets it
  const next = (await mkAsset({ tag: uniq('F2'), location: { datacenter: p.dc.name } })).tag;
  const rule = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('reserve'), condition: { attr: 'tag', in: [next] }, actions: [{ type: 'reserve_spare' }] },
  }), 201);
  const rep = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${rule.id}/run`));
  assert.deepEqual(rep.matches[0].actions[0], { type: 'reserve_spare', result: 'reserved', spare: p.spare });
  // returning to spare is a recovery too
  const q = await pair();
  await stage(q.fail, { stage: 'spare', reason: 'tested fine, kept in reserve' });
  await assertEnded(q, 'not_needed', 'the asset returned to spare');
  // decommissioned: the spare is still its replacement
  const r = await pair();
  await stage(r.fail, { stage: 'decommissioned', reason: 'burnt' });
  assert.equal((await resv(r.resv.id)).state, 'reserved');
  assert.deepEqual(await events(r.spare, 'reservation'), []);
});

test('expire_days is checked beside the other action fields', async () => {
  for (const bad of [0, -1, 'x', 4000, 1.5]) {
    assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', {
      body: { name: uniq('bad'), condition: { attr: 'tag', '=': 'x' }, actions: [{ type: 'reserve_spare', expire_days: bad }] },
    }), 400, { code: 'validation_failed', field: 'actions[0].expire_days' });
  }
  assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('bad'), condition: { attr: 'tag', '=': 'x' }, actions: [{ type: 'ticket', expire_days: 3 }] },
  }), 400, { field: 'actions[0].expire_days' });
});

test('an expiry: expire_days, PATCH expires_at, expired at the next rules run', async () => {
  const p = await pair({ expire_days: 3 });
  assert.equal(Date.parse(p.resv.expires_at) - Date.parse(p.resv.reserved_at), 3 * 86400 * 1000);
  assert.equal(w.rule && (await resv(w.resvA)).expires_at, null);
  const url = `/api/v1/reservations/${p.resv.id}`;
  const patch = (body, auth = w.ed.token) => h.s.api('PATCH', url, { auth, body });
  assertError(await patch({ expires_at: '2020-01-01T00:00:00Z' }), 400, { code: 'validation_failed', field: 'expires_at' });
  assertError(await patch({ expires_at: 'soon' }), 400, { field: 'expires_at' });
  assertError(await patch({}), 400);
  assertError(await patch({ expires_at: null, why: 1 }), 400);
  assertError(await h.s.api('PATCH', '/api/v1/reservations/99999999', { auth: w.ed.token, body: { expires_at: null } }), 404);
  const viewer = await mkToken(h.s, 'viewer');
  assertError(await patch({ expires_at: null }, viewer.token), 403);
  // a token of another data center does not see it
  const elsewhere = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('eo'), role: 'editor', datacenters: [w.dcB.id] } }), 201);
  assertError(await patch({ expires_at: null }, elsewhere.token), 404);
  // null: no expiry; then a time 2 s away
  assert.equal(ok(await patch({ expires_at: null })).expires_at, null);
  const soon = new Date((Math.floor(Date.now() / 1000) + 2) * 1000).toISOString().replace('.000Z', 'Z');
  const r = ok(await patch({ expires_at: soon }));
  assert.equal(r.expires_at, soon);
  assert.equal(r.state, 'reserved');
  for (const tag of [p.spare, p.fail]) {
    const ev = await events(tag, 'reservation');
    assert.deepEqual(ev.map((e) => e.detail.reason), [`it now expires at ${soon}`, 'it no longer expires'], tag);
    assert.equal(ev[0].detail.state, 'reserved');
    assert.equal(ev[0].actor, w.ed.name);
  }
  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=reservation&entity_id=${p.resv.id}`)).items;
  assert.deepEqual(audit.map((a) => a.action), ['update', 'update']);
  assert.equal(audit[0].after.expires_at, soon);
  // a run before the time ends nothing
  const before = await runPair(p);
  assert.deepEqual(before.matches[0].actions[0], { type: 'reserve_spare', result: 'existing', spare: p.spare });
  assert.equal(before.reservations_expired, 0);
  await new Promise((res) => setTimeout(res, 3200));
  // a dry run of every rule ends nothing and says so
  const dry = ok(await h.s.api('POST', '/api/v1/lifecycle-rules/evaluate', { auth: w.ed.token, body: { ids: [p.rule.id] } }));
  assert.equal(dry.dry_run, true);
  assert.equal(dry.reservations_expired, 0);
  assert.equal((await resv(p.resv.id)).state, 'reserved');
  // the run ends it first, then reserves the (free again) spare anew, for 3 days
  const after = await runPair(p);
  assert.deepEqual(after.matches[0].actions[0], { type: 'reserve_spare', result: 'reserved', spare: p.spare });
  assert.equal(after.reservations_expired, 1);
  await assertEnded(p, 'expired', 'the reservation expired');
  const [again] = (await list(`asset=${p.fail}&state=reserved`)).items;
  assert.notEqual(again.id, p.resv.id);
  assert.equal(Date.parse(again.expires_at) - Date.parse(again.reserved_at), 3 * 86400 * 1000);
  assert.deepEqual((await list(`model=${model}&state=expired`)).items.map((v) => v.id), [p.resv.id]);
  assertError(await patch({ expires_at: null }), 409, { code: 'conflict', field: 'state' });
  assertError(await h.s.api('POST', `${url}/release`, { auth: w.ed.token, body: {} }), 409, { field: 'state' });
});
