// Dashboard, hardware assets: the list's counts per stage and filters, the
// asset page (fields, location, timeline), a stage change from it and a
// refused one that shows the stages allowed, the lifecycle board's counts
// and recent moves following the change, and the warranty calendar listing
// an asset whose warranty ends soon.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts, apiOk } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let dc;
let other;
const day = (n) => new Date(Date.now() + n * 86400000).toISOString().slice(0, 10);

const call = (method, p, body) => apiOk(server, method, p, body);

before(async () => {
  server = await startServer();
  dc = await call('POST', '/api/v1/datacenters', { name: 'Lab DC', location: 'here' });
  other = await call('POST', '/api/v1/datacenters', { name: 'Other DC', location: 'there' });
  await call('POST', '/api/v1/assets', { tag: 'SRV-1', kind: 'server', serial: 'SN-SRV-1', vendor: 'Dell', model: 'R760xa',
    location: { datacenter: 'Lab DC', room: 'hall-1', rack: 'R07', u: 12 }, warranty_end: day(12),
    purchase_date: '2024-03-01', purchase_cost: { amount: '25000.00', currency: 'USD' }, depreciation_years: 5 });
  await call('POST', '/api/v1/assets', { tag: 'GPU-1', kind: 'gpu', serial: 'SN-GPU-1', model: 'H100', parent_tag: 'SRV-1',
    location: { datacenter: 'Lab DC' }, warranty_end: day(400) });
  await call('POST', '/api/v1/assets', { tag: 'GPU-2', kind: 'gpu', serial: 'SN-GPU-2', model: 'H100', stage: 'spare',
    location: { datacenter: 'Other DC', storage: 'shelf-3' }, lease_end: day(70) });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/assets');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('the assets list counts each stage and filters by stage, kind, data center, warranty and search', async () => {
  await page.locator('[data-nav=assets].active').waitFor();
  await tableReady(page);
  await page.locator('[data-testid=count-active]', { hasText: '2' }).waitFor();
  assert.equal(await page.locator('[data-testid=count-spare]').textContent(), '1');
  assert.equal(await page.locator('[data-testid=count-decommissioned]').textContent(), '0');
  assert.deepEqual(await columnTexts(page, 0), ['GPU-1', 'GPU-2', 'SRV-1']);
  await shot(page, 'assets');

  await page.locator('button.stage-count[data-stage=spare]').click();
  await page.waitForFunction(() => location.hash.includes('stage=spare'));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), ['GPU-2']);
  assert.match(await page.locator('[data-testid=export-csv]').getAttribute('href'), /\/api\/v1\/assets\?stage=spare.*format=csv/);
  await page.locator('select[name=stage]').selectOption('');
  await page.locator('select[name=kind]').selectOption('gpu');
  await page.waitForFunction(() => location.hash.includes('kind=gpu') && !location.hash.includes('stage='));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), ['GPU-1', 'GPU-2']);
  // The stage counts follow the other filters.
  await page.locator('[data-testid=count-active]', { hasText: '1' }).waitFor();
  await page.locator('select[name=datacenter]').selectOption(String(other.id));
  await page.waitForFunction((id) => location.hash.includes(`datacenter=${id}`), other.id);
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), ['GPU-2']);
  await page.locator('select[name=kind]').selectOption('');
  await page.locator('select[name=datacenter]').selectOption('');
  await page.locator('select[name=expiring]').selectOption('30');
  await page.waitForFunction(() => location.hash.includes('expiring=30'));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), ['SRV-1']);
  await page.locator('select[name=expiring]').selectOption('');
  await page.locator('input[name=q]').fill('SN-GPU-2');
  await page.waitForFunction(() => location.hash.includes('q=SN-GPU-2'));
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 0), ['GPU-2']);
  // The export holds the filtered rows.
  const csv = await page.evaluate(async () => (await fetch(document.querySelector('[data-testid=export-csv]').href)).text());
  assert.match(csv, /GPU-2/);
  assert.doesNotMatch(csv, /SRV-1/);
  await page.locator('input[name=q]').fill('');
  await page.waitForFunction(() => !location.hash.includes('q='));
  await tableReady(page);
  assert.deepEqual(errors, []);
});

