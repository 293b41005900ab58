// Push-back of assets no pull linked (created in gpuinv, imported by CSV):
// a stage or location change looks the asset up by serial at each push
// source serving its data center (NetBox ?serial=, Snipe-IT byserial),
// links it when exactly one object matches and pushes as for a linked
// asset; no match or several is a finding on the field "link", shown with
// the sync conflicts, and nothing is written. Keeping theirs stops the
// lookups; keeping ours looks it up again, and a match then settles the
// finding. An asset linked in one system is still looked up in the other
// (finding nothing there is no finding: the first system holds it).
// NetBox is asked only for what a device can be (not a GPU); a
// data center no source serves is not looked up. The sources are never
// pulled. Retries wait 1 s (--webhook-backoff-s 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, mkDc } from './helpers.mjs';
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

const api = (method, p, body) => h.s.api(method, p, body ? { body } : {});
const pushes = async (tag, system) =>
  ok(await api('GET', `/api/v1/sync-pushes?asset=${tag}`)).items.filter((p) => p.system === system);
/** The newest push of the asset to that system once it is no longer pending. */
const settled = (tag, system, n = 1) => waitFor(async () => {
  const list = await pushes(tag, system);
  return list.length >= n && list[0].state !== 'pending' ? list[0] : null;
}, `push ${n} of ${tag} to ${system}`);
const findings = async (tag, state = 'open') =>
  ok(await api('GET', `/api/v1/sync-conflicts?asset=${tag}&state=${state}`)).items.filter((k) => k.field === 'link');
const lookups = (system) => sb.requests.filter((r) => r.system === system &&
  (system === 'netbox' ? r.query.includes('serial=') : r.path.startsWith('/api/v1/hardware/byserial/')));
const mkAsset = async (fields) => ok(await api('POST', '/api/v1/assets', fields), 201);
const stage = async (tag, to) => ok(await api('POST', `/api/v1/assets/${tag}/stage`, { stage: to, reason: 'test' }));

before(async () => {
  sb = await startAssetStandin();
  await waitFor(() => h.s, 'the server');
  await mkDc(h.s, { name: 'fra1' });
  await mkDc(h.s, { name: 'zrh1' });
  sb.addDevice(301, { serial: 'LKSER0301', tag: 'NB-301', status: 'active' });
  sb.addDevice(302, { serial: 'LKDUP', tag: 'NB-302' });
  sb.addDevice(303, { serial: 'lkdup', tag: 'NB-303' });
  sb.addHardware(501, { serial: 'LKSN0501', tag: 'SN-501', status: 2 });
  nb = ok(await api('POST', '/api/v1/sources', { name: 'netbox-lookup', kind: 'netbox', enabled: false,
    config: { url: sb.base, token: NB_TOKEN, push: true, push_sites: { fra1: 1 } } }), 201);
  sn = ok(await api('POST', '/api/v1/sources', { name: 'snipe-lookup', kind: 'snipeit', enabled: false,
    config: { url: sb.base, token: SN_TOKEN, push: true, push_status_ids: { active: 2, spare: 4 },
      push_locations: { fra1: 7 } } }), 201);
  await mkAsset({ tag: 'LK-1', kind: 'server', serial: 'LKSER0301', location: { datacenter: 'fra1' } });
  await mkAsset({ tag: 'LK-2', kind: 'server', serial: 'LKDUP', location: { datacenter: 'fra1' } });
  await mkAsset({ tag: 'LK-3', kind: 'gpu', serial: 'LKSN0501', location: { datacenter: 'fra1' } });
  await mkAsset({ tag: 'LK-4', kind: 'server', serial: 'LKSER0301', location: { datacenter: 'zrh1' } });
});

after(() => sb.close());

test('exactly one NetBox device has the serial: linked, then pushed as a linked asset', async () => {
  const w0 = sb.writes('netbox').length;
  await stage('LK-1', 'spare');
  const p = await settled('LK-1', 'netbox');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { status: 'inventory' });
  const w = sb.writes('netbox').slice(w0);
  assert.deepEqual(w.map((r) => [r.method, r.path, r.body]), [['PATCH', '/api/dcim/devices/301/', { status: 'inventory' }]]);
  assert.equal(sb.devices[301].status.value, 'inventory');
  const nbLook = lookups('netbox');
  assert.equal(nbLook.length, 1);
  assert.equal(nbLook[0].query, '?serial=LKSER0301');
  assert.equal(nbLook[0].headers.authorization, 'Token ' + NB_TOKEN);
  const ev = ok(await api('GET', '/api/v1/assets/LK-1/events?limit=100')).items.filter((e) => e.kind === 'sync');
  assert.ok(ev.some((e) => e.detail.direction === 'link' && e.detail.system === 'netbox' && e.detail.remote_id === '301'
    && e.detail.by === 'serial'), JSON.stringify(ev));

  // Snipe-IT serves fra1 too and has no asset of that serial; NetBox
  // (asked first) now holds it, so that is no finding.
  const q = await settled('LK-1', 'snipeit');
  assert.equal(q.state, 'delivered', JSON.stringify(q));
  assert.ok(lookups('snipeit').some((r) => r.path.endsWith('/LKSER0301')));
  assert.deepEqual(await findings('LK-1'), []);
  assert.equal(sb.writes('snipeit').length, 0);

  // The next change uses the link: NetBox is read by id, not looked up again.
  await stage('LK-1', 'active');
  const p2 = await settled('LK-1', 'netbox', 2);
  assert.equal(p2.state, 'delivered');
  assert.deepEqual(p2.sent, { status: 'active' });
  assert.equal(lookups('netbox').length, 1);
  assert.equal(sb.devices[301].status.value, 'active');

  // Linked in NetBox, it is still looked up in Snipe-IT at each change;
  // once Snipe-IT has the serial, the asset is linked there too and
  // pushed to both.
  const snLook = () => lookups('snipeit').filter((r) => r.path.endsWith('/LKSER0301')).length;
  assert.equal((await settled('LK-1', 'snipeit', 2)).state, 'delivered');
  assert.equal(snLook(), 2);
  assert.deepEqual(await findings('LK-1'), []);
  sb.addHardware(502, { serial: 'LKSER0301', tag: 'SN-502', status: 2 });
  await stage('LK-1', 'spare');
  const q3 = await settled('LK-1', 'snipeit', 3);
  assert.equal(q3.state, 'delivered', JSON.stringify(q3));
  assert.deepEqual(q3.sent, { status: '4' });
  assert.equal(sb.hardware[502].status_label.name, 'Spare');
  assert.equal(snLook(), 3);
  assert.deepEqual(await findings('LK-1'), []);
  assert.equal((await settled('LK-1', 'netbox', 3)).state, 'delivered');
  assert.equal(sb.devices[301].status.value, 'inventory');
  // the next change reads both by id: no more lookups anywhere
  await stage('LK-1', 'active');
  assert.equal((await settled('LK-1', 'snipeit', 4)).state, 'delivered');
  assert.equal((await settled('LK-1', 'netbox', 4)).state, 'delivered');
  assert.equal(snLook(), 3);
  assert.equal(lookups('netbox').length, 1);
  const linked = ok(await api('GET', '/api/v1/assets/LK-1/events?limit=100')).items
    .filter((e) => e.kind === 'sync' && e.detail.direction === 'link').map((e) => [e.detail.system, e.detail.remote_id]);
  assert.deepEqual(linked.sort(), [['netbox', '301'], ['snipeit', '502']]);
});

