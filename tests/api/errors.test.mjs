// Protocol-level behaviour: health, unknown paths and methods, body limits,
// malformed JSON, content types, and the one error shape every failure uses.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { useServer, stopClean, assertError, ok, mkDc } from './helpers.mjs';

describe('protocol errors', () => {
  const h = useServer();

  test('GET /healthz answers without auth', async () => {
    const r = await h.s.api('GET', '/healthz', { auth: null });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^application\/json/);
    assert.deepEqual(r.json, { status: 'ok' });
  });

  test('unknown paths answer 404 JSON, API or not', async () => {
    for (const p of ['/api/v1/nope', '/api/v2/datacenters', '/no/such/page', '/api/v1/datacenters/abc',
      '/api/v1/datacenters/0', '/api/v1/datacenters/1/nothing', '/' + 'x'.repeat(600)]) {
      const r = await h.s.api('GET', p);
      assertError(r, 404, { code: 'not_found' });
    }
    // Without credentials, too: a missing path is not an auth question.
    assertError(await h.s.api('GET', '/api/v1/nope', { auth: null }), 404);
  });

  test('a missing record is 404 JSON', async () => {
    assertError(await h.s.api('GET', '/api/v1/datacenters/987654'), 404, { code: 'not_found' });
    assertError(await h.s.api('GET', '/api/v1/resources/987654'), 404, { code: 'not_found' });
  });

  test('wrong method answers 405 with an Allow header', async () => {
    const cases = [
      ['PUT', '/api/v1/datacenters', ['GET', 'POST']],
      ['DELETE', '/healthz', ['GET']],
      ['PUT', '/api/v1/datacenters/1', ['GET', 'PATCH', 'DELETE']],
      ['GET', '/api/v1/resources/import', ['POST']],
      ['GET', '/api/v1/resources/1/allocate', ['POST']],
      ['PATCH', '/api/v1/allocations', ['POST']],
    ];
    for (const [method, p, allow] of cases) {
      const r = await h.s.api(method, p);
      assertError(r, 405, { code: 'method_not_allowed' });
      const got = (r.headers.get('allow') || '').split(',').map((x) => x.trim()).sort();
      assert.deepEqual(got, [...allow].sort(), `${method} ${p}: Allow ${r.headers.get('allow')}`);
    }
  });

  test('malformed JSON is 400 and the message gives line and column', async () => {
    const r1 = await h.s.api('POST', '/api/v1/datacenters', { body: '{"name": "x",', contentType: 'application/json' });
    const e1 = assertError(r1, 400, { code: 'invalid_json' });
    assert.match(e1.message, /line \d+/);
    assert.match(e1.message, /column \d+/);

    const body = '{\n  "name": "multi",\n  "location": "y"\n  "rows": 3\n}';
    const r2 = await h.s.api('POST', '/api/v1/datacenters', { body, contentType: 'application/json' });
    const e2 = assertError(r2, 400, { code: 'invalid_json' });
    assert.match(e2.message, /line 4\b/);
    assert.match(e2.message, /column \d+/);

    // Duplicate keys, an empty body and a non-object are refused too.
    assertError(await h.s.api('POST', '/api/v1/datacenters',
      { body: '{"name":"a","name":"b"}', contentType: 'application/json' }), 400);
    assertError(await h.s.api('POST', '/api/v1/datacenters',
      { body: '', contentType: 'application/json' }), 400);
    assertError(await h.s.api('POST', '/api/v1/datacenters',
      { body: '["name"]', contentType: 'application/json' }), 400);
    // Nothing was created by any of these.
    const list = ok(await h.s.api('GET', '/api/v1/datacenters'));
    assert.equal(list.total, 0);
  });

  test('a body that is not JSON by content type is 415', async () => {
    const body = JSON.stringify({ name: 'typed' });
    for (const ct of ['text/plain', 'application/x-www-form-urlencoded', 'text/csv']) {
      assertError(await h.s.api('POST', '/api/v1/datacenters', { body, contentType: ct }), 415,
        { code: 'unsupported_media_type' });
    }
    const r = await fetch(h.s.url + '/api/v1/datacenters', {
      method: 'POST', headers: { Authorization: 'Bearer ' + h.s.token }, body: new Uint8Array(Buffer.from(body)),
    });
    assert.equal(r.status, 415);
    // JSON with a charset parameter is still JSON.
    ok(await h.s.api('POST', '/api/v1/datacenters', { body, contentType: 'application/json; charset=utf-8' }), 201);
  });

  test('the import endpoint wants CSV, not JSON', async () => {
    assertError(await h.s.api('POST', '/api/v1/resources/import', { body: { a: 1 } }), 415,
      { code: 'unsupported_media_type' });
  });

  test('bad query parameters name the parameter', async () => {
    assertError(await h.s.api('GET', '/api/v1/datacenters?limit=0'), 400, { field: 'limit' });
    assertError(await h.s.api('GET', '/api/v1/datacenters?limit=abc'), 400, { field: 'limit' });
    assertError(await h.s.api('GET', '/api/v1/datacenters?limit=1001'), 400, { field: 'limit' });
    assertError(await h.s.api('GET', '/api/v1/datacenters?cursor=-1'), 400, { field: 'cursor' });
    assertError(await h.s.api('GET', '/api/v1/datacenters?sort=password'), 400, { field: 'sort' });
    assertError(await h.s.api('GET', '/api/v1/resources?kind=toaster'), 400, { field: 'kind' });
    assertError(await h.s.api('GET', '/api/v1/resources?state=asleep'), 400, { field: 'state' });
    assertError(await h.s.api('GET', '/api/v1/resources?datacenter=x'), 400, { field: 'datacenter' });
    const dc = await mkDc(h.s);
    assertError(await h.s.api('DELETE', `/api/v1/datacenters/${dc.id}?force=maybe`), 400, { field: 'force' });
  });

  test('replies carry nosniff and no-store', async () => {
    const r = await h.s.api('GET', '/api/v1/datacenters');
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(r.headers.get('cache-control'), 'no-store');
  });
});

describe('body limit', () => {
  test('a body over --max-body is 413, one under it is accepted', async () => {
    const s = await startServer({ args: ['--max-body', '2048'] });
    try {
      const big = JSON.stringify({ name: 'big', location: 'x'.repeat(4000) });
      assertError(await s.api('POST', '/api/v1/datacenters', { body: big, contentType: 'application/json' }), 413,
        { code: 'too_large' });
      // Also when sent without a Content-Length (chunked).
      const stream = new ReadableStream({
        start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); },
      });
      const r = await fetch(s.url + '/api/v1/datacenters', {
        method: 'POST', body: stream, duplex: 'half',
        headers: { Authorization: 'Bearer ' + s.token, 'Content-Type': 'application/json' },
      });
      assert.equal(r.status, 413);
      assert.equal((await r.json()).error.code, 'too_large');
      // CSV import obeys the same bound.
      const csv = 'datacenter_id,kind,name\n' + '1,server,a\n'.repeat(300);
      assertError(await s.api('POST', '/api/v1/resources/import', { body: csv, contentType: 'text/csv' }), 413);
      // Just under the bound is fine, and nothing of the refused bodies landed.
      const fits = '{"name": "fits",' + ' '.repeat(1900) + '"location": "y"}';
      assert.ok(Buffer.byteLength(fits) < 2048);
      ok(await s.api('POST', '/api/v1/datacenters', { body: fits, contentType: 'application/json' }), 201);
      const list = ok(await s.api('GET', '/api/v1/datacenters'));
      assert.deepEqual(list.items.map((d) => d.name), ['fits']);
    } finally {
      await stopClean(s);
    }
  });
});
