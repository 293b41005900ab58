// Browser test helpers: Chromium through playwright-core, screenshots into
// the artifacts directory, and the dashboard's sign-in step.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import os from 'node:os';
import assert from 'node:assert/strict';

const CHROMIUM = process.env.GPUINV_CHROMIUM || '/usr/bin/chromium';

/** Launches headless Chromium. */
export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

let artifacts = null;

/** The screenshot directory: $GPUINV_ARTIFACTS, or a new temporary one. */
export function artifactsDir() {
  if (!artifacts) {
    if (process.env.GPUINV_ARTIFACTS) {
      artifacts = process.env.GPUINV_ARTIFACTS;
      mkdirSync(artifacts, { recursive: true });
    } else {
      artifacts = mkdtempSync(path.join(os.tmpdir(), 'gpuinv-shots-'));
    }
  }
  return artifacts;
}

/** Saves a screenshot of the page's viewport as <name>.png; returns its path. */
export async function shot(page, name) {
  const file = path.join(artifactsDir(), `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/**
 * Opens a 1280x800 page that fails the test on any script error or
 * CSP violation: errors collects them for the caller to assert on.
 */
export async function newPage(browser) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  const page = await context.newPage();
  page.setDefaultTimeout(15000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // Error replies the flows expect (401 before signing in, 409, 400) are
    // logged as failed loads; anything else, CSP refusals included, counts.
    if (m.type() === 'error' && !/^Failed to load resource: the server responded/.test(m.text())) {
      errors.push(`console: ${m.text()}`);
    }
  });
  return { context, page, errors };
}

/** Fills the sign-in form and waits for the data-center list. */
export async function signIn(page, password, user = 'admin') {
  await page.locator('input[name=username]').fill(user);
  await page.locator('input[name=password]').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.locator('[data-testid=user-name]').waitFor({ state: 'attached' });
}

/** Waits until the page's data table has finished loading. */
export async function tableReady(page) {
  await page.waitForFunction(() => {
    const w = document.querySelector('.table-wrap[aria-busy]');
    return w && w.getAttribute('aria-busy') === 'false';
  });
}

/** The text of each cell of column `col` (0-based) in the main data table. */
export async function columnTexts(page, col) {
  return page.$$eval('.table-wrap[aria-busy] tbody tr[data-id]',
    (rows, c) => rows.map((r) => r.children[c].textContent.trim()), col);
}

/** The number of data rows in the main data table. */
export async function rowCount(page) {
  return page.locator('.table-wrap[aria-busy] tbody tr[data-id]').count();
}

/** An API call a test sets up with: asserts a 2xx answer and returns its JSON. */
export async function apiOk(server, method, p, body) {
  const r = await server.api(method, p, { body });
  assert.ok(r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}
