// Dashboard, the home page's order of questions: the first chart's
// question (/api/v1/usage by the chosen grouping) goes out first, and the
// heavier ones (the heatmaps, the insight lists, waste by team, trends)
// only once it is answered, so that on a busy server they do not hold up
// the first chart. The leadership view's trend is asked over whole days,
// up to today's UTC midnight.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, signIn } from './browser.mjs';

let server;
let browser;
let page;
const events = []; // {kind: 'request' | 'response', path, url, at}

const HEAVY = ['/api/v1/usage/heatmap', '/api/v1/usage/trend', '/api/v1/insights/'];
const heavy = (path) => HEAVY.some((p) => path.startsWith(p));

before(async () => {
  server = await startServer({ demo: true });
  browser = await launch();
  ({ page } = await newPage(browser));
  let seq = 0;
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/v1/')) events.push({ kind: 'request', path: u.pathname, url: u, at: seq++ });
  });
  page.on('requestfinished', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/v1/')) events.push({ kind: 'response', path: u.pathname, url: u, at: seq++ });
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

/** Opens hash afresh and waits until every panel has settled; returns the events of that load. */
async function load(hash, settled) {
  await page.goto('about:blank');
  const start = events.length;
  await page.goto(`${server.url}/${hash}`);
  await page.locator(settled).first().waitFor({ state: 'attached', timeout: 60000 });
  await page.waitForLoadState('networkidle');
  return events.slice(start);
}

/** The events up to the answer of the first chart's question (usage by `group`). */
function firstAnswer(evs, group) {
  const i = evs.findIndex((e) => e.kind === 'response' && e.path === '/api/v1/usage' &&
    e.url.searchParams.get('group_by') === group && e.url.searchParams.get('format') === null);
  assert.ok(i >= 0, `the usage by ${group} was answered: ${evs.map((e) => `${e.kind} ${e.url.pathname}${e.url.search}`).join('\n')}`);
  return i;
}

test('the home page asks the heavy questions only after the first chart\'s is answered', async () => {
  const evs = await load('#/?range=30d', '[data-testid=table-savings] :is(.table-wrap, [data-testid=empty-state], [data-testid=load-error])');
  const i = firstAnswer(evs, 'team');
  const early = evs.slice(0, i).filter((e) => e.kind === 'request' && heavy(e.path)).map((e) => e.path);
  assert.deepEqual(early, [], 'no heavy question before the first chart\'s answer');
  // And they are all asked afterwards.
  const later = new Set(evs.slice(i).filter((e) => e.kind === 'request' && heavy(e.path)).map((e) => e.path));
  for (const p of ['/api/v1/usage/heatmap', '/api/v1/insights/waste-by-team', '/api/v1/insights/allocated-idle',
    '/api/v1/insights/idle', '/api/v1/insights/top-consumers', '/api/v1/insights/overrequest', '/api/v1/insights/savings']) {
    assert.ok(later.has(p), `${p} is asked after the first chart's answer`);
  }
  // The insight lists go out only once both heatmaps are answered.
  const heatmapsAnswered = Math.max(...evs.filter((e) => e.kind === 'response' &&
    e.path === '/api/v1/usage/heatmap').map((e) => e.at));
  const lists = evs.filter((e) => e.kind === 'request' && e.path.startsWith('/api/v1/insights/') &&
    e.path !== '/api/v1/insights/waste-by-team');
  assert.equal(evs.filter((e) => e.kind === 'response' && e.path === '/api/v1/usage/heatmap').length, 2);
  for (const e of lists) assert.ok(e.at > heatmapsAnswered, `${e.path} is asked after the heatmaps' answers`);
  // The first chart is drawn.
  assert.ok(await page.locator('.charts :is(canvas, [data-testid=chart-empty])').count() > 0);
});

test('the leadership view asks for the trend over whole days, after the first answer', async () => {
  const evs = await load('#/leadership?range=30d', '[data-testid=table-leadership] :is(.table-wrap, [data-testid=empty-state], [data-testid=load-error])');
  const i = firstAnswer(evs, 'team');
  const trend = evs.findIndex((e) => e.kind === 'request' && e.path === '/api/v1/usage/trend');
  assert.ok(trend > i, 'the trend is asked after the first chart\'s answer');
  const u = evs[trend].url;
  assert.equal(u.searchParams.get('period'), 'month');
  assert.equal(u.searchParams.get('from'), null);
  const to = Date.parse(u.searchParams.get('to')) / 1000;
  const now = Math.floor(Date.now() / 1000);
  assert.equal(to, now - (now % 86400), 'up to today\'s UTC midnight');
});
