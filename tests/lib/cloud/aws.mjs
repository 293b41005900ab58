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
// `standin.seen` lists every request: {region, action, form, headers}.
//
// Run alone (for benchmarks): node aws.mjs '<scenario JSON with "dir">'
// prints the port and serves until stdin closes.
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', '..', 'fixtures', 'aws');
const AUTH = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([a-z0-9-]+)\/ec2\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=[0-9a-f]{64}$/;

export async function startAwsStandin(init = {}) {
  const st = { pages: {}, vars: {}, throttle: {}, fail: {}, types: 'describe-instance-types.xml', keyId: 'AKID', dir: fixtures, ...init };
  const cursor = {};
  const cache = new Map();
  const standin = { seen: [], url: '' };
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
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const m = AUTH.exec(req.headers.authorization || '');
      const region = m ? m[3] : null;
      const action = form.get('Action');
      standin.seen.push({ region, action, form: Object.fromEntries(form), headers: req.headers });
      if (req.method !== 'POST' || !m || m[1] !== st.keyId || !req.headers['x-amz-date'] ||
          !m[4].split(';').includes('host') || !m[4].split(';').includes('x-amz-date')) {
        return error(res, 401, 'error-auth.xml');
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
