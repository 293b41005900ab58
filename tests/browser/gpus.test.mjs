// Dashboard, discovered GPUs and sources: two hosts push 8 + 2 GPUs; the
// GPU list (columns, search, host filter, CSV export), a GPU's page
// (provenance, processes, events), stale badges for readings older than the freshness limit,
// and a pull source's add (bad URL error), run, edit and delete.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { startServer, BIN } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady, columnTexts, rowCount } from './browser.mjs';

let server;
let browser;
let page;
let errors;

const SOURCE = 'lab-agents';
const uuidA = (i) => `GPU-a1b2c3d4-0000-4000-8000-00000000000${i}`;
const uuidB = (i) => `GPU-b1b2c3d4-0000-4000-8000-00000000000${i}`;

/** One push batch: GPUs of one host with a sample each, and processes. */
function batch(id, host, model, uuids, processes = [], age = 1) {
  const now = Math.floor(Date.now() / 1000);
  return {
    batch_id: id,
    host: { hostname: host },
    gpus: uuids.map((u, i) => ({ uuid: u, index: i, name: model, serial: `${host}-S${i}`,
      pci_bus_id: `0000:${(0x18 + i).toString(16).padStart(2, '0')}:00.0`, memory_total_mib: 81559 })),
    samples: uuids.map((u, i) => ({ time: now - age, gpu: u, util_avg: 10 * i + 5, mem_used_mib: 1024 * (i + 1),
      power_avg_w: 300 + i, temp_c: 50 + i })),
    processes,
  };
}

before(async () => {
  // Freshness is judged by when a reading was taken: an hour is plenty for
  // readings taken now, and a batch of old readings is stale at once.
  server = await startServer({ args: ['--freshness', '3600'] });
  const tok = await server.api('POST', '/api/v1/tokens',
    { body: { name: 'agents', role: 'pusher', source: SOURCE, team: 'ml', env: 'prod', cluster: 'lab' } });
  assert.equal(tok.status, 201, tok.text);
  const a = batch('b-node-a', 'node-a', 'NVIDIA H100 80GB HBM3', [0, 1, 2, 3, 4, 5, 6, 7].map(uuidA),
    [{ gpu: uuidA(0), pid: 4242, name: 'python train.py', user: 'alice', uid: 1000 },
      { gpu: uuidA(0), pid: 4343, name: 'python eval.py', user: 'bob', uid: 1001 }]);
  const b = batch('b-node-b', 'node-b', 'NVIDIA A100-SXM4-40GB', [0, 1].map(uuidB));
  for (const body of [a, b]) {
    const r = await server.api('POST', '/api/v1/ingest', { body, auth: tok.json.token });
    assert.equal(r.status, 201, r.text);
  }
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/gpus');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

const dialog = () => page.locator('dialog[open]');

test('the GPU list shows every pushed GPU with its telemetry', async () => {
  await page.locator('[data-nav=gpus][aria-current=page]').waitFor();
  await tableReady(page);
  assert.equal(await rowCount(page), 10);
  const heads = (await page.locator('.table-wrap thead th').allTextContents()).map((t) => t.replace(/[↕▲▼]/g, '').trim());
  assert.deepEqual(heads, ['Model', 'Host', 'Data center', 'Cluster / team / env', 'Utilization', 'Memory used',
    'Power', 'Temp.', 'Last seen', 'Status']);
  assert.deepEqual(await columnTexts(page, 1), [...Array(8).fill('node-a'), 'node-b', 'node-b']);
  const cells = (await page.locator(`tbody tr[data-id="${uuidA(2)}"] td`).allTextContents()).map((t) => t.trim());
  assert.match(cells[0], /^NVIDIA H100 80GB HBM3/);
  assert.equal(cells[3], 'labml · prod');
  assert.equal(cells[4], '25%');
  assert.equal(cells[5], '3.0 / 79.6 GiB');
  assert.equal(cells[6], '302 W');
  assert.equal(cells[7], '52 °C');
  assert.match(cells[8], /ago|just now/);
  assert.equal(await page.locator('[data-testid=sum-total]').textContent(), '10');
  // (5 + 15 + ... + 75) / 8 on node-a and 5, 15 on node-b.
  assert.equal(await page.locator('[data-testid=sum-util]').textContent(), `${Math.round((320 + 20) / 10)}%`);
  await shot(page, 'gpus-01-list');
});

test('search and the host filter narrow the list', async () => {
  await page.getByRole('searchbox', { name: 'Search GPUs' }).fill('A100');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 2);
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 1), ['node-b', 'node-b']);
  assert.equal(await page.locator('[data-testid=sum-total]').textContent(), '2');
  await shot(page, 'gpus-02-search');
  await page.getByRole('searchbox', { name: 'Search GPUs' }).fill('');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 10);

  await page.getByRole('combobox', { name: 'Host' }).fill('node-a');
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 8);
  await tableReady(page);
  assert.deepEqual(await columnTexts(page, 1), Array(8).fill('node-a'));
  assert.match(page.url(), /#\/gpus\?host=node-a/);
  await shot(page, 'gpus-03-host-filter');
  await page.getByRole('button', { name: 'Clear filters' }).click();
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 10);
});

