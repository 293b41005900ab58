// CSV import and export of hardware assets: Snipe-IT and NetBox style files
// (header aliases, locale amounts, "36 months", status names, custom
// columns, blank rows), the asset tag as the upsert key, dry runs, errors
// naming the line and column with nothing written, and the export
// importing back to the same assets.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, uniq, listAll, parseCsv, stopClean } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';

const importCsv = (s, csv, q = '') =>
  s.api('POST', `/api/v1/assets/import${q}`, { body: csv, contentType: 'text/csv' });
const count = async (s, q) => ok(await s.api('GET', `/api/v1/assets?${q}&limit=1`)).total;
const events = async (s) => ok(await s.api('GET', '/api/v1/asset-events?limit=1')).total;

describe('asset CSV import', () => {
  const h = useServer();
  let dc;
  let dc2;

  test('setup', async () => {
    dc = await mkDc(h.s);
    dc2 = await mkDc(h.s);
  });

  test('a Snipe-IT style file: aliases, locale amounts, months, status names, custom columns, blank rows', async () => {
    const p = uniq('SNP');
    const csv = [
      'Asset Tag,Item Name,Category,Manufacturer,Model Name,Serial Number,Status,Purchase Date,Purchase Cost,Order #,Supplier,Warranty,Location,Notes',
      `${p}-1,node one,GPU Server,Dell,R760xa,${p}-S1,Deployed,2024-01-31,"1,234.56",PO-1,Acme,36 months,${dc.name},top rack`,
      ',,,,,,,,,,,,,',
      `${p}-2,,Graphics Card,NVIDIA,H100 SXM,${p}-S2,Ready to Deploy,2024-02-29 00:00:00,"1.234,56",PO-2,Acme,24,${dc2.name},`,
      `${p}-3,,Power Supply,Delta,PWS-3K,${p}-S3,Archived,,"$ 99",,,,,`,
      '',
    ].join('\r\n');
    const r = ok(await importCsv(h.s, csv));
    assert.deepEqual([r.created, r.updated, r.unchanged, r.rows, r.dry_run], [3, 0, 0, 3, false]);
    const a1 = ok(await h.s.api('GET', `/api/v1/assets/${p}-1`));
    assert.equal(a1.kind, 'server');
    assert.equal(a1.vendor, 'Dell');
    assert.equal(a1.model, 'R760xa');
    assert.equal(a1.serial, `${p}-S1`);
    assert.equal(a1.stage, 'active');
    assert.equal(a1.purchase_cost.amount, '1234.56');
    assert.equal(a1.order_number, 'PO-1');
    assert.equal(a1.supplier, 'Acme');
    assert.equal(a1.warranty_end, '2027-01-31');
    assert.equal(a1.location.datacenter, dc.name);
    assert.equal(a1.source, 'csv');
    assert.deepEqual(a1.custom, { 'Item Name': 'node one', Notes: 'top rack' });
    const a2 = ok(await h.s.api('GET', `/api/v1/assets/${p}-2`));
    assert.equal(a2.kind, 'gpu');
    assert.equal(a2.stage, 'spare');
    assert.equal(a2.purchase_cost.amount, '1234.56');
    assert.equal(a2.purchase_date, '2024-02-29');
    assert.equal(a2.warranty_end, '2026-02-28');
    const a3 = ok(await h.s.api('GET', `/api/v1/assets/${p}-3`));
    assert.equal(a3.kind, 'psu');
    assert.equal(a3.stage, 'decommissioned');
    assert.equal(a3.purchase_cost.amount, '99.00');
    assert.equal(a3.warranty.status, 'unknown');
  });

  test('a NetBox style file: site, location as room, rack, position, statuses, device type and role', async () => {
    const p = uniq('NB');
    const csv = [
      'name,role,manufacturer,device_type,site,location,rack,position,status,serial,asset_tag',
      `${p}-a,GPU Server,Supermicro,SYS-821GE,${dc.name},hall-2,R12,40,active,${p}-SA,${p}-A`,
      `${p}-b,switch,NVIDIA,SN5600,${dc.name},hall-2,R12,42,planned,${p}-SB,${p}-B`,
      `${p}-c,GPU Server,Supermicro,SYS-821GE,${dc2.name},,,,failed,${p}-SC,${p}-C`,
    ].join('\n');
    const r = ok(await importCsv(h.s, csv));
    assert.equal(r.created, 3);
    const a = ok(await h.s.api('GET', `/api/v1/assets/${p}-A`));
    assert.equal(a.kind, 'server');
    assert.equal(a.model, 'SYS-821GE');
    assert.deepEqual(a.location, { datacenter: dc.name, room: 'hall-2', rack: 'R12', u: 40, storage: null });
    assert.equal(a.custom.name, `${p}-a`);
    const b = ok(await h.s.api('GET', `/api/v1/assets/${p}-B`));
    assert.equal(b.kind, 'switch');
    assert.equal(b.stage, 'ordered');
    assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${p}-C`)).stage, 'diagnostic_repair');
  });

  test('the asset tag is the upsert key; a status moves an existing asset as a stage change would', async () => {
    const p = uniq('UP');
    ok(await importCsv(h.s, `AssetTag,Category,Model,Serial No.,Order No.,Warranty Months,Purchase Date\n${p},NIC,CX7,${p}-s,O-1,12,2025-06-15\n`));
    const r = ok(await importCsv(h.s, `tag,model,status\n${p},CX7 dual,spare\n`));
    assert.deepEqual([r.created, r.updated, r.unchanged], [0, 1, 0]);
    const a = ok(await h.s.api('GET', `/api/v1/assets/${p}`));
    assert.equal(a.kind, 'nic');
    assert.equal(a.model, 'CX7 dual');
    assert.equal(a.order_number, 'O-1');
    assert.equal(a.warranty_end, '2026-06-15');
    assert.equal(a.stage, 'spare');
    const ev = ok(await h.s.api('GET', `/api/v1/assets/${p}/events`)).items;
    assert.deepEqual(ev.map((e) => e.kind), ['stage', 'updated', 'created']);
    assert.equal(ev[0].detail.reason, 'csv import');
    assert.equal(ok(await importCsv(h.s, `tag,model\n${p},CX7 dual\n`)).unchanged, 1);
  });

  test('a dry run says what the import would do and writes nothing', async () => {
    const p = uniq('DRY');
    const before = await events(h.s);
    const r = ok(await importCsv(h.s, `tag,kind\n${p}-1,ssd\n${p}-2,ssd\n`, '?dry_run=true'));
    assert.equal(r.dry_run, true);
    assert.equal(r.valid, true);
    assert.equal(r.created, 2);
    assert.equal(await count(h.s, `q=${p}`), 0);
    assert.equal(await events(h.s), before);
  });

  test('a bad line changes nothing and is named by line and column', async () => {
    const p = uniq('BAD');
    const before = await events(h.s);
    const good = `${p}-1,gpu,2024-01-01,100`;
    let res = await importCsv(h.s, `Asset Tag,Category,Purchase Date,Purchase Cost\n${good}\n${p}-2,gpu,2024-13-01,100\n`);
    assert.equal(res.status, 422, res.text);
    assert.equal(res.json.valid, false);
    assert.deepEqual(res.json.errors.map((e) => [e.line, e.column, e.field]), [[3, 'Purchase Date', 'purchase_date']]);
    res = await importCsv(h.s, `Asset Tag,Category,Purchase Date,Purchase Cost\n${good}\n${p}-2,gpu,2024-01-01,lots\n${p}-3,toaster,,\n`);
    assert.equal(res.status, 422);
    assert.deepEqual(res.json.errors.map((e) => [e.line, e.column]), [[3, 'Purchase Cost'], [4, 'Category']]);
    res = await importCsv(h.s, `tag,kind,location\n${p}-1,gpu,no-such-dc-${p}\n`);
    assert.equal(res.status, 422);
    assert.deepEqual(res.json.errors.map((e) => [e.line, e.column, e.field]), [[2, 'location', 'location.datacenter']]);
    res = await importCsv(h.s, `tag,kind\n${p}-1,gpu\n${p}-1,gpu\n`);
    assert.equal(res.status, 422);
    assert.equal(res.json.errors[0].line, 3);
    res = await importCsv(h.s, `tag,model\n${p}-new,X\n`);
    assert.equal(res.status, 422, 'a new asset needs a kind');
    assert.equal(res.json.errors[0].field, 'kind');
    assert.equal(res.json.errors[0].line, 2);
    assert.equal(await count(h.s, `q=${p}`), 0);
    // A stage the lifecycle refuses: 409, and the good line before it is undone too.
    const t = uniq('FIN');
    ok(await importCsv(h.s, `tag,kind,status\n${t},gpu,decommissioned\n`));
    const mid = await events(h.s);
    res = await importCsv(h.s, `tag,kind,status\n${p}-ok,gpu,active\n${t},gpu,active\n`);
    assert.equal(res.status, 409, res.text);
    assert.deepEqual(res.json.errors.map((e) => [e.line, e.column]), [[3, 'status']]);
    assert.equal(await count(h.s, `q=${p}`), 0);
    assert.equal(await events(h.s), mid);
    assert.ok(mid > before);
    assertError(await h.s.api('POST', '/api/v1/assets/import', { body: { tag: 'x' } }), 415);
    assertError(await importCsv(h.s, ''), 400);
  });

  test('the export imports back to the same assets, here and on a new server', async () => {
    const p = uniq('RT');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: `${p}-srv`, kind: 'server', serial: `${p}-s`,
      location: { datacenter: dc.name, room: 'r1', rack: 'A1', u: 3 }, purchase_date: '2023-05-05',
      purchase_cost: { amount: '12000.50', currency: 'EUR' }, depreciation_years: 4, salvage: '500',
      warranty_end: '2026-05-05', lease_end: '2027-01-01', supplier: 'S, Inc.', order_number: '=1+2',
      custom: { owner: 'ml', slots: 8, hot: true } } }), 201);
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag: `${p}-gpu`, kind: 'gpu', parent: `${p}-srv`,
      model: 'H200', epc: `E-${p}`, stage: 'received', location: { storage: 'shelf 4' } } }), 201);
    const q = `q=${p}`;
    const res = await h.s.api('GET', `/api/v1/assets?${q}&format=csv`);
    assert.equal(res.status, 200);
    const rows = parseCsv(res.text);
    assert.deepEqual(rows[0].slice(0, 12), ['tag', 'kind', 'serial', 'epc', 'vendor', 'model', 'parent', 'datacenter', 'room', 'rack', 'u', 'storage']);
    assert.equal(rows.length, 3);
    const evBefore = await events(h.s);
    const again = ok(await importCsv(h.s, res.text));
    assert.deepEqual([again.created, again.updated, again.unchanged], [0, 0, 2]);
    assert.equal(await events(h.s), evBefore);

    const strip = (a) => {
      const o = { ...a };
      for (const k of ['id', 'parent_id', 'datacenter_id', 'created_at', 'updated_at', 'stage_since', 'source',
        'children', 'book_value']) delete o[k];
      return o;
    };
    const mine = (await listAll(h.s, `/api/v1/assets?${q}`)).items.map(strip);
    const s2 = await startServer();
    try {
      for (const name of [dc.name, dc2.name]) {
        ok(await s2.api('POST', '/api/v1/datacenters', { body: { name, location: 'x', rows: 1 } }), 201);
      }
      const r2 = ok(await importCsv(s2, res.text));
      assert.equal(r2.created, 2);
      const theirs = (await listAll(s2, `/api/v1/assets?${q}`)).items.map(strip);
      assert.deepEqual(theirs, mine);
    } finally {
      await stopClean(s2);
    }
  });
});
