// The demo's hardware assets (scripts/demo-assets.mjs) against a real
// server: a server asset per simulated host and a GPU asset per GPU
// (linked to the discovered GPU by UUID), warranties of which some end
// within 30 days, two spares in each data center, and the GPU whose XID
// errors rise over the last five days of its history: once the health
// rollup has read them, the enabled example rule moves it to Diagnostic &
// Repair (lifecycle:rules every second here, the health rollup every
// scheduler tick instead of each minute).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ok, mkDc, listAll, stopClean, rollupAll } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';
import { hostPlan } from '../../scripts/demo-fleet.mjs';
import { adminApi, loadHistory } from '../../scripts/demo-history.mjs';
import { assetRecords, gpuTag, serverTag, setupAssets, xidAt, XID_RULE } from '../../scripts/demo-assets.mjs';

const h = { s: null };
const DAYS = 6;
const now = Math.floor(Date.now() / 1000);
const END = now - (now % 3600);
const DC = ['Frankfurt DC1', 'Ashburn DC2'];
const server = (id, name, datacenter) => ({ id, name, datacenter, gpu_model: 'NVIDIA H100 80GB HBM3' });
const plans = [
  hostPlan(server(0xb01, 'demo-a-1', DC[0]), 301, { role: 'serving', team: 'inference', env: 'prod', count: 2, days: DAYS }, END),
  hostPlan(server(0xb02, 'demo-b-1', DC[1]), 302, { role: 'office', team: 'vision', env: 'prod', count: 2, days: DAYS }, END),
];
let line;

before(async () => {
  h.s = await startServer({ args: ['--rules-interval-s', '1', '--health-settle-s', '2', '--health-interval-s', '2'] });
  for (const name of DC) await mkDc(h.s, { name });
  const tokens = new Map();
  for (const p of plans) {
    const t = ok(await h.s.api('POST', '/api/v1/tokens',
      { body: { name: `demo-${p.source}`, role: 'pusher', source: p.source, team: p.team, env: p.env } }), 201);
    tokens.set(p.source, t.token);
  }
  line = await setupAssets(adminApi(h.s.url, h.s.token), plans, END);
  await loadHistory({ url: h.s.url, plans, tokens, end: END, days: DAYS, concurrency: 4,
    xid: (plan, g, ts) => xidAt(plans, plan, g, ts, END) });
  // The history rolled up now, as the demo does after loading it, rather
  // than at the job's next minute; the health rollup reads a day's usage
  // row 2 s after it was last written (--health-settle-s) at its next
  // minute.
  for (let i = 0; i < 50; i++) {
    if ((await rollupAll(h.s)).dirty_left === 0) break;
  }
});
after(async () => { if (h.s) await stopClean(h.s); });

test('servers, GPUs and spares are assets, with warranties, some ending within 30 days', async () => {
  assert.match(line, /^assets: \d+ created, 0 there already; rule ".*" enabled/);
  const { items: all } = await listAll(h.s, '/api/v1/assets?limit=100');
  const byTag = Object.fromEntries(all.map((a) => [a.tag, a]));
  const records = assetRecords(plans, END);
  assert.equal(all.length, records.length);
  assert.equal(all.length, plans.length * 3 + DC.length * 2);
  for (const p of plans) {
    const srv = byTag[serverTag(p)];
    assert.equal(srv.kind, 'server');
    assert.equal(srv.location.datacenter, p.datacenter);
    for (const g of p.gpus) {
      const a = byTag[gpuTag(p, g.index)];
      assert.equal(a.gpu_uuid, g.uuid);
      assert.equal(a.serial, g.serial);
      assert.equal(a.parent, srv.tag);
      assert.match(a.purchase_date, /^\d{4}-\d{2}-\d{2}$/);
      assert.equal(a.purchase_cost.currency, 'USD');
      assert.ok(Number(a.purchase_cost.amount) >= 25000);
    }
  }
  for (const dc of DC) {
    const spares = all.filter((a) => a.stage === 'spare' && a.location.datacenter === dc);
    assert.equal(spares.length, 2, dc);
  }
  const soon = records.filter((r) => (Date.parse(r.warranty_end) / 1000 - END) / 86400 <= 30);
  assert.ok(soon.length > 0, 'some warranties end within 30 days');
  for (const r of soon) assert.equal(byTag[r.tag].warranty.status, 'expiring', r.tag);
  // The lifecycle board and the warranty calendar read the same assets.
  const stages = ok(await h.s.api('GET', '/api/v1/asset-stages'));
  assert.ok(JSON.stringify(stages).includes('spare'));
  const expiring = ok(await h.s.api('GET', `/api/v1/assets?warranty_before=${new Date((END + 31 * 86400) * 1000).toISOString().slice(0, 10)}&limit=100`));
  assert.ok(expiring.items.length >= soon.length);
  // A second run creates nothing.
  assert.match(await setupAssets(adminApi(h.s.url, h.s.token), plans, END), /^assets: 0 created, \d+ there already/);
});

test('the GPU with rising XID errors moves to Diagnostic & Repair when the rules job runs', async () => {
  const rules = ok(await h.s.api('GET', '/api/v1/lifecycle-rules')).items;
  assert.equal(rules.find((r) => r.name === XID_RULE).enabled, true);
  const tag = gpuTag(plans[0], 0);
  let a;
  for (let i = 0; i < 180; i++) {
    a = ok(await h.s.api('GET', `/api/v1/assets/${tag}`));
    if (a.stage === 'diagnostic_repair') break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  assert.equal(a.stage, 'diagnostic_repair');
  const ev = ok(await h.s.api('GET', `/api/v1/assets/${tag}/events`)).items.find((e) => e.kind === 'stage');
  assert.equal(ev.detail.to, 'diagnostic_repair');
  // Its neighbour, without XID errors, stays active.
  assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${gpuTag(plans[0], 1)}`)).stage, 'active');
});
