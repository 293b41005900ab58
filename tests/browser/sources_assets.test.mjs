// Sources page: a NetBox source added through the form stores its API
// token as `token` (write-only) and only its own kind's filters, and an
// edit that leaves the token blank keeps it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, signIn } from './browser.mjs';

let server;
let browser;
let page;
let errors;
const dialog = () => page.locator('dialog[open]');

before(async () => {
  server = await startServer();
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/sources`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('a NetBox source is added with its token and filters', async () => {
  await page.getByTestId('add-source').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('netbox-fra');
  await dialog().locator('select[name=kind]').selectOption('netbox');
  assert.equal(await dialog().locator('input[name="config.site"]').isVisible(), true);
  assert.equal(await dialog().locator('input[name="config.category"]').isVisible(), false, 'Snipe-IT filters hidden');
  assert.equal(await dialog().locator('input[name="config.query"]').isVisible(), false);
  assert.match(await dialog().textContent(), /sent as Authorization: Token/);
  await dialog().locator('input[name="config.url"]').fill('http://127.0.0.1:9');
  await dialog().locator('input[name="config.token"]').fill('nb-s3cret');
  await dialog().locator('input[name="config.site"]').fill('fra1');
  await dialog().locator('input[name="config.page_size"]').fill('50');
  await dialog().locator('input[name=enabled]').uncheck();
  await dialog().getByRole('button', { name: 'Add source' }).click();
  await dialog().waitFor({ state: 'detached' });
  const row = page.locator('tbody tr', { hasText: 'netbox-fra' });
  await row.waitFor();
  assert.match(await row.textContent(), /NetBox/);
  const made = (await server.api('GET', '/api/v1/sources')).json.items.find((s) => s.name === 'netbox-fra');
  assert.deepEqual(made.config, { url: 'http://127.0.0.1:9', token: '(set)', site: 'fra1', page_size: 50 });

  await row.getByRole('button', { name: 'Edit netbox-fra' }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), /A token is stored\. Leave blank to keep it\./);
  await dialog().locator('input[name="config.site"]').fill('ams');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  const saved = (await server.api('GET', `/api/v1/sources/${made.id}`)).json;
  assert.equal(saved.config.site, 'ams');
  assert.equal(saved.config.token, '(set)', 'a blank token field keeps the stored token');
  assert.deepEqual(errors, []);
});
