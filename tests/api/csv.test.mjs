// CSV: every list exports as CSV with correct quoting and formula
// neutralization; the resource import validates every row first, reports
// each problem with line, column and reason, and writes all rows or none.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, parseCsv, uniq } from './helpers.mjs';

/** GETs a list as CSV and returns {header, rows (objects), raw}. */
async function getCsv(s, p, opts = {}) {
  const r = await s.api('GET', p, opts);
  assert.equal(r.status, 200, r.text);
  assert.match(r.headers.get('content-type'), /^text\/csv/);
  const table = parseCsv(r.text);
  const [header, ...body] = table;
  const rows = body.map((cells) => {
    assert.equal(cells.length, header.length, `ragged row: ${cells.join('|')}`);
    return Object.fromEntries(header.map((h, i) => [h, cells[i]]));
  });
  return { header, rows, raw: r.text, res: r };
}

const importCsv = (s, csv, query = '') =>
  s.api('POST', `/api/v1/resources/import${query}`, { body: csv, contentType: 'text/csv' });

describe('CSV export', () => {
  const h = useServer();

  test('every list answers ?format=csv with a header row and the same rows', async () => {
    const dc = await mkDc(h.s, { location: 'Hall 1, "North" wing' });
    const srv = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8, rack: 'R1', metadata: { owner: 'ml' } });
    await mkRes(h.s, dc.id, { kind: 'switch', ports: 48 });
    ok(await h.s.api('POST', `/api/v1/resources/${srv.id}/allocate`, { body: { tenant: 'acme' } }));
    await mkToken(h.s, 'viewer', 'csv-viewer');

    const dcs = await getCsv(h.s, '/api/v1/datacenters?format=csv');
    assert.deepEqual(dcs.header.slice(0, 4), ['id', 'name', 'location', 'rows']);
    assert.ok(dcs.header.includes('servers'));
    const row = dcs.rows.find((r) => r.id === String(dc.id));
    assert.equal(row.name, dc.name);
    assert.equal(row.location, 'Hall 1, "North" wing');
    assert.equal(row.servers, '1');
    assert.equal(row.switches, '1');
    // Quoting: the cell is quoted and its quotes doubled.
    assert.ok(dcs.raw.includes('"Hall 1, ""North"" wing"'), dcs.raw);
    assert.match(dcs.raw, /\r\n$/);
    assert.match(dcs.res.headers.get('content-disposition') || '', /attachment/);

    const json = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}`));
    const res = await getCsv(h.s, `/api/v1/resources?datacenter=${dc.id}&format=csv`);
    assert.equal(res.rows.length, json.total);
    for (const k of ['datacenter', 'kind', 'name', 'state', 'tenant', 'gpu_model', 'gpu_count', 'rack', 'ports', 'metadata'])
      assert.ok(res.header.includes(k), `resources CSV lacks ${k}: ${res.header}`);
    // Only columns the import reads back: no ids, versions or timestamps.
    for (const k of ['id', 'datacenter_id', 'version', 'created_at', 'updated_at'])
      assert.ok(!res.header.includes(k), `resources CSV has ${k}: ${res.header}`);
    assert.equal(res.header[0], 'datacenter');
    assert.match(res.res.headers.get('content-disposition') || '', new RegExp(`filename="resources-datacenter-${dc.id}-\\d{4}-\\d{2}-\\d{2}\\.csv"`));
    const srvRow = res.rows.find((r) => r.name === srv.name);
    assert.equal(srvRow.datacenter, dc.name);
    assert.equal(srvRow.state, 'in_use');
    assert.equal(srvRow.tenant, 'acme');
    assert.equal(srvRow.gpu_count, '8');
    assert.equal(srvRow.rack, 'R1');
    assert.equal(srvRow.ports, '');
    assert.deepEqual(JSON.parse(srvRow.metadata), { owner: 'ml' });

    const audit = await getCsv(h.s, '/api/v1/audit?format=csv');
    for (const k of ['actor', 'action', 'entity', 'entity_id']) assert.ok(audit.header.includes(k));
    assert.equal(audit.rows.length, ok(await h.s.api('GET', '/api/v1/audit')).total);
    const tokens = await getCsv(h.s, '/api/v1/tokens?format=csv');
    assert.ok(tokens.rows.some((t) => t.name === 'csv-viewer'));
    assert.ok(!tokens.header.includes('hash') && !tokens.header.includes('token'));

    // The file is named after the list and its filters.
    const gpus = await h.s.api('GET', '/api/v1/gpus?format=csv&state=in_use&limit=5');
    assert.match(gpus.headers.get('content-disposition'), /filename="gpus-state-in-use-\d{4}-\d{2}-\d{2}\.csv"/);
    // Accept: text/csv asks for the same thing.
    const viaAccept = await getCsv(h.s, `/api/v1/resources?datacenter=${dc.id}`, { headers: { Accept: 'text/csv' } });
    assert.equal(viaAccept.raw, res.raw);
    // Filters and sorting apply to the CSV as they do to JSON.
    const sw = await getCsv(h.s, `/api/v1/resources?datacenter=${dc.id}&kind=switch&format=csv`);
    assert.deepEqual(sw.rows.map((r) => r.kind), ['switch']);
    // A viewer may export.
    const v = await mkToken(h.s, 'viewer');
    await getCsv(h.s, '/api/v1/datacenters?format=csv', { auth: v.token });
  });

  test('cells a spreadsheet would run as formulas are neutralized', async () => {
    const dangerous = ['=HYPERLINK("http://x","y")', '+1+2', '-3+4', '@SUM(A1)'];
    const dcs = [];
    for (const d of dangerous) dcs.push(await mkDc(h.s, { name: `${d} ${uniq('f')}`, location: d }));
    const out = await getCsv(h.s, '/api/v1/datacenters?format=csv&q=' + encodeURIComponent(' f-'));
    for (const [i, d] of dangerous.entries()) {
      const row = out.rows.find((r) => r.id === String(dcs[i].id));
      assert.ok(row, `row for ${d}`);
      assert.equal(row.location, `'${d}`, 'a leading formula character gets an apostrophe');
      assert.ok(row.name.startsWith(`'${d}`));
      // No raw cell of the file starts with a formula character.
      for (const line of parseCsv(out.raw)) for (const cell of line) assert.ok(!/^[=+\-@]/.test(cell), cell);
    }
    // Numbers are not strings: a negative number would stay a number, and
    // plain text is untouched.
    const plain = await getCsv(h.s, `/api/v1/datacenters?format=csv&q=${encodeURIComponent(dcs[0].name)}`);
    assert.equal(plain.rows.length, 1);
  });

  test('a CSV export is not cut at the JSON page size', async () => {
    const dc = await mkDc(h.s, { name: uniq('big') });
    const lines = ['kind,name,gpu_count,gpu_model'];
    for (let i = 0; i < 150; i++) lines.push(`server,bulk-${String(i).padStart(3, '0')},8,H100`);
    const csv = lines.map((l) => `${dc.id},${l}`).join('\n').replace(`${dc.id},kind`, 'datacenter_id,kind');
    ok(await importCsv(h.s, csv), 201);
    const json = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}`));
    assert.equal(json.items.length, 100);
    assert.equal(json.total, 150);
    const out = await getCsv(h.s, `/api/v1/resources?datacenter=${dc.id}&format=csv&sort=name`);
    assert.equal(out.rows.length, 150);
    assert.deepEqual(out.rows.map((r) => r.name), lines.slice(1).map((l) => l.split(',')[1]));
    const limited = await getCsv(h.s, `/api/v1/resources?datacenter=${dc.id}&format=csv&limit=10`);
    assert.equal(limited.rows.length, 10);
  });
});

describe('CSV import', () => {
  const h = useServer();
  let dc;
  let dc2;
  const count = async (id) => ok(await h.s.api('GET', `/api/v1/resources?datacenter=${id}&limit=1`)).total;

  test('setup', async () => {
    dc = await mkDc(h.s, { name: 'Import Hall, East' });
    dc2 = await mkDc(h.s, { name: 'Import West' });
  });

  test('dry run reports every bad row with line, column and reason, and writes nothing', async () => {
    const csv = [
      'datacenter,kind,name,gpu_model,gpu_count,storage_type,metadata.note', // line 1
      '"Import Hall, East",server,ok-1,H100,8,,"two', // line 2 (cell spans two lines)
      'lines"',                                                              // line 3
      '"Import Hall, East",toaster,bad-kind,,,,', // line 4
      '"Import Hall, East",server,bad-count,H100,lots,,', // line 5
      'Nowhere,server,bad-dc,,,,', // line 6
      '"Import Hall, East",storage,bad-enum,,,tape,', // line 7
      '"Import Hall, East",server,ok-1,H100,8,,', // line 8: twice in the file
      '"Import Hall, East",server,bad-gpu,,4,,', // line 9: gpu_count without model
      '"Import Hall, East",server,,,,,', // line 10: no name
      'Import West,server,ok-2,A100,4,,', // line 11: fine
    ].join('\r\n') + '\r\n';
    const r = await importCsv(h.s, csv, '?dry_run=true');
    assertError(r, 422, { code: 'validation_failed' });
    const body = r.json;
    assert.equal(body.valid, false);
    assert.equal(body.rows, 9);
    const byLine = Object.fromEntries(body.errors.map((e) => [e.line, e]));
    const expect = {
      4: 'kind', 5: 'gpu_count', 6: 'datacenter', 7: 'storage_type', 8: 'name', 9: 'gpu_model', 10: 'name',
    };
    assert.deepEqual(Object.keys(byLine).map(Number).sort((a, b) => a - b), Object.keys(expect).map(Number),
      JSON.stringify(body.errors));
    assert.equal(body.error_count, Object.keys(expect).length);
    for (const [line, column] of Object.entries(expect)) {
      const e = byLine[line];
      assert.equal(e.column, column, `line ${line}: ${JSON.stringify(e)}`);
      assert.equal(typeof e.reason, 'string');
      assert.ok(e.reason.length > 3, `line ${line} gives a reason`);
    }
    assert.equal(await count(dc.id), 0);
    assert.equal(await count(dc2.id), 0);
  });

  test('a dry run of a good file validates and writes nothing', async () => {
    const csv = 'datacenter,kind,name,gpu_model,gpu_count\nImport West,server,dry-1,H100,8\nImport West,switch,dry-2,,\n';
    const r = ok(await importCsv(h.s, csv, '?dry_run=true'));
    assert.equal(r.valid, true);
    assert.equal(r.dry_run, true);
    assert.equal(r.rows, 2);
    assert.deepEqual(r.errors, []);
    assert.equal(await count(dc2.id), 0);
    assertError(await importCsv(h.s, csv, '?dry_run=perhaps'), 400, { field: 'dry_run' });
  });

  test('an import with one bad row writes nothing', async () => {
    const auditBefore = ok(await h.s.api('GET', '/api/v1/audit')).total;
    const csv = 'datacenter_id,kind,name,position\n' +
      `${dc2.id},server,one,1\n${dc2.id},server,two,2\n${dc2.id},server,three,300\n${dc2.id},server,four,4\n`;
    const r = await importCsv(h.s, csv);
    assertError(r, 422);
    assert.equal(r.json.errors.length, 1);
    assert.equal(r.json.errors[0].line, 4);
    assert.equal(r.json.errors[0].column, 'position');
    assert.equal(await count(dc2.id), 0);
    assert.equal(ok(await h.s.api('GET', '/api/v1/audit')).total, auditBefore);
  });

  test('a good import writes every row, by data center name, with metadata columns', async () => {
    const csv = '\uFEFFdatacenter, kind ,name,gpu_model,gpu_count,rack,position,state,tenant,metadata.owner,metadata.cost center,ports\r\n' +
      '"Import Hall, East",server,imp-1,H100,8,R1,10,,,ml-team,"1,200",\r\n' +
      '"Import Hall, East",server,imp-2,A100,4,R1,12,in_use,acme,,,\r\n' +
      '"Import Hall, East",switch,imp-sw,,,R9,,,,net,,64\r\n' +
      ',,,,,,,,,,,\r\n' + // an empty row is skipped
      'Import West,server,imp-3,,,,,,,,,\r\n';
    const r = ok(await importCsv(h.s, csv), 201);
    assert.equal(r.imported, 4);
    assert.equal(r.dry_run, false);
    const east = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}&sort=name`)).items;
    assert.deepEqual(east.map((x) => x.name), ['imp-1', 'imp-2', 'imp-sw']);
    const [i1, i2, sw] = east;
    assert.equal(i1.gpu_count, 8);
    assert.equal(i1.gpu_model, 'H100');
    assert.equal(i1.position, 10);
    assert.equal(i1.rack, 'R1');
    assert.equal(i1.state, 'available');
    assert.deepEqual(i1.metadata, { owner: 'ml-team', 'cost center': '1,200' });
    assert.equal(i2.state, 'in_use');
    assert.equal(i2.tenant, 'acme');
    assert.deepEqual(i2.metadata, {});
    // An imported tenancy is an open allocation interval.
    const i2full = ok(await h.s.api('GET', `/api/v1/resources/${i2.id}`));
    assert.equal(i2full.allocations.length, 1);
    assert.equal(i2full.allocations[0].ended_at, null);
    assert.equal(sw.kind, 'switch');
    assert.equal(sw.ports, 64);
    assert.deepEqual(sw.metadata, { owner: 'net' });
    const west = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc2.id}`)).items;
    assert.deepEqual(west.map((x) => x.name), ['imp-3']);
    // Each row is audited as a create.
    const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=resource&entity_id=${i1.id}`));
    assert.deepEqual(audit.items.map((a) => a.action), ['create']);
  });

  test('a row that clashes with a stored resource rolls the whole import back', async () => {
    const before = await count(dc.id);
    const csv = 'datacenter,kind,name\n"Import Hall, East",server,new-a\n"Import Hall, East",server,new-b\n' +
      '"Import Hall, East",server,imp-1\n';
    const r = await importCsv(h.s, csv);
    assertError(r, 409);
    assert.equal(r.json.errors[0].line, 4);
    assert.equal(r.json.errors[0].column, 'name');
    assert.equal(await count(dc.id), before);
    const names = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc.id}&q=new-`)).items;
    assert.deepEqual(names, []);
  });

  test('malformed CSV and structural problems are reported', async () => {
    assertError(await importCsv(h.s, ''), 400, { code: 'invalid_csv' });
    const unterminated = await importCsv(h.s, 'datacenter,kind,name\nImport West,server,"open\n');
    assertError(unterminated, 422);
    assert.equal(unterminated.json.errors[0].line, 2);
    assert.match(unterminated.json.errors[0].reason, /quote/);
    const wide = await importCsv(h.s, 'datacenter,kind,name\nImport West,server,w1,extra\n');
    assertError(wide, 422);
    assert.equal(wide.json.errors[0].line, 2);
    const unknownCol = await importCsv(h.s, 'datacenter,kind,name,colour\nImport West,server,c1,red\n');
    assertError(unknownCol, 422);
    assert.equal(unknownCol.json.errors[0].column, 'colour');
    const noDc = await importCsv(h.s, 'kind,name\nserver,x1\n');
    assertError(noDc, 422);
    assert.equal(noDc.json.errors[0].column, 'datacenter_id');
    assertError(await importCsv(h.s, 'datacenter,kind,name\nImport West,server,bad"quote\n'), 422);
    // Editors import; viewers may not.
    const v = await mkToken(h.s, 'viewer');
    assertError(await h.s.api('POST', '/api/v1/resources/import',
      { body: 'datacenter,kind,name\n', contentType: 'text/csv', auth: v.token }), 403);
    const e = await mkToken(h.s, 'editor');
    const hdrOnly = await h.s.api('POST', '/api/v1/resources/import',
      { body: 'datacenter,kind,name\n', contentType: 'text/csv', auth: e.token });
    assert.equal(hdrOnly.status, 201, hdrOnly.text);
    assert.equal(hdrOnly.json.imported, 0);
  });
});

describe('CSV round trip', () => {
  const from = useServer();
  const to = useServer();

  test('a resource export re-imports as it is into a fresh database, metadata included', async () => {
    const dc = await mkDc(from.s, { name: uniq('rt') });
    const weird = ['=SUM(A1)', "'=quoted", "''+two", '-leading', 'plain, "quoted"\nline'];
    const made = [];
    made.push(await mkRes(from.s, dc.id, { name: 'rt-srv', gpu_model: 'H100', gpu_count: 8, rack: 'R1', position: 7,
      state: 'in_use', tenant: weird[0], project: weird[1],
      metadata: { owner: weird[2], cost: 12.5, n: 3, ok: true, note: weird[4] } }));
    made.push(await mkRes(from.s, dc.id, { kind: 'switch', name: weird[3], ports: 48, speed_gbps: 400, metadata: {} }));
    made.push(await mkRes(from.s, dc.id, { kind: 'storage', name: 'rt-stor', storage_type: 'file', capacity_tb: 0.1,
      metadata: { tier: 'gold' } }));
    made.push(await mkRes(from.s, dc.id, { kind: 'infiniband', name: 'rt-ib', device_type: 'switch', generation: 'NDR' }));
    const exp = await from.s.api('GET', `/api/v1/resources?datacenter=${dc.id}&format=csv&sort=name`);
    assert.equal(exp.status, 200, exp.text);

    const dc2 = await mkDc(to.s, { name: dc.name });
    const imp = await to.s.api('POST', '/api/v1/resources/import', { body: exp.text, contentType: 'text/csv' });
    assert.equal(imp.status, 201, imp.text);
    assert.equal(imp.json.imported, made.length);

    const strip = (r) => {
      const o = { ...r };
      for (const k of ['id', 'datacenter_id', 'version', 'created_at', 'updated_at']) delete o[k];
      return o;
    };
    const a = ok(await from.s.api('GET', `/api/v1/resources?datacenter=${dc.id}&sort=name`)).items.map(strip);
    const b = ok(await to.s.api('GET', `/api/v1/resources?datacenter=${dc2.id}&sort=name`)).items.map(strip);
    assert.deepEqual(b, a);
    assert.deepEqual(b.find((r) => r.name === 'rt-srv').metadata, { owner: weird[2], cost: 12.5, n: 3, ok: true, note: weird[4] });
    assert.equal(b.find((r) => r.name === 'rt-srv').tenant, weird[0]);
    // Exported again, the file is byte for byte the same.
    const again = await to.s.api('GET', `/api/v1/resources?datacenter=${dc2.id}&format=csv&sort=name`);
    assert.equal(again.text, exp.text);
  });
});
