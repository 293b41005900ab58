// Dashboard, the rules page's condition tree (#/lifecycle/rules): a rule
// with a group nested in the root group (an "any" of a telemetry test and
// an attribute test inside an "all") and three actions with their
// parameters is built in the editor; a bad window is refused naming its
// path and nothing is saved; saved, the API holds exactly the tree built;
// after a reload, editing shows the same tree and saving it unchanged
// writes the same JSON; the advanced JSON view shows that JSON; the dry
// run on the page lists the assets the API's dry run lists.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, apiOk } from './browser.mjs';

let server;
let browser;
let page;
let errors;

const call = (method, p, body) => apiOk(server, method, p, body);

const NAME = 'Nested A100 or ECC';
const WANT = {
  condition: { all: [{ attr: 'kind', '=': 'gpu' },
    { any: [{ metric: 'ecc_uncorrected', window_days: 2, '>': 0 }, { attr: 'model', in: ['A100', 'A30'] }] }] },
  actions: [{ type: 'stage', to: 'diagnostic_repair', reason: 'nested rule' }, { type: 'reserve_spare' },
    { type: 'webhook', title: 'GPU to repair' }],
};

before(async () => {
  server = await startServer();
  await call('POST', '/api/v1/datacenters', { name: 'Tree DC', location: 'here' });
  await call('POST', '/api/v1/assets', { tag: 'T-A100', kind: 'gpu', serial: 'SN-T1', model: 'A100', location: { datacenter: 'Tree DC' } });
  await call('POST', '/api/v1/assets', { tag: 'T-A30', kind: 'gpu', serial: 'SN-T2', model: 'A30', location: { datacenter: 'Tree DC' } });
  await call('POST', '/api/v1/assets', { tag: 'T-H100', kind: 'gpu', serial: 'SN-T3', model: 'H100', location: { datacenter: 'Tree DC' } });
  await call('POST', '/api/v1/assets', { tag: 'T-SRV', kind: 'server', serial: 'SN-T4', model: 'A100', location: { datacenter: 'Tree DC' } });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/lifecycle/rules');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

const editor = () => page.locator('[data-testid=rule-editor]');
const root = () => editor().locator('[data-testid=rule-tree] > .rule-group');
const kids = (group) => group.locator(':scope > ol.rule-tests > li');
const addIn = (group, name) => group.locator(':scope > .rule-group-add').getByRole('button', { name });

async function stored() {
  return (await call('GET', '/api/v1/lifecycle-rules')).items.find((r) => r.name === NAME);
}

test('a nested rule is built in the editor; a bad window is refused naming its path', async () => {
  await page.getByRole('button', { name: 'New rule' }).click();
  await editor().locator('input[name=name]').fill(NAME);
  // the default root group: every test, holding kind = gpu
  assert.equal(await root().locator(':scope > p select[name=join]').inputValue(), 'all');
  assert.equal(await kids(root()).count(), 1);
  await addIn(root(), 'Add a group').click();
  const nested = kids(root()).nth(1);
  assert.equal(await nested.getAttribute('class'), 'rule-group');
  await nested.locator(':scope > p select[name=join]').selectOption('any');
  // its first test: uncorrectable ECC > 0, with a window of 0 for now
  const ecc = kids(nested).nth(0);
  assert.equal(await ecc.locator('select[name=test-what]').inputValue(), 'ecc_uncorrected');
  await ecc.locator('input[name=test-window]').fill('0');
  await addIn(nested, 'Add a test').click();
  const model = kids(nested).nth(1);
  await model.locator('select[name=test-kind]').selectOption('attr');
  await model.locator('select[name=test-what]').selectOption('model');
  await model.locator('select[name=test-op]').selectOption('in');
  await model.locator('input[name=test-value]').fill('A100, A30');

  const acts = editor().locator('li.rule-action');
  await acts.nth(0).locator('select[name=action-to]').selectOption('diagnostic_repair');
  await acts.nth(0).locator('input[name=action-reason]').fill('nested rule');
  await editor().getByRole('button', { name: 'Add an action' }).click();
  await acts.nth(1).locator('select[name=action-type]').selectOption('reserve_spare');
  assert.equal(await acts.nth(1).locator('input[name=action-title]').isHidden(), true);
  await editor().getByRole('button', { name: 'Add an action' }).click();
  await acts.nth(2).locator('select[name=action-type]').selectOption('webhook');
  await acts.nth(2).locator('input[name=action-title]').fill('GPU to repair');

  await editor().getByRole('button', { name: 'Create' }).click();
  const err = editor().locator('[data-field=condition] .field-error');
  await err.waitFor();
  assert.match(await err.textContent(), /condition\.all\[1\]\.any\[0\]\.window_days: the window must be a whole number 1\.\.90/);
  assert.equal(await ecc.getAttribute('aria-invalid'), 'true');
  assert.equal(await stored(), undefined, 'nothing saved');

  await ecc.locator('input[name=test-window]').fill('2');
  await shot(page, 'rules-tree-editor');
  await editor().getByRole('button', { name: 'Create' }).click();
  await editor().waitFor({ state: 'hidden' });
  const r = await stored();
  assert.deepEqual(r.condition, WANT.condition);
  assert.deepEqual(r.actions, WANT.actions);
  const row = page.locator(`[data-testid=rules] tr[data-name="${NAME}"]`);
  await row.waitFor();
  assert.match(await row.textContent(), /Kind = gpu and \(Uncorrectable ECC errors > 0 in 2 d or Model in A100, A30\)/);
});

test('after a reload, editing shows the same tree and saving writes the same JSON', async () => {
  const before = await stored();
  await page.reload();
  const row = page.locator(`[data-testid=rules] tr[data-name="${NAME}"]`);
  await row.waitFor();
  await row.getByRole('button', { name: 'Edit' }).click();
  assert.equal(await root().locator(':scope > p select[name=join]').inputValue(), 'all');
  assert.equal(await kids(root()).count(), 2);
  const first = kids(root()).nth(0);
  assert.equal(await first.locator('select[name=test-kind]').inputValue(), 'attr');
  assert.equal(await first.locator('select[name=test-what]').inputValue(), 'kind');
  assert.equal(await first.locator('input[name=test-value]').inputValue(), 'gpu');
  const nested = kids(root()).nth(1);
  assert.equal(await nested.locator(':scope > p select[name=join]').inputValue(), 'any');
  assert.equal(await kids(nested).count(), 2);
  const ecc = kids(nested).nth(0);
  assert.equal(await ecc.locator('select[name=test-what]').inputValue(), 'ecc_uncorrected');
  assert.equal(await ecc.locator('select[name=test-op]').inputValue(), '>');
  assert.equal(await ecc.locator('input[name=test-value]').inputValue(), '0');
  assert.equal(await ecc.locator('input[name=test-window]').inputValue(), '2');
  const model = kids(nested).nth(1);
  assert.equal(await model.locator('select[name=test-op]').inputValue(), 'in');
  assert.equal(await model.locator('input[name=test-value]').inputValue(), 'A100, A30');
  const acts = editor().locator('li.rule-action');
  assert.equal(await acts.count(), 3);
  assert.equal(await acts.nth(0).locator('input[name=action-reason]').inputValue(), 'nested rule');
  assert.equal(await acts.nth(1).locator('select[name=action-type]').inputValue(), 'reserve_spare');
  assert.equal(await acts.nth(2).locator('input[name=action-title]').inputValue(), 'GPU to repair');

  // the advanced view shows the same JSON, and back
  await editor().locator('input[name=advanced]').check();
  assert.deepEqual(JSON.parse(await editor().locator('textarea[name=condition-json]').inputValue()), WANT.condition);
  assert.deepEqual(JSON.parse(await editor().locator('textarea[name=actions-json]').inputValue()), WANT.actions);
  await editor().locator('input[name=advanced]').uncheck();
  assert.equal(await kids(root()).count(), 2);

  await editor().getByRole('button', { name: 'Save' }).click();
  await editor().waitFor({ state: 'hidden' });
  const after = await stored();
  assert.equal(after.version, before.version + 1);
  assert.deepEqual(after.condition, before.condition);
  assert.deepEqual(after.actions, before.actions);
});

test('the dry run on the page lists what the API dry run lists', async () => {
  const r = await stored();
  const row = page.locator(`[data-testid=rules] tr[data-name="${NAME}"]`);
  await row.getByRole('button', { name: 'Edit' }).click();
  await editor().getByRole('button', { name: 'Dry run' }).click();
  const rep = page.locator('[data-testid=rule-report-panel]');
  await rep.locator('tbody tr[data-asset]').first().waitFor();
  const shown = await rep.locator('tbody tr[data-asset]').evaluateAll((trs) => trs.map((t) => t.dataset.asset).sort());
  const api = await call('POST', `/api/v1/lifecycle-rules/${r.id}/dry-run`);
  assert.deepEqual(shown, api.matches.map((m) => m.asset).sort());
  // hand-computed: the A100 and A30 GPUs, not the H100 (no ECC) nor the server
  assert.deepEqual(shown, ['T-A100', 'T-A30']);
  assert.match(await rep.locator('tr[data-asset=T-A100] li[data-result=would_move]').textContent(), /active → diagnostic_repair/);
  assert.match(await rep.locator('tr[data-asset=T-A100]').textContent(), /Reserve a spare: none available/);
  assert.equal((await call('GET', '/api/v1/assets/T-A100')).stage, 'active', 'nothing changed');
  await shot(page, 'rules-tree-dry-run');
  assert.deepEqual(errors, []);
});