test('an asset opens with its fields, place, children and timeline, and moves to an allowed stage', async () => {
  await page.locator('tbody tr a', { hasText: 'SRV-1' }).click();
  await page.waitForFunction(() => location.hash === '#/assets/SRV-1');
  await page.locator('[data-testid=asset-tag]', { hasText: 'SRV-1' }).waitFor();
  const fields = page.locator('[data-testid=fields]');
  assert.equal(await fields.locator('[data-field=serial] .kv-value').textContent(), 'SN-SRV-1');
  assert.equal(await fields.locator('[data-field=purchase_cost] .kv-value').textContent(), '25000.00 USD');
  assert.match(await fields.locator('[data-field=book_value] .kv-value').textContent(), /^\d+\.\d{2} USD$/);
  const loc = page.locator('[data-testid=location]');
  assert.equal(await loc.locator('[data-field=datacenter] .kv-value').textContent(), 'Lab DC');
  assert.equal(await loc.locator('[data-field=rack] .kv-value').textContent(), 'R07');
  assert.equal(await loc.locator('[data-field=children] a').getAttribute('href'), '#/assets/GPU-1');
  assert.equal(await page.locator('[data-testid=warranty] [data-warranty]').getAttribute('data-warranty'), 'expiring');
  assert.equal(await page.locator('[data-testid=timeline] .asset-event[data-kind=created]').count(), 1);

  // Only the stages allowed after Active are offered.
  const opts = await page.$$eval('[data-testid=stage-form] select[name=stage] option', (os) => os.map((o) => o.value));
  assert.deepEqual(opts, ['spare', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned']);
  await page.locator('[data-testid=stage-form] select[name=stage]').selectOption('diagnostic_repair');
  await page.locator('[data-testid=stage-form] input[name=reason]').fill('fans failing');
  await page.locator('[data-testid=stage-form] button[type=submit]').click();
  await page.locator('.page-sub [data-stage=diagnostic_repair]').waitFor();
  const ev = page.locator('[data-testid=timeline] .asset-event[data-kind=stage]');
  await ev.first().waitFor();
  assert.match(await ev.first().textContent(), /Active → Diagnostic & Repair: fans failing/);
  const back = await call('GET', '/api/v1/assets/SRV-1');
  assert.equal(back.stage, 'diagnostic_repair');
  await shot(page, 'asset');
  assert.deepEqual(errors, []);
});

test('a refused stage change shows the stages the server allows', async () => {
  // Someone else decommissions the asset while this page still offers Active.
  await call('POST', '/api/v1/assets/SRV-1/stage', { stage: 'decommissioned', reason: 'scrapped' });
  await page.locator('[data-testid=stage-form] select[name=stage]').selectOption('active');
  await page.locator('[data-testid=stage-form] button[type=submit]').click();
  const alert = page.locator('[data-testid=stage-error]');
  await alert.waitFor();
  assert.match(await alert.textContent(), /Refused: the asset is Decommissioned now; allowed next: none/);
  assert.equal(await page.locator('[data-testid=stage-form] select[name=stage] option').count(), 0);
  assert.equal((await call('GET', '/api/v1/assets/SRV-1')).stage, 'decommissioned');

  assert.deepEqual(errors, []);
});

test('the lifecycle board counts each stage and lists the recent moves, and follows a change', async () => {
  await page.goto(`${server.url}/#/lifecycle`);
  await page.locator('[data-testid=board-decommissioned]', { hasText: '1' }).waitFor();
  assert.equal(await page.locator('[data-testid=board-active]').textContent(), '1');
  assert.equal(await page.locator('[data-testid=board-spare]').textContent(), '1');
  assert.equal(await page.locator('[data-testid=board-total]').textContent(), '3');
  const moves = page.locator('[data-testid=recent-moves] li');
  assert.equal(await moves.first().getAttribute('data-tag'), 'SRV-1');
  assert.match(await moves.first().textContent(), /Diagnostic & Repair → Decommissioned/);
  assert.equal(await moves.count(), 2);
  assert.equal(await page.locator('[data-testid=board-active]').getAttribute('href'), '#/assets?stage=active');
  await shot(page, 'lifecycle');

  // A move made on an asset's page shows on the board.
  await page.goto(`${server.url}/#/assets/GPU-1`);
  await page.locator('[data-testid=asset-tag]', { hasText: 'GPU-1' }).waitFor();
  await page.locator('[data-testid=stage-form] select[name=stage]').selectOption('spare');
  await page.locator('[data-testid=stage-form] button[type=submit]').click();
  await page.locator('.page-sub [data-stage=spare]').waitFor();
  await page.goto(`${server.url}/#/lifecycle`);
  await page.locator('[data-testid=board-spare]', { hasText: '2' }).waitFor();
  assert.equal(await page.locator('[data-testid=board-active]').textContent(), '0');
  assert.equal(await moves.first().getAttribute('data-tag'), 'GPU-1');
  assert.match(await moves.first().textContent(), /Active → Spare/);

  // The filters narrow counts and moves.
  await page.locator('select[name=datacenter]').selectOption(String(other.id));
  await page.waitForFunction((id) => location.hash.includes(`datacenter=${id}`), other.id);
  await page.locator('[data-testid=board-decommissioned]', { hasText: '0' }).waitFor();
  assert.equal(await page.locator('[data-testid=board-spare]').textContent(), '1');
  await page.locator('[data-testid=no-moves]').waitFor();
  await page.locator('select[name=datacenter]').selectOption(String(dc.id));
  await page.locator('select[name=kind]').selectOption('server');
  await page.waitForFunction(() => location.hash.includes('kind=server'));
  await page.locator('[data-testid=board-decommissioned]', { hasText: '1' }).waitFor();
  await page.locator('[data-testid=board-spare]', { hasText: '0' }).waitFor();
  assert.deepEqual(errors, []);
});

test('the warranty calendar lists an expiring warranty and a lease in their months', async () => {
  await page.goto(`${server.url}/#/warranty`);
  const cal = page.locator('[data-testid=warranty-calendar]');
  await cal.locator('li[data-tag=SRV-1]').waitFor();
  const month = (iso) => cal.locator(`.warranty-month[data-month="${iso.slice(0, 7)}"]`);
  assert.equal(await month(day(12)).locator('li[data-tag=SRV-1]').count(), 1);
  assert.match(await month(day(12)).locator('li[data-tag=SRV-1]').textContent(), new RegExp(`Warranty ends ${day(12)}`));
  assert.equal(await month(day(70)).locator('li[data-tag=GPU-2]').count(), 1);
  assert.match(await month(day(70)).locator('li[data-tag=GPU-2]').textContent(), /Lease ends/);
  assert.equal(await cal.locator('li[data-tag=GPU-1]').count(), 0, 'a warranty beyond 12 months is not listed');
  assert.equal(await cal.locator('.warranty-month').count(), 12);
  const counts = await cal.locator('[data-testid=month-count]').allTextContents();
  assert.equal(counts.reduce((s, c) => s + Number(c), 0), 2);
  assert.equal(await month(day(12)).locator('li[data-tag=SRV-1] a').getAttribute('href'), '#/assets/SRV-1');
  await shot(page, 'warranty');
  await month(day(12)).locator('li[data-tag=SRV-1] a').click();
  await page.locator('[data-testid=asset-tag]', { hasText: 'SRV-1' }).waitFor();
  assert.deepEqual(errors, []);
});

test('an editor edits an asset\'s fields; a bad value is shown on its field', async () => {
  await page.goto(`${server.url}/#/assets/GPU-1`);
  await page.locator('[data-testid=asset-tag]', { hasText: 'GPU-1' }).waitFor();
  await page.locator('[data-testid=edit-asset]').click();
  const dlg = page.locator('dialog[open]');
  await dlg.locator('input[name=warranty_end]').fill('2026-02-30');
  await dlg.locator('button[type=submit]').click();
  await dlg.locator('.field[data-field=warranty_end] .field-error:not([hidden])').waitFor();
  await dlg.locator('input[name=warranty_end]').fill('2027-06-30');
  await dlg.locator('input[name=rack]').fill('R09');
  await dlg.locator('input[name=serial]').fill('');
  await dlg.locator('button[type=submit]').click();
  await page.locator('[data-testid=location] [data-field=rack] .kv-value', { hasText: 'R09' }).waitFor();
  const back = await call('GET', '/api/v1/assets/GPU-1');
  assert.equal(back.rack, 'R09');
  assert.equal(back.warranty_end, '2027-06-30');
  assert.equal(back.serial, null);
  assert.equal(back.model, 'H100', 'an untouched field stays');
  await page.locator('[data-testid=timeline] .asset-event[data-kind=updated]').first().waitFor();
  assert.match(await page.locator('[data-testid=timeline] .asset-event[data-kind=updated]').first().textContent(), /rack/);
  assert.deepEqual(errors, []);
});
