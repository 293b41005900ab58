// Dashboard, ownership: the unowned count in the header, adding a team,
// adding a mapping rule (with its dry run), and a GPU's page showing the
// owner each field resolved to and what decided it, against the API.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts } from './browser.mjs';

let server;
let browser;
let page;
let errors;
const uuid = (i) => `GPU-0e0e0e0e-0000-4000-8000-00000000000${i}`;

before(async () => {
  server = await startServer();
  const tok = await server.api('POST', '/api/v1/tokens', { body: { name: 'own-agents', role: 'pusher', source: 'own-agents' } });
  assert.equal(tok.status, 201, tok.text);
  const now = Math.floor(Date.now() / 1000);
  const body = {
    batch_id: 'own-1', host: { hostname: 'gpu-host-1' },
    gpus: [0, 1].map((i) => ({ uuid: uuid(i), index: i, name: 'NVIDIA H100 80GB HBM3', memory_total_mib: 81559 })),
    samples: [0, 1].map((i) => ({ time: now - 2, gpu: uuid(i), util_avg: 40 })),
  };
  const r = await server.api('POST', '/api/v1/ingest', { body, auth: tok.json.token });
  assert.equal(r.status, 201, r.text);
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

const dialog = () => page.locator('dialog[open]');

test('the header counts the unowned GPUs; the unowned page lists them', async () => {
  await page.goto(server.url + '/');
  await page.locator('input[name=password]').waitFor();
  await signIn(page, server.password);
  const badge = page.locator('[data-testid=unowned-count]');
  await badge.waitFor({ state: 'visible' });
  const api = await server.api('GET', '/api/v1/ownership/unowned');
  assert.equal(api.json.total, 2);
  assert.equal((await badge.textContent()).trim(), '2');
  await page.goto(server.url + '/#/ownership/unowned');
  await page.locator('[data-testid=unowned-total]').filter({ hasText: 'without a team' }).waitFor();
  await tableReady(page);
  assert.deepEqual((await page.$$eval('.table-wrap tbody tr td:first-child', (tds) => tds.map((t) => t.textContent.trim()))).sort(),
    [uuid(0), uuid(1)]);
  await shot(page, 'own-01-unowned');
});

test('add a team, then a rule that gives the host\'s GPUs to it', async () => {
  await page.goto(server.url + '/#/ownership/teams');
  await page.locator('[data-testid=add-dim]').click();
  await dialog().locator('input[name=name]').fill('vision');
  await dialog().locator('input[name=display]').fill('Vision');
  await dialog().locator('textarea[name=attrs]').fill('manager=ann\ncost_center=cc-7');
  await dialog().getByRole('button', { name: 'Add team' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'vision' }).waitFor();
  const t = await server.api('GET', '/api/v1/teams/vision');
  assert.deepEqual(t.json.attrs, { manager: 'ann', cost_center: 'cc-7' });
  await shot(page, 'own-02-teams');

  await page.locator('.tabs a', { hasText: 'Rules' }).click();
  await page.locator('[data-testid=add-rule]').click();
  await dialog().locator('select[name="match.kind"]').selectOption('host_pattern');
  await dialog().locator('input[name="match.value"]').fill('gpu-host-*');
  await dialog().locator('select[name="set.team"]').selectOption('vision');
  await dialog().locator('[data-testid=dry-run-btn]').click();
  await dialog().locator('[data-testid=dry-run]').filter({ hasText: 'Matches 2 GPUs' }).waitFor();
  await shot(page, 'own-03-rule-dry-run');
  await dialog().getByRole('button', { name: 'Add rule' }).click();
  await dialog().waitFor({ state: 'detached' });
  await tableReady(page);
  await page.locator('tbody tr', { hasText: 'gpu-host-*' }).waitFor();
  const rules = (await server.api('GET', '/api/v1/ownership-rules')).json.items;
  assert.equal(rules.length, 1);
  assert.deepEqual(rules[0].set, { team: 'vision' });
  assert.deepEqual(await columnTexts(page, 1), [String(rules[0].id)]);
});

test('a GPU\'s page shows its owner and what decided each field, and takes an assignment', async () => {
  const rule = (await server.api('GET', '/api/v1/ownership-rules')).json.items[0];
  await page.goto(`${server.url}/#/gpus/${uuid(0)}`);
  const panel = page.locator('[data-testid=owner]');
  await panel.waitFor();
  const g = (await server.api('GET', `/api/v1/gpus/${uuid(0)}`)).json;
  assert.deepEqual(g.owner.team, { value: 'vision', by: `rule:${rule.id}` });
  assert.equal((await panel.locator('[data-owner=team] .kv-value').textContent()).trim(), 'vision');
  assert.match(await panel.locator('[data-testid=owner-by-team]').textContent(), new RegExp(`rule ${rule.id}`));
  assert.match(await panel.locator('[data-testid=owner-by-env]').textContent(), /nothing/);
  await shot(page, 'own-04-gpu-owner');
  // The header no longer counts these GPUs.
  await page.locator('[data-testid=unowned-count]').waitFor({ state: 'hidden' });

  const env = await server.api('POST', '/api/v1/environments', { body: { name: 'prod' } });
  assert.equal(env.status, 201, env.text);
  await page.reload();
  await panel.waitFor();
  await page.locator('[data-testid=assign-owner]').click();
  await dialog().locator('select[name=env]').selectOption('prod');
  await dialog().getByRole('button', { name: 'Assign' }).click();
  await dialog().waitFor({ state: 'detached' });
  await panel.locator('[data-owner=env] .kv-value', { hasText: 'prod' }).waitFor();
  assert.match(await panel.locator('[data-testid=owner-by-env]').textContent(), /assignment on the GPU/);
  const after = (await server.api('GET', `/api/v1/gpus/${uuid(0)}`)).json;
  assert.equal(after.owner.env.value, 'prod');
  assert.match(after.owner.env.by, /^assignment:gpu:\d+$/);
  assert.equal(after.owner.team.value, 'vision', 'a field left out keeps what is in force');
  assert.deepEqual(errors, []);
});
