// The dashboard's home page in headless Chromium: time from opening the
// page (signed in) to its first drawn chart and to every panel settled,
// beside the GPU list's time to its first row, measured in the same run.
// Usage: node bench/home.mjs URL PASSWORD [RUNS [WARMUP [TIMEOUT_S]]]
// Prints one JSON object: per page and mark, each run's milliseconds (null:
// not reached within TIMEOUT_S, default 300) and their median.
import { launch } from '../tests/browser/browser.mjs';

const [url, password, runsArg] = process.argv.slice(2);
if (!url || !password) {
  console.error('usage: node bench/home.mjs URL PASSWORD [RUNS]');
  process.exit(2);
}
const runs = Number(runsArg || 5);
const warmup = Number(process.argv[5] ?? 1);
const timeoutMs = Number(process.argv[6] || 300) * 1000;

const median = (all) => {
  const xs = all.filter((x) => x !== null);
  if (xs.length < all.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const browser = await launch();
const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
const page = await context.newPage();
// Each panel's time to settle (its chart, table or the note that says why
// there is none), as a wall-clock time in milliseconds, kept in
// window.__panelMarks by its h2 title.
await page.addInitScript(() => {
  const marks = {};
  const DONE = 'canvas, .heatmap, table, [data-testid=empty-state], [data-testid=not-available], ' +
    '[data-testid=load-error], [data-testid=chart-empty]';
  window.__panelMarks = marks;
  const look = () => {
    for (const p of document.querySelectorAll('.charts .panel, .tables .panel')) {
      const title = p.querySelector('h2')?.textContent?.trim();
      if (!title || title in marks || !p.querySelector(DONE)) continue;
      marks[title] = Math.round(performance.timeOrigin + performance.now());
    }
  };
  new MutationObserver(look).observe(document, { childList: true, subtree: true });
});
page.setDefaultTimeout(120000);
await page.goto(`${url}/#/login`);
await page.locator('input[name=username]').fill('admin');
await page.locator('input[name=password]').fill(password);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.locator('[data-testid=user-name]').waitFor({ state: 'attached' });

// Each load starts from a blank page, so nothing of the last one is reused
// but the browser's session cookie (the scripts are no-store anyway).
async function timed(hash, ready, collectPanels) {
  await page.goto('about:blank');
  const t0 = Date.now();
  await page.goto(`${url}/${hash}`);
  const marks = {};
  for (const [name, sel] of ready) {
    const left = timeoutMs - (Date.now() - t0);
    try {
      await page.locator(sel).first().waitFor({ state: 'attached', timeout: Math.max(1, left) });
      marks[name] = Date.now() - t0;
    } catch {
      marks[name] = null;
    }
  }
  if (collectPanels) {
    // Panels that settle after the last one (the marks above wait for it).
    const left = timeoutMs - (Date.now() - t0);
    await page.waitForFunction(() => [...document.querySelectorAll('.charts .panel, .tables .panel')]
      .map((p) => p.querySelector('h2')?.textContent?.trim()).filter(Boolean)
      .every((t) => t in window.__panelMarks),
    null, { timeout: Math.max(1, left) }).catch(() => {});
    const at = await page.evaluate(() => ({ ...window.__panelMarks }));
    marks.panels = Object.fromEntries(Object.entries(at).map(([k, v]) => [k, v - t0]));
  }
  return marks;
}

// A chart drawn, or the panel that says why none is.
const CHART = '.charts :is(canvas, .heatmap, [data-testid=chart-empty], [data-testid=not-available])';
const pages = {
  home_30d: ['#/?range=30d', [['first_chart', CHART],
    ['all_panels', '.tables .panel:last-child :is(.table-wrap, [data-testid=empty-state], [data-testid=not-available], [data-testid=load-error])']]],
  home_7d: ['#/', [['first_chart', CHART]]],
  gpu_list: ['#/gpus', [['first_row', '.table-wrap tbody tr[data-id]']]],
};
// BENCH_PAGES (comma-separated names) measures only those pages.
const only = (process.env.BENCH_PAGES || '').split(',').filter(Boolean);
const out = { runs, pages: {} };
for (const [name, [hash, ready]] of Object.entries(pages)) {
  if (only.length && !only.includes(name)) continue;
  const panels = ready.some(([mark]) => mark === 'all_panels');
  for (let i = 0; i < warmup; i++) await timed(hash, ready, false); // not counted
  const all = [];
  for (let i = 0; i < runs; i++) all.push(await timed(hash, ready, panels));
  const res = {};
  for (const [mark] of ready) {
    const ms = all.map((m) => m[mark]);
    res[mark] = { median_ms: median(ms), runs_ms: ms };
  }
  if (panels) { // every panel's time to settle, by title (null: not settled in that run)
    const titles = [...new Set(all.flatMap((m) => Object.keys(m.panels || {})))];
    for (const t of titles) {
      const ms = all.map((m) => m.panels?.[t] ?? null);
      res[`panel: ${t}`] = { median_ms: median(ms), runs_ms: ms };
    }
  }
  res.charts_drawn = await page.locator('.charts canvas').count();
  out.pages[name] = res;
}
await browser.close();
console.log(JSON.stringify(out));
