// The first push of a field with no last-synced value (NetBox had no rack
// or position for the device when it was pulled): the push reads the
// remote's current value first, and one set meanwhile that differs from
// ours is a conflict, not overwritten, as for a field changed after a
// sync; a field the remote still has no value for is written. Keeping
// ours then writes it. Retries wait 1 s (--webhook-backoff-s 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, mkDc } from './helpers.mjs';
import { startAssetStandin, NB_TOKEN } from '../lib/assets_standin.mjs';

const h = useServer({ args: ['--webhook-backoff-s', '1'] });
let sb;
let nb;

async function waitFor(fn, what) {
  for (let i = 0; i < 150; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const api = (method, p, body) => h.s.api(method, p, body ? { body } : {});
const settled = (tag) => waitFor(async () => {
  const p = ok(await api('GET', `/api/v1/sync-pushes?asset=${tag}`)).items[0];
  return p && p.state !== 'pending' ? p : null;
}, `the push of ${tag}`);

before(async () => {
  sb = await startAssetStandin();
  await waitFor(() => h.s, 'the server');
  await mkDc(h.s, { name: 'fra1' });
  await mkDc(h.s, { name: 'ams1' });
  // no rack, no position: nothing to record as last synced for them
  sb.addDevice(401, { serial: 'FPSER0401', tag: 'FP-401' });
  sb.addDevice(402, { serial: 'FPSER0402', tag: 'FP-402' });
  nb = ok(await api('POST', '/api/v1/sources', { name: 'netbox-first', kind: 'netbox', enabled: false,
    config: { url: sb.base, token: NB_TOKEN, push: true, push_sites: { fra1: 1, ams1: 2 } } }), 201);
  assert.equal(ok(await api('POST', `/api/v1/sources/${nb.id}/run`)).run.ok, true);
});

after(() => sb.close());

test('a field never synced that the remote now holds another value for is a conflict', async () => {
  // Someone racks the device in NetBox after the pull.
  sb.devices[401].rack = { id: 990, name: 'R50' };
  const before = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'FP-401', location: { datacenter: 'fra1', rack: 'R07', u: 22 } }), 201);
  const p = await settled('FP-401');
  assert.equal(p.state, 'conflict', JSON.stringify(p));
  assert.equal(sb.devices[401].rack.name, 'R50', 'not overwritten');
  for (const w of sb.writes('netbox').slice(before)) assert.ok(!('rack' in w.body), JSON.stringify(w.body));
  const open = ok(await api('GET', '/api/v1/assets/FP-401/conflicts')).items;
  assert.deepEqual(open.map((k) => [k.field, k.ours, k.theirs, k.base]), [['rack', 'R07', 'R50', null]]);

  // Keeping ours writes it.
  ok(await api('POST', `/api/v1/sync-conflicts/${open[0].id}/resolve`, { keep: 'ours' }));
  await waitFor(() => sb.devices[401].rack.name === 'R07', 'the rack pushed after keeping ours');
  assert.deepEqual(ok(await api('GET', '/api/v1/assets/FP-401/conflicts')).items, []);
});

test('a field never synced that the remote still has no value for is written', async () => {
  const before = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'FP-402', location: { datacenter: 'fra1', rack: 'R08', u: 12 } }), 201);
  const p = await settled('FP-402');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { rack: 'R08', position: '12' });
  const w = sb.writes('netbox').slice(before);
  assert.equal(w.length, 1);
  assert.deepEqual(w[0].body, { rack: { name: 'R08' }, position: 12, face: 'front' });
  assert.equal(sb.devices[402].rack.name, 'R08');
  assert.deepEqual(ok(await api('GET', '/api/v1/assets/FP-402/conflicts')).items, []);
});
