// A stand-in for Azure: Microsoft Entra ID's token endpoint (client
// credentials) and Azure Resource Manager's Virtual Machines - List All
// (statusOnly=true, paged by nextLink) and Resource SKUs, replaying the
// recorded answers in tests/fixtures/azure/ ("{{base}}" in a nextLink
// becomes this server's URL). Scenario knobs on the returned object:
// `throttle` (429 answers with Retry-After before page 2), `failPage2`
// (page 2 answers 500), `secret` (the client secret it accepts; any other
// answers Entra's "secret expired" error), `expire()` (every token issued
// so far stops working), `foreignNext` (page 1's nextLink names another
// server), `startAt` (unix seconds: every VM's timeCreated is moved
// there, written with 7 fractional digits and +00:00), `vmss` (the
// scale-set list names a Uniform AKS GPU pool whose 2 members come over
// two pages and a Flexible set whose member is in the VM list; without it
// the subscription has no scale sets), `failMembers2` (the Uniform set's
// member page 2 answers 500), `omit` (VM and member names, by
// computerName or resource name, left out).
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const fx = (n) => readFileSync(path.join(here, '..', '..', 'fixtures', 'azure', n), 'utf8');
export const SUB = '00000000-1111-2222-3333-444444444444';
export const TENANT = 'contoso.onmicrosoft.com';
export const CLIENT = '11111111-2222-3333-4444-555555555555';

/** A recorded page, with its times moved to startAt when that is set. */
function page(st, name, edit = () => {}) {
  const text = fx(name).replaceAll('{{base}}', st.foreignNext ? 'http://192.0.2.1:9' : st.url);
  const p = JSON.parse(text);
  edit(p);
  p.value = p.value.filter((vm) => !st.omit.includes(vm.name) && !st.omit.includes(vm.properties?.osProfile?.computerName));
  if (!st.startAt) return JSON.stringify(p);
  const t = new Date(st.startAt * 1000).toISOString().replace('.000Z', '.0000000+00:00');
  for (const vm of p.value) if (vm.properties) vm.properties.timeCreated = t;
  return JSON.stringify(p);
}

export const AKS_SET = `/subscriptions/${SUB}/resourceGroups/MC_aks-rg_aks-ml_eastus/providers/Microsoft.Compute/virtualMachineScaleSets/aks-gpu-12345678-vmss`;
export const FLEX_SET = `/subscriptions/${SUB}/resourceGroups/ML-RG/providers/Microsoft.Compute/virtualMachineScaleSets/flex-infer`;

export async function startAzure({ secret = 'right-secret' } = {}) {
  const st = {
    url: '', startAt: 0, seen: [], throttle: 0, failPage2: false, secret, foreignNext: false, tokens: new Set(), issued: 0,
    vmss: false, failMembers2: false, omit: [],
    expire() { this.tokens.clear(); },
  };
  const send = (res, code, body, headers = {}) =>
    res.writeHead(code, { 'Content-Type': 'application/json; charset=utf-8', ...headers }).end(body);
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (d) => { raw += d; });
    req.on('end', () => {
      const u = new URL(req.url, 'http://x');
      st.seen.push({ method: req.method, path: u.pathname, query: Object.fromEntries(u.searchParams) });
      if (req.method === 'POST' && u.pathname === `/${TENANT}/oauth2/v2.0/token`) {
        const f = new URLSearchParams(raw);
        if (f.get('grant_type') !== 'client_credentials' || f.get('scope') !== 'https://management.azure.com/.default' ||
            f.get('client_id') !== CLIENT || !/x-www-form-urlencoded/.test(req.headers['content-type'] || '')) {
          return send(res, 400, '{"error":"invalid_request","error_description":"AADSTS900144: The request body must contain the following parameter: \'grant_type\'."}');
        }
        if (f.get('client_secret') !== st.secret) return send(res, 401, fx('token-expired-secret.json'));
        const token = `eyJ0eXAi.standin-${++st.issued}`;
        st.tokens.add(token);
        return send(res, 200, fx('token.json').replace('{{token}}', token));
      }
      const auth = (req.headers.authorization || '').replace(/^Bearer /, '');
      if (!st.tokens.has(auth)) return send(res, 401, fx('error-expired-token.json'));
      const base = `/subscriptions/${SUB}/providers/Microsoft.Compute`;
      if (u.pathname === base + '/skus' && u.searchParams.get('api-version')) return send(res, 200, fx('skus.json'));
      if (u.pathname === base + '/virtualMachines' && u.searchParams.get('api-version') === '2024-07-01' &&
          u.searchParams.get('statusOnly') === 'true') {
        if (!u.searchParams.get('$skiptoken')) {
          return send(res, 200, page(st, 'vms-page1.json', (p) => {
            if (st.vmss) p.value.push(JSON.parse(fx('vmss-flex-vm.json')));
          }));
        }
        if (st.throttle > 0) {
          st.throttle -= 1;
          return send(res, 429, fx('error-429.json'), { 'Retry-After': '1' });
        }
        if (st.failPage2) return send(res, 500, '{"error":{"code":"InternalServerError","message":"Encountered internal server error."}}');
        return send(res, 200, page(st, 'vms-page2.json'));
      }
      if (u.pathname === base + '/virtualMachineScaleSets' && u.searchParams.get('api-version') === '2024-07-01') {
        return send(res, 200, st.vmss ? fx('vmss-list.json') : '{"value":[]}');
      }
      if (st.vmss && u.pathname === AKS_SET + '/virtualMachines' && u.searchParams.get('api-version') === '2024-07-01' &&
          u.searchParams.get('$expand') === 'instanceView') {
        if (!u.searchParams.get('$skiptoken')) return send(res, 200, page(st, 'vmss-members-page1.json'));
        if (st.failMembers2) return send(res, 500, '{"error":{"code":"InternalServerError","message":"Encountered internal server error."}}');
        return send(res, 200, page(st, 'vmss-members-page2.json'));
      }
      if (st.vmss && u.pathname === FLEX_SET + '/virtualMachines') {
        // Flexible members are in the VM list: reading them here again is a mistake.
        const vm = JSON.parse(fx('vmss-flex-vm.json'));
        return send(res, 200, JSON.stringify({ value: [{ ...vm, instanceId: '1a2b3c4d', sku: { name: 'Standard_NC4as_T4_v3' } }] }));
      }
      return send(res, 404, '{"error":{"code":"ResourceNotFound","message":"The resource was not found."}}');
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  st.url = 'http://127.0.0.1:' + server.address().port;
  st.close = () => new Promise((r) => server.close(r));
  return st;
}
