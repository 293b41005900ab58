// A stand-in for the AWS EC2 Query API: a node HTTP server that replays
// recorded answers (tests/fixtures/aws/*.xml, or files of another
// directory) to POSTed DescribeInstances and DescribeInstanceTypes forms.
//
// Every request must carry `Authorization: AWS4-HMAC-SHA256
// Credential=<key id>/<yyyymmdd>/<region>/ec2/aws4_request,
// SignedHeaders=..., Signature=<64 hex>` and an X-Amz-Date; the region of
// the credential scope picks the replayed pages. Else AuthFailure.
//
// The scenario (set with `standin.set({...})`, each key optional):
//   pages:   { region: ['file1.xml', 'file2.xml'] }  page n answers the n-th
//            request of a listing: the first without NextToken, the next one
//            with the token the previous page ended with (any token goes).
//   vars:    { NAME: 'value' }  `${NAME}` in replayed files is replaced.
//   throttle:{ region: n }  the next n requests of that region are answered
//            503 RequestLimitExceeded with Retry-After: 1.
//   fail:    { region: 'error-expired.xml' }  every request of that region
//            is answered 400 with that error document.
//   types:   'file.xml'  the DescribeInstanceTypes answer; only the items
//            the request's Filter.1.Value.N name are returned.
//   keyId:   the access key id expected (default AKID).
//   delay:   milliseconds every answer waits before it is sent (default 0).
//   secret:  when given, the secret of keyId: every signature made with
//            keyId is verified (SigV4, node's crypto); a wrong one is
//            SignatureDoesNotMatch. Signatures with issued keys always are.
//   role:    { arn, externalId, deny, expiresIn: [s, ...], revokeAfter }
//            the same server answers STS AssumeRole (credential scope
//            service sts): the caller must sign with keyId (or keys the
//            metadata service issued, with their token), name arn, give
//            externalId when set and DurationSeconds 3600. It issues new
//            keys (ASIA...) expiring expiresIn[n] s from now (the last
//            one repeats; default 3600); deny answers 403 AccessDenied.
//            EC2 then accepts only keys STS issued, with their session
//            token (the base keys are AuthFailure); an issued key used
//            more than revokeAfter times is ExpiredToken.
//   imds:    { role, expiresIn: [s, ...] } the same server is the instance
//            metadata service (IMDSv2): PUT /latest/api/token with
//            X-aws-ec2-metadata-token-ttl-seconds gives a token; GETs of
//            /latest/meta-data/iam/security-credentials/[role] need it.
//            Without role (STS) EC2 accepts only keys it issued.
// `standin.seen` lists every request: {region, action, form, headers};
// an STS request has service 'sts'; metadata requests are in
// `standin.imdsSeen` ({method, path, headers}); `standin.issued` lists
// the keys issued ({keyId, by: 'sts'|'imds', expiration}).
//
// Run alone (for benchmarks): node aws.mjs '<scenario JSON with "dir">'
// prints the port and serves until stdin closes.
import http from 'node:http';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', '..', 'fixtures', 'aws');
const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/(ec2|sts)\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/;
const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const hmac = (k, v) => createHmac('sha256', k).update(v).digest();

