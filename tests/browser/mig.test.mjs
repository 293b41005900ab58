// A MIG instance named after its parent (`MIG-<parent>/<instance>`, as
// dcgm-exporter reports it without a UUID) opens from the GPU list and from
// its parent's page, and its page loads the record.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;

const PARENT = 'GPU-3f7a9c21-5e4d-4b8a-9c0e-7d1f2a3b4c5d';
const MIG = `MIG-${PARENT}/5`;

before(async () => {
  server = await startServer();
  const tok = await server.api('POST', '/api/v1/tokens', { body: { name: 'dcgm', role: 'pusher', source: 'mig-lab' } });
  assert.equal(tok.status, 201, tok.text);
  const now = Math.floor(Date.now() / 1000);
  const r = await server.api('POST', '/api/v1/ingest', { auth: tok.json.token, body: {
    batch_id: 'mig-b1', host: { hostname: 'gpu-node-07' },
    gpus: [{ uuid: PARENT, index: 0, name: 'NVIDIA A100 80GB PCIe', mig_mode: true },
      { uuid: MIG, parent_uuid: PARENT, mig_instance: 5, mig_profile: '2g.20gb', name: 'NVIDIA A100 80GB PCIe' }],
    samples: [{ time: now - 1, gpu: MIG, util_avg: 40, mem_used_mib: 17433 }],
  } });
  assert.equal(r.status, 201, r.text);
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/gpus');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('clicking a MIG row opens the instance page', async () => {
  await page.locator('[data-nav=gpus][aria-current=page]').waitFor();
  await tableReady(page);
  const apiCalls = [];
  // The record's requests (the page's timeline panel is checked in home.test.mjs).
  page.on('response', (res) => {
    const u = new URL(res.url());
    if (u.pathname.startsWith('/api/v1/gpus/') && !u.pathname.endsWith('/timeline')) apiCalls.push(res.status());
  });
  await page.locator(`tbody tr[data-id="${MIG}"] td`).nth(1).click();
  await page.locator('[data-testid=identity]').waitFor();
  assert.match(page.url(), /#\/gpus\/MIG-GPU-3f7a9c21-5e4d-4b8a-9c0e-7d1f2a3b4c5d%2F5$/);
  assert.equal(await page.locator('[aria-current=page].mono').textContent(), MIG);
  assert.match(await page.locator('.kv-row[data-field=mig_profile] dd').textContent(), /2g\.20gb/);
  assert.deepEqual(apiCalls.filter((s) => s !== 200), [], 'every GPU request answered 200');
  await shot(page, 'mig-01-instance-page');
  assert.deepEqual(errors, []);
});

test('the parent page links to the instance, and the link resolves', async () => {
  await page.goto(server.url + `/#/gpus/${PARENT}`);
  await page.locator('[data-testid=identity]').waitFor();
  const link = page.locator(`a.mono:text-is("${MIG}")`);
  await link.first().click();
  await page.waitForFunction((m) => document.querySelector('[aria-current=page].mono')?.textContent === m, MIG);
  await page.locator('[data-testid=identity]').waitFor();
  assert.match(await page.locator('.kv-row[data-field=parent_uuid] dd').textContent(), new RegExp(PARENT));
  assert.deepEqual(errors, []);
});
