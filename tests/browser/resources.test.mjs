// Dashboard, one data center: overview cards against the API, every tab,
// paging, adding a server (invalid then valid), editing, allocating and
// releasing it, sorting, filtering, CSV export of the filter, deleting.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts } from './browser.mjs';

const NAME = 'test-gpu-901';
const COL = { name: 0, state: 1, tenant: 2, model: 3, gpus: 4 };

let server;
let browser;
let page;
let errors;
let dc;       // the data center with the most servers
let kinds;

before(async () => {
  server = await startServer({ demo: true });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  const list = await server.api('GET', '/api/v1/datacenters?sort=-name');
  dc = list.json.items.reduce((a, b) => (b.servers > a.servers ? b : a));
  // Paging needs more servers than one page (25) holds.
  for (let i = dc.servers; i <= 25; i++) {
    const r = await server.api('POST', '/api/v1/resources',
      { body: { datacenter_id: dc.id, kind: 'server', name: `filler-${i}`, metadata: {} } });
    assert.equal(r.status, 201, r.text);
  }
  kinds = (await server.api('GET', '/api/v1/kinds')).json.kinds;
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

async function apiList(params) {
  const q = new URLSearchParams({ datacenter: String(dc.id), kind: 'server', ...params });
  const r = await server.api('GET', `/api/v1/resources?${q}`);
  assert.equal(r.status, 200, r.text);
  return r.json;
}

async function apiResource(name) {
  const items = (await apiList({ q: name })).items.filter((x) => x.name === name);
  assert.equal(items.length, 1, `one ${name}`);
  return items[0];
}

async function waitRows(n) {
  await page.waitForFunction((k) => document.querySelectorAll('tbody tr[data-id]').length === k, n);
  await tableReady(page);
}

test('a deep link survives signing in and opens the overview', async () => {
  await page.goto(`${server.url}/#/datacenters/${dc.id}`);
  await page.locator('input[name=password]').waitFor();
  await signIn(page, server.password);
  await page.locator('[data-testid=card-servers]').waitFor();
  assert.match(page.url(), new RegExp(`#/datacenters/${dc.id}$`));
});

test('overview cards and GPU totals match the API', async () => {
  const ov = (await server.api('GET', `/api/v1/datacenters/${dc.id}/overview`)).json;
  assert.equal(await page.locator('h1').textContent(), dc.name);
  for (const k of kinds) {
    assert.equal(await page.locator(`[data-testid=count-${k.counts}]`).textContent(), String(ov.counts[k.counts]),
      `${k.label} count`);
    assert.match(await page.locator(`[data-testid=card-${k.counts}]`).textContent(), new RegExp(k.label));
  }
  for (const key of ['total', 'allocated', 'available', 'unavailable']) {
    assert.equal((await page.locator(`[data-testid=gpus-${key}]`).textContent()).replace(/,/g, ''),
      String(ov.gpus[key]), `GPUs ${key}`);
  }
  const byModel = page.locator('table[aria-label="GPUs by model"]');
  await byModel.waitFor();
  const sums = await byModel.locator('tbody tr').evaluateAll((rows) => rows.reduce((acc, r) => {
    const n = (i) => Number(r.children[i].textContent.replace(/,/g, ''));
    return { gpus: acc.gpus + n(2), allocated: acc.allocated + n(3), available: acc.available + n(4) };
  }, { gpus: 0, allocated: 0, available: 0 }));
  assert.deepEqual(sums, { gpus: ov.gpus.total, allocated: ov.gpus.allocated, available: ov.gpus.available });
  await shot(page, 'res-01-overview');
});

test('the overview of a data center fits a 1280x800 screenshot', async () => {
  const list = await server.api('GET', '/api/v1/datacenters?sort=name');
  const first = list.json.items.find((d) => d.id !== dc.id) || list.json.items[0];
  await page.goto(`${server.url}/#/datacenters/${first.id}`);
  await page.locator('.split').waitFor();
  await shot(page, 'dashboard');
  await page.goto(`${server.url}/#/datacenters/${dc.id}`);
  await page.locator('[data-testid=card-servers]').waitFor();
});

test('each card opens its tab with the API rows', async () => {
  for (const k of kinds) {
    await page.locator(`[data-testid=card-${k.counts}]`).click();
    await page.waitForURL(new RegExp(`#/datacenters/${dc.id}/${k.counts}`));
    await tableReady(page);
    const q = new URLSearchParams({ datacenter: String(dc.id), kind: k.kind, sort: 'name', limit: '25' });
    const api = (await server.api('GET', `/api/v1/resources?${q}`)).json;
    assert.deepEqual(await columnTexts(page, COL.name), api.items.map((x) => x.name), k.kind);
    assert.match(await page.locator('.tab.active').textContent(), new RegExp(`${k.label}\\s*${api.total}`));
    await shot(page, `res-02-tab-${k.counts}`);
    await page.locator('.tab', { hasText: 'Overview' }).click();
    await page.locator('[data-testid=card-servers]').waitFor();
  }
  await page.locator('[data-testid=card-servers]').click();
  await tableReady(page);
});

test('paging walks the next cursor and back', async () => {
  const total = (await apiList({ limit: '1' })).total;
  assert.ok(total > 25);
  assert.equal(await page.locator('[data-testid=pager-info]').textContent(), `1–25 of ${total}`);
  await page.getByRole('button', { name: 'Next →' }).click();
  await waitRows(Math.min(25, total - 25));
  assert.equal(await page.locator('[data-testid=pager-info]').textContent(),
    `26–${Math.min(50, total)} of ${total}`);
  const page2 = (await apiList({ sort: 'name', limit: '25', cursor: '25' })).items.map((x) => x.name);
  assert.deepEqual(await columnTexts(page, COL.name), page2);
  await shot(page, 'res-03-page-2');
  await page.getByRole('button', { name: '← Previous' }).click();
  await waitRows(25);
  assert.equal(await page.locator('[data-testid=pager-info]').textContent(), `1–25 of ${total}`);
});

test('adding a server: an invalid value is shown next to its field, then a valid one is saved', async () => {
  await page.locator('[data-testid=add-resource]').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill(NAME);
  await dialog().locator('input[name=cpu_cores]').fill('99999');
  await dialog().locator('input[name=hostname]').fill(`${NAME}.example`);
  await dialog().locator('input[name=rack]').fill('R7');
  await dialog().getByRole('button', { name: 'Add server' }).click();
  const err = dialog().locator('.field[data-field=cpu_cores] .field-error');
  await err.waitFor({ state: 'visible' });
  // Checked before sending, against the kinds table, and named by the label.
  assert.match(await err.textContent(), /^CPU cores must be at most 4,096/);
  assert.equal(await dialog().locator('input[name=cpu_cores]').getAttribute('aria-invalid'), 'true');
  await shot(page, 'res-04-add-invalid');

  await dialog().locator('input[name=cpu_cores]').fill('64');
  await dialog().locator('input[name=gpu_count]').fill('4');
  await dialog().getByRole('button', { name: 'Add server' }).click();
  const modelErr = dialog().locator('.field[data-field=gpu_model] .field-error');
  await modelErr.waitFor({ state: 'visible' });
  assert.match(await modelErr.textContent(), /^GPU model is required when GPU count is above zero/);

  await dialog().locator('input[name=gpu_model]').fill('NVIDIA H200');
  await dialog().locator('textarea[name=metadata]').fill('{"cost_center": "ml-42"}');
  await dialog().getByRole('button', { name: 'Add server' }).click();
  await dialog().waitFor({ state: 'detached' });
  const made = await apiResource(NAME);
  assert.equal(made.state, 'available');
  assert.equal(made.cpu_cores, 64);
  assert.equal(made.gpu_count, 4);
  assert.equal(made.gpu_model, 'NVIDIA H200');
  assert.equal(made.rack, 'R7');
  assert.deepEqual(made.metadata, { cost_center: 'ml-42' });

  await page.getByRole('searchbox').fill(NAME);
  await waitRows(1);
  const cells = await row(NAME).locator('td').allTextContents();
  assert.equal(cells[COL.state], 'Available');
  assert.equal(cells[COL.gpus], '4');
  assert.match(page.url(), new RegExp(`q=${NAME}`));
  await shot(page, 'res-05-added');
});

test('editing a server saves the change', async () => {
  await page.getByRole('button', { name: `Edit ${NAME}` }).click();
  await dialog().waitFor();
  assert.equal(await dialog().locator('input[name=cpu_cores]').inputValue(), '64');
  assert.equal(await dialog().locator('input[name=gpu_model]').inputValue(), 'NVIDIA H200');
  await dialog().locator('input[name=rack]').fill('R9');
  await dialog().locator('input[name=memory_gb]').fill('1024');
  await dialog().locator('input[name=hostname]').fill('');
  await shot(page, 'res-06-edit');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  const r = await apiResource(NAME);
  assert.equal(r.rack, 'R9');
  assert.equal(r.memory_gb, 1024);
  assert.equal(r.hostname, undefined);
  assert.equal(r.cpu_cores, 64);
  assert.equal(r.version, 2);
  await row(NAME).locator('td', { hasText: 'R9' }).waitFor();
});

test('allocating asks for the tenant, then releasing makes it available again', async () => {
  await page.getByRole('button', { name: `Allocate ${NAME}` }).click();
  await dialog().waitFor();
  await dialog().getByRole('button', { name: 'Allocate' }).click();
  const err = dialog().locator('.field[data-field=tenant] .field-error');
  await err.waitFor({ state: 'visible' });
  await dialog().locator('input[name=tenant]').fill('acme');
  await dialog().locator('input[name=project]').fill('llm-train');
  await shot(page, 'res-07-allocate');
  await dialog().getByRole('button', { name: 'Allocate' }).click();
  await dialog().waitFor({ state: 'detached' });
  await row(NAME).locator('.badge', { hasText: 'In use' }).waitFor();
  assert.match(await row(NAME).locator('td').nth(COL.tenant).textContent(), /acme\s*llm-train/);
  let r = await apiResource(NAME);
  assert.equal(r.state, 'in_use');
  assert.equal(r.tenant, 'acme');
  assert.equal(r.project, 'llm-train');
  assert.equal(await page.getByRole('button', { name: `Allocate ${NAME}` }).count(), 0);
  await shot(page, 'res-08-allocated');

  await page.getByRole('button', { name: `Release ${NAME}` }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), /acme/);
  await dialog().getByRole('button', { name: 'Release' }).click();
  await dialog().waitFor({ state: 'detached' });
  await row(NAME).locator('.badge', { hasText: 'Available' }).waitFor();
  r = await apiResource(NAME);
  assert.equal(r.state, 'available');
  assert.equal(r.tenant, null);
  await page.getByRole('searchbox').fill('');
  await waitRows(25);
});

test('clicking a column header sorts on the server and toggles direction', async () => {
  await page.locator('th button[data-sort=gpu_count]').click();
  await page.waitForFunction(() => document.querySelector('th[aria-sort=ascending] button[data-sort=gpu_count]'));
  await tableReady(page);
  const asc = (await apiList({ sort: 'gpu_count', limit: '25' })).items.map((x) => x.name);
  assert.deepEqual(await columnTexts(page, COL.name), asc);
  const counts = (await columnTexts(page, COL.gpus)).map((x) => (x === '—' ? 0 : Number(x)));
  assert.deepEqual(counts, [...counts].sort((a, b) => a - b));

  await page.locator('th button[data-sort=gpu_count]').click();
  await page.waitForFunction(() => document.querySelector('th[aria-sort=descending] button[data-sort=gpu_count]'));
  await tableReady(page);
  const desc = (await apiList({ sort: '-gpu_count', limit: '25' })).items.map((x) => x.name);
  assert.deepEqual(await columnTexts(page, COL.name), desc);
  assert.match(page.url(), /sort=-gpu_count/);
  await shot(page, 'res-09-sorted');
});

test('filters narrow the table and CSV export downloads the same filtered rows', async () => {
  const inUse = await apiList({ state: 'in_use' });
  assert.ok(inUse.total > 0);
  await page.locator('select[name=state]').selectOption('in_use');
  await waitRows(Math.min(25, inUse.total));
  for (const s of await columnTexts(page, COL.state)) assert.equal(s, 'In use');
  assert.match(await page.locator('[data-testid=result-total]').textContent(), new RegExp(`^${inUse.total} `));

  const tenant = inUse.items[0].tenant;
  const both = await apiList({ state: 'in_use', tenant });
  await page.locator('input[name=tenant]').fill(tenant);
  await waitRows(Math.min(25, both.total));
  for (const t of await columnTexts(page, COL.tenant)) assert.ok(t.startsWith(tenant), t);
  await shot(page, 'res-10-filtered');

  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('[data-testid=export-csv]').click(),
  ]);
  const text = await readFile(await download.path(), 'utf8');
  const lines = text.trim().split('\n');
  // The columns the import reads back, and a file named after what it holds.
  assert.match(lines[0], /^datacenter,kind,name,state,tenant,project,gpu_model,gpu_count,/);
  assert.match(lines[0], /,metadata\r?$/);
  const slug = dc.name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  const tslug = tenant.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '');
  assert.equal(download.suggestedFilename(),
    `${slug}-servers-in-use-tenant-${tslug}-${new Date().toISOString().slice(0, 10)}.csv`);
  assert.equal(lines.length, 1 + both.total);
  for (const x of both.items) assert.ok(text.includes(`,server,${x.name},in_use,${tenant},`), x.name);

  await page.getByRole('button', { name: 'Clear filters' }).click();
  await waitRows(25);
});

test('deleting a server asks first', async () => {
  await page.getByRole('searchbox').fill(NAME);
  await waitRows(1);
  await page.getByRole('button', { name: `Delete ${NAME}` }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), new RegExp(`Delete ${NAME}\\?`));
  await dialog().getByRole('button', { name: 'Delete' }).click();
  await dialog().waitFor({ state: 'detached' });
  await waitRows(0);
  assert.equal((await apiList({ q: NAME })).total, 0);
  assert.deepEqual(errors, []);
});

test('a lost session leads to the sign-in page and back to the same view', async () => {
  await page.locator('select[name=state]').selectOption('available');
  await tableReady(page);
  const here = new URL(page.url()).hash;
  assert.match(here, /state=available/);
  await page.context().clearCookies();
  await page.locator('select[name=state]').selectOption('in_use');
  await page.locator('input[name=password]').waitFor();
  assert.equal(await page.locator('dialog[open]').count(), 0);
  await signIn(page, server.password);
  await tableReady(page);
  assert.match(page.url(), new RegExp(`#/datacenters/${dc.id}/servers\\?state=in_use`));
  assert.equal(await page.locator('select[name=state]').inputValue(), 'in_use');
  assert.deepEqual(errors, []);
});
