// CSV imports say exactly what they will do: a dry run answers what the
// import answers, conflicts with stored records included, and bytes that
// are not UTF-8 text, NUL bytes and repeated header columns are reported at
// their line and column instead of being dropped. Both importers: resources
// (POST /api/v1/resources/import) and GPUs (POST /api/v1/gpus/import).
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, mkDc, mkRes, mkToken, uniq } from './helpers.mjs';

const h = useServer();

/** POSTs raw bytes (a Buffer or a string) as text/csv. */
async function postCsv(s, path, bytes) {
  const res = await fetch(s.url + path, {
    method: 'POST',
    headers: { Authorization: 'Bearer ' + s.token, 'Content-Type': 'text/csv' },
    body: Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes, 'utf8'),
  });
  const text = await res.text();
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json };
}

const bytes = (...parts) => Buffer.concat(parts.map((p) => (Buffer.isBuffer(p) ? p : Buffer.from(p, 'utf8'))));
const where = (r) => r.json.errors.map((e) => `${e.line}:${e.column}`);

describe('resources', () => {
  const imp = (csv, q = '') => postCsv(h.s, '/api/v1/resources/import' + q, csv);
  const total = async (dc) => ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dc}&limit=1`)).total;
  const audits = async () => ok(await h.s.api('GET', '/api/v1/audit?entity=resource&limit=1')).total;

  test('a dry run meets every conflict with stored records that the import meets', async () => {
    const dc = await mkDc(h.s);
    await mkRes(h.s, dc.id, { name: 'taken-1' });
    await mkRes(h.s, dc.id, { name: 'taken-2' });
    const csv = `datacenter,kind,name\n${dc.name},server,fresh-1\n${dc.name},server,taken-1\n` +
      `${dc.name},server,fresh-2\n${dc.name},server,taken-2\n`;
    const before = await audits();
    const dry = await imp(csv, '?dry_run=true');
    assertError(dry, 409, { code: 'conflict' });
    assert.deepEqual(where(dry), ['3:name', '5:name'], 'every conflicting row, not only the first');
    assert.equal(await total(dc.id), 2, 'the dry run wrote nothing');
    assert.equal(await audits(), before, 'not even an audit row');

    const real = await imp(csv);
    assertError(real, 409, { code: 'conflict' });
    assert.deepEqual(real.json.errors, dry.json.errors, 'the dry run predicted the import');
    assert.equal(await total(dc.id), 2);
  });

  test('a clean dry run says what the import will write, and it does', async () => {
    const dc = await mkDc(h.s);
    const csv = `datacenter,kind,name,gpu_model,gpu_count\n${dc.name},server,a-1,H100,8\n${dc.name},switch,a-2,,\n`;
    const dry = ok(await imp(csv, '?dry_run=true'));
    assert.deepEqual([dry.valid, dry.dry_run, dry.rows, dry.would_import], [true, true, 2, 2]);
    assert.equal(await total(dc.id), 0);
    const real = ok(await imp(csv), 201);
    assert.equal(real.imported, dry.would_import);
    assert.equal(await total(dc.id), 2);
    // Imported once, the same file now conflicts on both rows, dry or not.
    assert.deepEqual(where(await imp(csv, '?dry_run=true')), ['2:name', '3:name']);
  });

  test('invalid UTF-8 and NUL bytes are reported at their line and column, and every row is checked', async () => {
    const dc = await mkDc(h.s);
    const csv = bytes(`datacenter,kind,name,rack\n${dc.name},server,ok-1,R1\n${dc.name},server,bad-1,M`,
      Buffer.from([0xfc]), `nchen\n${dc.name},server,"bad\n2`, Buffer.from([0x00]), `",R2\n`,
      `${dc.name},server,ok-2,R3\n`, `${dc.name},server,`, Buffer.from([0xc0, 0xaf]), `,R4\n`);
    for (const q of ['?dry_run=true', '']) {
      const r = await imp(csv, q);
      assertError(r, 422, { code: 'validation_failed' });
      assert.deepEqual(where(r), ['3:rack', '5:name', '7:name'], r.text);
      assert.match(r.json.errors[0].reason, /invalid UTF-8 at byte 2 of field 4/);
      assert.match(r.json.errors[1].reason, /NUL byte/);
      assert.equal(r.json.rows, 5);
    }
    assert.equal(await total(dc.id), 0);
  });

  test('a repeated header column is reported at line 1 instead of one value winning', async () => {
    const dc = await mkDc(h.s);
    for (const header of ['datacenter,kind,name,rack,rack', 'datacenter,kind,name,Rack, rack ']) {
      const r = await imp(`${header}\n${dc.name},server,dup-1,R1,R2\n`, '?dry_run=true');
      assertError(r, 422);
      assert.equal(r.json.errors[0].line, 1);
      assert.match(r.json.errors[0].column, /^ ?[Rr]ack ?$/);
      assert.match(r.json.errors[0].reason, /column 5 repeats the name of column 4/);
    }
    assert.equal(await total(dc.id), 0);
  });

  test('a value under a column without a header name is reported', async () => {
    const dc = await mkDc(h.s);
    const r = await imp(`datacenter,kind,name,\n${dc.name},server,nohead-1,lost\n${dc.name},server,nohead-2,\n`);
    assertError(r, 422);
    assert.deepEqual(where(r), ['2:#4']);
  });

  test('a header that is not UTF-8 is refused naming the line and column', async () => {
    const r = await imp(bytes('datacenter,kind,na', Buffer.from([0xff]), 'me\nx,server,y\n'));
    const e = assertError(r, 400, { code: 'invalid_csv' });
    assert.match(e.message, /line 1, column 3/);
  });
});

describe('GPUs', () => {
  const imp = (csv, q = '') => postCsv(h.s, '/api/v1/gpus/import' + q, csv);
  const U1 = 'GPU-c5f00000-0000-0000-0000-000000000001';
  const U2 = 'GPU-c5f00000-0000-0000-0000-000000000002';

  test('a dry run reports the hosts and identity events the import produces, and changes nothing', async () => {
    const pusher = await mkToken(h.s, 'pusher');
    ok(await h.s.api('POST', '/api/v1/ingest', { auth: pusher.token, body: {
      batch_id: uniq('b'), host: { hostname: 'sheet-host-a' }, gpus: [{ uuid: U1, serial: 'OLD-1', name: 'NVIDIA H100' }] } }), 201);
    const sheet = `Host,GPU UUID,Serial Number\nsheet-host-b,${U1},NEW-1\nsheet-host-b,${U2},S-2\n`;
    const dry = ok(await imp(sheet, '?dry_run=true&source=fidelity-sheet'));
    assert.deepEqual([dry.valid, dry.dry_run, dry.would_import, dry.hosts], [true, true, 2, 1]);
    assert.ok(dry.events >= 1, `moving host and serial are events: ${dry.text}`);
    const g = ok(await h.s.api('GET', `/api/v1/gpus/${U1}`));
    assert.equal(g.serial, 'OLD-1');
    assert.equal(g.host, 'sheet-host-a');
    assert.equal((await h.s.api('GET', `/api/v1/gpus/${U2}`)).status, 404);
    const sources = ok(await h.s.api('GET', '/api/v1/sources')).items.map((x) => x.name);
    assert.ok(!sources.includes('fidelity-sheet'), 'the dry run did not create the source');

    const real = ok(await imp(sheet, '?source=fidelity-sheet'), 201);
    assert.deepEqual([real.imported, real.hosts, real.events], [dry.would_import, dry.hosts, dry.events]);
    // The pusher reported U1 first and owns it: the sheet's serial is kept as a conflict.
    const u1 = ok(await h.s.api('GET', `/api/v1/gpus/${U1}`));
    assert.equal(u1.serial, 'OLD-1');
    assert.ok(u1.conflicts.some((c) => c.source === 'fidelity-sheet' && c.field === 'serial' && c.theirs === 'NEW-1'));
  });

  test('invalid UTF-8 and NUL bytes are reported at their line and header column', async () => {
    const sheet = bytes('Host,GPU UUID,Serial Number\n',
      `h-1,GPU-c5f00000-0000-0000-0000-000000000011,SN`, Buffer.from([0xe9]), '\n',
      `h-1,GPU-c5f00000-0000-0000-0000-000000000012,S2\n`,
      `h`, Buffer.from([0x00]), `-1,GPU-c5f00000-0000-0000-0000-000000000013,S3\n`);
    for (const q of ['?dry_run=true', '']) {
      const r = await imp(sheet, q);
      assertError(r, 422);
      assert.deepEqual(where(r), ['2:Serial Number', '4:Host'], r.text);
    }
    assert.equal((await h.s.api('GET', '/api/v1/gpus/GPU-c5f00000-0000-0000-0000-000000000012')).status, 404);
  });

  test('two columns answering to one field are reported, not silently chosen between', async () => {
    const r = await imp(`Host,GPU UUID,Serial,Serial Number\nh-2,${U2},A,B\n`, '?dry_run=true');
    assertError(r, 422);
    assert.equal(r.json.errors[0].line, 1);
    assert.equal(r.json.errors[0].column, 'Serial Number');
    assert.equal(r.json.errors[0].field, 'serial');
    // An explicit mapping settles it.
    ok(await imp(`Host,GPU UUID,Serial,Serial Number\nh-2,${U2},A,B\n`, '?dry_run=true&map.serial=Serial'));
    // The same name twice is one problem, reported with the header.
    const twice = await imp(`Host,GPU UUID,serial,serial\nh-2,${U2},A,B\n`, '?dry_run=true');
    assert.deepEqual(where(twice), ['1:serial']);
  });

  test('a value past the last header column is reported', async () => {
    const r = await imp(`Host,GPU UUID\nh-3,GPU-c5f00000-0000-0000-0000-000000000021,stray\nh-3,GPU-c5f00000-0000-0000-0000-000000000022,\n`);
    assertError(r, 422);
    assert.deepEqual(where(r), ['2:#3']);
  });
});
