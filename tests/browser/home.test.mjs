// Dashboard, the home page: it is where signing in lands; the global
// filters go into the address and into every API request the page sends;
// a shared address reloads with the same filters; the back button steps
// back through them; the KPI cards and the freshness line show what the
// API answers; a team's page leads to its GPUs and a GPU's timeline; every
// table has its CSV export of the same query; a route the server does not
// offer shows as "not available yet" in its own panel; and at 390 and 1440
// px the home, team and leadership views never scroll sideways.
// Where /api/v1/usage answers, the usage figures are checked against it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;
const tokens = {};
const requests = [];
let hasUsage = false;

/** A batch of n GPUs on host, each sampled now at the given utilizations. */
function batch(id, host, utils) {
  const now = Math.floor(Date.now() / 1000);
  const hex = Buffer.from(host).toString('hex').slice(-8).padStart(8, '0');
  const uuids = utils.map((_, i) => `GPU-${hex}-0000-4000-8000-00000000000${i}`);
  return {
    batch_id: id,
    host: { hostname: host },
    gpus: uuids.map((u, i) => ({ uuid: u, index: i, name: 'NVIDIA H100 80GB HBM3', serial: `${host}-${i}`, memory_total_mib: 81559 })),
    samples: uuids.map((u, i) => ({ time: now - 1, gpu: u, util_avg: utils[i], mem_used_mib: 1024, power_avg_w: 300, temp_c: 55 })),
  };
}

