// Dashboard, API tokens: an admin creates a pusher token, sees it once with
// an agent command that reads it from a file, the token works for ingest,
// the page never shows it again, and revoking it makes the server refuse
// it. Editors and viewers have no token page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startServer, BIN } from '../lib/server.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

let server;
let browser;
let page;
let errors;

before(async () => {
  server = await startServer();
  browser = await launch();
  ({ page, errors } = await newPage(browser));
  await page.goto(`${server.url}/#/tokens`);
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

/** Pushes a one-GPU batch with a token; resolves to the HTTP status. */
async function push(token, id) {
  const r = await server.api('POST', '/api/v1/ingest', { auth: token, body: {
    batch_id: id, host: { hostname: 'tok-node' },
    gpus: [{ uuid: 'GPU-70707070-0000-4000-8000-000000000001', index: 0, name: 'NVIDIA L4' }],
  } });
  return r.status;
}

test('the form shows every missing field at once before sending', async () => {
  await page.locator('[data-nav=tokens][aria-current=page]').waitFor();
  await tableReady(page);
  await page.locator('[data-testid=create-token]').click();
  await dialog().waitFor();
  await dialog().getByRole('button', { name: 'Create token' }).click();
  await dialog().locator('.field[data-field=name] .field-error').waitFor({ state: 'visible' });
  assert.match(await dialog().locator('.field[data-field=source] .field-error').textContent(), /source name/);
  assert.equal((await server.api('GET', '/api/v1/tokens')).json.total, 1, 'nothing was created');
  await dialog().getByRole('button', { name: 'Cancel' }).click();
  await dialog().waitFor({ state: 'detached' });
});

test('an admin creates a pusher token and sees it once, with an agent command that keeps it off the command line', async () => {
  await page.locator('[data-testid=create-token]').click();
  await dialog().waitFor();
  await dialog().locator('input[name=name]').fill('fra1 agents');
  assert.equal(await dialog().locator('select[name=role]').inputValue(), 'pusher');
  await dialog().locator('input[name=source]').fill('fra1-agents');
  await dialog().locator('input[name=team]').fill('speech');
  await dialog().locator('input[name=env]').fill('prod');
  await dialog().getByRole('button', { name: 'Create token' }).click();
  const box = dialog().locator('[data-testid=new-token]');
  await box.waitFor();
  const token = await box.inputValue();
  assert.match(token, /^gpi_[A-Za-z0-9_-]{20,}$/);
  const cmd = await dialog().locator('[data-testid=agent-command]').inputValue();
  assert.ok(cmd.includes(`--server ${server.url}`), cmd);
  assert.match(cmd, /gpuinv-agent .*--token-file \S+/);
  assert.ok(!/--token\s/.test(cmd), 'the token is not an argument');
  assert.ok(cmd.includes(`'${token}'`), 'the token goes into the file');
  assert.ok(/umask 077/.test(cmd), 'the file is private');
  await dialog().locator('[data-testid=new-token-copy]').click();
  await shot(page, 'tokens-01-created');

  // It is the real token: the server takes a batch with it, under its source.
  assert.equal(await push(token, 'tok-1'), 201);
  const src = (await server.api('GET', '/api/v1/sources')).json.items.find((s) => s.name === 'fra1-agents');
  assert.ok(src && src.kind === 'push' && src.team === 'speech' && src.env === 'prod', JSON.stringify(src));

  await dialog().getByRole('button', { name: 'Done' }).click();
  await dialog().waitFor({ state: 'detached' });
  const row = page.locator('tbody tr[data-id]', { hasText: 'fra1 agents' });
  await row.waitFor();
  assert.match(await row.textContent(), /pusher/);
  assert.match(await row.textContent(), /Active/);
  // Shown once: nowhere on the page any more.
  assert.ok(!(await page.content()).includes(token));
  globalThis.madeToken = token;
});

test('revoking a token asks first, and then the server refuses it', async () => {
  const token = globalThis.madeToken;
  const row = page.locator('tbody tr[data-id]', { hasText: 'fra1 agents' });
  await row.getByRole('button', { name: 'Revoke fra1 agents' }).click();
  await dialog().waitFor();
  assert.match(await dialog().textContent(), /Revoke fra1 agents/);
  await dialog().getByRole('button', { name: 'Revoke' }).click();
  await dialog().waitFor({ state: 'detached' });
  await row.waitFor({ state: 'detached' });
  assert.equal(await push(token, 'tok-2'), 401);
  await page.locator('input[name=revoked]').check();
  await page.locator('tbody tr[data-id]', { hasText: 'fra1 agents' }).waitFor();
  assert.match(await page.locator('tbody tr[data-id]', { hasText: 'fra1 agents' }).textContent(), /Revoked/);
  await shot(page, 'tokens-02-revoked');
  assert.deepEqual(errors, []);
});

test('an editor has no token page', async () => {
  execFileSync(BIN, ['user', 'set', '--db', server.db, '--name', 'ed', '--role', 'editor'],
    { env: { ...process.env, GPUINV_PASSWORD: 'editor-pass-123' } });
  const { context, page: p2, errors: e2 } = await newPage(browser);
  await p2.goto(`${server.url}/#/tokens`);
  await signIn(p2, 'editor-pass-123', 'ed');
  await p2.getByText('Page not found').waitFor();
  assert.equal(await p2.locator('[data-nav=tokens]').count(), 0);
  assert.deepEqual(e2, []);
  await context.close();
});
