// Dashboard, cloud and Slurm GPUs end to end: an aws source against the
// EC2 stand-in (instances with team tags, owned through a cloud_tag rule),
// a price for the model, and a Slurm source against the stand-in sacct
// whose running job holds a GPU an agent reports; the pulls and the
// rollup run, then in the browser: the GPU list of the aws source shows
// its GPUs with their team; the team's page shows the GPU-hours and cost
// GET /api/v1/usage answers for the same query; a cloud GPU's page shows
// its owner, its instance and provider, the instance as its consumer
// (kind cloud) and its cost; a Slurm node's GPU shows the job as consumer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';
import { startAwsStandin } from '../lib/cloud/aws.mjs';
import { launch, newPage, shot, signIn, tableReady } from './browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const sacct = path.join(here, '..', 'lib', 'sacct');
const tmpBase = process.env.GPUINV_TMP || os.tmpdir();
mkdirSync(tmpBase, { recursive: true });
const dir = mkdtempSync(path.join(tmpBase, 'sacct-ui-'));
const nowS = () => Math.floor(Date.now() / 1000);
const T0 = Math.floor(nowS() / 3600) * 3600 - 3 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const P4D = 'i-0p4d000000000aaaa';
const PH0 = `cloud:aws:${P4D}:0`;
const NODE_GPU = 'GPU-5105b000-0000-4000-8000-000000000000';
const JOB_START = nowS() - 40 * 60;

let server;
let aws;
let browser;
let page;
let errors;
let awsSrc;
const requests = [];

async function api(method, p, opts) {
  const r = await server.api(method, p, opts);
  assert.ok(r.status >= 200 && r.status < 300, `${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}

/** The last request the page sent to pathname (optionally matching pred). */
function lastRequest(pathname, pred = () => true) {
  const u = requests.filter((x) => decodeURIComponent(x.pathname) === pathname && pred(x)).at(-1);
  assert.ok(u, `the page asked ${pathname}`);
  return u;
}

before(async () => {
  aws = await startAwsStandin({
    pages: { 'us-east-1': ['describe-instances-1.xml', 'describe-instances-2.xml'] },
    vars: { LAUNCH_P4D: iso(T0), LAUNCH_G5: iso(T0) },
  });
  server = await startServer({ env: { PATH: `${sacct}:${process.env.PATH}`, SACCT_STANDIN_DIR: dir } });

  await api('POST', '/api/v1/teams', { body: { name: 'llm-train' } });
  await api('POST', '/api/v1/teams', { body: { name: 'hpc-ml' } });
  await api('POST', '/api/v1/ownership-rules', { body: { match: { kind: 'cloud_tag', key: 'team', value: 'llm-train' }, set: { team: 'llm-train' }, effective_from: iso(T0 - 86400) } });
  await api('POST', '/api/v1/ownership-rules', { body: { match: { kind: 'slurm_account', value: 'ml-train' }, set: { team: 'hpc-ml' }, effective_from: iso(T0 - 86400) } });
  await api('POST', '/api/v1/prices', { body: { model: 'NVIDIA A100', hourly: '4.00', effective_from: iso(T0 - 86400) } });
  await api('POST', '/api/v1/usage/rollup');

  awsSrc = await api('POST', '/api/v1/sources', { body: { name: 'aws-ui', kind: 'aws', enabled: false,
    config: { regions: ['us-east-1'], access_key_id: 'AKID', secret_access_key: 'x'.repeat(40), endpoint: aws.url } } });
  const run = await api('POST', `/api/v1/sources/${awsSrc.id}/run`);
  assert.equal(run.run.ok, true, JSON.stringify(run.run));

  // A Slurm node an agent reports, and a job running on one of its GPUs.
  const tok = (await api('POST', '/api/v1/tokens', { body: { name: 'agents-ui', role: 'pusher', source: 'agents-ui' } })).token;
  const gpus = [0, 1].map((i) => ({ uuid: NODE_GPU.slice(0, -1) + i, index: i, name: 'NVIDIA A100' }));
  const samples = [];
  for (let t = nowS() - 3600; t <= nowS() - 30; t += 60) for (const g of gpus) samples.push({ time: t, gpu: g.uuid, util_avg: g.index === 0 ? 70 : 0 });
  const r = await server.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: 'ui-1', host: { hostname: 'gpu01' }, gpus, samples } });
  assert.equal(r.status, 201, r.text);
  const US = '\x1f';
  writeFileSync(path.join(dir, 'reply'), [8101, 8101, 'hpc1', 'alice', 'ml-train', 'gpu', 'normal', 'gpu01', JOB_START - 5, JOB_START,
    'Unknown', 0, 'RUNNING', 'cpu=4,gres/gpu=1,node=1', '', '', 'train'].join(US) + '\n');
  const slurm = await api('POST', '/api/v1/sources', { body: { name: 'hpc1-ui', kind: 'slurm', enabled: false, config: { cluster: 'hpc1' } } });
  const sr = await api('POST', `/api/v1/sources/${slurm.id}/run`);
  assert.equal(sr.run.ok, true, JSON.stringify(sr.run));
  // Until the groups are summed too (a scheduled run may be half done).
  let roll;
  for (let i = 0; i < 20; i++) {
    roll = await api('POST', '/api/v1/usage/rollup');
    if (roll.dirty_left === 0 && roll.groups_left === 0) break;
    await new Promise((done) => setTimeout(done, 200));
  }
  assert.equal(roll.dirty_left, 0);

  browser = await launch();
  ({ page, errors } = await newPage(browser));
  page.on('request', (q) => { const u = new URL(q.url()); if (u.pathname.startsWith('/api/')) requests.push(u); });
  await page.goto(`${server.url}/#/gpus?source=${awsSrc.id}`);
  await signIn(page, server.password);
});

