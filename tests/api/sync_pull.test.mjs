// NetBox and Snipe-IT pull sources against a local stand-in that answers
// like those APIs (recorded pages in tests/fixtures/netbox and snipeit):
// token headers, paging by `next` URL and by offset/total, a `next` URL on
// another host, 401/403 shown on the source, 429 with Retry-After, errors
// answered with HTTP 200, HTML-escaped strings, locale money, a person's
// edit that a later pull leaves alone, and the config's write-only token.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { useServer, ok, assertError } from './helpers.mjs';

const h = useServer();
const fx = (dir, n) => readFileSync(new URL(`../fixtures/${dir}/${n}`, import.meta.url), 'utf8');
const NB_TOKEN = 'nb-reader-0123456789abcdef';
const SN_TOKEN = 'snipe-reader-eyJ0eXAiOiJKV1Qi';

let stand;
let base;
let elsewhere;
let elsewhereHits = 0;
const seen = [];
// What the stand-in does next, set by each test.
const mode = { netboxNext: 'same', netboxV2: false, snipeit: 'ok', limit429: null };

before(async () => {
  elsewhere = http.createServer((req, res) => { elsewhereHits++; res.writeHead(200).end('{}'); });
  await new Promise((r) => elsewhere.listen(0, '127.0.0.1', r));
  stand = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    seen.push({ path: u.pathname, query: u.search, auth: req.headers.authorization });
    const send = (code, body, headers = {}) =>
      res.writeHead(code, { 'Content-Type': 'application/json', ...headers }).end(body);
    if (u.pathname.startsWith('/api/dcim/')) {
      if (req.headers.authorization !== 'Token ' + NB_TOKEN) return send(403, fx('netbox', 'error-403.json'));
      if (!u.searchParams.get('limit')) return send(400, '{"detail":"no limit"}');
      const empty = '{"count":0,"next":null,"previous":null,"results":[]}';
      if (mode.netboxV2) return send(200, u.pathname === '/api/dcim/devices/' ? fx('netbox', 'devices-v2.json') : empty);
      if (u.pathname === '/api/dcim/devices/') {
        if (u.searchParams.get('offset') === '2') return send(200, fx('netbox', 'devices-page2.json'));
        const next = mode.netboxNext === 'same'
          ? `${base}/api/dcim/devices/?limit=${u.searchParams.get('limit')}&offset=2`
          : `http://127.0.0.1:${elsewhere.address().port}/api/dcim/devices/?offset=2`;
        return send(200, fx('netbox', 'devices-page1.json').replace('NEXT_URL', next).replace('PREV_URL', ''));
      }
      if (u.pathname === '/api/dcim/modules/') return send(200, fx('netbox', 'modules.json'));
      if (u.pathname === '/api/dcim/inventory-items/') return send(200, fx('netbox', 'inventory-items.json'));
      return send(404, '{"detail":"Not found."}');
    }
    if (u.pathname === '/api/v1/hardware') {
      if (req.headers.authorization !== 'Bearer ' + SN_TOKEN) return send(401, fx('snipeit', 'unauthenticated.json'));
      if (mode.limit429 !== null) {
        const wait = mode.limit429;
        if (wait === 1) mode.limit429 = null; // once
        return send(429, '{"message":"Too Many Attempts."}', { 'Retry-After': String(wait) });
      }
      if (mode.snipeit === 'error') return send(200, fx('snipeit', 'error-200.json'));
      const offset = Number(u.searchParams.get('offset'));
      return send(200, fx('snipeit', offset === 0 ? 'hardware-page1.json' : 'hardware-page2.json'));
    }
    return send(404, '{}');
  });
  await new Promise((r) => stand.listen(0, '127.0.0.1', r));
  base = 'http://127.0.0.1:' + stand.address().port;
});

after(() => { stand.close(); elsewhere.close(); });

