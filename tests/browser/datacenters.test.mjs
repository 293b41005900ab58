// Dashboard, data-center list: sign in (wrong and right password), list,
// search, add (with the duplicate-name error), edit, delete with
// confirmation, CSV export, sign out.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { startServer, BIN } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts } from './browser.mjs';

let server;
let browser;
let page;
let errors;

before(async () => {
  server = await startServer({ demo: true });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

/** Names of the data centers as the API lists them, sorted by name. */
async function apiNames(q = '') {
  const r = await server.api('GET', `/api/v1/datacenters?sort=name&q=${encodeURIComponent(q)}`);
  assert.equal(r.status, 200);
  return r.json.items.map((d) => d.name);
}

/** The dialog currently open. */
const dialog = () => page.locator('dialog[open]');

test('a wrong password shows an error next to the password field', async () => {
  await page.goto(server.url + '/');
  await page.locator('input[name=password]').waitFor();
  await shot(page, 'dc-01-sign-in');
  await page.locator('input[name=username]').fill('admin');
  await page.locator('input[name=password]').fill('not-the-password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  const err = page.locator('.field[data-field=password] .field-error');
  await err.waitFor({ state: 'visible' });
  assert.match(await err.textContent(), /wrong user name or password/i);
  assert.equal(await page.locator('input[name=password]').getAttribute('aria-invalid'), 'true');
  await shot(page, 'dc-02-sign-in-error');
});

test('after signing in, the menu shows the data-center list with the API counts', async () => {
  await signIn(page, server.password);
  assert.equal(await page.locator('[data-testid=user-name]').textContent(), 'admin');
  // Signing in lands on the home page; the menu leads to the data centers.
  await page.locator('.topnav a[data-nav=datacenters]').click();
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), await apiNames());
  const r = await server.api('GET', '/api/v1/datacenters?sort=name');
  const first = r.json.items[0];
  const row = page.locator(`tbody tr[data-id="${first.id}"]`);
  const cells = await row.locator('td').allTextContents();
  assert.equal(cells[1], first.location);
  assert.equal(cells[3], String(first.servers));
  assert.equal(cells[4], String(first.vms));
  assert.match(await page.locator('[data-testid=dc-total]').textContent(), new RegExp(`^${r.json.total} data centers`));
  await shot(page, 'dc-03-list');
});

test('search narrows the list', async () => {
  await page.getByRole('searchbox', { name: 'Search data centers' }).fill('frank');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 1);
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), await apiNames('frank'));
  assert.match(page.url(), /#\/datacenters\?q=frank/);
  await shot(page, 'dc-04-search');
  await page.getByRole('searchbox', { name: 'Search data centers' }).fill('');
  const all = await apiNames();
  await page.waitForFunction((n) => document.querySelectorAll('tbody tr[data-id]').length === n, all.length);
});

test('sorting by a column asks the server and toggles direction', async () => {
  await page.locator('th button[data-sort=name]').click();
  await page.waitForFunction(() => document.querySelector('th[aria-sort=descending] button[data-sort=name]'));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), (await apiNames()).reverse());
  await page.locator('th button[data-sort=rows]').click();
  await page.waitForFunction(() => document.querySelector('th[aria-sort=ascending] button[data-sort=rows]'));
  await tableReady(page);
  const rows = (await columnTexts(page, 2)).map(Number);
  assert.deepEqual(rows, [...rows].sort((a, b) => a - b));
  await page.locator('th button[data-sort=name]').click();
  await page.waitForFunction(() => document.querySelector('th[aria-sort=ascending] button[data-sort=name]'));
  await tableReady(page);
});

test('adding a data center: duplicate name error next to the field, then success', async () => {
  const [taken] = await apiNames();
  await page.getByRole('button', { name: 'Add data center' }).click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill(taken);
  await dialog().locator('input[name=location]').fill('eu-north (Oslo)');
  await dialog().locator('input[name=rows]').fill('6');
  await dialog().getByRole('button', { name: 'Add data center' }).click();
  const err = dialog().locator('.field[data-field=name] .field-error');
  await err.waitFor({ state: 'visible' });
  assert.match(await err.textContent(), /already exists/);
  await shot(page, 'dc-05-add-duplicate');

  await dialog().locator('input[name=rows]').fill('-3');
  await dialog().locator('input[name=name]').fill('Oslo DC4');
  await dialog().getByRole('button', { name: 'Add data center' }).click();
  const rowsErr = dialog().locator('.field[data-field=rows] .field-error');
  await rowsErr.waitFor({ state: 'visible' });
  // The server's field is named by its label.
  assert.match(await rowsErr.textContent(), /^Rows /);
  assert.ok(await err.isHidden(), 'the name error is cleared on resubmit');

  await dialog().locator('input[name=rows]').fill('6');
  await dialog().getByRole('button', { name: 'Add data center' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'Oslo DC4' }).waitFor();
  const r = await server.api('GET', '/api/v1/datacenters?q=Oslo');
  assert.equal(r.json.total, 1);
  assert.equal(r.json.items[0].location, 'eu-north (Oslo)');
  assert.equal(r.json.items[0].rows, 6);
  await shot(page, 'dc-06-added');
});

test('editing a data center saves the change', async () => {
  await page.getByRole('button', { name: 'Edit Oslo DC4' }).click();
  await dialog().waitFor();
  assert.equal(await dialog().locator('input[name=name]').inputValue(), 'Oslo DC4');
  await dialog().locator('input[name=location]').fill('eu-north (Oslo, NO)');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'eu-north (Oslo, NO)' }).waitFor();
  const r = await server.api('GET', '/api/v1/datacenters?q=Oslo');
  assert.equal(r.json.items[0].location, 'eu-north (Oslo, NO)');
});