after(async () => {
  try {
    if (browser) await browser.close();
    if (server) {
      const { code } = await server.stop();
      assert.equal(code, 0, server.stderr);
    }
  } finally {
    if (aws) await aws.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the GPU list of the aws source shows its GPUs with their team', async () => {
  await tableReady(page);
  const want = await api('GET', `/api/v1/gpus?source=${awsSrc.id}&limit=50`);
  assert.ok(want.items.length >= 8, 'the instances\' placeholders');
  await page.waitForFunction((n) => document.querySelectorAll('.table-wrap tbody tr[data-id]').length === n, want.items.length);
  for (const g of want.items) {
    const row = page.locator(`tbody tr[data-id="${g.uuid}"]`);
    const team = g.owner.team.value;
    if (team) assert.match(await row.textContent(), new RegExp(`${team} · `), g.uuid);
  }
  assert.match(await page.locator(`tbody tr[data-id="${PH0}"]`).textContent(), /llm-train · /);
  await shot(page, 'cloud-01-gpu-list');
});

test('the team page shows the GPU-hours and cost of GET /api/v1/usage', async () => {
  await page.goto(`${server.url}/#/team/llm-train?range=24h`);
  await page.waitForFunction(() => {
    const c = document.querySelector('[data-testid=kpi-cost]');
    return c && c.textContent !== '…';
  });
  const sent = lastRequest('/api/v1/usage', (u) => u.searchParams.get('group_by') === 'team' && u.searchParams.get('team') === 'llm-train');
  const r = await api('GET', `/api/v1/usage${sent.search}`);
  const total = r.total;
  assert.ok(total.gpu_hours.owned >= 8 * 3, `the 8 GPUs' 3 hours at least: ${total.gpu_hours.owned}`);
  assert.ok(total.cost && Number(total.cost.amount) > 0, 'priced');
  assert.equal(await page.locator('[data-testid=kpi-cost]').getAttribute('data-amount'), total.cost.amount);
  const note = await page.locator('[data-testid=kpi-cost-note]').textContent();
  const shown = Number(note.match(/([\d,.]+) GPU-hours owned/)[1].replace(/,/g, ''));
  assert.equal(shown, Math.round(total.gpu_hours.owned), note);
  await shot(page, 'cloud-02-team');
});

test("a cloud GPU's page shows its owner, its instance, the instance as consumer, and its cost", async () => {
  await page.goto(`${server.url}/#/gpus/${encodeURIComponent(PH0)}`);
  const owner = page.locator('[data-testid=owner] [data-owner=team]');
  await owner.waitFor();
  assert.match(await owner.textContent(), /llm-train/);
  const cloud = page.locator('[data-testid=cloud]');
  assert.match(await cloud.locator('[data-cloud=provider]').textContent(), /AWS EC2/);
  assert.match(await cloud.locator('[data-cloud=instance_id]').textContent(), new RegExp(`${P4D} · llm-train-01`));
  assert.match(await cloud.locator('[data-cloud=machine_type]').textContent(), /p4d\.24xlarge/);
  assert.match(await cloud.locator('[data-cloud=state]').textContent(), /running/);
  assert.match(await cloud.locator('[data-cloud=placeholder]').textContent(), /Placeholder for GPU 0/);

  const row = page.locator(`[data-testid=timeline] tr[data-consumer="aws/${P4D}"]`);
  await row.waitFor({ state: 'attached' });
  assert.equal((await row.locator('td').nth(1).textContent()).trim(), 'cloud');
  assert.equal((await row.locator('td').nth(4).textContent()).trim(), 'still holding');
  const tl = lastRequest(`/api/v1/gpus/${PH0}/timeline`);
  const data = await api('GET', `${tl.pathname}${tl.search}`);
  assert.ok(data.cost && Number(data.cost.amount) > 0, 'the timeline prices the GPU');
  assert.equal(await page.locator('[data-testid=timeline-cost]').getAttribute('data-amount'), String(data.cost.amount));
  await shot(page, 'cloud-03-gpu');
});

test("a Slurm node's GPU shows the job as its consumer", async () => {
  await page.goto(`${server.url}/#/gpus/${NODE_GPU}`);
  const row = page.locator('[data-testid=timeline] tr[data-consumer="hpc1/8101"]');
  await row.waitFor({ state: 'attached' });
  assert.equal((await row.locator('td').nth(1).textContent()).trim(), 'slurm');
  assert.equal((await row.locator('td').nth(2).textContent()).trim(), 'hpc-ml', "the account's team");
  assert.equal(await page.locator('[data-testid=cloud]').count(), 0, 'not a cloud GPU');
  await shot(page, 'cloud-04-slurm-gpu');
  assert.deepEqual(errors, []);
});