test('the list sorts on the server by a clicked column', async () => {
  await page.locator('[data-nav=gpus]').click();
  await tableReady(page);
  await page.locator('thead button[data-sort=util_pct]').click();
  await page.waitForFunction(() => /sort=util_pct/.test(location.hash));
  await page.locator('thead button[data-sort=util_pct]').click();
  await page.waitForFunction(() => /sort=-util_pct/.test(location.hash));
  await tableReady(page);
  const utils = (await columnTexts(page, 4)).map((t) => Number(t.replace('%', '')));
  assert.deepEqual(utils, [...utils].sort((a, b) => b - a), 'descending utilization');
  assert.equal(utils[0], 75);
  const api = await server.api('GET', '/api/v1/gpus?sort=-util_pct&limit=1');
  assert.equal(api.json.items[0].util_pct, 75);
  assert.equal((await server.api('GET', '/api/v1/gpus?sort=colour')).status, 400);
  await page.locator('thead button[data-sort=host]').click();
  await page.waitForFunction(() => /sort=host/.test(location.hash));
});

test('CSV export has the header and one row per GPU', async () => {
  await tableReady(page);
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.locator('[data-testid=export-csv]').click(),
  ]);
  const lines = (await readFile(await download.path(), 'utf8')).trim().split(/\r?\n/);
  assert.match(lines[0], /^uuid,parent_uuid,index,vendor,model,serial,/);
  assert.equal(lines.length, 11);
  for (const u of [...[0, 1, 2, 3, 4, 5, 6, 7].map(uuidA), uuidB(0), uuidB(1)]) {
    assert.equal(lines.filter((l) => l.startsWith(`${u},`)).length, 1, u);
  }
});

test('a GPU page shows provenance, processes and the discovered event', async () => {
  await page.locator(`tbody tr[data-id="${uuidA(0)}"] td`).nth(2).click();
  await page.locator('[data-testid=identity]').waitFor();
  assert.match(page.url(), new RegExp(`#/gpus/${uuidA(0)}$`));
  const serial = page.locator('.kv-row[data-field=serial]');
  assert.match(await serial.locator('dd').textContent(), /node-a-S0/);
  assert.match(await serial.locator('.prov').textContent(), new RegExp(`^from ${SOURCE}, (just now|\\d+ s ago)$`));
  assert.match(await serial.locator('.prov').getAttribute('title'), /Set to “node-a-S0” by lab-agents at /);
  const procs = page.locator('[data-testid=processes] tbody tr');
  assert.equal(await procs.count(), 2);
  const p1 = (await page.locator('[data-testid=processes] tr[data-pid="4242"] td').allTextContents()).map((t) => t.trim());
  assert.deepEqual(p1.slice(0, 3), ['4242', 'python train.py', 'alice (1000)']);
  const ev = page.locator('[data-testid=events] li[data-kind=discovered]');
  assert.equal(await ev.count(), 1);
  assert.match(await ev.textContent(), /Discovered.*First reported on host node-a.*via lab-agents/);
  assert.match(await page.locator('[data-testid=tele-util]').textContent(), /^Utilization5%/);
  await shot(page, 'gpus-04-gpu-page');
});

