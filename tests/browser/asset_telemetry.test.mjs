// Dashboard, a GPU asset's telemetry: samples pushed for its discovered GPU
// over the last days and rolled up show on the asset page as utilization,
// temperature and power charts over the last 7 days (per hour), each with
// its data as a table; the 30-day range folds the hours into days. An
// asset that is not a discovered GPU has no telemetry panel.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn } from './browser.mjs';

let server;
let browser;
let page;
let errors;
const UUID = 'GPU-7e1e0000-0000-4000-8000-000000000001';
const now = Math.floor(Date.now() / 1000);
// Readings in the hour that began 1 hour, 2 days and 4 days ago: three hours on three days.
const AGES = [3600, 2 * 86400, 4 * 86400];
const UTILS = [81, 42, 7];
const TEMPS = [71, 64, 58];
// Three readings a few minutes into the hour, so each reading's hour is one row.
const hourOf = (t) => t - (t % 3600);

async function call(method, p, body, auth) {
  const r = await server.api(method, p, { body, auth });
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}

before(async () => {
  server = await startServer({ args: ['--freshness', '2592000'] });
  const tok = await call('POST', '/api/v1/tokens', { name: 'tele', role: 'pusher', source: 'tele' });
  for (const [i, age] of AGES.entries()) {
    await call('POST', '/api/v1/ingest', {
      batch_id: `tele-${i}`,
      host: { hostname: 'tele-node' },
      gpus: [{ uuid: UUID, index: 0, name: 'NVIDIA H100 80GB HBM3', serial: 'TELE-SN-1', memory_total_mib: 81559 }],
      samples: [60, 120, 180].map((d) => ({ time: hourOf(now - age) + d, gpu: UUID, util_avg: UTILS[i], mem_used_mib: 1024,
        power_avg_w: 300 + i, temp_c: TEMPS[i] })),
    }, tok.token);
  }
  await call('POST', '/api/v1/usage/rollup');
  const a = await call('POST', '/api/v1/assets', { tag: 'TELE-1', kind: 'gpu', serial: 'TELE-SN-1', model: 'H100' });
  assert.equal(a.gpu_uuid, UUID);
  await call('POST', '/api/v1/assets', { tag: 'TELE-SRV', kind: 'server', serial: 'TELE-SRV-SN' });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/assets/TELE-1');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

/** The values with each run of equal neighbours kept once. */
const runs = (vals) => vals.filter((v, i) => i === 0 || v !== vals[i - 1]);

/** The data table rows of one chart: [[time, value], ...]. */
async function chartRows(testid) {
  return page.$$eval(`[data-testid=${testid}] [data-testid=chart-data] tbody tr`,
    (rows) => rows.map((r) => [...r.children].map((c) => c.textContent.trim())));
}

test('the asset page charts its GPU telemetry over 7 and 30 days', async () => {
  const panel = page.locator('[data-testid=asset-telemetry]');
  await panel.locator('[data-testid=asset-util] [data-testid=chart-data]').waitFor();
  assert.equal(await panel.locator('[data-testid=asset-telemetry-body]').getAttribute('data-bucket'), 'hour');
  // A reading may be held into the next hour by the rollup: the hours, in
  // time order, carry the three readings oldest first.
  const util = await chartRows('asset-util');
  assert.ok(util.length >= 3 && util.length <= 6, JSON.stringify(util));
  assert.deepEqual(runs(util.map((r) => r[1])), UTILS.map((u) => `${u} %`).reverse());
  assert.deepEqual(runs((await chartRows('asset-temp')).map((r) => r[1])), TEMPS.map((t) => `${t} °C`).reverse());
  assert.equal((await chartRows('asset-power')).length, util.length);
  // Hourly labels carry the time of day.
  assert.match(util[0][0], /^\d{4}-\d\d-\d\d \d\d:\d\d$/);
  assert.equal(await panel.locator('[data-testid=asset-util] canvas').count() > 0, true);
  await shot(page, 'asset-telemetry');

  await panel.locator('select[name=telemetry-range]').selectOption('30d');
  await page.waitForFunction(() => document.querySelector('[data-testid=asset-telemetry-body]')?.dataset.bucket === 'day');
  const days = await chartRows('asset-util');
  // Three days (a reading held past midnight into a fourth at most once each).
  assert.ok(days.length >= 3 && days.length < util.length + 1, JSON.stringify(days));
  assert.match(days[0][0], /^\d{4}-\d\d-\d\d$/);
  assert.deepEqual(runs(days.map((r) => r[1])), UTILS.map((u) => `${u} %`).reverse());

  // A server asset has no telemetry panel.
  await page.goto(server.url + '/#/assets/TELE-SRV');
  await page.locator('[data-testid=asset-tag]', { hasText: 'TELE-SRV' }).waitFor();
  assert.equal(await page.locator('[data-testid=asset-telemetry]').count(), 0);
  assert.deepEqual(errors, []);
});
