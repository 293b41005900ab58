// Dashboard, asset page: the "Sync conflicts" block lists a field NetBox
// changed since the last sync (ours, theirs, what it was), keeping theirs
// resolves it through the API and the block goes away; an asset without
// conflicts shows no block; a lookup by serial that linked nothing shows
// as "not linked" and stopping its lookups resolves it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';
import { dbQuery } from '../api/helpers.mjs';
import { launch, newPage, shot, signIn, apiOk } from './browser.mjs';

let server;
let browser;
let page;
let errors;
let source;

const call = (method, p, body) => apiOk(server, method, p, body);

before(async () => {
  server = await startServer();
  await call('POST', '/api/v1/datacenters', { name: 'Lab DC', location: 'here' });
  await call('POST', '/api/v1/assets', { tag: 'NB-1', kind: 'server', serial: 'SN-NB-1',
    location: { datacenter: 'Lab DC', rack: 'R03', u: 6 } });
  await call('POST', '/api/v1/assets', { tag: 'NB-2', kind: 'server', serial: 'SN-NB-2' });
  source = await call('POST', '/api/v1/sources', { name: 'netbox', kind: 'netbox', enabled: false,
    config: { url: 'http://127.0.0.1:9/', push: true } });
  // The conflict a push found (recorded as the push-back records it).
  await dbQuery(server.db, `INSERT INTO sync_conflicts (asset_id, source_id, field, ours, theirs, base, detected_at)
    VALUES ((SELECT id FROM assets WHERE tag = 'NB-1'), ${source.id}, 'rack', 'R03', 'R99', 'R02', ${Math.floor(Date.now() / 1000)})`);
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(server.url + '/#/assets/NB-1');
  await signIn(page, server.password);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    const { code } = await server.stop();
    assert.equal(code, 0, server.stderr);
  }
});

test('the asset page shows the conflict and keeping theirs resolves it', async () => {
  const block = page.locator('[data-testid=sync-conflicts]');
  await block.locator('li', { hasText: 'NetBox rack' }).waitFor();
  const text = await block.textContent();
  assert.match(text, /gpuinv has R03, NetBox has R99/);
  assert.match(text, /was R02 at the last sync/);
  await shot(page, 'asset-sync-conflicts');
  await block.locator('[data-testid=keep-theirs]').click();
  await block.waitFor({ state: 'hidden' });
  const all = await call('GET', '/api/v1/assets/NB-1/conflicts?state=all');
  assert.equal(all.items.length, 1);
  assert.equal(all.items[0].resolution, 'theirs');
  assert.equal(all.items[0].resolved_by, 'admin');
  assert.deepEqual(errors, []);
});

test('an asset without conflicts shows no block', async () => {
  await page.goto(server.url + '/#/assets/NB-2');
  await page.locator('[data-testid=asset-tag]', { hasText: 'NB-2' }).waitFor();
  await page.locator('[data-testid=sync-conflicts]').waitFor({ state: 'attached' });
  assert.equal(await page.locator('[data-testid=sync-conflicts]').isVisible(), false);
});

test('a lookup by serial that linked nothing shows as "not linked"; stopping the lookups resolves it', async () => {
  await dbQuery(server.db, `INSERT INTO sync_conflicts (asset_id, source_id, field, ours, theirs, base, detected_at)
    VALUES ((SELECT id FROM assets WHERE tag = 'NB-2'), ${source.id}, 'link', 'SN-NB-2', '2 devices have this serial', NULL, ${Math.floor(Date.now() / 1000)})`);
  await page.reload();
  const block = page.locator('[data-testid=sync-conflicts]');
  await block.locator('li', { hasText: 'NetBox: not linked' }).waitFor();
  assert.match(await block.textContent(), /2 devices have this serial \(serial SN-NB-2\); nothing was written/);
  await block.getByRole('button', { name: 'Stop looking it up' }).click();
  await block.waitFor({ state: 'hidden' });
  const all = await call('GET', '/api/v1/assets/NB-2/conflicts?state=all');
  assert.deepEqual(all.items.map((k) => [k.field, k.resolution]), [['link', 'theirs']]);
  assert.deepEqual(errors, []);
});