before(async () => {
  server = await startServer({ demo: true });
  for (const [team, env] of [['speech', 'prod'], ['vision', 'dev']]) {
    const t = await server.api('POST', '/api/v1/tokens',
      { body: { name: `home-${team}`, role: 'pusher', source: `home-${team}`, team, env } });
    assert.equal(t.status, 201, t.text);
    tokens[team] = t.json.token;
  }
  for (const [team, host, utils] of [['speech', 'home-a', [90, 0, 40]], ['vision', 'home-b', [70, 2]]]) {
    const r = await server.api('POST', '/api/v1/ingest', { auth: tokens[team], body: batch(`home-${host}`, host, utils) });
    assert.equal(r.status, 201, r.text);
  }
  hasUsage = (await server.api('GET', '/api/v1/usage')).status !== 404;
  if (hasUsage) {
    // Roll the samples up now where the server offers it.
    await server.api('POST', '/api/v1/usage/rollup');
  }
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/v1/')) requests.push(u);
  });
  await page.goto(`${server.url}/`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

/** The newest request the page sent to path (no format=csv), as a URL. */
function lastRequest(path, pred = () => true) {
  return requests.filter((u) => u.pathname === path && pred(u)).at(-1);
}

/** Waits (up to 60 s) until the page has asked path with a query pred accepts; returns it. */
async function requested(path, pred) {
  for (let i = 0; i < 600; i++) {
    const u = lastRequest(path, pred);
    if (u) return u;
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/** Waits until the KPI cards have their GPU counts. */
async function kpisReady() {
  await page.waitForFunction(() => {
    const v = document.querySelector('[data-testid=kpi-gpus]');
    return v && v.textContent !== '…';
  });
}

/** Asserts the GPU cards equal the API's summary for the GPU-list query the page sent last. */
async function kpisMatchApi(want) {
  await kpisReady();
  const sent = lastRequest('/api/v1/gpus', (u) => u.searchParams.get('limit') === '1');
  for (const [k, v] of Object.entries(want)) assert.equal(sent.searchParams.get(k), v, `the GPU counts' ${k}`);
  const r = await server.api('GET', `/api/v1/gpus${sent.search}`);
  assert.equal(r.status, 200, r.text);
  await page.waitForFunction((t) => document.querySelector('[data-testid=kpi-gpus]').textContent === t, String(r.json.total));
  assert.equal(await page.locator('[data-testid=kpi-in_use]').textContent(), String(r.json.summary.in_use));
  assert.equal(await page.locator('[data-testid=kpi-idle]').textContent(), String(r.json.summary.idle));
  return r.json;
}

test('signing in lands on the home page, whose GPU counts and freshness are the API\'s', async () => {
  await page.waitForFunction(() => location.hash === '#/' || location.hash === '');
  assert.equal(await page.locator('h1').textContent(), 'GPU fleet');
  assert.equal(await page.locator('[data-nav=home]').getAttribute('aria-current'), 'page');
  const all = await kpisMatchApi({ team: null });
  assert.equal(all.total, 5);
  // The oldest reporting source is named in the header.
  const sources = (await server.api('GET', '/api/v1/sources')).json.items.filter((s) => s.last_success_at);
  const oldest = sources.reduce((a, b) => (Date.parse(a.last_success_at) <= Date.parse(b.last_success_at) ? a : b));
  await page.waitForFunction((name) => document.querySelector('[data-testid=freshness]').dataset.oldest === name, oldest.name);
  assert.match(await page.locator('[data-testid=freshness]').textContent(), new RegExp(`oldest source ${oldest.name} reported`));
  assert.deepEqual(errors, []);
  await shot(page, 'home-01-fleet');
});

test('a filter goes into the address and into the requests, and the counts follow it', async () => {
  await page.locator('[data-testid=filter-bar][data-ready=true]').waitFor();
  await page.locator('select[name=team]').selectOption('speech');
  await page.waitForFunction(() => location.hash === '#/?team=speech');
  const speech = await kpisMatchApi({ team: 'speech' });
  assert.equal(speech.total, 3);
  // The team's choices came from what the fleet reports.
  const teams = await page.$$eval('select[name=team] option', (os) => os.map((o) => o.value));
  assert.deepEqual(teams, ['', 'speech', 'vision']);

  await page.locator('select[name=range]').selectOption('30d');
  await page.waitForFunction(() => location.hash === '#/?team=speech&range=30d');
  await kpisReady();
  // The analytics requests carry the filter and a 30-day window of whole UTC days.
  const usage = lastRequest('/api/v1/usage');
  assert.ok(usage, 'the page asked for its usage');
  assert.equal(usage.searchParams.get('team'), 'speech');
  assert.equal(usage.searchParams.get('step'), 'day');
  const from = Date.parse(usage.searchParams.get('from'));
  const to = Date.parse(usage.searchParams.get('to'));
  assert.equal(to - from, 30 * 86400000);
  assert.equal(to % 86400000, 0, 'the window ends at midnight UTC');
  assert.ok(to > Date.now() && to - Date.now() <= 86400000, 'the window ends with today');
  // The insight lists go out after the heatmaps' answers, so they may come later.
  for (const p of ['/api/v1/insights/idle', '/api/v1/insights/allocated-idle', '/api/v1/insights/top-consumers']) {
    const u = await requested(p, (x) => x.searchParams.get('from') === usage.searchParams.get('from'));
    assert.ok(u, `the page asked ${p} over the new window`);
    assert.equal(u.searchParams.get('team'), 'speech', p);
    assert.equal(u.searchParams.get('from'), usage.searchParams.get('from'), p);
  }
  await shot(page, 'home-02-filtered');
});

test('a shared address reloads with the same filters, and the back button steps back through them', async () => {
  await page.reload();
  await page.waitForFunction(() => location.hash === '#/?team=speech&range=30d');
  await kpisMatchApi({ team: 'speech' });
  assert.equal(await page.locator('select[name=team]').inputValue(), 'speech');
  assert.equal(await page.locator('select[name=range]').inputValue(), '30d');

  await page.goBack();
  await page.waitForFunction(() => location.hash === '#/?team=speech');
  assert.equal(await page.locator('select[name=range]').inputValue(), '7d');
  await kpisMatchApi({ team: 'speech' });
  await page.goBack();
  await page.waitForFunction(() => location.hash === '#/' || location.hash === '');
  await kpisMatchApi({ team: null });
  assert.equal(await page.locator('select[name=team]').inputValue(), '');

  // Someone else opens a shared address: signed out, then signed in, they see the same view.
  const other = await newPage(browser);
  await other.page.goto(`${server.url}/#/?team=vision&env=dev&range=24h`);
  await signIn(other.page, server.password);
  await other.page.waitForFunction(() => location.hash === '#/?team=vision&env=dev&range=24h');
  await other.page.locator('[data-testid=filter-bar][data-ready=true]').waitFor();
  assert.equal(await other.page.locator('select[name=team]').inputValue(), 'vision');
  assert.equal(await other.page.locator('select[name=env]').inputValue(), 'dev');
  assert.equal(await other.page.locator('select[name=range]').inputValue(), '24h');
  await other.page.waitForFunction(() => document.querySelector('[data-testid=kpi-gpus]').textContent === '2');
  assert.deepEqual(other.errors, []);
  await other.context.close();
});

test('a custom range goes into the address as dates', async () => {
  await page.locator('select[name=range]').selectOption('custom');
  const form = page.locator('[data-testid=range-custom]');
  await form.waitFor();
  await form.locator('input[name=from]').fill('2026-11-01');
  await form.locator('input[name=to]').fill('2026-11-10');
  await form.getByRole('button', { name: 'Apply' }).click();
  await page.waitForFunction(() => location.hash === '#/?range=custom&from=2026-11-01&to=2026-11-10');
  await kpisReady();
  await page.waitForFunction(() => document.querySelector('[data-testid=scope]').textContent.includes('2026-11-01 to 2026-11-10'));
  const usage = lastRequest('/api/v1/usage');
  assert.equal(usage.searchParams.get('from'), '2026-11-01T00:00:00Z');
  assert.equal(usage.searchParams.get('to'), '2026-11-11T00:00:00Z');
  assert.equal(usage.searchParams.get('step'), 'day');
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await page.waitForFunction(() => location.hash === '#/');
});

test('every table exports its own query as CSV; an absent route says so in its panel', async () => {
  await page.goto(`${server.url}/#/?team=speech`);
  await kpisReady();
  for (const id of ['table-cost-by-team', 'table-idle', 'table-allocated-idle', 'table-top-consumers', 'table-savings']) {
    const panel = page.locator(`[data-testid=${id}]`);
    const href = new URL(await panel.locator('[data-testid=export-csv]').getAttribute('href'), server.url);
    assert.equal(href.searchParams.get('format'), 'csv', id);
    assert.equal(href.searchParams.get('team'), 'speech', id);
    assert.ok(href.searchParams.get('from') && href.searchParams.get('to'), `${id} exports the page's range`);
    assert.match(await panel.locator('[data-testid=export-csv]').getAttribute('download'), /-speech-\d{4}-\d{2}-\d{2}\.csv$/);
    // Its state: a table, an empty line, or "not available yet" exactly when the route is absent.
    await panel.locator('.table-wrap, [data-testid=empty-state], [data-testid=not-available], [data-testid=load-error]').first().waitFor();
    const status = (await server.api('GET', `${href.pathname}?${new URLSearchParams([...href.searchParams].filter(([k]) => k !== 'format'))}`)).status;
    assert.ok(status === 200 || status === 404, `${id}: the page asks what the route accepts (${status})`);
    assert.equal(await panel.locator('[data-testid=not-available]').count(), status === 404 ? 1 : 0, `${id}: ${status}`);
    if (status === 200) {
      const [download] = await Promise.all([page.waitForEvent('download'), panel.locator('[data-testid=export-csv]').click()]);
      const body = await (await download.createReadStream()).toArray();
      const csv = Buffer.concat(body).toString('utf8');
      const api = await fetch(href, { headers: { Authorization: `Bearer ${server.token}` } });
      assert.equal(csv, await api.text(), `${id}: the download is the API's CSV`);
    }
  }
  // Charts: drawn, empty, or not available, never broken.
  for (const id of ['chart-util', 'chart-hours', 'chart-usage', 'chart-heatmap', 'chart-cost']) {
    const n = await page.locator(`[data-testid=${id}]`).count();
    if (!n) continue;
    await page.locator(`[data-testid=${id}]`).locator('canvas, .heatmap, [data-testid=chart-empty], [data-testid=not-available]').first().waitFor();
  }
  assert.deepEqual(errors, []);
  await shot(page, 'home-03-tables');
});

test('drill-down: a team\'s page leads to its GPUs, and a GPU to its timeline', async () => {
  await page.goto(`${server.url}/#/team/speech`);
  await page.waitForFunction(() => document.querySelector('h1').textContent === 'Team speech');
  await kpisMatchApi({ team: 'speech' });
  assert.equal(await page.locator('select[name=team]').isDisabled(), true);
  await page.locator('[data-testid=team-gpus]').click();
  await page.waitForURL(/#\/gpus\?team=speech$/);
  await tableReady(page);
  const api = (await server.api('GET', '/api/v1/gpus?team=speech&limit=50')).json;
  const ids = await page.$$eval('.table-wrap tbody tr[data-id]', (rows) => rows.map((r) => r.dataset.id));
  assert.deepEqual(ids, api.items.map((g) => g.uuid));
  await page.locator(`tbody tr[data-id="${api.items[0].uuid}"] a.row-link`).click();
  await page.waitForURL(new RegExp(`#/gpus/${api.items[0].uuid}$`));
  const tl = page.locator('[data-testid=timeline]');
  await tl.waitFor();
  const sentFirst = lastRequest(`/api/v1/gpus/${api.items[0].uuid}/timeline`);
  assert.ok(sentFirst, 'the GPU page asked for its timeline');
  const timeline = await server.api('GET', `/api/v1/gpus/${api.items[0].uuid}/timeline${sentFirst.search}`);
  // A server without timelines answers from the GPU route, which takes no range.
  if (timeline.status === 404 || (timeline.status === 400 && timeline.json.error.code === 'unknown_parameter')) {
    await tl.locator('[data-testid=not-available]').waitFor();
  } else {
    assert.equal(timeline.status, 200, timeline.text);
    await tl.locator('[data-testid=timeline-util]').waitFor();
  }
  // Its range stays in the address.
  await tl.locator('select[name=timeline-range]').selectOption('24h');
  await page.waitForFunction((u) => location.hash === `#/gpus/${u}?range=24h`, api.items[0].uuid);
  const sent = lastRequest(`/api/v1/gpus/${api.items[0].uuid}/timeline`);
  assert.equal(Date.parse(sent.searchParams.get('to')) - Date.parse(sent.searchParams.get('from')), 86400000);
  assert.deepEqual(errors, []);
  await shot(page, 'home-04-gpu-timeline');
});

test('the leadership view lists the teams and links each to its page', async () => {
  await page.goto(`${server.url}/#/leadership?range=30d`);
  await page.waitForFunction(() => document.querySelector('h1').textContent === 'Leadership summary');
  assert.equal(await page.locator('[data-view=leadership]').getAttribute('aria-current'), 'page');
  // The Fleet tab keeps the filters.
  assert.equal(await page.locator('[data-view=fleet]').getAttribute('href'), '#/?range=30d');
  const panel = page.locator('[data-testid=table-leadership]');
  await panel.locator('.table-wrap, [data-testid=empty-state], [data-testid=not-available]').first().waitFor();
  if (!hasUsage) {
    assert.equal(await panel.locator('[data-testid=not-available]').count(), 1);
  } else if (await panel.locator('.table-wrap').count()) {
    await panel.locator('a[data-team=speech]').click();
    await page.waitForFunction(() => location.hash === '#/team/speech?range=30d');
  }
  assert.deepEqual(errors, []);
  await shot(page, 'home-05-leadership');
});

test('the usage figures shown are the API\'s', async (t) => {
  if (!hasUsage) {
    t.skip('the server does not answer /api/v1/usage');
    return;
  }
  await page.goto(`${server.url}/#/?range=24h`);
  await kpisReady();
  await page.waitForFunction(() => document.querySelector('[data-testid=kpi-util]').textContent !== '…');
  const sent = lastRequest('/api/v1/usage');
  const r = await server.api('GET', `/api/v1/usage${sent.search}`);
  assert.equal(r.status, 200, r.text);
  const total = r.json.total || {};
  if (typeof total.util_avg === 'number') {
    assert.equal(await page.locator('[data-testid=kpi-util]').textContent(), `${total.util_avg.toFixed(1)}%`);
  }
  if (total.cost && total.cost.amount !== undefined) {
    assert.equal(await page.locator('[data-testid=kpi-cost]').getAttribute('data-amount'), total.cost.amount);
  }
  // The cost-by-team table's hours are the sums of the API's items per team.
  const teams = await server.api('GET', `/api/v1/usage${lastRequest('/api/v1/usage', (u) => u.searchParams.get('group_by') === 'team').search}`);
  const owned = new Map();
  for (const it of teams.json.items) owned.set(it.group ?? '', (owned.get(it.group ?? '') || 0) + it.gpu_hours.owned);
  const panel = page.locator('[data-testid=table-cost-by-team]');
  await panel.locator('.table-wrap, [data-testid=empty-state]').first().waitFor();
  for (const [team, hours] of owned) {
    const cell = panel.locator(`tbody tr[data-id="${team}"] td[data-col=owned]`);
    assert.equal(await cell.textContent(), hours.toLocaleString('en-US', { maximumFractionDigits: 1 }), team);
  }
});

test('windows, the address query and money sums are computed exactly', async () => {
  const got = await page.evaluate(async () => {
    const f = await import('/js/filters.js');
    const home = await import('/js/home.js');
    const at = Date.parse('2026-11-15T13:20:00Z');
    const win = (q) => {
      const w = f.timeWindow(f.readFilters(new URLSearchParams(q)), at);
      return [f.iso(w.from), f.iso(w.to), w.step, w.hours];
    };
    return {
      d30: win('range=30d'), h24: win('range=24h'), d7: win(''), custom: win('range=custom&from=2026-11-01&to=2026-11-10'),
      long: win('range=custom&from=2026-01-01&to=2026-08-31'), bad: win('range=custom&from=2026-11-10&to=2026-11-01'),
      query: f.filterQuery(f.readFilters(new URLSearchParams('team=vision&range=7d&datacenter=x&group=pool&metric=idle'))),
      api: f.apiFilters(f.readFilters(new URLSearchParams('env=dev&pool=a100&range=24h')),
        f.timeWindow(f.readFilters(new URLSearchParams('range=24h')), at)),
      cents: ['1234.50', '0.005', '-2.10', '7', 'x'].map(home.cents),
      money: [home.moneyText('1234.50', 'USD'), home.moneyText('5.00', 'EUR'), home.moneyText('-0.40', 'USD')],
      groups: home.perGroup([
        { group: 'a', start: 's1', gpu_hours: { owned: 2, busy: 1, allocated_idle: 1, unknown: 0 }, util_avg: 50, cost: { amount: '1.10', currency: 'USD' } },
        { group: 'a', start: 's2', gpu_hours: { owned: 1, unknown: 1 }, util_avg: 20, cost: { amount: '2.25', currency: 'USD' } },
        { group: null, start: 's1', gpu_hours: { owned: 4, busy: 4 }, util_avg: 10, cost: null },
      ]).map((g) => [g.group, g.hours.owned, g.hours.busy, g.util_avg, g.cost && g.cost.amount]),
    };
  });
  assert.deepEqual(got.d30, ['2026-10-17T00:00:00Z', '2026-11-16T00:00:00Z', 'day', 720]);
  assert.deepEqual(got.h24, ['2026-11-14T14:00:00Z', '2026-11-15T14:00:00Z', 'hour', 24]);
  assert.deepEqual(got.d7, ['2026-11-08T14:00:00Z', '2026-11-15T14:00:00Z', 'hour', 168]);
  assert.deepEqual(got.custom, ['2026-11-01T00:00:00Z', '2026-11-11T00:00:00Z', 'day', 240]);
  assert.deepEqual(got.long, ['2026-01-01T00:00:00Z', '2026-09-01T00:00:00Z', 'week', 5832]);
  assert.deepEqual(got.bad, got.d7, 'an end before the start falls back to the default range');
  assert.equal(got.query, 'team=vision&group=pool&metric=idle');
  assert.deepEqual(got.api, { env: 'dev', pool: 'a100', from: '2026-11-14T14:00:00Z', to: '2026-11-15T14:00:00Z' });
  assert.deepEqual(got.cents, [123450, 1, -210, 700, null]);
  assert.deepEqual(got.money, ['$1,234.50', '5.00 EUR', '-$0.40']);
  // Owned hours add up; utilization is weighted by measured hours (the
  // second item measured none); cost is summed in cents.
  assert.deepEqual(got.groups, [[null, 4, 4, 10, null], ['a', 3, 1, 50, '3.35']]);
});

for (const width of [390, 1440]) {
  test(`at ${width} px the home, team and leadership views do not scroll sideways`, async () => {
    const ctx = await browser.newContext({ viewport: { width, height: 900 } });
    const p = await ctx.newPage();
    p.setDefaultTimeout(15000);
    const errs = [];
    p.on('pageerror', (e) => errs.push(e.message));
    await p.goto(`${server.url}/#/`);
    await signIn(p, server.password);
    for (const hash of ['#/', '#/team/speech', '#/leadership', '#/?team=vision&range=90d']) {
      await p.goto(`${server.url}/${hash}`);
      await p.waitForFunction(() => document.querySelector('[data-testid=kpi-gpus]')
        && document.querySelector('[data-testid=kpi-gpus]').textContent !== '…');
      await p.locator('.tables .panel .table-wrap, .tables .panel [data-testid=empty-state], .tables .panel [data-testid=not-available]')
        .first().waitFor();
      const [sw, iw] = await p.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
      assert.ok(sw <= iw, `${hash} at ${width}: the page scrolls sideways (${sw} > ${iw})`);
      // Every menu entry is on screen.
      for (const b of await p.$$eval('.topnav a', (as) => as.map((a) => a.getBoundingClientRect().toJSON()))) {
        assert.ok(b.left >= 0 && b.right <= iw, `${hash} at ${width}: a menu entry is off screen`);
      }
      await shot(p, `home-layout-${hash.replace(/[^a-z0-9]+/gi, '-')}-${width}`);
    }
    assert.deepEqual(errs, []);
    await ctx.close();
  });
}
