// Dashboard, inventory against discovery: the Drift page (counts per kind,
// kind and data-center filters, rows linking to server, host and GPUs, CSV
// export), the Discovered hosts tab where an admin links, unlinks and
// returns a host to automatic matching, the data-center overview's declared
// and discovered figures, and a GPU page naming the server it sits in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let dc;
let other;
const uuid = (host, i) => `GPU-${host === 'node-x' ? 'aaaa' : 'bbbb'}0000-0000-4000-8000-00000000000${i}`;

async function call(method, p, body, auth) {
  const r = await server.api(method, p, { body, auth });
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}

function batch(host, serial, n, util) {
  const now = Math.floor(Date.now() / 1000);
  const gpus = Array.from({ length: n }, (_, i) => ({ uuid: uuid(host, i), index: i, name: 'NVIDIA H100 80GB HBM3',
    memory_total_mib: 81559 }));
  return { batch_id: `b-${host}`, host: { hostname: host, ...(serial ? { serial } : {}) }, gpus,
    samples: gpus.map((g) => ({ time: now - 1, gpu: g.uuid, util_avg: util })) };
}

before(async () => {
  server = await startServer();
  dc = await call('POST', '/api/v1/datacenters', { name: 'Lab DC', location: 'here' });
  other = await call('POST', '/api/v1/datacenters', { name: 'Other DC', location: 'there' });
  await call('POST', '/api/v1/resources', { datacenter_id: dc.id, kind: 'server', name: 'srv-count', serial: 'SER-1',
    gpu_model: 'H100', gpu_count: 8, state: 'in_use', tenant: 'ml' });
  await call('POST', '/api/v1/resources', { datacenter_id: other.id, kind: 'server', name: 'srv-never',
    gpu_model: 'H100', gpu_count: 4 });
  const tok = await call('POST', '/api/v1/tokens', { name: 'agents', role: 'pusher', source: 'lab-agents' });
  await call('POST', '/api/v1/ingest', batch('node-x', 'SER-1', 6, 50), tok.token);
  await call('POST', '/api/v1/ingest', batch('orphan', null, 2, 0), tok.token);
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/drift');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('the Drift page counts each kind and lists the rows with their links', async () => {
  await page.locator('[data-nav=drift].active').waitFor();
  await tableReady(page);
  await page.locator('[data-testid=count-gpu_count_mismatch]', { hasText: '1' }).waitFor();
  assert.equal(await page.locator('[data-testid=count-never_seen]').textContent(), '1');
  assert.equal(await page.locator('[data-testid=count-unlinked_host]').textContent(), '1');
  assert.equal(await page.locator('[data-testid=count-retired_busy]').textContent(), '0');
  const row = page.locator('tbody tr', { hasText: 'srv-count' });
  assert.equal(await row.locator('td').nth(4).textContent(), '8');
  assert.equal(await row.locator('td').nth(5).textContent(), '6');
  assert.match(await row.locator('a', { hasText: 'srv-count' }).getAttribute('href'), /^#\/resources\/\d+$/);
  assert.equal(await row.locator('a', { hasText: 'its GPUs' }).getAttribute('href'), '#/gpus?host=node-x');
  await shot(page, 'drift');

  // A count filters by its kind; the data-center filter narrows further.
  await page.locator('button.drift-count[data-kind=never_seen]').click();
  await page.waitForFunction(() => location.hash.includes('kind=never_seen'));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 1), ['srv-never']);
  assert.match(await page.locator('[data-testid=export-csv]').getAttribute('href'), /\/api\/v1\/drift\?kind=never_seen&format=csv/);
  await page.locator('select[name=datacenter]').selectOption(String(dc.id));
  await page.waitForFunction((id) => location.hash.includes(`datacenter=${id}`), dc.id);
  await tableReady(page);
  assert.equal(await page.locator('tbody tr.empty-row').count(), 1);
  await page.locator('select[name=kind]').selectOption('');
  await page.locator('select[name=datacenter]').selectOption('');
  await tableReady(page);
  const csv = await page.evaluate(async () => (await fetch(document.querySelector('[data-testid=export-csv]').href)).text());
  assert.match(csv, /gpu_count_mismatch/);
  assert.match(csv, /never_seen/);
  assert.deepEqual(errors, []);
});

test('an admin links, unlinks and returns a host to automatic matching', async () => {
  await page.locator('a.tab[data-tab=hosts]').click();
  await page.waitForFunction(() => location.hash.startsWith('#/drift/hosts'));
  await tableReady(page);
  const nodeX = page.locator('tbody tr', { hasText: 'node-x' });
  const orphan = page.locator('tbody tr', { hasText: 'orphan' });
  await nodeX.locator('[data-testid=linked-server]', { hasText: 'srv-count' }).waitFor();
  assert.match(await nodeX.textContent(), /Matched by serial/);
  assert.match(await orphan.textContent(), /Unlinked/);

  await orphan.locator('button[data-action=link]').click();
  await page.locator('dialog [data-testid=link-server]').fill('no-such-server');
  await page.locator('dialog button[type=submit]').click();
  await page.locator('dialog .field-error', { hasText: 'No server is named no-such-server' }).waitFor();
  await page.locator('dialog [data-testid=link-server]').fill('srv-never');
  await page.locator('dialog button[type=submit]').click();
  await orphan.locator('[data-testid=linked-server]', { hasText: 'srv-never' }).waitFor();
  assert.match(await orphan.textContent(), /Manual/);
  assert.match(await orphan.textContent(), /Other DC/, 'the host follows its server\'s data center');

  await nodeX.locator('button[data-action=unlink]').click();
  await nodeX.locator('text=Not linked (manual)').waitFor();
  await nodeX.locator('button[data-action=auto]').click();
  await nodeX.locator('[data-testid=linked-server]', { hasText: 'srv-count' }).waitFor();
  assert.match(await nodeX.textContent(), /Matched by serial/);
  await shot(page, 'drift-hosts');

  const audit = await call('GET', '/api/v1/audit?entity=host');
  assert.deepEqual(audit.items.slice(0, 3).map((a) => a.action), ['match', 'unlink', 'link']);
  assert.deepEqual(errors, []);
});

test('the overview shows declared and discovered GPUs; a GPU names its server', async () => {
  await page.goto(`${server.url}/#/datacenters/${dc.id}`);
  await page.locator('[data-testid=gpu-discovered]').waitFor();
  assert.equal(await page.locator('[data-testid=gpus-total]').textContent(), '8');
  assert.equal(await page.locator('[data-testid=disc-total]').textContent(), '6');
  assert.equal(await page.locator('[data-testid=disc-in_use]').textContent(), '6');
  assert.match(await page.locator('[data-testid=gpu-discovered]').textContent(), /-2 vs declared/);
  await shot(page, 'drift-overview');

  await page.goto(`${server.url}/#/gpus/${uuid('node-x', 0)}`);
  const line = page.locator('[data-testid=gpu-server]');
  await line.waitFor();
  assert.equal((await line.textContent()).trim(), 'In server srv-count (data center Lab DC), matched by serial');
  await page.goto(`${server.url}/#/gpus/${uuid('orphan', 0)}`);
  await page.locator('[data-testid=gpu-server]', { hasText: 'In server srv-never' }).waitFor();
  assert.match(await page.locator('[data-testid=gpu-server]').textContent(), /linked by an admin/);
  assert.deepEqual(errors, []);
});
