// The API description: served without credentials, equal to the file in
// the repository, and usable by a schema validator. Every other suite's
// replies (and the bodies the server accepted) are checked against it by
// the harness (tests/lib/contract.mjs); the checks here show that the
// checker itself catches a mismatch.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { useServer, ok, listAll } from './helpers.mjs';
import { DOC_FILE, openapi, checkReply, compileAll, findOperation } from '../lib/contract.mjs';

// Compiling every schema (below) can outlast the server's default idle
// timeout on a loaded machine; the next POST would then go out on a kept-
// alive connection the server has closed.
const h = useServer({ args: ['--idle-timeout', '600'] });

test('GET /api/v1/openapi.json needs no token and serves the repository file as it is', async () => {
  const r = await h.s.api('GET', '/api/v1/openapi.json', { auth: null });
  ok(r);
  assert.match(r.headers.get('content-type'), /^application\/json/);
  assert.equal(r.text, readFileSync(DOC_FILE, 'utf8'));
  assert.equal(r.json.openapi, '3.1.0');
  assert.ok(Object.keys(r.json.paths).length > 20);
  // A bad token does not matter either: the route is public.
  ok(await h.s.api('GET', '/api/v1/openapi.json', { auth: 'gpi_not-a-token' }));
});

test('security schemes: bearer token and the session cookie', () => {
  const ss = openapi.components.securitySchemes;
  assert.deepEqual(ss.bearerAuth, { ...ss.bearerAuth, type: 'http', scheme: 'bearer' });
  assert.equal(ss.sessionCookie.in, 'cookie');
  assert.equal(ss.sessionCookie.name, 'gpuinv_session');
});

test('paths are matched as the server matches them', () => {
  assert.equal(findOperation('GET', '/api/v1/gpus/GPU-1234').path, '/api/v1/gpus/{uuid}');
  assert.equal(findOperation('POST', '/api/v1/gpus/import').path, '/api/v1/gpus/import');
  assert.equal(findOperation('GET', '/api/v1/datacenters/12?x=1').path, '/api/v1/datacenters/{id}');
  assert.equal(findOperation('GET', '/api/v1/datacenters/abc'), null);
  assert.equal(findOperation('PUT', '/api/v1/datacenters/1').op, null);
});

/** A fake reply for the checker. */
function reply(status, body, type = 'application/json') {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  let json = null;
  try { json = JSON.parse(text); } catch { /* not JSON */ }
  return { status, text, json, headers: new Headers(type ? { 'content-type': type } : {}) };
}

test('the checker refuses replies the document does not describe', async () => {
  const dc = ok(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'contract-dc' } }), 201);
  const good = reply(200, dc);
  checkReply('GET', `/api/v1/datacenters/${dc.id}`, good);
  // A field of the wrong type, a missing field, an undocumented field.
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(200, { ...dc, rows: '4' })),
    /GET \/api\/v1\/datacenters\/1 → 200: \/rows must be integer/);
  const { location, ...noLocation } = dc;
  assert.equal(typeof location, 'string');
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(200, noLocation)), /location/);
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(200, { ...dc, extra: 1 })),
    /must NOT have additional properties.*extra/);
  // A time that is not RFC 3339.
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(200, { ...dc, created_at: 1700000000 })),
    /created_at/);
  // An undocumented status, a wrong content type, an error without its shape.
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(202, dc)), /status 202 is not documented/);
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(200, dc, 'text/html')), /content type "text\/html"/);
  assert.throws(() => checkReply('GET', '/api/v1/datacenters/1', reply(404, { message: 'gone' })), /error/);
  assert.throws(() => checkReply('GET', '/api/v1/nothing-here', reply(200, {})), /not an error/);
  // A request body the server took but the document would refuse.
  checkReply('POST', '/api/v1/datacenters', reply(201, dc), { name: 'x', rows: 2 });
  assert.throws(() => checkReply('POST', '/api/v1/datacenters', reply(201, dc), { name: 'x', colour: 'red' }),
    /accepted a request body the document refuses/);
  // A list in CSV is documented as text/csv.
  checkReply('GET', '/api/v1/datacenters?format=csv', reply(200, 'id,name\r\n', 'text/csv; charset=utf-8'));
});

