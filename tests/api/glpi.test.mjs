// FusionInventory / GLPI agents at POST /glpi: the HTTP Basic challenge the
// agents wait for, PROLOG answered with SEND in the request's encoding (zlib,
// gzip, plain), an INVENTORY stored as the machine's asset and its
// components' (again without duplicates), the push source's status, bad
// bodies, `gpuinv import glpi`, and the real fusioninventory-agent reporting
// to the test server when it is installed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync, accessSync, constants } from 'node:fs';
import { execFile } from 'node:child_process';
import zlib from 'node:zlib';
import { useServer, ok, assertError, mkToken, dbQuery, runCli, uniq, newDb } from './helpers.mjs';
import { checkReply } from '../lib/contract.mjs';
import { tempDir } from '../lib/server.mjs';

const h = useServer();
const FIX = new URL('../fixtures/glpi/', import.meta.url);
const fixture = (name) => readFileSync(new URL(name, FIX));

const basic = (password, user = 'agent') =>
  'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');

/**
 * POSTs bytes to a /glpi path as an agent would; the reply is checked
 * against the API description. Resolves to {status, headers, text, json,
 * bytes}.
 */
async function post(path, body, { auth, contentType = 'application/x-compress-zlib' } = {}) {
  const headers = { 'Content-Type': contentType };
  if (auth) headers.Authorization = auth;
  const res = await fetch(h.s.url + path, { method: 'POST', headers, body });
  const bytes = Buffer.from(await res.arrayBuffer());
  const text = bytes.toString('latin1');
  let json = null;
  try { json = JSON.parse(bytes.toString('utf8')); } catch { /* not JSON */ }
  const reply = { status: res.status, headers: res.headers, text, json, bytes };
  checkReply('POST', path, reply);
  return reply;
}

/** The reply's XML, decoded by its magic bytes as the agent does. */
function replyXml(res) {
  const b = res.bytes;
  if (b[0] === 0x78 && b[1] === 0x9c) return zlib.inflateSync(b).toString('utf8');
  if (b[0] === 0x1f && b[1] === 0x8b && b[2] === 0x08) return zlib.gunzipSync(b).toString('utf8');
  return b.toString('utf8');
}

const encode = {
  zlib: (x) => zlib.deflateSync(x),
  gzip: (x) => zlib.gzipSync(x),
  plain: (x) => Buffer.from(x),
};
const ctypes = { zlib: 'application/x-compress-zlib', gzip: 'application/x-compress-gzip', plain: 'application/xml' };

const prolog = (deviceid) => `<?xml version="1.0" encoding="UTF-8" ?>
<REQUEST><DEVICEID>${deviceid}</DEVICEID><QUERY>PROLOG</QUERY><TOKEN>12345678</TOKEN></REQUEST>`;

/** The fixture with its DEVICEID (and so its source) replaced. */
function withDeviceId(name, deviceid) {
  return fixture(name).toString('utf8').replace(/<DEVICEID>[^<]*<\/DEVICEID>/, `<DEVICEID>${deviceid}</DEVICEID>`);
}

async function assetsOf(source) {
  const out = await dbQuery(h.s.db, `SELECT kind, COALESCE(serial, ''), COALESCE(tag, ''), COALESCE(source_key, ''), ` +
    `COALESCE(parent_id, 0), id, custom FROM assets WHERE source = '${source.replace(/'/g, "''")}' ORDER BY id`);
  return out.trim().split('\n').filter(Boolean).map((l) => {
    const [kind, serial, tag, key, parent, id, ...custom] = l.split('|');
    return { kind, serial, tag, key, parent: Number(parent), id: Number(id), custom: JSON.parse(custom.join('|')) };
  });
}

test('without credentials /glpi answers 401 with a Basic challenge; wrong ones too', async () => {
  for (const path of ['/glpi', '/glpi/']) {
    const r = await post(path, encode.zlib(prolog('challenge-1')));
    assertError(r, 401, { code: 'unauthenticated' });
    assert.equal(r.headers.get('www-authenticate'), 'Basic realm="gpuinv"');
  }
  for (const auth of [basic('gpi_not-a-token'), basic(''), 'Basic !!!notbase64', 'Basic ' + Buffer.from('no-colon').toString('base64')]) {
    const r = await post('/glpi', encode.zlib(prolog('challenge-2')), { auth });
    assertError(r, 401);
    assert.equal(r.headers.get('www-authenticate'), 'Basic realm="gpuinv"');
  }
  // A viewer's token authenticates but may not push.
  const viewer = await mkToken(h.s, 'viewer');
  assertError(await post('/glpi', encode.zlib(prolog('challenge-3')), { auth: basic(viewer.token) }), 403);
});

