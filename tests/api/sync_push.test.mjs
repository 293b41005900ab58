// Push-back to NetBox and Snipe-IT against a stand-in that keeps its
// objects (tests/lib/assets_standin.mjs): a scan sends the rack and
// position to NetBox, a stage change the status label to Snipe-IT, a field
// the remote changed since the last sync is not overwritten but shown as
// a conflict and resolved by keeping ours or theirs, a pull brings the
// remote's value as last synced, and 401 and 429 (Retry-After) answers
// are retried and logged with nothing lost. Retries wait 1 s
// (--webhook-backoff-s 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkDc, mkToken } from './helpers.mjs';
import { startAssetStandin, NB_TOKEN, SN_TOKEN } from '../lib/assets_standin.mjs';

const h = useServer({ args: ['--webhook-backoff-s', '1'] });
let sb;
let nb;
let sn;

async function waitFor(fn, what) {
  for (let i = 0; i < 150; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const api = (method, path, body) => h.s.api(method, path, body ? { body } : {});
const pull = async (src) => ok(await api('POST', `/api/v1/sources/${src.id}/run`)).run;
/** The pushes of the asset to the system that linked it (NB- assets NetBox,
 * SN- assets Snipe-IT); the other system only looks it up by serial. */
const linkedTo = (tag) => (tag.startsWith('NB-') ? 'netbox' : 'snipeit');
const allPushes = async (tag) => ok(await api('GET', `/api/v1/sync-pushes?asset=${tag}`)).items;
const pushes = async (tag) => (await allPushes(tag)).filter((p) => p.system === linkedTo(tag));
const conflicts = async (tag, state = 'open') =>
  ok(await api('GET', `/api/v1/assets/${tag}/conflicts?state=${state}`)).items;
/** The newest push of the asset once it is no longer pending. */
const settled = (tag) => waitFor(async () => {
  const p = (await pushes(tag))[0];
  return p && p.state !== 'pending' ? p : null;
}, `the push of ${tag}`);

before(async () => {
  sb = await startAssetStandin();
  await waitFor(() => h.s, 'the server');
  await mkDc(h.s, { name: 'fra1' });
  await mkDc(h.s, { name: 'ams1' });
  sb.addDevice(101, { serial: 'NBSER0101', tag: 'NB-101', rack: 'R01', position: 10 });
  sb.addDevice(102, { serial: 'NBSER0102', tag: 'NB-102', rack: 'R02', position: 5 });
  sb.addDevice(103, { serial: 'NBSER0103', tag: 'NB-103', rack: 'R03', position: 1, status: 'active' });
  sb.addHardware(201, { serial: 'SNSER0201', tag: 'SN-201' });
  sb.addHardware(202, { serial: 'SNSER0202', tag: 'SN-202' });
  sb.addHardware(203, { serial: 'SNSER0203', tag: 'SN-203' });
  // Disabled, so that the scheduler does not pull them beside the tests;
  // pushing does not depend on it.
  nb = ok(await api('POST', '/api/v1/sources', { name: 'netbox-push', kind: 'netbox', enabled: false,
    config: { url: sb.base, token: NB_TOKEN, push: true, push_sites: { fra1: 1, ams1: 2 } } }), 201);
  sn = ok(await api('POST', '/api/v1/sources', { name: 'snipe-push', kind: 'snipeit', enabled: false,
    config: { url: sb.base, token: SN_TOKEN, push: true,
      push_status_ids: { active: 2, spare: 4, diagnostic_repair: 5 }, push_locations: { fra1: 7, ams1: 8 } } }), 201);
  assert.equal(nb.config.push, true);
  assert.equal(nb.config.token, '(set)');
  assert.equal((await pull(nb)).ok, true);
  assert.equal((await pull(sn)).ok, true);
});

after(() => sb.close());

test('the push config is validated', async () => {
  assertError(await api('POST', '/api/v1/sources', { name: 'nb-bad', kind: 'netbox',
    config: { url: sb.base, push: 'yes' } }), 400, { field: 'config.push' });
  assertError(await api('POST', '/api/v1/sources', { name: 'nb-bad', kind: 'netbox',
    config: { url: sb.base, push_sites: { fra1: [1] } } }), 400, { field: 'config.push_sites' });
  assertError(await api('POST', '/api/v1/sources', { name: 'sn-bad', kind: 'snipeit',
    config: { url: sb.base, push_sites: {} } }), 400, { field: 'config.push_sites' });
});

test('a scan sends the new rack and position to NetBox, and only what changed', async () => {
  const before = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'NB-101', location: { datacenter: 'fra1', rack: 'R07', u: 22 } }), 201);
  const p = await settled('NB-101');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.equal(p.system, 'netbox');
  assert.deepEqual(p.sent, { rack: 'R07', position: '22' });
  const w = sb.writes('netbox').slice(before);
  assert.equal(w.length, 1);
  assert.equal(w[0].method, 'PATCH');
  assert.equal(w[0].path, '/api/dcim/devices/101/');
  assert.equal(w[0].headers.authorization, 'Token ' + NB_TOKEN);
  assert.match(w[0].headers['webhook-id'], /^push_\d+$/);
  assert.deepEqual(w[0].body, { rack: { name: 'R07' }, position: 22 });
  assert.equal(sb.devices[101].rack.name, 'R07');
  assert.equal(sb.devices[101].position, 22);
  const ev = ok(await api('GET', '/api/v1/assets/NB-101/events')).items.find((e) => e.kind === 'sync');
  assert.deepEqual({ ...ev.detail, fields: ev.detail.fields.sort() }, { system: 'netbox', direction: 'push', fields: ['position', 'rack'], conflicts: [] });
  // Snipe-IT serves fra1 too: it looks the server up by serial, has no
  // asset of it, and that is no finding (NetBox holds it); nothing written.
  const other = await waitFor(async () => {
    const q = (await allPushes('NB-101')).find((x) => x.system === 'snipeit');
    return q && q.state !== 'pending' ? q : null;
  }, 'the Snipe-IT lookup');
  assert.equal(other.state, 'delivered', JSON.stringify(other));
  assert.ok(sb.requests.some((r) => r.system === 'snipeit' && r.path === '/api/v1/hardware/byserial/NBSER0101'));
  assert.deepEqual(await conflicts('NB-101'), []);
  assert.ok(!sb.writes('snipeit').some((r) => r.path.includes('NBSER0101')));

  // A move to another data center sends the site by its mapped id, and a
  // stage change the NetBox status.
  const n = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'NB-101', location: { datacenter: 'ams1', rack: 'A1', u: 3 }, stage: 'spare' }), 201);
  await waitFor(() => sb.writes('netbox').length > n && sb.devices[101].status.value === 'inventory', 'the second push');
  assert.equal(sb.devices[101].site.name, 'ams1');
  assert.equal(sb.writes('netbox').at(-1).body.site, 2);
  assert.equal(sb.devices[101].rack.name, 'A1');
});

