// Dashboard, lifecycle rules (#/lifecycle/rules): reached from the
// lifecycle board; a rule built in the form (an attribute test added to the
// default one, a stage action) is dry-run before it is saved and lists the
// one matching asset with the move it would make, changing nothing; saved
// enabled, it shows in the list, a dry run from the list says the same, and
// it is disabled from its row.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, apiOk } from './browser.mjs';

let server;
let browser;
let page;
let errors;

const call = (method, p, body) => apiOk(server, method, p, body);

before(async () => {
  server = await startServer();
  await call('POST', '/api/v1/datacenters', { name: 'Rule DC', location: 'here' });
  await call('POST', '/api/v1/assets', { tag: 'GPU-A', kind: 'gpu', serial: 'SN-A', model: 'A100', location: { datacenter: 'Rule DC' } });
  await call('POST', '/api/v1/assets', { tag: 'GPU-H', kind: 'gpu', serial: 'SN-H', model: 'H100', location: { datacenter: 'Rule DC' } });
  await call('POST', '/api/v1/assets', { tag: 'SRV-A', kind: 'server', serial: 'SN-S', model: 'A100', location: { datacenter: 'Rule DC' } });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/lifecycle');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('a rule is built, dry-run, saved and disabled from the rules page', async () => {
  await page.locator('[data-testid=rules-link]').click();
  await page.waitForFunction(() => location.hash === '#/lifecycle/rules');
  // The seeded examples are listed, disabled.
  await page.locator('[data-testid=rules] tr[data-rule]').first().waitFor();
  assert.ok(await page.locator('[data-testid=rules] tr[data-rule]').count() >= 5);
  assert.match(await page.locator('[data-testid=rules] tr[data-rule]').first().textContent(), /XID/);

  await page.getByRole('button', { name: 'New rule' }).click();
  const ed = page.locator('[data-testid=rule-editor]');
  await ed.locator('input[name=name]').fill('A100 to repair');
  await ed.getByRole('button', { name: 'Add a test' }).click();
  const row = ed.locator('li.rule-test').nth(1);
  await row.locator('select[name=test-kind]').selectOption('attr');
  await row.locator('select[name=test-what]').selectOption('model');
  await row.locator('select[name=test-op]').selectOption('=');
  await row.locator('input[name=test-value]').fill('A100');
  assert.equal(await ed.locator('li.rule-action select[name=action-type]').inputValue(), 'stage');
  await ed.locator('li.rule-action select[name=action-to]').selectOption('diagnostic_repair');

  await ed.getByRole('button', { name: 'Dry run' }).click();
  const rep = page.locator('[data-testid=rule-report-panel]');
  await rep.locator('tr[data-asset=GPU-A]').waitFor();
  assert.equal(await rep.locator('tbody tr[data-asset]').count(), 1); // not GPU-H, not the server
  assert.match(await rep.locator('[data-testid=rule-report-summary]').textContent(), /Dry run: 1 of 3 assets match/);
  assert.match(await rep.locator('tr[data-asset=GPU-A] li[data-result=would_move]').textContent(), /active → diagnostic_repair/);
  await shot(page, 'rules-dry-run');
  // Nothing changed.
  assert.equal((await call('GET', '/api/v1/assets/GPU-A')).stage, 'active');

  await ed.locator('input[name=rule-enabled]').check();
  await ed.getByRole('button', { name: 'Create' }).click();
  await page.locator('[data-testid=rule-editor]').waitFor({ state: 'hidden' });
  const saved = page.locator('[data-testid=rules] tr[data-name="A100 to repair"]');
  await saved.waitFor();
  assert.match(await saved.textContent(), /Kind = gpu and Model = A100/);
  assert.match(await saved.textContent(), /→ Diagnostic/);
  assert.match(await saved.locator('[data-testid=last-run]').textContent(), /never run/);
  assert.equal(await saved.locator('input[name=enabled]').isChecked(), true);
  const stored = (await call('GET', '/api/v1/lifecycle-rules')).items.find((r) => r.name === 'A100 to repair');
  assert.equal(stored.enabled, true);
  assert.deepEqual(stored.condition, { all: [{ attr: 'kind', '=': 'gpu' }, { attr: 'model', '=': 'A100' }] });
  assert.deepEqual(stored.actions, [{ type: 'stage', to: 'diagnostic_repair' }]);

  // A dry run from the list says the same.
  await saved.getByRole('button', { name: 'Dry run' }).click();
  await page.locator('[data-testid=rule-report-panel] h2', { hasText: 'Dry run: A100 to repair' }).waitFor();
  await rep.locator('tr[data-asset=GPU-A]').waitFor();

  // Disabled from its row.
  await saved.locator('input[name=enabled]').uncheck();
  for (let i = 0; i < 50; i++) {
    const r = await call('GET', `/api/v1/lifecycle-rules/${stored.id}`);
    if (!r.enabled) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  assert.equal((await call('GET', `/api/v1/lifecycle-rules/${stored.id}`)).enabled, false);
  await page.locator('[data-testid=rules] tr[data-name="A100 to repair"] input[name=enabled]:not(:checked)').waitFor();
  await shot(page, 'rules');
  assert.deepEqual(errors, []);
});
