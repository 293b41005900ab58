// Dashboard, the GPU list: a data center's page links to its GPUs; the
// data-center, team and environment filters reach the API and the table
// shows what it answers; the export is named after the filter; the list
// refreshes itself while the tab is visible and not while it is hidden;
// each GPU's state badge follows the API (idle apart from no telemetry).
// Time is moved with the page's fake clock, never waited for.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let dc;
const tokens = {};
const gpuRequests = [];

function batch(id, host, n, { datacenter, samples = true } = {}) {
  const now = Math.floor(Date.now() / 1000);
  const uuids = Array.from({ length: n }, (_, i) => `GPU-${Buffer.from(host).toString('hex').slice(0, 8).padEnd(8, '0')}-0000-4000-8000-00000000000${i}`);
  return {
    batch_id: id,
    host: { hostname: host, ...(datacenter ? { datacenter } : {}) },
    gpus: uuids.map((u, i) => ({ uuid: u, index: i, name: 'NVIDIA L40S', serial: `${host}-${i}`, memory_total_mib: 46068 })),
    samples: samples ? uuids.map((u, i) => ({ time: now - 1, gpu: u, util_avg: i === 0 ? 0 : 50, mem_used_mib: 512 })) : [],
  };
}

async function ingest(team, body) {
  const r = await server.api('POST', '/api/v1/ingest', { auth: tokens[team], body });
  assert.equal(r.status, 201, r.text);
}

before(async () => {
  server = await startServer({ demo: true });
  dc = (await server.api('GET', '/api/v1/datacenters?sort=name')).json.items[0];
  for (const [team, env] of [['speech', 'prod'], ['vision', 'dev']]) {
    const t = await server.api('POST', '/api/v1/tokens',
      { body: { name: `gl-${team}`, role: 'pusher', source: `gl-${team}`, team, env } });
    assert.equal(t.status, 201, t.text);
    tokens[team] = t.json.token;
  }
  await ingest('speech', batch('gl-1', 'gl-a', 3, { datacenter: dc.name }));
  await ingest('vision', batch('gl-2', 'gl-b', 2));
  await ingest('vision', batch('gl-3', 'gl-quiet', 1, { samples: false }));
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/v1/gpus') gpuRequests.push(new URL(r.url())); });
  await page.clock.install();
  await page.goto(`${server.url}/#/datacenters/${dc.id}`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

/** The uuids in the table, in order. */
const tableIds = () => page.$$eval('.table-wrap tbody tr[data-id]', (rows) => rows.map((r) => r.dataset.id));

/** Waits until the table shows exactly what the API answers for the query the page last sent. */
async function matchesApi() {
  await tableReady(page);
  const last = gpuRequests.filter((u) => u.searchParams.get('limit') !== '1').at(-1);
  const r = await server.api('GET', `/api/v1/gpus${last.search}`);
  assert.equal(r.status, 200, r.text);
  await page.waitForFunction((want) => JSON.stringify([...document.querySelectorAll('.table-wrap tbody tr[data-id]')]
    .map((tr) => tr.dataset.id)) === want, JSON.stringify(r.json.items.map((g) => g.uuid)));
  return { params: last.searchParams, api: r.json };
}

test('a data center links to its GPUs, and the data-center filter reaches the API', async () => {
  await page.locator('[data-testid=dc-gpus]').click();
  await page.waitForURL(new RegExp(`#/gpus\\?datacenter=${dc.id}`));
  const { params, api } = await matchesApi();
  assert.equal(params.get('datacenter'), String(dc.id));
  assert.equal(await page.locator('select[name=datacenter]').inputValue(), String(dc.id));
  for (const g of api.items) assert.equal(g.datacenter_id, dc.id);
  assert.match(await page.locator('[data-testid=gpu-scope]').textContent(), new RegExp(dc.name.toLowerCase()));
  await shot(page, 'gpulist-01-datacenter');
});

test('team and environment filters are sent, the table shows the answer, and the export is named after them', async () => {
  await page.locator('select[name=datacenter]').selectOption('');
  await page.locator('input[name=team]').fill('speech');
  await page.locator('input[name=env]').fill('prod');
  await page.clock.runFor(400); // the inputs' debounce
  await page.waitForFunction(() => location.hash.includes('team=speech') && location.hash.includes('env=prod'));
  const { params } = await matchesApi();
  assert.equal(params.get('team'), 'speech');
  assert.equal(params.get('env'), 'prod');
  assert.equal(params.get('datacenter'), null);
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('[data-testid=export-csv]').click()]);
  const day = new Date(await page.evaluate(() => Date.now())).toISOString().slice(0, 10);
  assert.equal(download.suggestedFilename(), `gpus-team-speech-env-prod-${day}.csv`);
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await matchesApi();
});

test('each GPU is badged as the API states it: idle apart from no telemetry', async () => {
  const api = (await server.api('GET', '/api/v1/gpus?limit=100')).json;
  for (const g of api.items) {
    const flags = await page.locator(`tbody tr[data-id="${g.uuid}"] td[data-col=status]`).textContent();
    assert.equal(/No telemetry/.test(flags), g.state === 'unknown', `${g.uuid} (${g.state}): ${flags}`);
    assert.equal(/Idle/.test(flags), g.state === 'idle', `${g.uuid} (${g.state}): ${flags}`);
  }
  assert.ok(api.items.some((g) => g.state === 'idle'), 'an idle GPU is in the list');
  const fresh = await page.locator('[data-testid=gpu-freshness]').textContent();
  assert.match(fresh, /Updates every 20 s/);
  if (typeof api.freshness_s === 'number') assert.match(fresh, /older than .* is stale/);
  else assert.doesNotMatch(fresh, /stale/, 'no made-up freshness limit');
});

test('the list refreshes itself while the tab is visible, and not while it is hidden', async () => {
  const before = (await tableIds()).length;
  await ingest('vision', batch('gl-4', 'gl-c', 1));
  await page.clock.runFor(21000);
  await page.waitForFunction((n) => document.querySelectorAll('.table-wrap tbody tr[data-id]').length === n + 1, before);
  await matchesApi();

  // Hidden: no request however long it stays hidden.
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await ingest('vision', batch('gl-5', 'gl-d', 1));
  const sent = gpuRequests.length;
  await page.clock.runFor(90000);
  assert.equal(gpuRequests.length, sent, 'no refresh while hidden');
  assert.equal((await tableIds()).length, before + 1);

  // Visible again: it catches up at once.
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'visible' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await page.waitForFunction((n) => document.querySelectorAll('.table-wrap tbody tr[data-id]').length === n + 2, before);
  assert.ok(gpuRequests.length > sent);
  await shot(page, 'gpulist-02-refreshed');
  assert.deepEqual(errors, []);
});
