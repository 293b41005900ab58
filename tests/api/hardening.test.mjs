// Hardening at the HTTP edge: a request's headers are judged (route,
// credentials, role, query parameters, announced length) before any of its
// body is read; paths are decoded strictly; media types, empty patches and
// mistyped numbers are refused; sign-in is throttled; connections are
// bounded per client address and in time; sessions end with the
// credentials they were made with; a revoked start-up token is named.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startServer } from '../lib/server.mjs';
import { useServer, stopClean, assertError, ok, mkDc, mkToken, runCli, dbQuery, isPg } from './helpers.mjs';

const MiB = 1024 * 1024;

/** A server's resident and peak memory in KiB, from /proc. */
function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (name) => Number(status.match(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm'))[1]);
  return { rss: kb('VmRSS'), peak: kb('VmHWM') };
}

/**
 * Starts a request that announces `announce` bytes of body but sends only
 * `send` of them (all of them when send is omitted), and resolves with the
 * reply ({status, headers, json}) or, when the server hung up before a
 * reply could be read, with {error}. The upload is abandoned once the
 * reply is in.
 */
function upload(url, { method = 'POST', path: p, headers = {}, announce, send = announce,
  localAddress } = {}) {
  const u = new URL(url);
  return new Promise((resolve) => {
    const req = http.request({
      host: u.hostname, port: u.port, method, path: p, localAddress, agent: false,
      headers: { 'Content-Type': 'application/json', 'Content-Length': String(announce), ...headers },
    });
    let settled = false;
    const done = (v) => { if (!settled) { settled = true; resolve(v); } };
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        done({ status: res.statusCode, headers: res.headers, json });
        req.destroy();
      });
      res.on('error', (error) => done({ error }));
    });
    req.on('error', (error) => done({ error }));
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let left = send;
    const pump = () => {
      while (left > 0 && !settled) {
        const n = Math.min(left, chunk.length);
        left -= n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          req.once('drain', pump);
          return;
        }
      }
      if (left === 0 && send === announce && !settled) req.end();
    };
    pump();
  });
}

/** GET through node's http with a chosen local address; resolves {status, json}. */
function getFrom(url, p, localAddress) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.get({ host: u.hostname, port: u.port, path: p, localAddress, agent: false },
      (res) => {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ status: res.statusCode, json: JSON.parse(text) }));
      });
    req.on('error', reject);
  });
}

describe('headers are judged before the body is read', () => {
  const h = useServer({ args: ['--max-body', String(8 * MiB)] });

  test('401, 403, 404 and 413 arrive while the upload is still unfinished', async () => {
    const viewer = await mkToken(h.s, 'viewer');
    // Each request announces a body and sends only its first 64 KiB; a
    // server that waited for the whole body would never answer.
    const cases = [
      [401, 'unauthenticated', { path: '/api/v1/datacenters' }],
      [403, 'forbidden', { path: '/api/v1/datacenters', headers: { Authorization: 'Bearer ' + viewer.token } }],
      [404, 'not_found', { path: '/api/v1/no-such-thing' }],
      [405, 'method_not_allowed', { path: '/api/v1/kinds' }],
      [413, 'too_large', { path: '/api/v1/datacenters', headers: { Authorization: 'Bearer ' + h.s.token },
        announce: 9 * MiB }],
    ];
    for (const [status, code, opts] of cases) {
      const r = await upload(h.s.url, { announce: 4 * MiB, send: 64 * 1024, ...opts });
      assert.ok(!r.error, `${opts.path}: ${r.error}`);
      assert.equal(r.status, status, JSON.stringify(r.json));
      assert.equal(r.json.error.code, code);
    }
    // The server still serves normally afterwards.
    ok(await h.s.api('GET', '/api/v1/datacenters'));
  });

  test('unauthenticated uploads do not grow the server\'s memory', async () => {
    const before = memory(h.s.pid);
    // Sixteen clients each send a whole 8 MiB body without credentials: a
    // server that buffered them would need 128 MiB.
    const results = await Promise.all(Array.from({ length: 16 }, () =>
      upload(h.s.url, { path: '/api/v1/datacenters', announce: 8 * MiB })));
    const after = memory(h.s.pid);
    // Each gets its 401, or (having sent on after it) a reset connection:
    // the server answers and hangs up without reading the rest.
    for (const r of results) {
      if (r.error) assert.ok(['ECONNRESET', 'EPIPE'].includes(r.error.code), String(r.error));
      else assert.equal(r.status, 401, JSON.stringify(r.json));
    }
    const grewMiB = (after.peak - before.peak) / 1024;
    assert.ok(grewMiB < 48, `peak memory grew by ${grewMiB.toFixed(1)} MiB`);
    ok(await h.s.api('GET', '/healthz', { auth: null }));
  });
});

