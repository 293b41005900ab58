// A stand-in for GCP: the OAuth 2.0 token endpoint (service-account JWT
// grants, checked for shape and verified against the test key's public
// half) and Compute Engine's instances.aggregatedList and machineTypes.get,
// replaying the recorded answers in tests/fixtures/gcp/. Scenario knobs on
// the returned object: `throttle` (429 answers with Retry-After before
// page 2), `failPage2` (page 2 answers 500), `unreachable` (page 1 names
// an unreachable zone), `down` (zone names: each such scope answers an
// UNREACHABLE warning instead of its instances and is named in
// "unreachables"), `omit` (instance names left out of the listing),
// `dropPage2` (page 1 is the whole listing),
// `publicKey` (the key grants are verified with), `startAt` (unix
// seconds: every instance's start and creation times are moved there,
// written as the API does, with a -07:00 offset and milliseconds), `refuseKey` (the token endpoint refuses every
// grant), `expire()` (every token issued so far stops working).
import http from 'node:http';
import crypto from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const fx = (n) => readFileSync(path.join(here, '..', '..', 'fixtures', 'gcp', n), 'utf8');
export const PAGE2_TOKEN = 'Cg1wYWdlLXR3by10b2tlbg';
export const PROJECT = 'ml-prod';

/** A fresh RSA key and the service-account JSON that carries it. */
export function makeServiceAccount(tokenUri) {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const json = JSON.stringify({
    type: 'service_account', project_id: PROJECT, private_key_id: 'test-key-1',
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }),
    client_email: 'inventory@ml-prod.iam.gserviceaccount.com', client_id: '1234567890', token_uri: tokenUri,
  });
  return { json, publicKey };
}

/** t (unix seconds) as GCP writes it: local time at -07:00 with millis. */
export const gcpTime = (t) => new Date((t - 7 * 3600) * 1000).toISOString().replace('Z', '-07:00');

/** A recorded page, with its times moved to startAt when that is set. */
function page(st, name, edit = () => {}) {
  const p = JSON.parse(fx(name));
  edit(p);
  for (const zone of st.down) {
    const scope = `zones/${zone}`;
    if (!p.items?.[scope]) continue;
    p.items[scope] = {
      warning: { code: 'UNREACHABLE', message: `Scope '${scope}' is unreachable.`, data: [{ key: 'scope', value: scope }] },
    };
    p.unreachables = [...(p.unreachables || []), scope];
  }
  for (const scope of Object.values(p.items || {})) {
    if (scope.instances) scope.instances = scope.instances.filter((i) => !st.omit.includes(i.name));
  }
  if (st.startAt) {
    for (const scope of Object.values(p.items || {})) {
      for (const i of scope.instances || []) {
        if (i.creationTimestamp) i.creationTimestamp = gcpTime(st.startAt - 60);
        if (i.lastStartTimestamp || i.creationTimestamp) i.lastStartTimestamp = gcpTime(st.startAt);
      }
    }
  }
  return JSON.stringify(p);
}

const b64json = (s) => JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));

/**
 * Starts the stand-in. publicKey verifies grants; staticTokens are
 * accepted as bearer tokens as if issued. Resolves to the stand-in.
 */
export async function startGcp({ publicKey, staticTokens = [] } = {}) {
  const st = {
    url: '', publicKey, startAt: 0, seen: [], grants: [], throttle: 0, dropPage2: false, failPage2: false, unreachable: false, refuseKey: false, down: [], omit: [],
    tokens: new Set(staticTokens), issued: 0,
    expire() { this.tokens.clear(); },
  };
  const send = (res, code, body, headers = {}) =>
    res.writeHead(code, { 'Content-Type': 'application/json', ...headers }).end(body);
  /** Checks a grant; returns the reason it is refused, or null. */
  const checkGrant = (form) => {
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return 'grant_type';
    const parts = (form.get('assertion') || '').split('.');
    if (parts.length !== 3) return 'assertion is not a JWS';
    const h = b64json(parts[0]);
    const c = b64json(parts[1]);
    st.grants.push({ header: h, claims: c });
    if (h.alg !== 'RS256' || h.typ !== 'JWT' || h.kid !== 'test-key-1') return 'header';
    if (c.iss !== 'inventory@ml-prod.iam.gserviceaccount.com') return 'iss';
    if (c.aud !== st.url + '/token') return 'aud';
    if (!/compute/.test(c.scope || '')) return 'scope';
    if (!Number.isInteger(c.iat) || !Number.isInteger(c.exp) || c.exp <= c.iat || c.exp - c.iat > 3600) return 'iat/exp';
    if (Math.abs(c.iat - Date.now() / 1000) > 300) return 'iat';
    const ok = crypto.verify('sha256', Buffer.from(parts[0] + '.' + parts[1]), st.publicKey, Buffer.from(parts[2], 'base64url'));
    return ok ? null : 'signature';
  };
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      const u = new URL(req.url, 'http://x');
      st.seen.push({ method: req.method, path: u.pathname, query: Object.fromEntries(u.searchParams), type: req.headers['content-type'] || '' });
      if (req.method === 'POST' && u.pathname === '/token') {
        const why = st.refuseKey ? 'refused' : st.publicKey ? checkGrant(new URLSearchParams(raw)) : 'no key';
        if (why || !/x-www-form-urlencoded/.test(req.headers['content-type'] || '')) {
          st.lastRefusal = why;
          return send(res, 400, fx('token-invalid-grant.json'));
        }
        const token = `ya29.standin-${++st.issued}`;
        st.tokens.add(token);
        return send(res, 200, fx('token.json').replace('{{token}}', token));
      }
      const auth = (req.headers.authorization || '').replace(/^Bearer /, '');
      if (!st.tokens.has(auth)) return send(res, 401, fx('error-401.json'));
      if (u.pathname === `/compute/v1/projects/${PROJECT}/aggregated/instances`) {
        const tok = u.searchParams.get('pageToken');
        if (!tok) {
          return send(res, 200, page(st, 'instances-page1.json', (p) => {
            if (st.unreachable) p.unreachables = ['zones/asia-east2-c'];
            if (st.dropPage2) delete p.nextPageToken;
          }));
        }
        if (tok !== PAGE2_TOKEN) return send(res, 400, '{"error":{"code":400,"message":"Invalid page token","status":"INVALID_ARGUMENT"}}');
        if (st.throttle > 0) {
          st.throttle -= 1;
          return send(res, 429, fx('error-429.json'), { 'Retry-After': '1' });
        }
        if (st.failPage2) return send(res, 500, '{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}');
        return send(res, 200, page(st, 'instances-page2.json'));
      }
      if (u.pathname === `/compute/v1/projects/${PROJECT}/zones/us-east1-c/machineTypes/a4-highgpu-8g`) {
        return send(res, 200, fx('machine-type-a4-highgpu-8g.json'));
      }
      return send(res, 404, '{"error":{"code":404,"message":"The resource was not found","status":"NOT_FOUND"}}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  st.url = 'http://127.0.0.1:' + server.address().port;
  st.close = () => new Promise((r) => server.close(r));
  return st;
}
