// HTTPS in the server itself: `gpuinv serve --tls-cert FILE --tls-key FILE`
// with a self-signed certificate made here, checked with node's https and
// that certificate as the only trusted CA.
import { test, describe, before } from 'node:test';
import assert from 'node:assert/strict';
import https from 'node:https';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';
import { stopClean, runCli, newDb } from './helpers.mjs';

/** Makes a self-signed P-256 certificate for 127.0.0.1; resolves {cert, key} paths. */
function makeCert(dir, name) {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  return new Promise((resolve, reject) => {
    execFile('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2',
      '-keyout', key, '-out', cert], { timeout: 30000 }, (err, _out, stderr) => {
      if (err) reject(new Error(`openssl failed: ${stderr || err.message}`)); else resolve({ cert, key });
    });
  });
}

/** One HTTPS request trusting only `ca`; resolves {status, headers, json}. */
function request(url, method, p, { ca, body, headers = {} } = {}) {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request({
      host: u.hostname, port: u.port, method, path: p, ca, agent: false,
      headers: { ...headers, ...(payload ? { 'Content-Type': 'application/json' } : {}) },
    }, (res) => {
      let text = '';
      res.on('data', (d) => { text += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(text); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, headers: res.headers, json });
      });
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

describe('TLS', () => {
  const dir = tempDir('gpuinv-tls-');
  let files;
  let other;
  before(async () => {
    files = await makeCert(dir, 'server');
    other = await makeCert(dir, 'other');
  });

  test('serves HTTPS; the session cookie is Secure and replies carry HSTS', async () => {
    const s = await startServer({ args: ['--tls-cert', files.cert, '--tls-key', files.key] });
    try {
      assert.match(s.url, /^https:\/\/127\.0\.0\.1:\d+$/);
      const ca = readFileSync(files.cert);
      const health = await request(s.url, 'GET', '/healthz', { ca });
      assert.equal(health.status, 200);
      assert.deepEqual(health.json, { status: 'ok' });
      assert.match(health.headers['strict-transport-security'], /max-age=\d+/);

      const tok = await request(s.url, 'GET', '/api/v1/kinds', { ca, headers: { Authorization: 'Bearer ' + s.token } });
      assert.equal(tok.status, 200);

      const login = await request(s.url, 'POST', '/api/v1/session',
        { ca, body: { username: 'admin', password: s.password }, headers: { Origin: s.url } });
      assert.equal(login.status, 200);
      const cookie = login.headers['set-cookie'][0];
      assert.match(cookie, /; Secure/);
      assert.match(cookie, /HttpOnly/);
      const me = await request(s.url, 'GET', '/api/v1/session', { ca, headers: { Cookie: cookie.split(';')[0] } });
      assert.equal(me.status, 200);
      assert.equal(me.json.user, 'admin');

      // A client that does not trust the certificate is refused by TLS itself.
      await assert.rejects(request(s.url, 'GET', '/healthz', { ca: readFileSync(other.cert) }),
        /self[- ]signed|unable to verify|certificate/i);
      // Plain HTTP on the TLS port gets no reply.
      await assert.rejects(fetch(s.url.replace('https:', 'http:') + '/healthz'));
    } finally {
      await stopClean(s);
    }
  });

  test('missing, unreadable or mismatched files stop start-up with a clear message', async () => {
    const notPem = path.join(dir, 'not.pem');
    writeFileSync(notPem, 'hello\n');
    const db = await newDb(dir, 'tls.db');
    const cases = [
      [[files.cert, path.join(dir, 'missing.key')], /cannot read the TLS key/],
      [[notPem, files.key], /not a PEM file/],
      [[files.cert, other.key], /do not match|cannot listen/],
    ];
    for (const [[cert, key], message] of cases) {
      const r = await runCli(['serve', '--listen', '127.0.0.1:0', '--db', db, '--tls-cert', cert, '--tls-key', key]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
    }
    const half = await runCli(['serve', '--listen', '127.0.0.1:0', '--db', db, '--tls-cert', files.cert]);
    assert.equal(half.code, 2);
    assert.match(half.stderr, /--tls-cert and --tls-key go together/);
  });
});