describe('paths', () => {
  const h = useServer();

  test('a NUL or control byte in the path is 400, never a route', async () => {
    for (const p of ['/api/v1/tokens%00.css', '/api/v1/tokens%00', '/api/v1/datacenters%0a', '/app.js%00',
      '/api/v1/gpus/GPU-1%00x', '/api/v1/tok%7Fens']) {
      const r = await h.s.api('GET', p);
      assertError(r, 400, { code: 'invalid_path' });
      assert.ok(!r.text.includes('env-admin'), `${p} leaked the token list`);
    }
  });

  test('invalid UTF-8 or a broken escape in a path segment is 400, never 500', async () => {
    for (const p of ['/api/v1/datacenters/%ff', '/api/v1/gpus/GPU-%C3%28', '/no/such/%ed%a0%80',
      '/api/v1/gpus/GPU-%zz', '/api/v1/gpus/GPU-%4']) {
      assertError(await h.s.api('GET', p), 400, { code: 'invalid_path' });
    }
  });

  test('ids are canonical decimals', async () => {
    const dc = await mkDc(h.s);
    assert.equal(dc.id, 1);
    ok(await h.s.api('GET', '/api/v1/datacenters/1'));
    for (const p of ['01', '+1', '%31', '%2B1', '1.0', '0x1', '1e0', '%201']) {
      const r = await h.s.api('GET', `/api/v1/datacenters/${p}`);
      assert.ok(r.status === 404 || r.status === 400, `${p}: ${r.status}`);
      assertError(r, r.status);
    }
  });

  test('no reply body ends in a NUL byte', async () => {
    await mkDc(h.s);
    const index = await (await fetch(h.s.url + '/')).text();
    const assets = ['/', ...[...index.matchAll(/(?:src|href)="\/?([^"]+)"/g)].map((m) => '/' + m[1])];
    const paths = [...assets, '/healthz', '/metrics', '/api/v1/kinds', '/api/v1/datacenters',
      '/api/v1/datacenters?format=csv', '/api/v1/resources', '/api/v1/nope', '/api/v1/datacenters/%ff',
      '/api/v1/session'];
    for (const p of paths) {
      const res = await fetch(h.s.url + p, { headers: { Authorization: 'Bearer ' + h.s.token } });
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.ok(bytes.length > 0, `${p}: empty`);
      assert.equal(bytes.indexOf(0), -1, `${p} (${res.status}) holds a NUL byte`);
    }
  });
});

describe('bodies', () => {
  const h = useServer();

  test('a wrong media type is 415; JSON in UTF-8 is accepted', async () => {
    const body = JSON.stringify({ name: 'typed', location: 'x' });
    for (const ct of ['application/jsonx', 'application/json; charset=utf-16', 'application/json;charset=latin1',
      'application/json-patch+json', 'application/json garbage']) {
      assertError(await h.s.api('POST', '/api/v1/datacenters', { body, contentType: ct }), 415,
        { code: 'unsupported_media_type' });
    }
    for (const [i, ct] of ['application/json; charset=utf-8', 'Application/JSON', 'application/json; charset="UTF-8"',
      'application/json ; charset=utf-8'].entries()) {
      ok(await h.s.api('POST', '/api/v1/datacenters',
        { body: JSON.stringify({ name: `typed-${i}`, location: 'x' }), contentType: ct }), 201);
    }
    assertError(await h.s.api('POST', '/api/v1/resources/import',
      { body: 'datacenter_id,kind,name\n', contentType: 'text/csvx' }), 415, { code: 'unsupported_media_type' });
  });

  test('an empty PATCH or POST body is 400', async () => {
    const dc = await mkDc(h.s);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: {} }), 400);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: '', contentType: 'application/json' }), 400);
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: '', contentType: 'application/json' }), 400);
    assertError(await h.s.api('POST', '/api/v1/resources', { body: {} }), 400);
    const same = ok(await h.s.api('GET', `/api/v1/datacenters/${dc.id}`));
    assert.equal(same.updated_at, dc.updated_at);
  });

  test('a string where a number belongs is 400 naming the field', async () => {
    const dc = await mkDc(h.s);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}`, { body: { rows: '3' } }), 400, { field: 'rows' });
    assertError(await h.s.api('POST', '/api/v1/datacenters', { body: { name: 'n', location: 'l', rows: '2' } }), 400,
      { field: 'rows' });
    assertError(await h.s.api('POST', '/api/v1/resources',
      { body: { datacenter_id: String(dc.id), kind: 'server', name: 'x' } }), 400, { field: 'datacenter_id' });
    assertError(await h.s.api('POST', '/api/v1/resources',
      { body: { datacenter_id: dc.id, kind: 'server', name: 'x', gpu_model: 'H100', gpu_count: '8' } }), 400,
    { field: 'gpu_count' });
    assertError(await h.s.api('POST', '/api/v1/resources',
      { body: { datacenter_id: dc.id, kind: 'server', name: 'x', cpu_cores: '64' } }), 400, { field: 'cpu_cores' });
  });
});

describe('query parameters', () => {
  const h = useServer();

  test('an unknown query parameter is 400 naming it', async () => {
    const cases = [
      ['/api/v1/gpus?teams=speech', 'teams'],
      ['/api/v1/datacenters?q=a&bogus=1', 'bogus'],
      ['/api/v1/kinds?verbose=1', 'verbose'],
      ['/api/v1/resources?datacentre=1', 'datacentre'],
      ['/api/v1/tokens?limit=5', 'limit'],
      ['/healthz?x', 'x'],
    ];
    for (const [p, field] of cases) {
      const e = assertError(await h.s.api('GET', p), 400, { code: 'unknown_parameter', field });
      assert.match(e.message, new RegExp(field));
    }
    const dc = await mkDc(h.s);
    assertError(await h.s.api('PATCH', `/api/v1/datacenters/${dc.id}?force=true`, { body: { rows: 2 } }), 400,
      { field: 'force' });
    // Credentials are checked first: no parameter names leak to strangers.
    assertError(await h.s.api('GET', '/api/v1/gpus?teams=speech', { auth: null }), 401);
  });

  test('the parameters a route reads are accepted', async () => {
    await mkDc(h.s);
    ok(await h.s.api('GET', '/api/v1/datacenters?q=dc&limit=5&cursor=0&sort=-name'));
    ok(await h.s.api('GET', '/api/v1/resources?datacenter=1&kind=server&state=available&tenant=t&project=p&q=x'));
    ok(await h.s.api('GET', '/api/v1/gpus?host=h&cluster=c&model=m&q=x&datacenter=1&source=1&stale=false&state=idle'
      + '&sort=host&limit=10'));
    ok(await h.s.api('GET', '/api/v1/audit?entity=datacenter&entity_id=1&actor=x'));
    ok(await h.s.api('GET', '/api/v1/kubernetes/pods?cluster=c&node=n&namespace=ns&active=true&limit=5'));
    ok(await h.s.api('GET', '/api/v1/kubernetes/nodes?cluster=c&format=json'));
    const csv = await h.s.api('GET', '/api/v1/tokens?format=csv');
    assert.equal(csv.status, 200);
    const imp = await h.s.api('POST', '/api/v1/gpus/import?dry_run=true&map.uuid=Serial%20UUID&map.hostname=Box',
      { body: 'Box,Serial UUID\nhost-1,GPU-00000000-0000-0000-0000-000000000001\n', contentType: 'text/csv' });
    assert.notEqual(imp.json?.error?.code, 'unknown_parameter', imp.text);
  });
});

describe('sign-in', () => {
  test('repeated failures for one user are answered 429 with Retry-After', async () => {
    const s = await startServer();
    try {
      const signIn = (username, password) => s.api('POST', '/api/v1/session', { auth: null, body: { username, password } });
      for (let i = 0; i < 5; i++) assertError(await signIn('admin', 'wrong-' + i), 401);
      for (const pw of ['wrong-again', s.password]) {
        const r = await signIn('admin', pw);
        assertError(r, 429, { code: 'too_many_attempts' });
        assert.match(r.headers.get('retry-after') || '', /^[1-9]\d*$/);
        assert.equal(r.headers.get('set-cookie'), null);
      }
      // Another user name from the same address is not locked (yet).
      assertError(await signIn('someone-else', 'x'), 401);
      // Many failures from one address lock the address, whatever the name.
      for (let i = 0; i < 30; i++) await signIn(`nobody-${i}`, 'x');
      const r = await signIn('fresh-name', 'x');
      assertError(r, 429, { code: 'too_many_attempts' });
      assert.match(r.json.error.message, /address/);
      assert.match(r.headers.get('retry-after') || '', /^[1-9]\d*$/);
    } finally {
      await stopClean(s);
    }
  });

  test('a sign-in from a foreign Origin is refused 403', async () => {
    const s = await startServer();
    try {
      const body = { username: 'admin', password: s.password };
      for (const origin of ['https://evil.example', 'http://127.0.0.1.evil.example', 'null']) {
        const r = await s.api('POST', '/api/v1/session', { auth: null, body, headers: { Origin: origin } });
        assertError(r, 403, { code: 'forbidden' });
        assert.equal(r.headers.get('set-cookie'), null);
      }
      const r = await s.api('POST', '/api/v1/session', { auth: null, body, headers: { Origin: s.url } });
      assert.equal(r.status, 200, r.text);
      assert.match(r.headers.get('set-cookie'), /gpuinv_session=/);
      assert.doesNotMatch(r.headers.get('set-cookie'), /Secure/);
    } finally {
      await stopClean(s);
    }
  });

  test('a viewer is still answered while 32 sign-ins flood the server', async () => {
    const s = await startServer();
    try {
      await mkDc(s);
      const viewer = await mkToken(s, 'viewer');
      const flood = Array.from({ length: 32 }, () =>
        s.api('POST', '/api/v1/session', { auth: null, body: { username: 'admin', password: s.password } }));
      const reads = Array.from({ length: 4 }, () => s.api('GET', '/api/v1/datacenters', { auth: viewer.token }));
      for (const r of await Promise.all(reads)) assert.equal(ok(r).total, 1);
      let signedIn = 0;
      for (const r of await Promise.all(flood)) {
        if (r.status === 200) { signedIn += 1; continue; }
        assertError(r, 503, { code: 'busy' });
        assert.match(r.headers.get('retry-after') || '', /^[1-9]\d*$/);
      }
      assert.ok(signedIn >= 1, 'some sign-ins went through');
    } finally {
      await stopClean(s);
    }
  });
});

describe('connections', () => {
  test('idle connections from one address cannot keep /healthz from others', async () => {
    const s = await startServer({ args: ['--per-ip-connections', '20'] });
    const sockets = [];
    try {
      const { port } = new URL(s.url);
      let closed = 0;
      await Promise.all(Array.from({ length: 300 }, () => new Promise((resolve) => {
        const c = net.connect({ host: '127.0.0.1', port: Number(port) }, resolve);
        c.on('close', () => { closed += 1; });
        c.on('error', () => resolve());
        sockets.push(c);
      })));
      // The server refuses the connections past the limit at once.
      for (let i = 0; i < 400 && closed < 280; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(closed >= 280, `only ${closed} of 300 idle connections were refused`);
      // Another client address (Linux routes all of 127/8 to lo) is served.
      const r = await getFrom(s.url, '/healthz', '127.0.0.2');
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, { status: 'ok' });
      // Once the idle ones go, the first address is served again.
      for (const c of sockets) c.destroy();
      let again = null;
      for (let i = 0; i < 100 && !again; i++) {
        try { again = await getFrom(s.url, '/healthz', '127.0.0.1'); } catch { await new Promise((r) => setTimeout(r, 50)); }
      }
      assert.equal(again?.status, 200);
    } finally {
      for (const c of sockets) c.destroy();
      await stopClean(s);
    }
  });

  test('an idle connection is closed after --idle-timeout', async () => {
    const s = await startServer({ args: ['--idle-timeout', '1'] });
    try {
      const { port } = new URL(s.url);
      const c = net.connect({ host: '127.0.0.1', port: Number(port) });
      const closedBy = await new Promise((resolve) => {
        const guard = setTimeout(() => { c.destroy(); resolve('test'); }, 30000);
        c.on('end', () => { clearTimeout(guard); resolve('server'); });
        c.on('close', () => { clearTimeout(guard); resolve('server'); });
        c.on('error', () => {});
      });
      assert.equal(closedBy, 'server');
      c.destroy();
    } finally {
      await stopClean(s);
    }
  });

  test('connection flags are validated', async () => {
    for (const args of [['--per-ip-connections', '-1'], ['--max-connections', '0'], ['--idle-timeout', 'x'],
      ['--tls-cert', '/nonexistent']]) {
      const r = await runCli(['serve', '--listen', '127.0.0.1:0', '--db', '/nonexistent/db', ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    }
  });
});

describe('sessions', () => {
  const h = useServer();

  const signIn = async (username, password) => {
    const r = await h.s.api('POST', '/api/v1/session', { auth: null, body: { username, password } });
    assert.equal(r.status, 200, r.text);
    return r.headers.get('set-cookie').split(';')[0];
  };
  const whoami = (cookie) => h.s.api('GET', '/api/v1/session', { auth: null, headers: { Cookie: cookie } });

  test('changing a user\'s password or role ends its sessions', async () => {
    const set = (role, password) => runCli(['user', 'set', '--db', h.s.db, '--name', 'dana', '--role', role],
      { GPUINV_PASSWORD: password });
    assert.equal((await set('editor', 'first-password')).code, 0);
    const one = await signIn('dana', 'first-password');
    const two = await signIn('dana', 'first-password');
    const admin = await signIn('admin', h.s.password);
    ok(await whoami(one));
    assert.equal((await set('editor', 'second-password')).code, 0);
    for (const c of [one, two]) assertError(await whoami(c), 401);
    const three = await signIn('dana', 'second-password');
    assert.equal(ok(await whoami(three)).role, 'editor');
    assert.equal((await set('viewer', 'second-password')).code, 0);
    assertError(await whoami(three), 401);
    // Another user's session is untouched.
    assert.equal(ok(await whoami(admin)).user, 'admin');
  });

  test('expired sessions are pruned', async () => {
    const uid = (await dbQuery(h.s.db, "SELECT id FROM users WHERE name = 'admin'")).trim();
    await dbQuery(h.s.db, `INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES `
      + `('expired-one', ${uid}, 1, 2), ('live-one', ${uid}, 1, 99999999999)`);
    await signIn('admin', h.s.password);
    const left = (await dbQuery(h.s.db, "SELECT hash FROM sessions WHERE hash LIKE '%-one' ORDER BY hash")).trim();
    assert.equal(left, 'live-one');
    await dbQuery(h.s.db, "DELETE FROM sessions WHERE hash = 'live-one'");
  });
});

describe('start-up token', () => {
  test('a revoked GPUINV_ADMIN_TOKEN stops start-up with exit status 3 and says why', async () => {
    const s = await startServer();
    const { db, token } = s;
    try {
      const other = await mkToken(s, 'admin');
      const own = ok(await s.api('GET', '/api/v1/tokens')).items.find((t) => t.name === 'env-admin');
      const res = await s.api('DELETE', `/api/v1/tokens/${own.id}`, { auth: other.token });
      assert.ok(res.status === 200 || res.status === 204, res.text);
    } finally {
      await stopClean(s);
    }
    const r = await runCli(['serve', '--listen', '127.0.0.1:0', '--db', db], { GPUINV_ADMIN_TOKEN: token });
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /GPUINV_ADMIN_TOKEN names a revoked token/);
    assert.match(r.stderr, /gpuinv token create/);
    const help = await runCli(['serve', '--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /3 GPUINV_ADMIN_TOKEN names a revoked token/);
    assert.ok(isPg(db) || path.isAbsolute(db));
  });
});