test('a stage change sends the mapped status label to Snipe-IT; a move checks the asset in there', async () => {
  const before = sb.writes('snipeit').length;
  ok(await api('POST', '/api/v1/assets/SN-201/stage', { stage: 'diagnostic_repair', reason: 'XID 79' }));
  const p = await settled('SN-201');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { status: '5' });
  const w = sb.writes('snipeit').slice(before);
  assert.deepEqual(w.map((r) => [r.method, r.path, r.body]), [['PATCH', '/api/v1/hardware/201', { status_id: 5 }]]);
  assert.equal(w[0].headers.authorization, 'Bearer ' + SN_TOKEN);
  assert.equal(sb.hardware[201].status_label.name, 'Out for Repair');

  // An active asset scanned in another data center is checked out to it.
  const n = sb.writes('snipeit').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'SN-202', location: { datacenter: 'ams1', rack: 'B2', u: 7 } }), 201);
  await waitFor(() => sb.hardware[202].location.name === 'ams1', 'the checkout');
  const co = sb.writes('snipeit').slice(n);
  assert.deepEqual(co.map((r) => [r.method, r.path]), [['POST', '/api/v1/hardware/202/checkout']]);
  assert.deepEqual(co[0].body.assigned_location, 8);
  assert.equal(co[0].body.checkout_to_type, 'location');
  assert.equal(sb.hardware[202].assigned_to.type, 'location');
});