test('HTTP Basic is accepted only on /glpi: the API still wants a bearer token', async () => {
  const res = await fetch(h.s.url + '/api/v1/gpus', { headers: { Authorization: basic(h.s.token) } });
  assert.equal(res.status, 401);
  assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="gpuinv"');
  // The same secret as a bearer token works there.
  ok(await h.s.api('GET', '/api/v1/gpus'));
});

test('PROLOG is answered with SEND and PROLOG_FREQ 24, encoded as the request was', async () => {
  const pusher = await mkToken(h.s, 'pusher');
  for (const enc of ['zlib', 'gzip', 'plain']) {
    for (const path of ['/glpi', '/glpi/']) {
      const r = await post(path, encode[enc](prolog(`prolog-${enc}`)), { auth: basic(pusher.token, 'any-user'), contentType: ctypes[enc] });
      assert.equal(r.status, 200, r.text);
      assert.equal(r.headers.get('content-type'), ctypes[enc]);
      if (enc === 'zlib') assert.deepEqual([...r.bytes.subarray(0, 2)], [0x78, 0x9c]);
      if (enc === 'gzip') assert.deepEqual([...r.bytes.subarray(0, 3)], [0x1f, 0x8b, 0x08]);
      const xml = replyXml(r);
      assert.match(xml, /^<\?xml [^>]*\?>\s*<REPLY><RESPONSE>SEND<\/RESPONSE><PROLOG_FREQ>24<\/PROLOG_FREQ><\/REPLY>\s*$/);
    }
  }
  // The encoding is told by the bytes, not the label: zlib sent as XML.
  const r = await post('/glpi', encode.zlib(prolog('prolog-mislabelled')), { auth: basic(pusher.token), contentType: 'application/xml' });
  assert.equal(r.status, 200);
  assert.match(replyXml(r), /<RESPONSE>SEND<\/RESPONSE>/);
  // An editor's or admin's token may report too.
  assert.equal((await post('/glpi', encode.zlib(prolog('prolog-admin')), { auth: basic(h.s.token) })).status, 200);
});