// Disabled, so that the scheduler does not pull them beside the test.
async function source(name, kind, config) {
  return ok(await h.s.api('POST', '/api/v1/sources', { body: { name, kind, config, enabled: false } }), 201);
}
async function run(id) { return ok(await h.s.api('POST', `/api/v1/sources/${id}/run`)).run; }
const asset = async (tag) => ok(await h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tag)}`));

test('the config of both kinds is validated and the token is write-only', async () => {
  assertError(await h.s.api('POST', '/api/v1/sources', { body: { name: 'nb-bad', kind: 'netbox', config: {} } }), 400, { field: 'config.url' });
  assertError(await h.s.api('POST', '/api/v1/sources', { body: { name: 'nb-bad', kind: 'netbox', config: { url: base, tenant: 'x' } } }), 400, { field: 'config.tenant' });
  assertError(await h.s.api('POST', '/api/v1/sources', { body: { name: 'sn-bad', kind: 'snipeit', config: { url: base, site: 'fra1' } } }), 400, { field: 'config.site' });
  assertError(await h.s.api('POST', '/api/v1/sources', { body: { name: 'sn-bad', kind: 'snipeit', config: { url: 'ftp://x' } } }), 400, { field: 'config.url' });
  assertError(await h.s.api('POST', '/api/v1/sources', { body: { name: 'sn-bad', kind: 'snipeit', config: { url: base, page_size: 0 } } }), 400, { field: 'config.page_size' });
  const src = await source('sn-secret', 'snipeit', { url: base, token: SN_TOKEN, status: 'Deployed' });
  assert.equal(src.config.token, '(set)');
  const got = ok(await h.s.api('GET', `/api/v1/sources/${src.id}`));
  assert.ok(!JSON.stringify(got).includes(SN_TOKEN));
  ok(await h.s.api('DELETE', `/api/v1/sources/${src.id}`), 204);
});

test('NetBox devices, modules and inventory items become assets, paged by next URL', async () => {
  ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'Frankfurt 1', location: 'FRA', rows: 4 } }), 201);
  const src = await source('netbox-prod', 'netbox', { url: base, token: NB_TOKEN, page_size: 2 });
  seen.length = 0;
  const r = await run(src.id);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.assets.created, 8);
  assert.equal(r.gpus, 1);
  assert.ok(r.assets.warnings >= 1, 'the half rack unit and the unknown site are reported');
  assert.ok(seen.every((x) => x.auth === 'Token ' + NB_TOKEN));
  assert.ok(seen.some((x) => x.path === '/api/dcim/devices/' && x.query.includes('offset=2')), 'followed next');
  assert.ok(seen.filter((x) => x.path === '/api/dcim/devices/').every((x) => x.query.includes('limit=2')));

  const dgx = await asset('NB-0101');
  assert.equal(dgx.kind, 'server');
  assert.equal(dgx.serial, '1560323000123');
  assert.equal(dgx.model, 'DGX H100');
  assert.equal(dgx.vendor, 'NVIDIA');
  assert.equal(dgx.location.datacenter, 'Frankfurt 1');
  assert.equal(dgx.location.room, 'Hall B');
  assert.equal(dgx.location.rack, 'B07');
  assert.equal(dgx.location.u, 22);
  assert.equal(dgx.custom.external_status, 'active');
  assert.equal(dgx.source, `netbox:${src.id}`);
  assert.equal(dgx.source_key, 'netbox:device:101');
  assert.equal(dgx.children.length, 3, 'the GPU module, the NIC module and the PSU');

  const gpus = ok(await h.s.api('GET', '/api/v1/assets?kind=gpu')).items;
  const gpu = gpus.find((a) => a.serial === '1654922001234');
  assert.ok(gpu, JSON.stringify(gpus));
  assert.equal(gpu.parent, 'NB-0101');
  assert.equal(gpu.model, 'H100 SXM5 80GB');

  const sw = await asset('NB-0103');
  assert.equal(sw.kind, 'switch');
  assert.equal(sw.children.length, 1, 'the NVMe item');
  // NetBox's "planned" is shown, not applied: a pull never sets the stage.
  assert.equal(sw.custom.external_status, 'planned');
  assert.equal(sw.custom.external_stage, 'ordered');
  assert.notEqual(sw.stage, 'ordered');

  const all = ok(await h.s.api('GET', '/api/v1/assets?limit=100')).items;
  const failed = all.find((a) => a.source_key === 'netbox:device:102');
  assert.ok(failed);
  assert.equal(failed.custom.external_status, 'failed');
  assert.notEqual(failed.stage, 'diagnostic_repair');
  assert.equal(failed.location.datacenter, null, 'no data center is named Amsterdam');
  assert.equal(failed.location.rack, 'A01');

  // A second pull finds nothing new.
  const again = await run(src.id);
  assert.equal(again.ok, true);
  assert.equal(again.assets.created, 0);
  assert.equal(again.assets.updated, 0);
  assert.equal(again.assets.unchanged, 8);

  // A person's change is not overwritten by the next pull.
  ok(await h.s.api('PATCH', '/api/v1/assets/NB-0101', { body: { location: { rack: 'C01' } } }));
  assert.equal((await run(src.id)).ok, true);
  assert.equal((await asset('NB-0101')).location.rack, 'C01');
});

test('a refused NetBox token is shown on the source', async () => {
  const src = await source('netbox-badtoken', 'netbox', { url: base, token: 'wrong' });
  const r = await run(src.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /HTTP 403/);
  assert.match(r.error, /Invalid token/);
  const got = ok(await h.s.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(got.last_error, /NetBox answered HTTP 403/);
});

test('a next URL on another host is not followed', async () => {
  mode.netboxNext = 'elsewhere';
  try {
    const src = await source('netbox-moved', 'netbox', { url: base, token: NB_TOKEN });
    const r = await run(src.id);
    assert.equal(r.ok, false);
    assert.match(r.error, /another host/);
    assert.equal(elsewhereHits, 0, 'the token never went to the other host');
  } finally {
    mode.netboxNext = 'same';
  }
});

test('Snipe-IT hardware is paged by offset until total, decoded and stored', async () => {
  ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'Amsterdam', location: 'AMS', rows: 2 } }), 201);
  const src = await source('snipe', 'snipeit', { url: base, token: SN_TOKEN, page_size: 2 });
  seen.length = 0;
  const r = await run(src.id);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(r.assets.created, 3);
  const pages = seen.filter((x) => x.path === '/api/v1/hardware');
  assert.deepEqual(pages.map((x) => new URLSearchParams(x.query).get('offset')), ['0', '2']);
  assert.ok(pages.every((x) => x.auth === 'Bearer ' + SN_TOKEN && x.query.includes('limit=2')));

  const srv = await asset('SNIPE-0017');
  assert.equal(srv.kind, 'server');
  assert.equal(srv.supplier, 'B&H Systems');
  assert.equal(srv.custom.name, 'Render node "A" & spare');
  assert.equal(srv.custom['Rack & U'], 'B07 / 12');
  assert.equal(srv.custom.external_status, 'Ready to Deploy');
  assert.equal(Number(srv.purchase_cost.amount), 312450);
  assert.equal(srv.purchase_date, '2024-01-31');
  assert.equal(srv.warranty.end, '2027-01-31', '36 months from the purchase date');
  assert.equal(srv.location.datacenter, 'Frankfurt 1');
  assert.equal(srv.source_key, 'snipeit:hardware:17');

  const gpu = await asset('SNIPE-0018');
  assert.equal(gpu.kind, 'gpu');
  assert.equal(gpu.gpu_uuid, 'GPU-5c2b3a94-1f2e-4d7a-9a47-0e5f6c7d8e9f');
  assert.equal(Number(gpu.purchase_cost.amount), 1234.56, 'a 1.234,56 cost');
  assert.equal(gpu.location.datacenter, 'Amsterdam');

  // Unreadable fields are absent; the record is kept.
  const psu = await asset('SNIPE-0019');
  assert.equal(psu.serial, 'PSU<7>');
  assert.equal(psu.purchase_date, null);
  assert.equal(psu.location.datacenter, null);
  assert.ok(r.assets.warnings >= 4, JSON.stringify(r));
  // The dropped fields are counted on the source, the first one named.
  const after = ok(await h.s.api('GET', `/api/v1/sources/${src.id}`));
  assert.equal(after.warnings_total, r.assets.warnings);
  assert.match(after.last_warning, /^snipeit:hardware:19: purchase_date: must be a date$/);
});

test('Snipe-IT errors answered with HTTP 200, and a refused token, fail the pull', async () => {
  mode.snipeit = 'error';
  try {
    const src = await source('snipe-err', 'snipeit', { url: base, token: SN_TOKEN });
    const r = await run(src.id);
    assert.equal(r.ok, false);
    assert.match(r.error, /The limit must be an integer/);
    assert.match(ok(await h.s.api('GET', `/api/v1/sources/${src.id}`)).last_error, /limit/);
  } finally {
    mode.snipeit = 'ok';
  }
  const bad = await source('snipe-401', 'snipeit', { url: base, token: 'expired' });
  const r = await run(bad.id);
  assert.equal(r.ok, false);
  assert.match(r.error, /Snipe-IT answered HTTP 401 \(the token was refused\): Unauthenticated\./);
});

test('a 429 with a short Retry-After is waited out; a long one fails the pull', async () => {
  const src = await source('snipe-busy', 'snipeit', { url: base, token: SN_TOKEN });
  mode.limit429 = 1;
  seen.length = 0;
  const r = await run(src.id);
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(seen.filter((x) => x.path === '/api/v1/hardware' && new URLSearchParams(x.query).get('offset') === '0').length, 2, JSON.stringify(seen));
  mode.limit429 = 120;
  try {
    const r2 = await run(src.id);
    assert.equal(r2.ok, false);
    assert.match(r2.error, /HTTP 429 \(rate limited; retry after 120 s\)/);
    assert.match(ok(await h.s.api('GET', `/api/v1/sources/${src.id}`)).last_error, /429/);
  } finally {
    mode.limit429 = null;
  }
});

test('NetBox 2 answers (integer status, device_role) and a site found by its slug', async () => {
  ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'fra1', location: 'FRA', rows: 1 } }), 201);
  mode.netboxV2 = true;
  try {
    const src = await source('netbox-old', 'netbox', { url: base + '/', token: NB_TOKEN, device_role: 'compute' });
    seen.length = 0;
    const r = await run(src.id);
    assert.equal(r.ok, true, JSON.stringify(r));
    assert.equal(r.assets.created, 2, 'the result that is not an object is skipped, the rest kept');
    assert.ok(seen.some((x) => x.path === '/api/dcim/devices/' && x.query.includes('device_role=compute')));
    const items = ok(await h.s.api('GET', '/api/v1/assets?limit=100')).items;
    const old = items.find((a) => a.source_key === 'netbox:device:7');
    assert.ok(old, JSON.stringify(items.map((a) => a.source_key)));
    assert.equal(old.serial, 'S123456X');
    assert.equal(old.location.datacenter, 'fra1', 'no data center is named "Old DC"; its slug is');
    assert.equal(old.custom.external_status, 'inventory');
    assert.equal(old.custom.role, 'Compute');
    assert.match(old.tag, /^GI-/, 'a NetBox asset tag gpuinv cannot hold is not used');
    const pdu = items.find((a) => a.source_key === 'netbox:device:8');
    assert.equal(pdu.kind, 'other');
    assert.equal(pdu.serial, null, 'a number where text belongs is dropped');
  } finally {
    mode.netboxV2 = false;
  }
});
