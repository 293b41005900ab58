// The monthly showback report against a hand-computed fixture: hourly
// rollups of three GPUs in November 2026 (a price change on the 15th, a
// half MIG slice, a GPU no entry prices, an hour outside the month), the
// TCO method from a catalog purchase price and from an inventory server's
// purchase cost and date, billed cost spread to the owner of each hour,
// team-tag and unmatched billing lines, re-pricing after a change, and the
// CSV form.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkDc, mkRes, uniq, dbQuery } from './helpers.mjs';
import { daySumsSql } from './day_sums.mjs';

const h = useServer();
const T = (iso) => Date.parse(iso) / 1000;
const now = () => Math.floor(Date.now() / 1000);

/** Pushes a host with one GPU; returns {gpu: id, host: id}. */
async function gpuOn(hostname, model, uuid) {
  const tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: uniq('sb'), role: 'pusher', source: uniq('sb-src') } }), 201).token;
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: tok, body: {
    batch_id: uniq('b'), host: { hostname },
    gpus: [{ uuid, index: 0, name: model, serial: uuid.slice(-6), pci_bus_id: '0000:17:00.0' }],
    samples: [{ time: now() - 60, gpu: uuid, util_avg: 10 }] } });
  assert.equal(r.status, 201, r.text);
  const [gpu, host] = (await dbQuery(h.s.db,
    `SELECT g.id, g.host_id FROM gpus g WHERE g.uuid = '${uuid}'`)).trim().split('|').map(Number);
  return { gpu, host };
}

/** One hourly rollup row, seconds as given (the rest of the columns zero). */
function hourRow(gpu, iso, team, model, s, { fraction = 1, wh = 0, host = 'null' } = {}) {
  const t = team === null ? 'NULL' : `'${team}'`;
  const busy = s.busy || 0, ai = s.ai || 0, idle = s.idle || 0, unk = s.unk || 0;
  return `INSERT INTO usage_hourly (gpu_id, hour, team, model, host_id, owned_s, allocated_s, busy_s, ` +
    `alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, updated_at) VALUES ` +
    `(${gpu}, ${T(iso)}, ${t}, '${model}', ${host}, ${busy + ai + idle + unk}, ${busy + ai}, ${busy}, ${ai}, ` +
    `${idle}, ${unk}, ${busy + ai + idle}, 0, 0, ${wh}, ${fraction}, ${now()})`;
}

const importCsv = (csv) => h.s.api('POST', '/api/v1/billing/import', { body: csv, contentType: 'text/csv' });
const showback = async (q = 'month=2026-11') => ok(await h.s.api('GET', '/api/v1/reports/showback?' + q));
const row = (rep, team) => rep.items.find((r) => r.team === team);