test('readings taken before the freshness limit are marked stale', async () => {
  // A host whose newest readings were taken two hours ago, pushed now.
  const uuidC = (i) => `GPU-c1b2c3d4-0000-4000-8000-00000000000${i}`;
  const tok = await server.api('POST', '/api/v1/tokens',
    { body: { name: 'late-agents', role: 'pusher', source: 'late-agents' } });
  assert.equal(tok.status, 201, tok.text);
  const late = await server.api('POST', '/api/v1/ingest',
    { body: batch('b-node-c', 'node-c', 'NVIDIA L40S', [0, 1].map(uuidC), [], 7200), auth: tok.json.token });
  assert.equal(late.status, 201, late.text);
  assert.equal((await server.api('GET', '/api/v1/gpus?stale=true&limit=1')).json.total, 2);

  await page.locator('[data-nav=gpus]').click();
  await page.locator('[data-testid=sum-stale]').filter({ hasText: '2' }).waitFor();
  await tableReady(page);
  assert.match(await page.locator('.sum-stale .gpu-stat-note').textContent(), /no reading in 1 h/);
  assert.equal(await page.locator('tbody tr[data-id] [data-flag=stale]').count(), 2);
  assert.equal(await page.locator(`tbody tr[data-id="${uuidC(0)}"] [data-flag=stale]`).count(), 1);
  // The average utilization counts the fresh readings only.
  assert.equal(await page.locator('[data-testid=sum-util]').textContent(), `${Math.round((320 + 20) / 10)}%`);
  await page.getByRole('checkbox', { name: 'Stale only' }).check();
  await page.waitForFunction(() => /stale=true/.test(location.hash));
  await tableReady(page);
  assert.equal(await rowCount(page), 2);
  await shot(page, 'gpus-05-stale');
  await page.getByRole('checkbox', { name: 'Stale only' }).uncheck();
  // The state filter: the two late GPUs are stale, the ten others in use.
  await page.getByRole('combobox', { name: 'State' }).selectOption('stale');
  await page.waitForFunction(() => /state=stale/.test(location.hash));
  await tableReady(page);
  assert.equal(await rowCount(page), 2);
  await page.getByRole('combobox', { name: 'State' }).selectOption('in_use');
  await page.waitForFunction(() => /state=in_use/.test(location.hash));
  await page.waitForFunction(() => document.querySelectorAll('tbody tr[data-id]').length === 10);
  await page.getByRole('combobox', { name: 'State' }).selectOption('missing');
  await page.waitForFunction(() => /state=missing/.test(location.hash));
  await page.getByText('No GPUs match these filters.').waitFor();
  await page.getByRole('combobox', { name: 'State' }).selectOption('');
});

