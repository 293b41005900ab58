// Dashboard, spare reservations on the asset page: a reserve_spare rule
// reserves a spare for a failing GPU; the page of each shows the
// reservation (the spare's "spare for", the failing one's "replaced by
// spare"), and releasing it from the spare's page (with a reason) ends it
// as the API then answers, with the event on the timeline.
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
  await call('POST', '/api/v1/datacenters', { name: 'Spare DC', location: 'here' });
  await call('POST', '/api/v1/assets', { tag: 'R-FAIL', kind: 'gpu', serial: 'SN-R1', model: 'L40S', location: { datacenter: 'Spare DC' } });
  await call('POST', '/api/v1/assets', { tag: 'R-SPARE', kind: 'gpu', serial: 'SN-R2', model: 'L40S', stage: 'spare', location: { datacenter: 'Spare DC' } });
  const rule = await call('POST', '/api/v1/lifecycle-rules', { name: 'reserve for R-FAIL',
    condition: { attr: 'tag', '=': 'R-FAIL' }, actions: [{ type: 'reserve_spare' }] });
  const run = await call('POST', `/api/v1/lifecycle-rules/${rule.id}/run`);
  assert.equal(run.matches[0].actions[0].result, 'reserved');
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/assets/R-FAIL');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('both assets show the reservation; releasing it from the spare ends it', async () => {
  const [v] = (await call('GET', '/api/v1/reservations?asset=R-FAIL')).items;
  const panel = page.locator('[data-testid=reservations]');
  const item = panel.locator(`li[data-reservation="${v.id}"]`);
  await item.waitFor();
  assert.match(await item.textContent(), /reserved\s*replaced by spare R-SPARE/);
  assert.equal(await item.locator('[data-testid=release-reservation]').count(), 1);

  await page.goto(server.url + '/#/assets/R-SPARE');
  await page.locator('[data-testid=asset-tag]', { hasText: 'R-SPARE' }).waitFor();
  const spareItem = page.locator(`[data-testid=reservations] li[data-reservation="${v.id}"]`);
  await spareItem.waitFor();
  assert.match(await spareItem.textContent(), /spare for R-FAIL/);
  await shot(page, 'asset-reservation');
  page.once('dialog', (d) => d.accept('kept for the next failure'));
  await spareItem.locator('[data-testid=release-reservation]').click();
  await page.locator(`[data-testid=reservations] li[data-reservation="${v.id}"][data-state=released]`).waitFor();
  assert.match(await page.locator(`[data-testid=reservations] li[data-reservation="${v.id}"]`).textContent(), /kept for the next failure/);
  assert.equal(await page.locator('[data-testid=release-reservation]').count(), 0);
  const after = await call('GET', `/api/v1/reservations?asset=R-SPARE`);
  assert.equal(after.items[0].state, 'released');
  assert.equal(after.items[0].end_reason, 'kept for the next failure');
  const ev = (await call('GET', '/api/v1/assets/R-SPARE/events?limit=100')).items.filter((e) => e.kind === 'reservation');
  assert.equal(ev.length, 1);
  assert.equal(ev[0].detail.state, 'released');
  assert.deepEqual(errors, []);
});