describe('the demo data set, read through every GET route', () => {
  const d = useServer({ demo: true });

  test('every record it holds matches the document', async () => {
    const s = d.s;
    // GPUs as an agent reports them: telemetry, a process, a MIG instance;
    // then the host reports one GPU fewer, which marks the other missing.
    const now = Math.floor(Date.now() / 1000);
    const g0 = 'GPU-0a0a0a0a-0000-0000-0000-000000000001';
    const g1 = 'GPU-0a0a0a0a-0000-0000-0000-000000000002';
    const mig = 'MIG-0a0a0a0a-0000-0000-0000-000000000003';
    const gpus = [
      { uuid: g0, index: 0, name: 'NVIDIA A100-SXM4-80GB', serial: 'C1', pci_bus_id: '0000:18:00.0', memory_total_mib: 81920, driver: '550.54.15', mig_mode: true },
      { uuid: mig, parent_uuid: g0, mig_profile: '1g.10gb', mig_instance: 1 },
      { uuid: g1, index: 1, name: 'NVIDIA A100-SXM4-80GB', serial: 'C2' },
    ];
    ok(await s.api('POST', '/api/v1/ingest', { body: {
      batch_id: 'contract-1', source: 'contract-agent', host: { hostname: 'fra1-gpu-001', serial: 'SRV1', cluster: 'c1' }, gpus,
      samples: [{ time: now - 30, gpu: g0, util_avg: 55.5, util_max: 90, mem_used_mib: 4096, power_avg_w: 310, temp_c: 61, ecc_corrected: 0, xid: 0 }],
      processes: [{ gpu: g0, pid: 4242, name: 'python', user: 'alice', uid: 1000, used_mib: 4000 }],
    } }), 201);
    ok(await s.api('POST', '/api/v1/ingest', { body: {
      batch_id: 'contract-2', source: 'contract-agent', host: { hostname: 'fra1-gpu-001' }, gpus: gpus.slice(0, 2),
      samples: { columns: ['time', 'gpu', 'util_avg'], rows: [[now - 10, 0, 20]] },
    } }), 201);
    assert.match(ok(await s.api('GET', `/api/v1/gpus/${g1}`)).missing_since, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // Each call below is checked by the harness; a mismatch throws.
    for (const p of ['/healthz', '/metrics', '/api/v1/kinds', '/api/v1/session', '/api/v1/tokens',
      '/api/v1/audit?limit=1000', '/api/v1/sources', '/api/v1/kubernetes/nodes', '/api/v1/kubernetes/pods',
      '/api/v1/gpus?format=csv', '/api/v1/resources?format=csv&limit=50']) {
      ok(await s.api('GET', p));
    }
    const dcs = await listAll(s, '/api/v1/datacenters');
    assert.ok(dcs.total > 0);
    for (const dc of dcs.items) {
      ok(await s.api('GET', `/api/v1/datacenters/${dc.id}`));
      ok(await s.api('GET', `/api/v1/datacenters/${dc.id}/overview`));
    }
    const kinds = new Set();
    for (const kind of ['server', 'vm', 'storage', 'switch', 'infiniband']) {
      const page = ok(await s.api('GET', `/api/v1/resources?kind=${kind}&limit=20&sort=-updated_at`));
      for (const r of page.items) {
        kinds.add(r.kind);
        ok(await s.api('GET', `/api/v1/resources/${r.id}`));
      }
    }
    assert.ok(kinds.size >= 3, `the demo has several kinds: ${[...kinds]}`);
    const found = await listAll(s, '/api/v1/gpus?limit=1000');
    assert.equal(found.total, 3);
    for (const g of found.items) ok(await s.api('GET', `/api/v1/gpus/${encodeURIComponent(g.uuid)}`));
    for (const src of ok(await s.api('GET', '/api/v1/sources')).items) {
      ok(await s.api('GET', `/api/v1/sources/${src.id}`));
    }
  });
});

// Last: compiling every schema blocks the event loop for many seconds on a
// loaded machine, long enough for the server to close an idle keep-alive
// connection under a later request of this file.
test('every response schema compiles as JSON Schema 2020-12', () => {
  assert.ok(compileAll() > 100);
});