test('two NetBox devices have the serial: a finding, nothing written; keeping theirs stops the lookups', async () => {
  const w0 = sb.writes('netbox').length;
  await stage('LK-2', 'spare');
  const p = await settled('LK-2', 'netbox');
  assert.equal(p.state, 'conflict', JSON.stringify(p));
  assert.equal(sb.writes('netbox').length, w0, 'nothing written');
  assert.equal(sb.devices[302].status.value, 'active');
  assert.equal(sb.devices[303].status.value, 'active');
  const f = (await findings('LK-2')).filter((k) => k.system === 'netbox');
  assert.deepEqual(f.map((k) => [k.ours, k.theirs]), [['LKDUP', '2 devices have this serial']]);
  // the finding shows on the asset's conflicts too
  const onAsset = ok(await api('GET', '/api/v1/assets/LK-2/conflicts')).items.filter((k) => k.system === 'netbox');
  assert.deepEqual(onAsset.map((k) => k.id), [f[0].id]);

  ok(await api('POST', `/api/v1/sync-conflicts/${f[0].id}/resolve`, { keep: 'theirs' }));
  const n = (await pushes('LK-2', 'netbox')).length;
  await stage('LK-2', 'active');
  await settled('LK-2', 'snipeit', 2);
  assert.equal((await pushes('LK-2', 'netbox')).length, n, 'no push queued for NetBox');
});

test('a GPU is looked up in Snipe-IT only; one match is linked and pushed', async () => {
  await stage('LK-3', 'spare');
  const p = await settled('LK-3', 'snipeit');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { status: '4' });
  assert.equal(sb.hardware[501].status_label.name, 'Spare');
  const look = lookups('snipeit').filter((r) => r.path.endsWith('/LKSN0501'));
  assert.equal(look.length, 1);
  assert.equal(look[0].headers.authorization, 'Bearer ' + SN_TOKEN);
  assert.deepEqual(await pushes('LK-3', 'netbox'), []);
  assert.ok(!lookups('netbox').some((r) => r.query.includes('LKSN0501')));
});

test('an asset in a data center no push source serves is not looked up', async () => {
  await stage('LK-4', 'spare');
  // the stage change is committed; no push was queued for it
  assert.deepEqual(ok(await api('GET', '/api/v1/sync-pushes?asset=LK-4')).items, []);
});

test('keeping ours looks it up again; a later match links it and settles the open finding', async () => {
  await mkAsset({ tag: 'LK-5', kind: 'server', serial: 'LKNEW', location: { datacenter: 'fra1' } });
  await stage('LK-5', 'spare');
  await settled('LK-5', 'netbox');
  const [f] = (await findings('LK-5')).filter((k) => k.system === 'netbox');
  assert.equal(f.theirs, 'no device has this serial');
  const n = lookups('netbox').length;
  const kept = ok(await api('POST', `/api/v1/sync-conflicts/${f.id}/resolve`, { keep: 'ours' }));
  await settled('LK-5', 'netbox', 2);
  assert.equal(lookups('netbox').length, n + 1, 'looked up again');
  const again = (await findings('LK-5')).filter((k) => k.system === 'netbox');
  assert.equal(again.length, 1);
  assert.notEqual(again[0].id, f.id);

  // The device appears in NetBox; the next change finds it.
  sb.addDevice(304, { serial: 'LKNEW', tag: 'NB-304', status: 'offline' });
  await stage('LK-5', 'active');
  const p = await settled('LK-5', 'netbox', 3);
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { status: 'active' });
  assert.equal(sb.devices[304].status.value, 'active');
  const all = (await findings('LK-5', 'all')).filter((k) => k.system === 'netbox');
  assert.deepEqual(all.map((k) => [k.resolution, k.resolved_by]), [['linked', 'sync:push'], ['ours', kept.resolved_by]]);
});
