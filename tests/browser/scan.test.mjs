// Dashboard, the scan page on a phone-sized viewport (390 x 844): a
// label's URL /scan/<tag> sends an unauthenticated visitor to sign in and
// back to the asset; a check-in at a new location with a stage change (only
// the allowed next stages offered) and a note shows on the asset and its
// events; audit mode takes tags typed and Enter, as a barcode scanner
// sends them, and shows what is missing and unexpected.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, shot, signIn } from './browser.mjs';

let server;
let browser;
let page;
const errors = [];
const TAG = 'GPU-SCAN-0001';

before(async () => {
  server = await startServer();
  const dc = (await server.api('POST', '/api/v1/datacenters', { body: { name: 'fra1', location: 'Frankfurt' } })).json;
  assert.ok(dc && dc.id, 'data center created');
  await server.api('POST', '/api/v1/datacenters', { body: { name: 'ams2', location: 'Amsterdam' } });
  let r = await server.api('POST', '/api/v1/assets', { body: {
    tag: TAG, kind: 'gpu', model: 'H100 SXM', serial: '1654321098765', stage: 'active', warranty_end: '2030-01-31',
    location: { datacenter: 'fra1', room: 'hall-1', rack: 'R07', u: 12 },
  } });
  assert.equal(r.status, 201, r.text);
  for (const t of ['SRV-A', 'SRV-B']) {
    r = await server.api('POST', '/api/v1/assets', { body: { tag: t, kind: 'server', location: { datacenter: 'ams2', room: 'cage-9' } } });
    assert.equal(r.status, 201, r.text);
  }
  r = await server.api('POST', '/api/v1/assets', { body: { tag: 'PSU-STRAY', kind: 'psu', location: { datacenter: 'fra1', room: 'dock' } } });
  assert.equal(r.status, 201, r.text);
  r = await server.api('POST', '/api/v1/audits', { body: { location: { datacenter: 'ams2', room: 'cage-9' } } });
  assert.equal(r.status, 201, r.text);
  browser = await launch();
  const context = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/^Failed to load resource: the server responded/.test(m.text())) errors.push(`console: ${m.text()}`);
  });
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('the label URL signs the visitor in and lands on the asset', async () => {
  await page.goto(`${server.url}/scan/${TAG}`);
  await page.locator('input[name=username]').waitFor();
  await signIn(page, server.password);
  await page.locator('[data-testid=asset-tag]').waitFor();
  assert.equal(await page.locator('[data-testid=asset-tag]').textContent(), TAG);
  assert.equal(await page.locator('[data-testid=asset-stage]').textContent(), 'Active');
  assert.match(await page.locator('[data-testid=asset-location]').textContent(), /fra1 · room hall-1 · rack R07 · U12/);
  assert.match(await page.locator('[data-testid=asset-warranty]').textContent(), /2030-01-31/);
  // The form starts at the recorded location.
  assert.equal(await page.locator('select[name=datacenter]').inputValue(), 'fra1');
  assert.equal(await page.locator('input[name=rack]').inputValue(), 'R07');
  // Only the stages the lifecycle allows from Active are offered.
  const offered = await page.locator('[data-testid=stage-select] option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(offered, ['', 'spare', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned']);
  // The page fits the phone's width.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `page wider than the viewport by ${overflow}px`);
  await shot(page, 'scan-phone');
});

test('a check-in at a new location with a stage change shows on the asset and its events', async () => {
  await page.locator('select[name=datacenter]').selectOption('ams2');
  await page.locator('input[name=room]').fill('repair-bench');
  await page.locator('input[name=rack]').fill('');
  await page.locator('input[name=u]').fill('');
  await page.locator('[data-testid=stage-select]').selectOption('diagnostic_repair');
  await page.locator('input[name=note]').fill('XID 79, pulled from R07');
  await page.locator('input[name=note]').press('Enter');
  await page.locator('[data-testid=asset-stage]', { hasText: 'Diagnostic & Repair' }).waitFor();
  assert.equal(await page.locator('[data-testid=asset-location]').textContent(), 'ams2 · room repair-bench');
  await page.locator('[data-testid=scan-events] li[data-kind=located]').waitFor();
  const kinds = await page.locator('[data-testid=scan-events] li').evaluateAll((ls) => ls.map((l) => l.dataset.kind));
  assert.deepEqual(kinds.slice(0, 3).sort(), ['located', 'scan', 'stage']);
  assert.match(await page.locator('[data-testid=scan-events] li[data-kind=scan]').first().textContent(), /XID 79, pulled from R07/);
  // The stage choices follow the new stage.
  const offered = await page.locator('[data-testid=stage-select] option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(offered, ['', 'active', 'spare', 'refurbishment_candidate', 'decommissioned']);
  // The server holds what the page shows.
  const a = (await server.api('GET', `/api/v1/assets/${TAG}`)).json;
  assert.equal(a.stage, 'diagnostic_repair');
  assert.deepEqual(a.location, { datacenter: 'ams2', room: 'repair-bench', rack: null, u: null, storage: null });
  const ev = (await server.api('GET', `/api/v1/assets/${TAG}/events`)).json.items;
  assert.equal(ev.find((e) => e.kind === 'stage').detail.reason, 'XID 79, pulled from R07');
  assert.equal(ev.find((e) => e.kind === 'scan').actor, 'admin');
  await shot(page, 'scan-phone-checked-in');
});

test('audit mode takes scanned codes with Enter and shows missing and unexpected', async () => {
  const pick = page.locator('[data-testid=audit-select]');
  const value = await pick.locator('option').nth(1).getAttribute('value');
  await pick.selectOption(value);
  await page.locator('[data-testid=audit-missing] li').first().waitFor();
  const input = page.locator('[data-testid=audit-input]');
  // A scanner types the label's URL and Enter.
  await input.type(`${server.url}/scan/SRV-A`);
  await input.press('Enter');
  await page.locator('[data-testid=audit-status]', { hasText: 'SRV-A: expected here' }).waitFor();
  await input.type('psu-stray\n');
  await page.locator('[data-testid=audit-unexpected] li', { hasText: 'PSU-STRAY' }).waitFor();
  await input.type('NOPE-404\n');
  await page.locator('[data-testid=audit-status]', { hasText: 'NOPE-404: no asset has this tag' }).waitFor();
  const missing = await page.locator('[data-testid=audit-missing] li').allTextContents();
  assert.deepEqual(missing, ['SRV-B']);
  assert.match(await page.locator('[data-testid=audit-counts]').textContent(), /2 found of 2 expected · 1 missing · 1 unexpected/);
  await shot(page, 'scan-phone-audit');
  assert.deepEqual(errors, []);
});
