// Dashboard, API tokens and data centers: the list shows each token's data
// centers ("All" when not confined), the create form confines a new token
// to the ticked data centers, and the Scope dialog changes them; the
// server then answers the token only inside them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let dcA;
let dcB;

before(async () => {
  server = await startServer();
  dcA = (await server.api('POST', '/api/v1/datacenters', { body: { name: 'fra1' } })).json;
  dcB = (await server.api('POST', '/api/v1/datacenters', { body: { name: 'ams1' } })).json;
  for (const [tag, dc] of [['TS-A', dcA], ['TS-B', dcB]]) {
    const r = await server.api('POST', '/api/v1/assets', { body: { tag, kind: 'server', location: { datacenter: dc.name } } });
    assert.equal(r.status, 201, r.text);
  }
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/tokens`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

const dialog = () => page.locator('dialog[open]');
const row = (name) => page.locator('tbody tr[data-id]', { hasText: name });
const reads = async (token, tag) => (await server.api('GET', `/api/v1/assets/${tag}`, { auth: token })).status;

test('a viewer token created for one data center is confined to it, and the list says so', async () => {
  await page.locator('[data-nav=tokens][aria-current=page]').waitFor();
  await tableReady(page);
  await page.locator('[data-testid=create-token]').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('fra1 scanner');
  await dialog().locator('select[name=role]').selectOption('viewer');
  const picker = dialog().locator('[data-testid=token-dcs]');
  assert.match(await picker.textContent(), /fra1/);
  assert.match(await picker.textContent(), /ams1/);
  await picker.getByLabel('fra1').check();
  await shot(page, 'token-scope-01-create');
  await dialog().getByRole('button', { name: 'Create token' }).click();
  const box = dialog().locator('[data-testid=new-token]');
  await box.waitFor();
  const token = await box.inputValue();
  await dialog().getByRole('button', { name: 'Done' }).click();
  await dialog().waitFor({ state: 'detached' });

  const made = (await server.api('GET', '/api/v1/tokens')).json.items.find((t) => t.name === 'fra1 scanner');
  assert.deepEqual(made.datacenters, [dcA.id]);
  assert.equal(await reads(token, 'TS-A'), 200);
  assert.equal(await reads(token, 'TS-B'), 404);
  await row('fra1 scanner').waitFor();
  assert.equal((await row('fra1 scanner').locator('[data-testid=token-scope]').textContent()).trim(), 'fra1');
  globalThis.scopedToken = token;
});

test('an unconfined token lists All; the admin has no Scope button', async () => {
  const r = await server.api('POST', '/api/v1/tokens', { body: { name: 'reporting', role: 'viewer' } });
  assert.equal(r.status, 201, r.text);
  await page.reload();
  await tableReady(page);
  await row('reporting').waitFor();
  assert.equal((await row('reporting').locator('[data-testid=token-scope]').textContent()).trim(), 'All');
  assert.equal(await row('reporting').getByRole('button', { name: 'Data centers of reporting' }).count(), 1);
  const admin = (await server.api('GET', '/api/v1/tokens')).json.items.find((t) => t.role === 'admin');
  assert.ok(admin);
  assert.equal(await row(admin.name).getByRole('button', { name: `Data centers of ${admin.name}` }).count(), 0);
});

test('the Scope dialog changes the data centers, and None ticked lifts the confinement', async () => {
  const token = globalThis.scopedToken;
  await row('fra1 scanner').getByRole('button', { name: 'Data centers of fra1 scanner' }).click();
  await dialog().waitFor();
  const picker = dialog().locator('[data-testid=token-dcs]');
  assert.equal(await picker.getByLabel('fra1').isChecked(), true);
  assert.equal(await picker.getByLabel('ams1').isChecked(), false);
  await picker.getByLabel('fra1').uncheck();
  await picker.getByLabel('ams1').check();
  await shot(page, 'token-scope-02-edit');
  await dialog().getByRole('button', { name: 'Save' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.waitForFunction(() => [...document.querySelectorAll('tbody tr[data-id]')]
    .some((tr) => tr.textContent.includes('fra1 scanner') && tr.querySelector('[data-testid=token-scope]').textContent.trim() === 'ams1'));
  assert.equal(await reads(token, 'TS-A'), 404);
  assert.equal(await reads(token, 'TS-B'), 200);

  await row('fra1 scanner').getByRole('button', { name: 'Data centers of fra1 scanner' }).click();
  await dialog().waitFor();
  await dialog().locator('[data-testid=token-dcs]').getByLabel('ams1').uncheck();
  await dialog().getByRole('button', { name: 'Save' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.waitForFunction(() => [...document.querySelectorAll('tbody tr[data-id]')]
    .some((tr) => tr.textContent.includes('fra1 scanner') && tr.querySelector('[data-testid=token-scope]').textContent.trim() === 'All'));
  assert.equal(await reads(token, 'TS-A'), 200);
  const audit = (await server.api('GET', '/api/v1/audit?entity=token&limit=100')).json.items.filter((e) => e.action === 'scope');
  assert.equal(audit.length, 3);
  assert.deepEqual(errors, []);
});