test('a field the remote changed since the last sync is a conflict, not overwritten', async () => {
  // Someone moves the device in NetBox meanwhile.
  sb.devices[102].rack = { id: 999, name: 'R99' };
  sb.devices[102].position = 9;
  const before = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'NB-102', location: { datacenter: 'fra1', rack: 'R03', u: 6 } }), 201);
  const p = await settled('NB-102');
  assert.equal(p.state, 'conflict');
  assert.equal(sb.writes('netbox').length, before, 'nothing written');
  assert.equal(sb.devices[102].rack.name, 'R99');
  const open = await conflicts('NB-102');
  const byField = Object.fromEntries(open.map((k) => [k.field, k]));
  assert.deepEqual(Object.keys(byField).sort(), ['position', 'rack']);
  assert.equal(byField.rack.ours, 'R03');
  assert.equal(byField.rack.theirs, 'R99');
  assert.equal(byField.rack.base, 'R02');
  assert.equal(byField.rack.system, 'netbox');
  assert.equal(byField.rack.source, 'netbox-push');
  assert.equal(byField.position.ours, '6');
  assert.equal(byField.position.theirs, '9');
  const all = ok(await api('GET', '/api/v1/sync-conflicts')).items;
  assert.ok(all.some((k) => k.id === byField.rack.id));
  const ev = ok(await api('GET', '/api/v1/assets/NB-102/events')).items.find((e) => e.kind === 'sync');
  assert.deepEqual(ev.detail.conflicts.sort(), ['position', 'rack']);

  // Roles and validation.
  const viewer = await mkToken(h.s, 'viewer');
  assertError(await h.s.api('POST', `/api/v1/sync-conflicts/${byField.rack.id}/resolve`,
    { auth: viewer.token, body: { keep: 'ours' } }), 403);
  assertError(await api('POST', `/api/v1/sync-conflicts/${byField.rack.id}/resolve`, { keep: 'mine' }), 400, { field: 'keep' });
  assertError(await api('POST', '/api/v1/sync-conflicts/999999/resolve', { keep: 'ours' }), 404);

  // Theirs for the position: NetBox keeps 9 and gpuinv's 6 is not sent
  // again; ours for the rack: R03 is sent now.
  const kept = ok(await api('POST', `/api/v1/sync-conflicts/${byField.position.id}/resolve`, { keep: 'theirs' }));
  assert.equal(kept.resolution, 'theirs');
  assert.equal(typeof kept.resolved_at, 'string');
  assertError(await api('POST', `/api/v1/sync-conflicts/${byField.position.id}/resolve`, { keep: 'ours' }), 409);
  ok(await api('POST', `/api/v1/sync-conflicts/${byField.rack.id}/resolve`, { keep: 'ours' }));
  await waitFor(() => sb.devices[102].rack.name === 'R03', 'the rack pushed after keeping ours');
  const w = sb.writes('netbox').slice(before);
  assert.equal(w.length, 1);
  assert.deepEqual(w[0].body, { rack: { name: 'R03' } });
  assert.equal(sb.devices[102].position, 9);
  assert.deepEqual(await conflicts('NB-102'), []);
  assert.equal((await conflicts('NB-102', 'all')).length, 2);
});

test('a pull brings the remote value as last synced, so the next push is no conflict', async () => {
  sb.devices[103].status = { value: 'staged', label: 'Staged' };
  assert.equal((await pull(nb)).ok, true);
  ok(await api('POST', '/api/v1/assets/NB-103/stage', { stage: 'diagnostic_repair', reason: 'ECC' }));
  const p = await settled('NB-103');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { status: 'failed' });
  assert.equal(sb.devices[103].status.value, 'failed');
  assert.deepEqual(await conflicts('NB-103'), []);
});

test('a location edited through the API is pushed too', async () => {
  ok(await api('PATCH', '/api/v1/assets/NB-103', { rack: 'R44', rack_u: 30 }));
  await waitFor(() => sb.devices[103].rack && sb.devices[103].rack.name === 'R44', 'the edited rack');
  assert.equal(sb.devices[103].position, 30);
  assert.equal((await pushes('NB-103'))[0].reason, 'located');
});

test('401 and 429 answers are retried and logged; nothing is lost', async () => {
  sb.fail = { system: 'snipeit', code: 401, times: 2 };
  ok(await api('POST', '/api/v1/assets/SN-203/stage', { stage: 'spare', reason: 'pool' }));
  let p = await waitFor(async () => {
    const x = (await pushes('SN-203'))[0];
    return x && x.attempts >= 1 && x.last_status === 401 ? x : null;
  }, 'the refused attempt');
  assert.equal(p.state, 'pending');
  assert.match(p.last_error, /401.*token was refused/);
  p = await settled('SN-203');
  assert.equal(p.state, 'delivered');
  assert.equal(p.attempts, 3);
  assert.equal(sb.hardware[203].status_label.id, 4);

  sb.fail = { system: 'snipeit', code: 429, times: 1, retryAfter: 1 };
  ok(await api('POST', '/api/v1/assets/SN-203/stage', { stage: 'active', reason: 'back' }));
  await waitFor(async () => (await pushes('SN-203')).length === 2, 'the second push');
  p = await settled('SN-203');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.equal(p.attempts, 2);
  assert.equal(sb.hardware[203].status_label.id, 2);
});
