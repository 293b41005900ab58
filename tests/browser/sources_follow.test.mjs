// Dashboard, Sources page and GPU badges: a source shows the fields it had
// to drop (count, newest warning and when), its precedence, and how many
// GPUs it owns next to how many its last report listed; a save whose reply
// carries warnings (a stored secret cleared because the URL changed) shows
// them; a GPU without telemetry has its own badge, never drawn as idle.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let token;

const SOURCE = 'warn-agents';
const uuid = (i) => `GPU-5f0a11e0-0000-4000-8000-00000000000${i}`;
const now = () => Math.floor(Date.now() / 1000);
const dialog = () => page.locator('dialog[open]');
const row = (name) => page.locator('tbody tr', { hasText: name });

async function ingest(body) {
  const r = await server.api('POST', '/api/v1/ingest', { auth: token, body });
  assert.equal(r.status, 201, r.text);
  return r.json;
}
const source = async (name) => (await server.api('GET', '/api/v1/sources')).json.items.find((s) => s.name === name);

before(async () => {
  server = await startServer({ args: ['--freshness', '3600'] });
  const tok = await server.api('POST', '/api/v1/tokens', { body: { name: 'warn', role: 'pusher', source: SOURCE } });
  assert.equal(tok.status, 201, tok.text);
  token = tok.json.token;
  // Three GPUs: one read busy, one read idle, one with no telemetry; the
  // third's memory size cannot be read and is dropped with a warning.
  const reply = await ingest({ batch_id: 'w-1', host: { hostname: 'warn-node' },
    gpus: [0, 1, 2].map((i) => ({ uuid: uuid(i), index: i, name: 'NVIDIA L4', memory_total_mib: i === 2 ? 'lots' : 23034 })),
    samples: [{ time: now() - 5, gpu: uuid(0), util_avg: 80 }, { time: now() - 5, gpu: uuid(1), util_avg: 1 }] });
  assert.ok(reply.warnings.length > 0, JSON.stringify(reply));
  // Another host reports two GPUs, then only one: the source still owns
  // five GPU records, one of them missing.
  await ingest({ batch_id: 'w-2', host: { hostname: 'warn-node-2' },
    gpus: [3, 4].map((i) => ({ uuid: uuid(i), index: i - 3, name: 'NVIDIA L4' })) });
  await ingest({ batch_id: 'w-3', host: { hostname: 'warn-node-2' },
    gpus: [{ uuid: uuid(3), index: 0, name: 'NVIDIA L4' }] });
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/sources`);
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('a source shows the fields it dropped, its precedence and the GPUs it owns', async () => {
  const src = await source(SOURCE);
  assert.ok(src.warnings_total > 0 && src.last_warning && src.last_warning_at, JSON.stringify(src));
  const p = await server.api('PATCH', `/api/v1/sources/${src.id}`, { body: { precedence: 7 } });
  assert.equal(p.status, 200, p.text);
  await page.locator('[data-nav=sources][aria-current=page]').waitFor();
  await page.getByRole('button', { name: 'Refresh' }).click();
  await tableReady(page);
  const r = row(SOURCE);
  await r.locator('[data-testid=source-precedence]', { hasText: '7' }).waitFor();

  const warn = r.locator('[data-testid=source-warnings]');
  assert.match(await warn.textContent(), new RegExp(`${src.warnings_total} warnings?`));
  assert.ok((await warn.textContent()).includes(src.last_warning), await warn.textContent());
  assert.equal(await warn.locator('time').getAttribute('datetime'), src.last_warning_at);
  assert.ok((await warn.getAttribute('title')).includes(src.last_warning));

  const fresh = await source(SOURCE);
  assert.equal(fresh.gpus_reported, 5, 'it owns five GPU records');
  assert.ok(fresh.gpus_last_report < 5, JSON.stringify(fresh));
  const gpus = r.locator('[data-testid=source-gpus]');
  assert.equal((await gpus.textContent()).trim(), '5');
  const tip = await gpus.getAttribute('title');
  assert.match(tip, /GPUs this source owns/);
  assert.match(tip, new RegExp(`its last report listed ${fresh.gpus_last_report}\\b`));
  assert.doesNotMatch(tip, /last successful report/);
  await shot(page, 'sources-follow-01-warnings');
  assert.deepEqual(errors, []);
});

test('a source with no warnings shows none', async () => {
  const made = await server.api('POST', '/api/v1/sources', { body: { name: 'quiet-prom', kind: 'prometheus',
    config: { url: 'http://127.0.0.1:9/', bearer_token: 's3cret' }, interval_s: 300, enabled: false } });
  assert.equal(made.status, 201, made.text);
  await page.getByRole('button', { name: 'Refresh' }).click();
  await tableReady(page);
  const w = row('quiet-prom').locator('[data-testid=source-warnings]');
  assert.equal((await w.textContent()).trim(), '—');
  assert.equal((await row('quiet-prom').locator('[data-testid=source-precedence]').textContent()).trim(), '0');
});

test('saving a new URL shows that the stored token was cleared', async () => {
  const r = row('quiet-prom');
  await r.getByRole('button', { name: 'Edit quiet-prom' }).click();
  await dialog().waitFor();
  await dialog().locator('input[name="config.url"]').fill('http://127.0.0.2:9/');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  const list = page.locator('[data-testid=save-warnings]');
  await list.waitFor();
  assert.match(await list.textContent(), /config\.bearer_token was cleared because config\.url changed/);
  assert.match(await page.locator('[data-testid=run-result]').textContent(), /quiet-prom was saved, with a warning/);
  const after = await source('quiet-prom');
  assert.equal(after.config.url, 'http://127.0.0.2:9/');
  assert.ok(!after.config.bearer_token, JSON.stringify(after.config));
  await shot(page, 'sources-follow-02-save-warning');

  // A save without warnings shows no warning.
  await r.getByRole('button', { name: 'Edit quiet-prom' }).click();
  await dialog().waitFor();
  await dialog().locator('input[name=interval_s]').fill('600');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'every 10 min' }).waitFor();
  assert.equal(await page.locator('[data-testid=save-warnings]').count(), 0,
    await page.locator('[data-testid=run-result]').textContent());
  assert.ok(await page.locator('[data-testid=run-result]').isHidden());
  assert.deepEqual(errors, []);
});

test('a GPU with no telemetry has its own badge, not the idle one, in the list and on its page', async () => {
  const api = (await server.api('GET', '/api/v1/gpus?host=warn-node')).json.items;
  const state = Object.fromEntries(api.map((g) => [g.uuid, g.state]));
  assert.deepEqual([state[uuid(0)], state[uuid(1)], state[uuid(2)]], ['in_use', 'idle', 'unknown']);
  await page.goto(`${server.url}/#/gpus?host=warn-node`);
  await tableReady(page);
  const cell = (u) => page.locator(`tbody tr[data-id="${u}"] td[data-col=status]`);
  const bare = cell(uuid(2)).locator('[data-flag=unknown]');
  assert.equal((await bare.textContent()).trim(), 'No telemetry');
  assert.equal(await cell(uuid(2)).locator('[data-flag=info]').count(), 0, 'not badged idle');
  const idle = cell(uuid(1)).locator('[data-flag=info]');
  assert.equal((await idle.textContent()).trim(), 'Idle');
  assert.equal(await cell(uuid(1)).locator('[data-flag=unknown]').count(), 0);
  // Drawn differently from idle, not just worded differently.
  const look = (l) => l.evaluate((el) => { const s = getComputedStyle(el); return [s.backgroundColor, s.borderStyle, s.color].join('|'); });
  assert.notEqual(await look(bare), await look(idle));

  await page.goto(`${server.url}/#/gpus/${uuid(2)}`);
  const title = page.locator('h1.title-flags');
  await title.waitFor();
  assert.equal((await title.locator('[data-flag=unknown]').textContent()).trim(), 'No telemetry');
  assert.equal(await title.locator('[data-flag=info]', { hasText: 'Idle' }).count(), 0);
  await page.goto(`${server.url}/#/gpus/${uuid(1)}`);
  await page.locator('h1.title-flags [data-flag=info]', { hasText: 'Idle' }).waitFor();
  assert.equal(await page.locator('h1.title-flags [data-flag=unknown]').count(), 0);
  assert.deepEqual(errors, []);
});
