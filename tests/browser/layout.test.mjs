// Dashboard layout at desktop widths (1280, 1440, 1920 px) and on a phone
// (390 px): the Status and Actions columns of the GPU, server and source
// tables lie inside the window (on the phone: inside their table's own
// scroll box), the page never scrolls sideways, long text is clipped with
// its whole text as a tooltip, and the phone's header reaches every page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, shot, signIn, tableReady } from './browser.mjs';

const LONG_HOST = 'gpu-node-with-a-really-long-host-name-0001.compute.fra1.example.internal';
const LONG_MODEL = 'NVIDIA H100 80GB HBM3 with an unusually long marketing name';

let server;
let browser;
let dc;

before(async () => {
  server = await startServer({ demo: true });
  const tok = await server.api('POST', '/api/v1/tokens', { body: { name: 'layout-agents', role: 'pusher',
    source: 'layout-agents-with-a-long-source-name', team: 'speech-recognition-research', env: 'production', cluster: 'fra1-gpu' } });
  assert.equal(tok.status, 201, tok.text);
  const now = Math.floor(Date.now() / 1000);
  const uuids = [0, 1, 2, 3].map((i) => `GPU-0a0b0c0d-0000-4000-8000-00000000010${i}`);
  const r = await server.api('POST', '/api/v1/ingest', { auth: tok.json.token, body: {
    batch_id: 'layout-1', host: { hostname: LONG_HOST },
    gpus: uuids.map((u, i) => ({ uuid: u, index: i, name: LONG_MODEL, serial: `L-${i}`, memory_total_mib: 81559,
      pci_bus_id: `0000:1${i}:00.0` })),
    samples: uuids.map((u, i) => ({ time: now - 1, gpu: u, util_avg: 20 * i, mem_used_mib: 2048, power_avg_w: 350, temp_c: 60 })),
  } });
  assert.equal(r.status, 201, r.text);
  const pull = await server.api('POST', '/api/v1/sources', { body: { name: 'dcgm-fra1', kind: 'dcgm-exporter',
    config: { url: 'http://127.0.0.1:9/metrics' } } });
  assert.equal(pull.status, 201, pull.text);
  const list = await server.api('GET', '/api/v1/datacenters?sort=name');
  dc = list.json.items[0];
  browser = await launch();
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

/** A signed-in page of the given width, failing on script errors. */
async function pageAt(width) {
  const context = await browser.newContext({ viewport: { width, height: 900 } });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(`${server.url}/#/gpus`);
  await signIn(page, server.password);
  return { context, page, errors };
}

/** Bounding box of the first element matching sel, with the window's width. */
async function boxes(page, sel) {
  return page.$$eval(sel, (els) => els.map((e) => {
    const r = e.getBoundingClientRect();
    return { left: r.left, right: r.right, width: r.width };
  }));
}

async function noSideScroll(page, what) {
  const [sw, iw] = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  assert.ok(sw <= iw, `${what}: the page scrolls sideways (${sw} > ${iw})`);
}

/** Asserts every cell of column `key` (header and body) lies inside the window. */
async function columnInside(page, key, what) {
  const [iw] = await page.evaluate(() => [window.innerWidth]);
  const all = await boxes(page, `.table-wrap th[data-col=${key}], .table-wrap td[data-col=${key}]`);
  assert.ok(all.length >= 2, `${what}: the ${key} column has a header and rows`);
  for (const b of all) {
    assert.ok(b.width > 40, `${what}: the ${key} column is squeezed to ${b.width}px`);
    assert.ok(b.left >= 0 && b.right <= iw + 0.5, `${what}: the ${key} column is outside the window (${b.left}-${b.right} of ${iw})`);
  }
}

const PAGES = [
  { name: 'gpus', hash: () => '#/gpus', cols: ['status'] },
  { name: 'servers', hash: () => `#/datacenters/${dc.id}/servers`, cols: ['status', 'actions'] },
  { name: 'sources', hash: () => '#/sources', cols: ['status', 'actions'] },
];

for (const width of [1280, 1440, 1920]) {
  test(`at ${width} px the Status and Actions columns are inside the window`, async () => {
    const { context, page, errors } = await pageAt(width);
    for (const p of PAGES) {
      await page.goto(`${server.url}/${p.hash()}`);
      await page.locator('.table-wrap tbody tr[data-id]').first().waitFor();
      await tableReady(page);
      for (const key of p.cols) await columnInside(page, key, `${p.name} at ${width}`);
      await noSideScroll(page, `${p.name} at ${width}`);
      await shot(page, `layout-${p.name}-${width}`);
    }
    // The table uses the width it has: the GPU table spans the content box.
    await page.goto(`${server.url}/#/gpus`);
    await tableReady(page);
    const [table] = await boxes(page, '.table-wrap table');
    assert.ok(table.width >= width - 80, `the GPU table is ${table.width}px wide in a ${width}px window`);
    // Long text is clipped in its cell and whole in its tooltip.
    const host = page.locator('tbody tr[data-id] td:nth-child(2) [title]').first();
    assert.equal(await host.getAttribute('title'), LONG_HOST);
    assert.ok(await host.evaluate((e) => e.scrollWidth > e.clientWidth), 'the long host name is clipped');
    const model = page.locator('tbody tr[data-id] td:first-child a').first();
    assert.ok((await model.getAttribute('title')).startsWith(LONG_MODEL));
    assert.deepEqual(errors, []);
    await context.close();
  });
}

test('at 390 px the header works, the page does not scroll sideways, and tables scroll inside their box', async () => {
  const { context, page, errors } = await pageAt(390);
  const iw = 390;
  // Every menu entry and Sign out are on screen and usable.
  const links = await boxes(page, '.topnav a');
  const names = await page.$$eval('.topnav a', (as) => as.map((a) => a.textContent.trim()));
  for (const n of ['Data centers', 'GPUs', 'Sources', 'Tokens']) assert.ok(names.includes(n), `${n} in the menu: ${names}`);
  for (const b of links) assert.ok(b.left >= 0 && b.right <= iw, `a menu entry is off screen: ${JSON.stringify(b)}`);
  const [out] = await boxes(page, '[data-testid=sign-out]');
  assert.ok(out.left >= 0 && out.right <= iw);
  await page.locator('.topnav a', { hasText: 'Sources' }).click();
  await page.locator('[data-nav=sources][aria-current=page]').waitFor();
  await page.locator('.topnav a', { hasText: 'Data centers' }).click();
  await page.locator('[data-nav=datacenters][aria-current=page]').waitFor();

  for (const p of PAGES) {
    await page.goto(`${server.url}/${p.hash()}`);
    await page.locator('.table-wrap tbody tr[data-id]').first().waitFor();
    await tableReady(page);
    await noSideScroll(page, `${p.name} at 390`);
    await shot(page, `layout-${p.name}-390`);
    // The Status column is reachable inside the table's own scroll box.
    const inside = await page.evaluate(() => {
      const wrap = document.querySelector('.table-wrap[aria-busy]');
      const th = wrap.querySelector('th[data-col=status]');
      th.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      const w = wrap.getBoundingClientRect();
      const c = th.getBoundingClientRect();
      return { scrolls: wrap.scrollWidth > wrap.clientWidth, w: [w.left, w.right], c: [c.left, c.right] };
    });
    assert.ok(inside.scrolls, `${p.name}: the table scrolls inside its box on a phone`);
    assert.ok(inside.c[0] >= inside.w[0] - 0.5 && inside.c[1] <= inside.w[1] + 0.5,
      `${p.name}: the Status column is outside its scroll box: ${JSON.stringify(inside)}`);
    assert.ok(inside.w[0] >= 0 && inside.w[1] <= iw, `${p.name}: the scroll box is off screen`);
    await noSideScroll(page, `${p.name} at 390 after scrolling the table`);
  }
  await page.goto(`${server.url}/#/resources/1`);
  await page.locator('[data-testid=attributes]').waitFor();
  await noSideScroll(page, 'a resource page at 390');
  await shot(page, 'layout-resource-390');
  assert.deepEqual(errors, []);
  await context.close();
});
