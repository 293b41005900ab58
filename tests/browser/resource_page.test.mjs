// Dashboard, one resource's page: a row of a resource tab opens it; it shows
// the attributes, allocation history and audit trail the API holds, the
// declared GPUs beside the discovered ones (or says no discovered host is
// linked); an edit made there shows in its audit trail; a form shows every
// problem at once by the field's label; deleting an allocated resource
// warns with its tenant and is forced only then.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let dc;
let res;

before(async () => {
  server = await startServer({ demo: true });
  const list = await server.api('GET', '/api/v1/datacenters?sort=name');
  dc = list.json.items[0];
  const servers = await server.api('GET', `/api/v1/resources?datacenter=${dc.id}&kind=server&state=in_use&sort=name&limit=1`);
  res = servers.json.items[0];
  assert.ok(res && res.tenant, 'a server in use');
  // An agent on that server's host reports its GPUs, so discovery can link them.
  const tok = await server.api('POST', '/api/v1/tokens', { body: { name: 'rp-agents', role: 'pusher', source: 'rp-agents' } });
  assert.equal(tok.status, 201, tok.text);
  const now = Math.floor(Date.now() / 1000);
  const uuids = [0, 1].map((i) => `GPU-5e5e5e5e-0000-4000-8000-00000000000${i}`);
  const ing = await server.api('POST', '/api/v1/ingest', { auth: tok.json.token, body: {
    batch_id: 'rp-1', host: { hostname: res.hostname || res.name, serial: res.serial },
    gpus: uuids.map((u, i) => ({ uuid: u, index: i, name: res.gpu_model, serial: `RP-${i}`, memory_total_mib: 81559 })),
    samples: uuids.map((u) => ({ time: now - 1, gpu: u, util_avg: 50, mem_used_mib: 1024 })),
  } });
  assert.equal(ing.status, 201, ing.text);
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/datacenters/${dc.id}/servers`);
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
const apiRes = async (id) => (await server.api('GET', `/api/v1/resources/${id}`)).json;
const kv = (field) => page.locator(`[data-testid=attributes] .kv-row[data-field="${field}"] dd`);

test('a row of a resource tab opens the resource page', async () => {
  await tableReady(page);
  // A click on the row itself (not on a button in it) opens the page.
  await page.locator(`tbody tr[data-id="${res.id}"] td`).nth(4).click();
  await page.waitForURL(new RegExp(`#/resources/${res.id}$`));
  await page.locator('[data-testid=attributes]').waitFor();
  assert.equal(await page.locator('h1 .res-title').textContent(), res.name);
  await shot(page, 'resource-01-page');
});

test('the page shows the attributes, allocation history and audit trail the API holds', async () => {
  const r = await apiRes(res.id);
  const kinds = (await server.api('GET', '/api/v1/kinds')).json.kinds;
  const server_ = kinds.find((k) => k.kind === 'server');
  assert.equal((await kv('tenant').textContent()).trim(), r.tenant);
  assert.equal((await kv('gpu_count').textContent()).trim(), String(r.gpu_count));
  for (const f of server_.fields) {
    if (r[f.name] === undefined || r[f.name] === null) continue;
    const label = await page.locator(`[data-testid=attributes] .kv-row[data-field="${f.name}"] dt`).textContent();
    assert.equal(label, f.label, `${f.name} is shown by its label`);
    assert.equal((await kv(f.name).textContent()).replace(/,/g, '').trim(), String(r[f.name]), f.name);
  }
  for (const [k, v] of Object.entries(r.metadata || {})) assert.equal((await kv(`metadata.${k}`).textContent()).trim(), String(v));

  const allocRows = page.locator('[data-testid=allocations] tbody tr');
  assert.equal(await allocRows.count(), r.allocations.length);
  assert.match(await allocRows.first().textContent(), new RegExp(r.allocations[0].tenant));
  assert.match(await allocRows.first().textContent(), /Current/);

  const audit = (await server.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`)).json;
  assert.equal(await page.locator('[data-testid=audit] .tl-item').count(), Math.min(50, audit.items.length));
  assert.match(await page.locator('[data-testid=audit] .panel-head').textContent(), new RegExp(`\\(${audit.total}\\)`));
});

test('declared GPUs are shown beside the discovered ones, or the page says none is linked', async () => {
  const r = await apiRes(res.id);
  const declared = await page.locator('[data-testid=gpus-declared]').textContent();
  assert.match(declared, new RegExp(`${r.gpu_count} × ${r.gpu_model.replace(/[()]/g, '.')}`));
  const found = page.locator('[data-testid=gpus-discovered]');
  if (!r.discovered || !(r.discovered.hosts || []).length) {
    assert.equal((await page.locator('[data-testid=no-discovered]').textContent()).trim(),
      'No discovered host is linked to this server.');
    assert.equal(await page.locator('[data-testid=gpus] a[href^="#/gpus/"]').count(), 0, 'no GPU is made up');
  } else {
    assert.match(await found.textContent(), new RegExp(`${r.discovered.count} ×`));
    const links = await page.locator('[data-testid=gpus] tbody a[href^="#/gpus/"]').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(links, (r.discovered.gpus || []).map((g) => `#/gpus/${encodeURIComponent(g.uuid)}`));
  }
  await shot(page, 'resource-02-gpus');
});