test('sources: add with a bad URL, run now, edit, delete', async () => {
  await page.locator('[data-nav=sources]').click();
  await tableReady(page);
  const push = page.locator('tbody tr', { hasText: SOURCE });
  assert.match(await push.textContent(), /Push \(agents\)/);
  // A push source is never run, and its form has no connection settings.
  assert.equal(await push.getByRole('button', { name: /^Run/ }).count(), 0);
  await push.getByRole('button', { name: `Edit ${SOURCE}` }).click();
  await dialog().waitFor();
  assert.equal(await dialog().locator('input[name="config.url"]').count(), 0);
  assert.equal(await dialog().locator('input[name=interval_s]').count(), 0);
  assert.equal(await dialog().locator('input[name=team]').inputValue(), 'ml');
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  await dialog().waitFor({ state: 'detached' });

  await page.getByRole('button', { name: 'Add pull source' }).click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('dcgm-lab');
  assert.equal(await dialog().locator('select[name=kind]').inputValue(), 'dcgm-exporter');
  await dialog().locator('input[name="config.url"]').fill('ftp://gpu-node/metrics');
  await dialog().locator('input[name="config.bearer_token"]').fill('s3cret-token');
  await dialog().locator('input[name=interval_s]').fill('60');
  await dialog().locator('input[name=cluster]').fill('lab');
  await dialog().getByRole('button', { name: 'Add source' }).click();
  const urlErr = dialog().locator('.field[data-field="config.url"] .field-error');
  await urlErr.waitFor({ state: 'visible' });
  assert.match(await urlErr.textContent(), /^URL must be an http\(s\) URL/);
  assert.equal(await dialog().locator('input[name="config.url"]').getAttribute('aria-invalid'), 'true');
  await shot(page, 'gpus-06-source-bad-url');

  await dialog().locator('input[name="config.url"]').fill('http://127.0.0.1:9/metrics');
  await dialog().getByRole('button', { name: 'Add source' }).click();
  await dialog().waitFor({ state: 'detached' });
  const row = page.locator('tbody tr', { hasText: 'dcgm-lab' });
  await row.waitFor();
  const list = await server.api('GET', '/api/v1/sources');
  const made = list.json.items.find((s) => s.name === 'dcgm-lab');
  assert.deepEqual([made.kind, made.interval_s, made.cluster, made.config.url, made.config.bearer_token],
    ['dcgm-exporter', 60, 'lab', 'http://127.0.0.1:9/metrics', '(set)']);

  await row.getByRole('button', { name: 'Run dcgm-lab now' }).click();
  const result = page.locator('[data-testid=run-result]');
  await result.waitFor({ state: 'visible' });
  const after = (await server.api('GET', `/api/v1/sources/${made.id}`)).json;
  assert.ok(after.last_error, 'the failed run is recorded');
  assert.match(await result.textContent(), /dcgm-lab: the run failed\./);
  assert.equal(await page.locator('[data-testid=run-error]').textContent(), after.last_error);
  await row.locator('[data-flag=error]').waitFor();
  assert.match(await row.textContent(), new RegExp(after.last_error.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
  await shot(page, 'gpus-07-source-run-failed');

  await row.getByRole('button', { name: 'Edit dcgm-lab' }).click();
  await dialog().waitFor();
  assert.equal(await dialog().locator('input[name="config.bearer_token"]').inputValue(), '');
  assert.match(await dialog().textContent(), /A token is stored\. Leave blank to keep it\./);
  await dialog().locator('input[name=interval_s]').fill('120');
  await shot(page, 'gpus-08-source-edit');
  await dialog().getByRole('button', { name: 'Save changes' }).click();
  await dialog().waitFor({ state: 'detached' });
  await page.locator('tbody tr', { hasText: 'every 2 min' }).waitFor();
  const edited = (await server.api('GET', `/api/v1/sources/${made.id}`)).json;
  assert.equal(edited.interval_s, 120);
  assert.equal(edited.config.bearer_token, '(set)', 'a blank token field keeps the stored token');

  await row.getByRole('button', { name: 'Delete dcgm-lab' }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), /Delete the source dcgm-lab\?/);
  await shot(page, 'gpus-09-source-delete');
  await dialog().getByRole('button', { name: 'Delete', exact: true }).click();
  await dialog().waitFor({ state: 'detached' });
  await row.waitFor({ state: 'detached' });
  assert.equal((await server.api('GET', `/api/v1/sources/${made.id}`)).status, 404);
  assert.deepEqual(errors, []);
});

test('an editor may run pull sources but not change them', async () => {
  const made = await server.api('POST', '/api/v1/sources',
    { body: { name: 'prom-lab', kind: 'prometheus', config: { url: 'http://127.0.0.1:9/' } } });
  assert.equal(made.status, 201, made.text);
  execFileSync(BIN, ['user', 'set', '--db', server.db, '--name', 'ed', '--role', 'editor'],
    { env: { ...process.env, GPUINV_PASSWORD: 'editor-pass-1' }, stdio: ['ignore', 'ignore', 'pipe'] });
  await page.locator('[data-testid=sign-out]').click();
  await page.locator('input[name=password]').waitFor();
  // Sign in on the page shown, then navigate: going to another address
  // first redraws the sign-in form under the typing.
  await signIn(page, 'editor-pass-1', 'ed');
  await page.goto(server.url + '/#/sources');
  await page.locator('[data-nav=sources][aria-current=page]').waitFor();
  await tableReady(page);
  const row = page.locator('tbody tr', { hasText: 'prom-lab' });
  await row.getByRole('button', { name: 'Run prom-lab now' }).waitFor();
  assert.equal(await page.getByRole('button', { name: /^(Edit|Delete) / }).count(), 0);
  assert.equal(await page.locator('[data-testid=add-source]').count(), 0);
  await row.getByRole('button', { name: 'Run prom-lab now' }).click();
  await page.locator('[data-testid=run-error]').waitFor();
  await shot(page, 'gpus-10-editor-sources');
  assert.deepEqual(errors, []);
});