test('an INVENTORY creates the server asset and its children; a second one updates without duplicating', async () => {
  const pusher = await mkToken(h.s, 'pusher');
  const deviceid = uniq('gpu-node') + '-2024-03-20-10-11-12';
  const source = `glpi:${deviceid}`;
  const body = withDeviceId('gpu-server.xml', deviceid);
  const r = await post('/glpi', encode.zlib(body), { auth: basic(pusher.token) });
  assert.equal(r.status, 200, r.text);
  assert.match(replyXml(r), /<REPLY><\/REPLY>/);

  const first = await assetsOf(source);
  assert.equal(first.length, 10, JSON.stringify(first));
  const server = first.find((a) => a.kind === 'server');
  assert.equal(server.serial, 'S411823X3A07654');
  assert.equal(server.tag, 'DC1-0042');
  assert.equal(server.key, deviceid);
  assert.equal(server.custom.hostname, 'gpu-node-042');
  assert.equal(server.custom.cpu_count, 2);
  assert.equal(server.custom.memory_mib, 2063937);
  const counts = {};
  for (const a of first) counts[a.kind] = (counts[a.kind] || 0) + 1;
  assert.deepEqual(counts, { server: 1, gpu: 2, ssd: 2, nic: 3, psu: 2 });
  for (const a of first.filter((x) => x.kind !== 'server')) assert.equal(a.parent, server.id, `${a.kind} ${a.key}`);
  const gpu = first.find((a) => a.key === `${deviceid}/gpu/0000:18:00.0`);
  assert.ok(gpu, 'a GPU without a serial is keyed by device id and PCI slot');
  assert.equal(gpu.serial, '');
  assert.equal(gpu.custom.memory_mib, 81559);
  assert.equal(gpu.custom.pci_slot, '0000:18:00.0');

  // The same inventory again (gzip this time): nothing new, nothing changed.
  const events = Number((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM asset_events')).trim());
  assert.equal((await post('/glpi/', encode.gzip(body), { auth: basic(pusher.token), contentType: ctypes.gzip })).status, 200);
  const again = await assetsOf(source);
  assert.deepEqual(again.map((a) => a.id), first.map((a) => a.id));
  assert.equal(Number((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM asset_events')).trim()), events);

  // A changed inventory: a GPU's memory changes, a disk is added; the
  // rest stays, matched by serial or by source key.
  const changed = body.replace('<MEMORY>81559</MEMORY>', '<MEMORY>81920</MEMORY>')
    .replace('</CONTENT>', `<STORAGES><MANUFACTURER>Kioxia</MANUFACTURER><MODEL>CM7-R</MODEL>
      <NAME>nvme2n1</NAME><SERIALNUMBER>KX7R00012345</SERIALNUMBER><TYPE>disk</TYPE></STORAGES></CONTENT>`);
  assert.equal((await post('/glpi', encode.plain(changed), { auth: basic(pusher.token), contentType: ctypes.plain })).status, 200);
  const third = await assetsOf(source);
  assert.equal(third.length, 11);
  assert.deepEqual(third.slice(0, 10).map((a) => a.id), first.map((a) => a.id));
  assert.equal(third.find((a) => a.id === gpu.id).custom.memory_mib, 81920);
  const added = third.find((a) => a.serial === 'KX7R00012345');
  assert.equal(added.kind, 'ssd');
  assert.equal(added.parent, server.id);
});

test('each message is recorded on the pusher token\'s source: success, or the error', async () => {
  const name = uniq('glpi-src');
  const t = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name, role: 'pusher', source: name } }), 201);
  const src = async () => ok(await h.s.api('GET', '/api/v1/sources')).items.find((x) => x.name === name);
  const body = withDeviceId('vm-guest.xml', uniq('vm') + '-2025-02-03-04-05-06');
  assert.equal((await post('/glpi', encode.zlib(body), { auth: basic(t.token) })).status, 200);
  let s = await src();
  assert.equal(s.kind, 'push');
  assert.equal(s.last_error, null);
  assert.ok(s.last_success_at, 'the inventory counts as a success');
  assert.equal(s.gpus_last_report, 1, 'the GPUs of its latest inventory: the passed-through A100');
  // A broken body: 400 naming it, and the source says why.
  const bad = await post('/glpi', encode.zlib('<REQUEST><QUERY>INVENTORY</QUERY>'), { auth: basic(t.token) });
  assertError(bad, 400, { field: 'body' });
  s = await src();
  assert.match(s.last_error, /agent message refused: line \d+: XML/);
});

test('bad bodies: empty, not XML, truncated, a zip bomb, JSON', async () => {
  const t = await mkToken(h.s, 'pusher');
  const auth = basic(t.token);
  assertError(await post('/glpi', Buffer.alloc(0), { auth }), 400, { field: 'body' });
  const notXml = await post('/glpi', encode.plain('hello'), { auth, contentType: ctypes.plain });
  assertError(notXml, 400, { field: 'body' });
  const z = encode.zlib(withDeviceId('gpu-server.xml', 'truncated-1'));
  const trunc = await post('/glpi', z.subarray(0, z.length >> 1), { auth });
  assertError(trunc, 400, { field: 'body' });
  assert.match(trunc.json.error.message, /truncated/);
  // 32 MiB of nothing in a few KiB: stopped at the 16 MiB bound.
  const bomb = await post('/glpi', zlib.deflateSync(Buffer.concat([Buffer.from('<'), Buffer.alloc(32 << 20)])), { auth });
  assertError(bomb, 413, { code: 'too_large' });
  assertError(await post('/glpi', '{"action":"contact"}', { auth, contentType: 'application/json' }), 415);
  const root = await post('/glpi', encode.zlib('<REPLY/>'), { auth });
  assertError(root, 400);
  assert.match(root.json.error.message, /<REQUEST>/);
});

test('a machine without a usable serial is matched by its device id on the next report', async () => {
  const t = await mkToken(h.s, 'pusher');
  const deviceid = uniq('mi250') + '-2024-06-01-00-00-00';
  const body = encode.zlib(withDeviceId('no-serial.xml', deviceid));
  assert.equal((await post('/glpi', body, { auth: basic(t.token) })).status, 200);
  assert.equal((await post('/glpi', body, { auth: basic(t.token) })).status, 200);
  const assets = await assetsOf(`glpi:${deviceid}`);
  assert.deepEqual(assets.map((a) => a.kind).sort(), ['gpu', 'server', 'ssd']);
  assert.equal(assets.find((a) => a.kind === 'server').serial, '');
});

test('a push token confined to host patterns reports only those machines', async () => {
  const name = uniq('glpi-conf');
  const t = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name, role: 'pusher', source: name, hosts: 'gpu-node-*' } }), 201);
  const okBody = encode.zlib(withDeviceId('gpu-server.xml', uniq('conf-a')));
  assert.equal((await post('/glpi', okBody, { auth: basic(t.token) })).status, 200);
  const other = await post('/glpi', encode.zlib(withDeviceId('vm-guest.xml', uniq('conf-b'))), { auth: basic(t.token) });
  assertError(other, 403, { field: 'HARDWARE/NAME' });
});

