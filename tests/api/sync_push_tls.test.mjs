// Push-back over HTTPS: the writes of a push verify the asset manager's
// certificate exactly as its reads and the source's pulls do. A NetBox
// stand-in with a self-signed certificate is trusted through the source's
// `ca_file` (the update is delivered), or accepted with
// `insecure_skip_verify`; a source that trusts only the system's CAs can
// neither pull nor push. Retries wait 1 s (--webhook-backoff-s 1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { tempDir } from '../lib/server.mjs';
import { useServer, ok, mkDc } from './helpers.mjs';
import { startAssetStandin, NB_TOKEN } from '../lib/assets_standin.mjs';

const h = useServer({ args: ['--webhook-backoff-s', '1'] });
let sb;
let cert;

/** A self-signed P-256 certificate for 127.0.0.1; resolves {cert, key} paths. */
function makeCert(dir) {
  const c = path.join(dir, 'nb.crt');
  const k = path.join(dir, 'nb.key');
  return new Promise((resolve, reject) => {
    execFile('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-subj', '/CN=localhost', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2',
      '-keyout', k, '-out', c], { timeout: 30000 }, (err, _out, stderr) => {
      if (err) reject(new Error(`openssl failed: ${stderr || err.message}`)); else resolve({ cert: c, key: k });
    });
  });
}

async function waitFor(fn, what) {
  for (let i = 0; i < 150; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const api = (method, p, body) => h.s.api(method, p, body ? { body } : {});
const pull = async (src) => ok(await api('POST', `/api/v1/sources/${src.id}/run`)).run;
const settled = (tag) => waitFor(async () => {
  const p = ok(await api('GET', `/api/v1/sync-pushes?asset=${tag}`)).items[0];
  return p && p.state !== 'pending' ? p : null;
}, `the push of ${tag}`);
const source = async (name, tls) => ok(await api('POST', '/api/v1/sources', { name, kind: 'netbox', enabled: false,
  config: { url: sb.base, token: NB_TOKEN, push: true, push_sites: { fra1: 1, ams1: 2 }, ...tls } }), 201);

before(async () => {
  cert = await makeCert(tempDir('gpuinv-push-tls-'));
  sb = await startAssetStandin({ tls: { cert: readFileSync(cert.cert), key: readFileSync(cert.key) } });
  assert.match(sb.base, /^https:/);
  await waitFor(() => h.s, 'the server');
  await mkDc(h.s, { name: 'fra1' });
  await mkDc(h.s, { name: 'ams1' });
});

after(() => sb.close());

test('with ca_file the pull links the device and the push writes to it over HTTPS', async () => {
  sb.addDevice(301, { serial: 'TLSSER0301', tag: 'TLS-301', rack: 'R01', position: 10 });
  const src = await source('netbox-tls', { ca_file: cert.cert });
  assert.equal((await pull(src)).ok, true);
  const before = sb.writes('netbox').length;
  ok(await api('POST', '/api/v1/scans', { tag: 'TLS-301', location: { datacenter: 'fra1', rack: 'R07', u: 22 } }), 201);
  const p = await settled('TLS-301');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.deepEqual(p.sent, { rack: 'R07', position: '22' });
  const w = sb.writes('netbox').slice(before);
  assert.deepEqual(w.map((r) => [r.method, r.path]), [['PATCH', '/api/dcim/devices/301/']]);
  assert.equal(sb.devices[301].rack.name, 'R07');
  assert.equal(sb.devices[301].position, 22);
});

test('insecure_skip_verify accepts the certificate for writes too', async () => {
  sb.addDevice(302, { serial: 'TLSSER0302', tag: 'TLS-302', rack: 'R02', position: 4 });
  const src = await source('netbox-insecure', { insecure_skip_verify: true });
  assert.equal((await pull(src)).ok, true);
  ok(await api('POST', '/api/v1/scans', { tag: 'TLS-302', location: { datacenter: 'fra1', rack: 'R08', u: 30 } }), 201);
  const p = await settled('TLS-302');
  assert.equal(p.state, 'delivered', JSON.stringify(p));
  assert.equal(sb.devices[302].rack.name, 'R08');
});

test('trusting only the system CAs, the certificate is refused', async () => {
  const src = await source('netbox-untrusted', {});
  const run = await pull(src);
  assert.equal(run.ok, false, JSON.stringify(run));
});
