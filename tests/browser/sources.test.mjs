// Sources page: "Add source" builds its form from the kind's config keys
// (GET /api/v1/source-kinds), "Test connection" pulls once without storing
// anything and shows what it found or why it failed, and a saved source's
// row shows the hosts and GPUs it found. Here a prometheus-generic source
// reads a vendor-like exporter stand-in through a mapping typed into the
// form.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const vendorPage = readFileSync(path.join(here, '..', 'fixtures', 'prom', 'vendor_gpu.prom'));

let server;
let browser;
let page;
let errors;
let exporter;
let exporterUrl;
let scrapes = 0;
const dialog = () => page.locator('dialog[open]');
const row = (name) => page.locator('tbody tr', { hasText: name });

const MAPPING = {
  uuid_label: 'gpu_uuid',
  host_label: 'node',
  model: { label: 'model_name', metric: 'vendor_gpu_info' },
  utilization: { metric: 'vendor_gpu_busy_percent', unit: 'percent' },
  power: { metric: 'vendor_gpu_power_milliwatts', unit: 'milliwatts' },
};

before(async () => {
  exporter = http.createServer((req, res) => {
    if (req.url !== '/metrics') { res.writeHead(404).end(); return; }
    scrapes++;
    res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(vendorPage);
  });
  await new Promise((r) => exporter.listen(0, '127.0.0.1', r));
  exporterUrl = `http://127.0.0.1:${exporter.address().port}/metrics`;
  server = await startServer();
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/sources`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  try {
    if (server) {
      const { code } = await server.stop();
      assert.equal(code, 0, server.stderr);
    }
  } finally {
    exporter.close();
  }
});

test('a prometheus-generic source is added through the generated form, tested, saved and counted', async () => {
  await page.getByTestId('add-source').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('vendor-accel');
  await dialog().locator('select[name=kind]').selectOption('prometheus-generic');
  // The kind's keys, by type: URLs, a secret as a password input, the
  // mapping as JSON with its required mark and help text.
  const fields = dialog().getByTestId('config-fields');
  assert.equal(await fields.locator('input[name="config.exporter_url"]').getAttribute('type'), 'url');
  assert.equal(await fields.locator('input[name="config.bearer_token"]').getAttribute('type'), 'password');
  assert.equal(await fields.locator('input[name="config.timeout_s"]').getAttribute('max'), '300');
  const mapping = fields.locator('[data-field="config.mapping"]');
  assert.equal(await mapping.locator('.req').count(), 1, 'the mapping is marked required');
  assert.match(await mapping.textContent(), /uuid_label/);
  assert.match(await fields.locator('[data-field="config.url"]').textContent(), /either url or exporter_url/);
  assert.equal(await dialog().locator('input[name="config.query"]').count(), 0, 'no keys of other kinds');

  await fields.locator('input[name="config.exporter_url"]').fill(exporterUrl);
  // A mapping the server refuses: its message is shown, nothing is pulled.
  await fields.locator('textarea[name="config.mapping"]').fill(JSON.stringify({ ...MAPPING, power: { metric: 'p', unit: 'horsepower' } }));
  await dialog().getByTestId('test-source').click();
  // A refused part of the mapping is shown next to the mapping, in the server's words.
  await mapping.locator('.field-error', { hasText: 'config.mapping.power.unit must be one of watts' }).waitFor();
  assert.equal(scrapes, 0);
  // Text that is not JSON is caught in the form.
  await fields.locator('textarea[name="config.mapping"]').fill('{uuid_label:');
  await dialog().getByTestId('test-source').click();
  await mapping.locator('.field-error', { hasText: 'must be JSON' }).waitFor();

  await fields.locator('textarea[name="config.mapping"]').fill(JSON.stringify(MAPPING, null, 2));
  await dialog().getByTestId('test-source').click();
  const found = dialog().getByTestId('test-found');
  await found.waitFor();
  assert.equal((await found.textContent()).trim(), 'Found 3 GPUs on 2 hosts.');
  assert.match(await dialog().getByTestId('test-warnings').textContent(), /infinite; utilization left absent \(and 1 more\)/);
  assert.equal(scrapes, 1);
  await shot(page, 'sources-01-tested');
  // Testing stored nothing.
  assert.equal((await server.api('GET', '/api/v1/sources')).json.items.length, 0);
  assert.equal((await server.api('GET', '/api/v1/gpus')).json.total, 0);

  await dialog().getByRole('button', { name: 'Add source' }).click();
  await dialog().waitFor({ state: 'detached' });
  const made = (await server.api('GET', '/api/v1/sources')).json.items.find((s) => s.name === 'vendor-accel');
  assert.equal(made.kind, 'prometheus-generic');
  assert.deepEqual(made.config, { exporter_url: exporterUrl, mapping: MAPPING });

  await row('vendor-accel').getByRole('button', { name: 'Run vendor-accel now' }).click();
  await page.getByTestId('run-result').filter({ hasText: 'the run succeeded' }).waitFor();
  await tableReady(page);
  await row('vendor-accel').locator('[data-testid=source-gpus]', { hasText: '3' }).waitFor();
  assert.equal((await row('vendor-accel').getByTestId('source-hosts').textContent()).trim(), '2');
  assert.match(await row('vendor-accel').textContent(), /Own exporter/);
  await shot(page, 'sources-02-saved');
  assert.deepEqual(errors, []);
});

test('a saved source is re-tested with its stored secret, which the form never shows', async () => {
  // Disabled, so that no scheduled pull records an attempt meanwhile.
  const made = await server.api('POST', '/api/v1/sources', { body: { name: 'dcgm-down', kind: 'dcgm-exporter', enabled: false,
    config: { url: 'http://127.0.0.1:9/metrics', bearer_token: 'never-shown', timeout_s: 2 } } });
  assert.equal(made.status, 201, made.text);
  await page.getByRole('button', { name: 'Refresh' }).click();
  await tableReady(page);
  await row('dcgm-down').getByRole('button', { name: 'Edit dcgm-down' }).click();
  await dialog().waitFor();
  const secret = dialog().locator('input[name="config.bearer_token"]');
  assert.equal(await secret.inputValue(), '');
  assert.ok(!(await dialog().innerHTML()).includes('never-shown'));
  assert.match(await dialog().textContent(), /A token is stored\. Leave blank to keep it\./);
  await dialog().getByTestId('test-source').click();
  const err = dialog().getByTestId('test-error');
  await err.waitFor();
  assert.ok((await err.textContent()).length > 0);
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  const after = (await server.api('GET', `/api/v1/sources/${made.json.id}`)).json;
  assert.equal(after.last_attempt_at, null, 'a test records nothing on the source');
  assert.equal(after.config.bearer_token, '(set)');
  assert.deepEqual(errors, []);
});