// The SigV4 signature of a request as AWS computes it: the canonical
// request (method, path, query, the signed headers, the body's hash),
// then the string to sign under the key derived from the secret.
function signature(req, body, m, secret) {
  const [, , date, region, service, signed] = m;
  const u = new URL(req.url, 'http://x');
  const enc = (x) => encodeURIComponent(x).replace(/[!'()*]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase());
  const query = [...u.searchParams].map(([k, v]) => [enc(k), enc(v)]).sort().map(([k, v]) => `${k}=${v}`).join('&');
  const names = signed.split(';');
  const headers = names.map((n) => `${n}:${String(req.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonical = [req.method, u.pathname, query, headers, signed, sha256(body)].join('\n');
  const scope = `${date}/${region}/${service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', req.headers['x-amz-date'], scope, sha256(canonical)].join('\n');
  let k = hmac('AWS4' + secret, date);
  for (const part of [region, service, 'aws4_request']) k = hmac(k, part);
  return createHmac('sha256', k).update(toSign).digest('hex');
}

export async function startAwsStandin(init = {}) {
  const st = { pages: {}, vars: {}, throttle: {}, fail: {}, types: 'describe-instance-types.xml', keyId: 'AKID', dir: fixtures, ...init };
  const cursor = {};
  const cache = new Map();
  const standin = { seen: [], imdsSeen: [], issued: [], url: '' };
  const keys = new Map(); // issued key id -> { secret, token, by, uses }
  const imdsTokens = new Set();
  let serial = 0;
  const issue = (by, spec) => {
    const n = standin.issued.filter((k) => k.by === by).length;
    const ins = (spec && spec.expiresIn) || [3600];
    const expiration = new Date(Date.now() + 1000 * ins[Math.min(n, ins.length - 1)]).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const key = { keyId: `ASIA${by.toUpperCase()}${String(++serial).padStart(8, '0')}`, secret: randomBytes(30).toString('base64'),
      token: randomBytes(120).toString('base64'), by, uses: 0, expiration };
    keys.set(key.keyId, key);
    standin.issued.push({ keyId: key.keyId, by, expiration });
    return key;
  };
  const fill = (name, vars) => readFileSync(path.join(fixtures, name), 'utf8').replace(/\$\{([A-Z_]+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
  // The metadata service: IMDSv2 only (a GET without a token is 401).
  const imds = (req, res) => {
    standin.imdsSeen.push({ method: req.method, path: req.url, headers: req.headers });
    if (req.url === '/latest/api/token') {
      const ttl = Number(req.headers['x-aws-ec2-metadata-token-ttl-seconds']);
      if (req.method !== 'PUT' || !(ttl >= 1 && ttl <= 21600)) return res.writeHead(400).end();
      const t = randomBytes(40).toString('base64');
      imdsTokens.add(t);
      return res.writeHead(200, { 'Content-Type': 'text/plain' }).end(t);
    }
    if (req.method !== 'GET' || !imdsTokens.has(req.headers['x-aws-ec2-metadata-token'])) return res.writeHead(401).end();
    const base = '/latest/meta-data/iam/security-credentials/';
    if (req.url === base) return res.writeHead(200, { 'Content-Type': 'text/plain' }).end(st.imds.role);
    if (req.url !== base + st.imds.role) return res.writeHead(404).end();
    const k = issue('imds', st.imds);
    return res.writeHead(200, { 'Content-Type': 'text/plain' })
      .end(fill('imds-credentials.json', { KEY_ID: k.keyId, SECRET: k.secret, TOKEN: k.token, EXPIRATION: k.expiration }));
  };
  const file = (name) => {
    if (!cache.has(name)) cache.set(name, readFileSync(path.join(st.dir, name), 'utf8'));
    return cache.get(name).replace(/\$\{([A-Z0-9_]+)\}/g, (m, k) => (k in st.vars ? String(st.vars[k]) : m));
  };
  const error = (res, code, name, extra = {}) =>
    res.writeHead(code, { 'Content-Type': 'text/xml;charset=UTF-8', ...extra }).end(file(name));
  standin.set = (more) => {
    Object.assign(st, more);
    for (const k of Object.keys(cursor)) delete cursor[k];
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => setTimeout(() => {
      if (st.imds && req.url.startsWith('/latest/')) return imds(req, res);
      const raw = Buffer.concat(chunks);
      const form = new URLSearchParams(raw.toString('utf8'));
      const m = AUTH.exec(req.headers.authorization || '');
      const region = m ? m[3] : null;
      const service = m ? m[4] : null;
      const action = form.get('Action');
      standin.seen.push({ region, service, action, form: Object.fromEntries(form), headers: req.headers });
      const signed = m ? m[5].split(';') : [];
      if (req.method !== 'POST' || !m || !req.headers['x-amz-date'] || !signed.includes('host') || !signed.includes('x-amz-date')) {
        return error(res, 401, 'error-auth.xml');
      }
      // Who signed: the base keys, or keys issued here (with their token).
      const key = keys.get(m[1]);
      const stsOnly = service === 'ec2' && st.role;
      const issuedOnly = service === 'ec2' && (st.role || st.imds);
      if (key) {
        if (req.headers['x-amz-security-token'] !== key.token || (stsOnly && key.by !== 'sts') ||
            (service === 'sts' && key.by !== 'imds') || !signed.includes('x-amz-security-token')) {
          return error(res, 401, 'error-auth.xml');
        }
      } else if (m[1] !== st.keyId || issuedOnly || (service === 'sts' && st.imds)) {
        return error(res, 401, 'error-auth.xml');
      }
      const secret = key ? key.secret : st.secret;
      if (secret && signature(req, raw, m, secret) !== m[6]) {
        return res.writeHead(403, { 'Content-Type': 'text/xml' }).end('<?xml version="1.0" encoding="UTF-8"?>\n' +
          '<Response><Errors><Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match the signature you provided.</Message></Error></Errors><RequestID>1</RequestID></Response>');
      }
      if (service === 'sts') {
        const r = st.role;
        if (!r || action !== 'AssumeRole' || form.get('Version') !== '2011-06-15' || region !== 'us-east-1' ||
            form.get('DurationSeconds') !== '3600' || !form.get('RoleSessionName')) {
          return res.writeHead(400, { 'Content-Type': 'text/xml' }).end(fill('sts-access-denied.xml', { ROLE_ARN: form.get('RoleArn') }).replace('AccessDenied', 'InvalidParameterValue'));
        }
        if (r.deny || form.get('RoleArn') !== r.arn || (r.externalId ?? null) !== form.get('ExternalId')) {
          return res.writeHead(403, { 'Content-Type': 'text/xml' }).end(fill('sts-access-denied.xml', { ROLE_ARN: form.get('RoleArn') }));
        }
        const k = issue('sts', r);
        return res.writeHead(200, { 'Content-Type': 'text/xml' }).end(fill('sts-assume-role.xml',
          { KEY_ID: k.keyId, SECRET: k.secret, TOKEN: k.token, EXPIRATION: k.expiration, SESSION_NAME: form.get('RoleSessionName') }));
      }
      if (key && st.role && st.role.revokeAfter !== undefined && ++key.uses > st.role.revokeAfter) {
        return error(res, 400, 'error-expired-token.xml');
      }
      if (st.fail[region]) return error(res, 400, st.fail[region]);
      if (st.throttle[region] > 0) {
        st.throttle[region]--;
        return error(res, 503, 'error-throttled.xml', { 'Retry-After': '1' });
      }
      if (form.get('Version') !== '2016-11-15') return error(res, 400, 'error-auth.xml');
      if (action === 'DescribeInstances') {
        const pages = st.pages[region] || [];
        const at = form.get('NextToken') ? (cursor[region] || 0) : 0;
        cursor[region] = at + 1;
        if (at >= pages.length) return res.writeHead(400).end('no such page');
        return res.writeHead(200, { 'Content-Type': 'text/xml;charset=UTF-8' }).end(file(pages[at]));
      }
      if (action === 'DescribeInstanceTypes') {
        const want = new Set();
        for (const [k, v] of form) if (/^Filter\.1\.Value\.\d+$/.test(k)) want.add(v);
        if (form.get('Filter.1.Name') !== 'instance-type') return error(res, 400, 'error-auth.xml');
        const body = file(st.types).replace(/^ {8}<item>\n {12}<instanceType>([^<]+)<\/instanceType>[\s\S]*?^ {8}<\/item>\n/gm,
          (item, type) => (want.has(type) ? item : ''));
        return res.writeHead(200, { 'Content-Type': 'text/xml;charset=UTF-8' }).end(body);
      }
      return error(res, 400, 'error-auth.xml');
    }, st.delay || 0));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  standin.url = `http://127.0.0.1:${server.address().port}/`;
  standin.close = () => new Promise((r) => server.close(r));
  return standin;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const s = await startAwsStandin(JSON.parse(process.argv[2] || '{}'));
  process.stdout.write(s.url + '\n');
  process.stdin.resume();
  process.stdin.on('end', () => s.close().then(() => process.exit(0)));
}
