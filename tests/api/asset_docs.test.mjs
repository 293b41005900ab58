// The asset list is made of the documents stored at each write: after every
// kind of change (create, patch, stage change, scan and move, custom
// fields, CSV import, a Snipe-IT pull, a renamed data center and a renamed
// parent) every listed asset equals GET /api/v1/assets/{tag}, member for
// member and in the same order, and every asset has its stored document.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { useServer, ok, mkDc, uniq, listAll, dbQuery } from './helpers.mjs';

const h = useServer();
const SN_TOKEN = 'snipe-reader-docs-0123456789';
const fx = (n) => readFileSync(new URL(`../fixtures/snipeit/${n}`, import.meta.url), 'utf8');
let stand;
let base;

before(async () => {
  stand = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://x');
    const send = (code, body) => res.writeHead(code, { 'Content-Type': 'application/json' }).end(body);
    if (u.pathname !== '/api/v1/hardware') return send(404, '{}');
    if (req.headers.authorization !== 'Bearer ' + SN_TOKEN) return send(401, fx('unauthenticated.json'));
    return send(200, fx(Number(u.searchParams.get('offset')) === 0 ? 'hardware-page1.json' : 'hardware-page2.json'));
  });
  await new Promise((r) => stand.listen(0, '127.0.0.1', r));
  base = 'http://127.0.0.1:' + stand.address().port;
});
after(() => stand.close());

const get = async (tag) => ok(await h.s.api('GET', `/api/v1/assets/${encodeURIComponent(tag)}`));
const patch = async (tag, body) => ok(await h.s.api('PATCH', `/api/v1/assets/${encodeURIComponent(tag)}`, { body }));

/** Every listed asset (all of them, in pages) against its own GET. */
async function listedAsRead(tags) {
  const { items, total } = await listAll(h.s, '/api/v1/assets?limit=7');
  assert.equal(items.length, total);
  const byTag = new Map(items.map((a) => [a.tag, a]));
  for (const tag of tags) assert.ok(byTag.has(tag), `${tag} is listed`);
  for (const item of items) {
    const one = await get(item.tag);
    // What only the single read has.
    delete one.children;
    delete one.health;
    delete one.energy_wh;
    assert.deepEqual(Object.keys(item), Object.keys(one), item.tag);
    assert.deepEqual(item, one, item.tag);
  }
  const missing = (await dbQuery(h.s.db, 'SELECT COUNT(*) FROM assets WHERE doc IS NULL')).trim();
  assert.equal(missing, '0', 'every asset has its stored document');
  return byTag;
}

let dc;
let dc2;
const p = uniq('DOC');

test('create', async () => {
  dc = await mkDc(h.s);
  dc2 = await mkDc(h.s);
  ok(await h.s.api('POST', '/api/v1/assets', { body: {
    tag: `${p}-S`, kind: 'server', serial: `${p}-SN`, vendor: 'Dell', model: 'R760 "xa" \\ é',
    location: { datacenter: dc.name, room: 'hall-1', rack: 'R07', u: 12 },
    purchase_date: '2024-03-01', purchase_cost: { amount: '25000.00', currency: 'USD' },
    warranty_end: '2027-03-01', depreciation_years: 2.5, salvage: '1000', custom: { owner: 'infra', cores: 96 },
  } }), 201);
  ok(await h.s.api('POST', '/api/v1/assets', { body: {
    tag: `${p}-G`, kind: 'gpu', serial: `${p}-GS`, parent: `${p}-S`, model: 'H100',
    purchase_date: '2020-01-01', purchase_cost: { amount: '999.99' }, depreciation_years: 3,
    warranty_end: new Date(Date.now() + 10 * 86400e3).toISOString().slice(0, 10),
  } }), 201);
  ok(await h.s.api('POST', '/api/v1/assets', { body: { kind: 'psu' } }), 201);
  const listed = await listedAsRead([`${p}-S`, `${p}-G`]);
  assert.equal(listed.get(`${p}-G`).warranty.status, 'expiring');
  assert.equal(listed.get(`${p}-G`).parent, `${p}-S`);
  assert.equal(listed.get(`${p}-S`).location.datacenter, dc.name);
});

test('patch and custom fields', async () => {
  await patch(`${p}-S`, { model: 'R760xa', warranty_end: '2020-01-01', location: { datacenter: dc2.name, rack: 'R09' } });
  await patch(`${p}-G`, { custom: { slot: 3, note: 'fan "noisy"', ok: true } });
  const listed = await listedAsRead([`${p}-S`, `${p}-G`]);
  assert.equal(listed.get(`${p}-S`).warranty.status, 'expired');
  assert.deepEqual(listed.get(`${p}-G`).custom, { slot: 3, note: 'fan "noisy"', ok: true });
});

test('stage change', async () => {
  ok(await h.s.api('POST', `/api/v1/assets/${p}-G/stage`, { body: { stage: 'diagnostic_repair', reason: 'xid' } }));
  const listed = await listedAsRead([`${p}-G`]);
  assert.equal(listed.get(`${p}-G`).stage, 'diagnostic_repair');
});

test('scan and move', async () => {
  ok(await h.s.api('POST', '/api/v1/scans', { body: { tag: `${p}-G`, location: { datacenter: dc.name, storage: 'shelf-2' }, note: 'n' } }), 201);
  const listed = await listedAsRead([`${p}-G`]);
  assert.deepEqual(listed.get(`${p}-G`).location, { datacenter: dc.name, room: null, rack: null, u: null, storage: 'shelf-2' });
});

test('CSV import', async () => {
  const csv = [
    'Asset Tag,Category,Model Name,Serial Number,Purchase Date,Purchase Cost,Warranty,Location',
    `${p}-C1,Graphics Card,A100,${p}-CS1,2023-05-01,"1,234.56",36 months,${dc2.name}`,
    `${p}-S,Servers,R760xb,${p}-SN,2024-03-01,25000,12,${dc.name}`,
  ].join('\n');
  ok(await h.s.api('POST', '/api/v1/assets/import', { body: csv, contentType: 'text/csv' }));
  const listed = await listedAsRead([`${p}-C1`, `${p}-S`]);
  assert.equal(listed.get(`${p}-S`).model, 'R760xb');
});

test('a Snipe-IT pull', async () => {
  ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'Frankfurt 1', location: 'FRA', rows: 4 } }), 201);
  const src = ok(await h.s.api('POST', '/api/v1/sources', { body: {
    name: 'snipe-docs', kind: 'snipeit', config: { url: base, token: SN_TOKEN, page_size: 2 }, enabled: false,
  } }), 201);
  const r = ok(await h.s.api('POST', `/api/v1/sources/${src.id}/run`)).run;
  assert.equal(r.ok, true, JSON.stringify(r));
  const listed = await listedAsRead(['SNIPE-0017', 'SNIPE-0018']);
  assert.equal(listed.get('SNIPE-0017').location.datacenter, 'Frankfurt 1');
});

test('a renamed data center and a renamed parent', async () => {
  const name = uniq('dc-renamed');
  ok(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { name } }));
  await patch(`${p}-S`, { tag: `${p}-S2` });
  const listed = await listedAsRead([`${p}-S2`, `${p}-G`]);
  assert.equal(listed.get(`${p}-G`).parent, `${p}-S2`);
  assert.equal(listed.get(`${p}-G`).location.datacenter, name);
});