test('showback per team: GPU-hours, catalog cost split, TCO, billed cost, totals', async () => {
  const model = uniq('Zeta');
  const priceOld = ok(await h.s.api('POST', '/api/v1/prices',
    { body: { model, hourly: '2.00', effective_from: '2026-01-01T00:00:00Z' } }), 201);
  const priceNew = ok(await h.s.api('POST', '/api/v1/prices',
    { body: { model, hourly: '3.00', effective_from: '2026-11-15T00:00:00Z' } }), 201);
  // TCO default: 35064 over 4 years of 8766 h = 1.00 per GPU-hour.
  ok(await h.s.api('POST', '/api/v1/prices',
    { body: { kind: 'purchase', model, amount: '35064', effective_from: '2026-01-01T00:00:00Z' } }), 201);

  const a = await gpuOn('i-0feedfeedfeedfee1.ec2.internal', `ACME ${model}`, 'GPU-5b000000-0000-4000-8000-00000000000a');
  const b = await gpuOn('sb-beta-01', `ACME ${model}`, 'GPU-5b000000-0000-4000-8000-00000000000b');
  const c = await gpuOn('sb-none-01', 'Unpriced Q9', 'GPU-5b000000-0000-4000-8000-00000000000c');
  // B's host is an inventory server bought on 2026-11-16 for 140256 with 2
  // GPUs: 70128 per GPU, 2.00 per GPU-hour, from the 16th on.
  const dc = await mkDc(h.s);
  const srv = await mkRes(h.s, dc.id, { gpu_count: 2, gpu_model: model,
    metadata: { purchase_cost: '140256', purchase_date: '2026-11-16' } });
  ok(await h.s.api('PUT', `/api/v1/hosts/${b.host}/link`, { body: { resource_id: srv.id } }));

  const m = `ACME ${model}`;
  await dbQuery(h.s.db, [
    // alpha, before the change at 2.00: 0.5 h busy, 0.25 h allocated-idle, 1/6 h idle, 1/12 h unknown.
    hourRow(a.gpu, '2026-11-14T22:00:00Z', 'alpha', m, { busy: 1800, ai: 900, idle: 600, unk: 300 }, { wh: 500, host: a.host }),
    // alpha, after the change at 3.00: 1 h busy.
    hourRow(a.gpu, '2026-11-15T00:00:00Z', 'alpha', m, { busy: 3600 }, { wh: 700, host: a.host }),
    // alpha, outside the month.
    hourRow(a.gpu, '2026-10-31T23:00:00Z', 'alpha', m, { busy: 3600 }, { wh: 9000, host: a.host }),
    // beta, half a GPU held idle for an hour at 3.00, once before and once after its purchase.
    hourRow(b.gpu, '2026-11-10T00:00:00Z', 'beta', m, { ai: 3600 }, { fraction: 0.5, host: b.host }),
    hourRow(b.gpu, '2026-11-20T00:00:00Z', 'beta', m, { ai: 3600 }, { fraction: 0.5, host: b.host }),
    // no team, a model no entry prices.
    hourRow(c.gpu, '2026-11-10T00:00:00Z', null, 'Unpriced Q9', { idle: 3600 }, { host: c.host }),
  ].join('; '));
  // Their days, as the rollup job sums them.
  await dbQuery(h.s.db, daySumsSql());

  // Billing: 10.00 on A's instance at 22:00 on the 14th (the owner of that
  // GPU-hour is alpha), 4.00 tagged gamma, 7.00 matching nothing, and a line
  // of October.
  const rep = ok(await importCsv(
    'lineItem/UsageStartDate,lineItem/ResourceId,lineItem/UnblendedCost,lineItem/CurrencyCode,product/instanceType,resourceTags/user:team\n' +
    '2026-11-14T22:00:00Z,i-0feedfeedfeedfee1,10.00,USD,p5.48xlarge,\n' +
    '2026-11-15T00:00:00Z,,4.00,USD,g6.xlarge,gamma\n' +
    '2026-11-16T00:00:00Z,i-0nothingnothing00,7.00,USD,p4d.24xlarge,\n' +
    '2026-10-20T00:00:00Z,i-0feedfeedfeedfee1,99.00,USD,p5.48xlarge,\n'));
  assert.equal(rep.matched_instance, 2);
  assert.equal(rep.matched_tag, 1);
  assert.equal(rep.unmatched, 1);

  const sb = await showback();
  assert.equal(sb.month, '2026-11');
  assert.equal(sb.from, '2026-11-01T00:00:00Z');
  assert.equal(sb.to, '2026-12-01T00:00:00Z');
  assert.equal(sb.currency, 'USD');
  assert.deepEqual(sb.items.map((r) => r.team), ['alpha', 'beta', 'gamma', null]);

  const al = row(sb, 'alpha');
  assert.deepEqual(al.gpu_hours, { owned: 2, busy: 1.5, allocated_idle: 0.25, idle: 0.167, unknown: 0.083 });
  assert.equal(al.energy_kwh, 1.2);
  // 0.5 × 2 + 1 × 3 busy; 0.25 × 2 waste; 1/6 × 2 idle; 1/12 × 2 unknown.
  assert.deepEqual(al.cost.catalog, { amount: '5.00', busy: '4.00', waste: '0.50', idle: '0.33', unknown: '0.17',
    currency: 'USD', method: 'catalog', unpriced_gpu_hours: 0 });
  // 2 h × 1.00 + 1.2 kWh × 0.12 × 1.4.
  assert.deepEqual(al.cost.tco, { amount: '2.20', capital: '2.00', energy: '0.20', currency: 'USD', method: 'tco',
    unpriced_gpu_hours: 0 });
  assert.deepEqual(al.cost.billed, { amount: '10.00', currency: 'USD', method: 'billing', other_currency_groups: 0 });

  const be = row(sb, 'beta');
  assert.deepEqual(be.gpu_hours, { owned: 1, busy: 0, allocated_idle: 1, idle: 0, unknown: 0 });
  // Half a GPU: 0.5 h × 2.00 on the 10th, 0.5 h × 3.00 on the 20th, all waste.
  assert.equal(be.cost.catalog.waste, '2.50');
  assert.equal(be.cost.catalog.amount, '2.50');
  // Inventory purchase: only the hour after the 16th counts, 0.5 h × 2.00.
  assert.equal(be.cost.tco.capital, '1.00');
  assert.equal(be.cost.billed.amount, '0.00');

  const ga = row(sb, 'gamma');
  assert.equal(ga.gpu_hours.owned, 0);
  assert.equal(ga.cost.billed.amount, '4.00');

  const none = row(sb, null);
  assert.equal(none.gpu_hours.idle, 1);
  assert.equal(none.cost.catalog.amount, '0.00');
  assert.equal(none.cost.catalog.unpriced_gpu_hours, 1);
  assert.equal(none.cost.tco.unpriced_gpu_hours, 1);

  assert.equal(sb.total.gpu_hours.owned, 4);
  assert.equal(sb.total.cost.catalog.amount, '7.50');
  assert.equal(sb.total.cost.billed.amount, '14.00');
  assert.deepEqual(sb.unmatched_billing, { amount: '7.00', currency: 'USD', lines: 1, other_currency_lines: 0 });
  assert.match(sb.methods.catalog, /rate in force at each hour/);

  // A price change re-prices the hours it covers, and only those.
  ok(await h.s.api('PATCH', `/api/v1/prices/${priceNew.id}`, { body: { hourly: '4.00' } }));
  const after = row(await showback(), 'alpha');
  assert.equal(after.cost.catalog.busy, '5.00');
  assert.equal(after.cost.catalog.waste, '0.50');
  ok(await h.s.api('DELETE', `/api/v1/prices/${priceNew.id}`), 204);
  assert.equal(row(await showback(), 'alpha').cost.catalog.busy, '3.00');
  assert.ok(priceOld.id > 0);

  // The same rows as CSV, flat.
  const csv = await h.s.api('GET', '/api/v1/reports/showback?month=2026-11&format=csv');
  assert.equal(csv.status, 200);
  assert.match(csv.headers.get('content-type'), /^text\/csv/);
  const lines = csv.text.trim().split('\r\n');
  const head = lines[0].split(',');
  assert.deepEqual(head.slice(0, 3), ['month', 'team', 'gpu_hours_owned']);
  const alpha = lines.map((l) => l.split(',')).find((f) => f[1] === 'alpha');
  assert.equal(alpha[head.indexOf('catalog_cost')], '4.00');
  assert.equal(alpha[head.indexOf('billed_cost')], '10.00');
  assert.equal(alpha[head.indexOf('currency')], 'USD');
  assert.equal(lines.length, 5);
});

test('showback validates the month; an empty month has no rows', async () => {
  for (const m of ['2026-13', '2026-1', 'nov', '2026/11']) {
    assertError(await h.s.api('GET', `/api/v1/reports/showback?month=${encodeURIComponent(m)}`), 400,
      { field: 'month' });
  }
  const empty = await showback('month=2020-02');
  assert.deepEqual(empty.items, []);
  assert.equal(empty.to, '2020-03-01T00:00:00Z');
  assert.equal(empty.total.cost.catalog.amount, '0.00');
  // The current month by default.
  const d = new Date();
  const cur = `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
  assert.equal((await showback('')).month, cur);
});