test('gpuinv import glpi FILE stores the agent\'s own output; --dry-run writes nothing', async () => {
  const db = await newDb(tempDir('glpi-cli-'));
  const file = new URL('agent-debian12-docker.xml', FIX).pathname;
  const dry = await runCli(['import', 'glpi', file, '--db', db, '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  const d = JSON.parse(dry.stdout);
  assert.equal(d.source, 'glpi:vm-2026-12-01-17-37-37');
  assert.equal(d.report.created, 3);
  assert.equal(d.report.dry_run, true);
  const real = await runCli(['import', 'glpi', file, '--db', db]);
  assert.equal(real.code, 0, real.stderr);
  assert.equal(JSON.parse(real.stdout).report.created, 3);
  const rows = (await dbQuery(db, "SELECT kind FROM assets WHERE source = 'glpi:vm-2026-12-01-17-37-37' ORDER BY id")).trim().split('\n');
  assert.deepEqual(rows, ['server', 'ssd', 'nic']);
  const again = await runCli(['import', 'glpi', file, '--db', db]);
  assert.deepEqual(JSON.parse(again.stdout).report, { created: 0, updated: 0, unchanged: 3, errors: [], dry_run: false });
  // A PROLOG is no inventory; a broken file names what is wrong.
  const p = await runCli(['import', 'glpi', new URL('prolog.xml', FIX).pathname, '--db', db]);
  assert.equal(p.code, 1);
  assert.match(p.stderr, /a PROLOG message, not an INVENTORY/);
  const usage = await runCli(['import', 'glpi', '--db', db]);
  assert.equal(usage.code, 2);
});

// The real client: Debian's fusioninventory-agent runs the inventory of
// this machine and sends it through its own PROLOG, 401 challenge and zlib
// body.
const AGENT = '/usr/bin/fusioninventory-agent';
const VARDIR = '/var/lib/fusioninventory-agent';
function agentSkip() {
  if (!existsSync(AGENT)) return 'fusioninventory-agent is not installed (scripts/deps.sh installs it)';
  try { accessSync(existsSync(VARDIR) ? VARDIR : '/var/lib', constants.W_OK); } catch {
    return `fusioninventory-agent needs to write its state under ${VARDIR}`;
  }
  return false;
}

test('the real fusioninventory-agent reports to /glpi and its machine becomes an asset', { skip: agentSkip() }, async () => {
  const name = uniq('fusion');
  const t = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name, role: 'pusher', source: name } }), 201);
  const run = () => new Promise((resolve) => {
    execFile(AGENT, ['--server', `${h.s.url}/glpi`, '--user', 'x', '--password', t.token,
      '--tasks', 'inventory', '--force', '--no-httpd', '--no-fork', '--logger', 'stderr', '--debug',
      '--no-category', 'software,process,environment,local_user,local_group,user,printer,usb'],
    { timeout: 240000 }, (err, stdout, stderr) => resolve({ code: err ? err.code : 0, out: stdout + stderr }));
  });
  const glpiSources = async () => (await dbQuery(h.s.db,
    "SELECT DISTINCT source FROM assets WHERE source LIKE 'glpi:%' ORDER BY source")).trim().split('\n').filter(Boolean);
  const known = new Set(await glpiSources());
  const r = await run();
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /authentication required, submitting credentials/);
  assert.match(r.out, /sending prolog request/);
  assert.doesNotMatch(r.out, /\[error\]/, r.out);
  const s = ok(await h.s.api('GET', '/api/v1/sources')).items.find((x) => x.name === name);
  assert.ok(s.last_success_at, 'the agent\'s inventory is recorded on its source');
  assert.equal(s.last_error, null);
  // Its machine: the one new source, glpi:<the agent's device id>.
  const fresh = (await glpiSources()).filter((x) => !known.has(x));
  assert.equal(fresh.length, 1, fresh.join(', '));
  const mine = await assetsOf(fresh[0]);
  const machine = mine[0];
  assert.ok(['server', 'other'].includes(machine.kind), machine.kind);
  assert.equal(`glpi:${machine.key}`, fresh[0]);
  assert.ok(machine.custom.hostname, 'the host name is kept');
  // Children name a machine by its tag or serial; this container's has
  // neither (see docs/KNOWN-GAPS.md), so only then are they linked.
  if (machine.serial) for (const c of mine.slice(1)) assert.equal(c.parent, machine.id, c.key);
  // Once more: the same assets, none added.
  const before = Number((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM assets')).trim());
  const r2 = await run();
  assert.equal(r2.code, 0, r2.out);
  assert.equal(Number((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM assets')).trim()), before);
});