test('deleting asks for confirmation; cancel keeps it, confirm deletes', async () => {
  const before = await apiNames();
  await page.getByRole('button', { name: 'Delete Oslo DC4' }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), /Delete Oslo DC4\?/);
  assert.ok(await dialog().locator('[data-testid=delete-counts]').isHidden());
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  await dialog().waitFor({ state: 'detached' });
  assert.deepEqual(await apiNames(), before);

  await page.getByRole('button', { name: 'Delete Oslo DC4' }).click();
  await dialog().waitFor();
  await shot(page, 'dc-07-delete-confirm');
  await dialog().getByRole('button', { name: 'Delete', exact: true }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'Oslo DC4' }).waitFor({ state: 'detached' });
  assert.ok(!(await apiNames()).includes('Oslo DC4'));
});

test('deleting a data center that holds resources shows the counts', async () => {
  const r = await server.api('GET', '/api/v1/datacenters?sort=-name&limit=1');
  const dc = r.json.items[0];
  assert.ok(dc.servers > 0);
  await page.getByRole('button', { name: `Delete ${dc.name}` }).click();
  await dialog().waitFor();
  const counts = dialog().locator('[data-testid=delete-counts]');
  await counts.waitFor({ state: 'visible' });
  const text = await counts.textContent();
  assert.match(text, new RegExp(`${dc.servers} servers`));
  assert.match(text, new RegExp(`${dc.vms} virtual machines`));
  await shot(page, 'dc-08-delete-with-resources');
  await dialog().getByRole('button', { name: 'Delete with its resources' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator(`tbody tr[data-id="${dc.id}"]`).waitFor({ state: 'detached' });
  const gone = await server.api('GET', `/api/v1/datacenters/${dc.id}`);
  assert.equal(gone.status, 404);
});

test('a delete refused with 409 shows the counts and offers the forced delete', async () => {
  const made = await server.api('POST', '/api/v1/datacenters', { body: { name: 'Stale DC5' } });
  assert.equal(made.status, 201);
  await page.reload();
  const row = page.locator(`tbody tr[data-id="${made.json.id}"]`);
  await row.waitFor();
  // A resource arrives after the list was drawn, so the page believes it is empty.
  const res = await server.api('POST', '/api/v1/resources',
    { body: { datacenter_id: made.json.id, kind: 'server', name: 'late-arrival', metadata: {} } });
  assert.equal(res.status, 201);
  await page.getByRole('button', { name: 'Delete Stale DC5' }).click();
  await dialog().waitFor();
  const counts = dialog().locator('[data-testid=delete-counts]');
  assert.ok(await counts.isHidden());
  await dialog().getByRole('button', { name: 'Delete', exact: true }).click();
  await counts.waitFor({ state: 'visible' });
  assert.match(await counts.textContent(), /1 server\b/);
  assert.match(await dialog().locator('.form-alert').textContent(), /not empty/);
  assert.equal((await server.api('GET', `/api/v1/datacenters/${made.json.id}`)).status, 200);
  await dialog().getByRole('button', { name: 'Delete with its resources' }).click();
  await dialog().waitFor({ state: 'detached' });
  await row.waitFor({ state: 'detached' });
  assert.equal((await server.api('GET', `/api/v1/datacenters/${made.json.id}`)).status, 404);
});

test('CSV export downloads the list with its header row', async () => {
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('[data-testid=export-csv]').click(),
  ]);
  const text = await readFile(await download.path(), 'utf8');
  assert.match(text, /^id,name,location,rows,/);
  for (const name of await apiNames()) assert.ok(text.includes(name), `${name} in the CSV`);
  assert.equal(text.trim().split('\n').length, 1 + (await apiNames()).length);
});

test('signing out returns to the sign-in page and ends the session', async () => {
  await page.locator('[data-testid=sign-out]').click();
  await page.locator('input[name=password]').waitFor();
  assert.match(page.url(), /#\/login$/);
  await shot(page, 'dc-09-signed-out');
  await page.goto(server.url + '/#/datacenters');
  await page.locator('input[name=password]').waitFor();
  const status = await page.evaluate(async () => (await fetch('/api/v1/session')).status);
  assert.equal(status, 401);
  assert.deepEqual(errors, []);
});

test('a viewer sees the inventory without the controls that change it', async () => {
  execFileSync(BIN, ['user', 'set', '--db', server.db, '--name', 'viewer', '--role', 'viewer'],
    { env: { ...process.env, GPUINV_PASSWORD: 'viewer-pass-1' }, stdio: ['ignore', 'ignore', 'pipe'] });
  await signIn(page, 'viewer-pass-1', 'viewer');
  await tableReady(page);
  assert.ok((await columnTexts(page, 0)).length > 0);
  assert.equal(await page.locator('[data-testid=add-datacenter]').count(), 0);
  assert.equal(await page.getByRole('button', { name: /^(Edit|Delete) / }).count(), 0);
  assert.equal(await page.locator('th', { hasText: 'Actions' }).count(), 0);
  await page.locator('tbody tr[data-id] a.row-link').first().click();
  await page.locator('[data-testid=card-servers]').click();
  await tableReady(page);
  assert.equal(await page.locator('[data-testid=add-resource]').count(), 0);
  assert.equal(await page.getByRole('button', { name: /^(Edit|Delete|Allocate|Release)/ }).count(), 0);
  assert.equal(await page.locator('[data-testid=export-csv]').count(), 1);
  await shot(page, 'dc-10-viewer');
  assert.deepEqual(errors, []);
});