test('an edit made on the page is saved and shows in its audit trail', async () => {
  const before = (await server.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`)).json.total;
  await page.locator('[data-testid=edit-resource]').click();
  await dialog().waitFor();
  await dialog().locator('input[name=rack]').fill('R-EDITED');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.waitForFunction(() => {
    const dd = document.querySelector('[data-testid=attributes] .kv-row[data-field="rack"] dd');
    return dd && dd.textContent.trim() === 'R-EDITED';
  });
  assert.equal((await apiRes(res.id)).rack, 'R-EDITED');
  const first = page.locator('[data-testid=audit] .tl-item').first();
  assert.match(await first.textContent(), /Updated/);
  assert.match(await first.textContent(), /rack: .* → R-EDITED/);
  assert.equal((await server.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`)).json.total, before + 1);
});

test('a form shows every problem at once, each by its field label, and sends nothing', async () => {
  const audits = (await server.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`)).json.total;
  await page.locator('[data-testid=edit-resource]').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('');
  await dialog().locator('input[name=gpu_count]').fill('2000');
  await dialog().locator('input[name=cpu_cores]').fill('-4');
  await dialog().locator('textarea[name=metadata]').fill('{not json');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  const err = (f) => dialog().locator(`.field[data-field="${f}"] .field-error`);
  await err('name').waitFor({ state: 'visible' });
  assert.match(await err('name').textContent(), /name/i);
  assert.match(await err('gpu_count').textContent(), /^GPU count must be at most 1,024/);
  assert.match(await err('cpu_cores').textContent(), /^CPU cores must be at least/);
  assert.match(await err('metadata').textContent(), /valid JSON/);
  assert.match(await dialog().locator('.form-alert').textContent(), /4 problems/);
  await shot(page, 'resource-03-form-errors');
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  await dialog().waitFor({ state: 'detached' });
  assert.equal((await server.api('GET', `/api/v1/audit?entity=resource&entity_id=${res.id}`)).json.total, audits);
});

test('deleting an allocated resource warns with its tenant and deletes only when confirmed', async () => {
  const r = await apiRes(res.id);
  await page.locator('[data-testid=delete-resource]').click();
  await dialog().waitFor();
  const warn = dialog().locator('[data-testid=delete-held]');
  await warn.waitFor();
  assert.match(await warn.textContent(), new RegExp(`in use by tenant ${r.tenant}`));
  if (r.project) assert.match(await warn.textContent(), new RegExp(`project ${r.project}`));
  await shot(page, 'resource-04-delete-held');
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  await dialog().waitFor({ state: 'detached' });
  assert.equal((await apiRes(res.id)).state, 'in_use', 'cancel keeps it');

  await page.locator('[data-testid=delete-resource]').click();
  await dialog().getByRole('button', { name: 'Delete allocated resource' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.waitForURL(new RegExp(`#/datacenters/${dc.id}/servers`));
  assert.equal((await server.api('GET', `/api/v1/resources/${res.id}`)).status, 404);
  assert.deepEqual(errors, []);
});

test('a resource allocated after the list was drawn is refused, then deleted once the warning is confirmed', async () => {
  await tableReady(page);
  const list = (await server.api('GET', `/api/v1/resources?datacenter=${dc.id}&kind=server&state=available&sort=name&limit=1`)).json;
  const free = list.items[0];
  await page.getByRole('searchbox').fill(free.name);
  await page.waitForFunction((n) => [...document.querySelectorAll('tbody tr[data-id]')].length === 1 &&
    document.querySelector('tbody tr[data-id]').textContent.includes(n), free.name);
  // Someone allocates it meanwhile.
  const a = await server.api('POST', `/api/v1/resources/${free.id}/allocate`, { body: { tenant: 'late-tenant' } });
  assert.equal(a.status, 200, a.text);
  await page.getByRole('button', { name: `Delete ${free.name}` }).click();
  await dialog().getByRole('button', { name: 'Delete', exact: true }).click();
  const warn = dialog().locator('[data-testid=delete-held]');
  await warn.waitFor();
  assert.match(await warn.textContent(), /tenant late-tenant/);
  assert.match(await dialog().locator('.form-alert').textContent(), /late-tenant/);
  assert.equal((await server.api('GET', `/api/v1/resources/${free.id}`)).status, 200, 'refused, not deleted');
  await dialog().getByRole('button', { name: 'Delete allocated resource' }).click();
  await dialog().waitFor({ state: 'detached' });
  assert.equal((await server.api('GET', `/api/v1/resources/${free.id}`)).status, 404);
  assert.deepEqual(errors, []);
});
