// The price catalog: shipped estimates, create/read/change/delete with
// validation naming the field, money as exact decimal strings, the rate
// chosen for a GPU (specificity, model word matching, effective dates),
// the audit trail, roles, and the cost settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkToken, listAll, uniq, stopClean } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';

const h = useServer();

const post = (body) => h.s.api('POST', '/api/v1/prices', { body });
const rate = (q) => h.s.api('GET', '/api/v1/prices/rate?' + new URLSearchParams(q));

test('the catalog ships editable estimates for common models', async () => {
  const { items } = await listAll(h.s, '/api/v1/prices?kind=hourly');
  const models = items.map((p) => p.model);
  for (const m of ['H200', 'H100', 'A100 80GB', 'A100 40GB', 'L40S', 'L4', 'A10G', 'T4', 'V100',
    'MI300X', 'MI250X']) assert.ok(models.includes(m), m);
  for (const p of items) {
    assert.equal(p.estimate, true, p.model);
    assert.equal(p.currency, 'USD');
    assert.match(p.hourly, /^\d+\.\d{2,6}$/);
    assert.equal(p.effective_from, '1970-01-01T00:00:00Z');
    assert.equal(p.effective_until, null);
  }
  const purchase = await listAll(h.s, '/api/v1/prices?kind=purchase');
  assert.ok(purchase.items.find((p) => p.model === 'H100' && p.amount === '30000.00'));
  // Word matching: the shipped "A100 80GB" prices a discovered A100-SXM4-80GB.
  const r = ok(await rate({ model: 'NVIDIA A100-SXM4-80GB' }));
  assert.equal(r.price.model, 'A100 80GB');
  assert.equal(r.hourly, '5.12');
  assert.equal(r.estimate, true);
  assert.equal(ok(await rate({ model: 'NVIDIA A100-PCIE-40GB' })).price.model, 'A100 40GB');
  assert.equal(ok(await rate({ model: 'NVIDIA L4' })).price.model, 'L4');
  assert.equal(ok(await rate({ model: 'NVIDIA L40S' })).price.model, 'L40S');
  assert.equal(ok(await rate({ model: 'nvidia h100 80gb hbm3' })).price.model, 'H100');
  assertError(await rate({ model: 'Matrox G200' }), 404, { field: 'model' });
});

test('create, read, change and delete an entry; money stays exact', async () => {
  const model = uniq('X9');
  const p = ok(await post({ model, hourly: '2.123456', currency: 'EUR',
    effective_from: '2026-01-01T00:00:00Z', note: 'negotiated' }), 201);
  assert.equal(p.kind, 'hourly');
  assert.equal(p.hourly, '2.123456');
  assert.equal(p.currency, 'EUR');
  assert.equal(p.env, null);
  assert.equal(p.estimate, false);
  assert.deepEqual(ok(await h.s.api('GET', `/api/v1/prices/${p.id}`)), p);
  const up = ok(await h.s.api('PATCH', `/api/v1/prices/${p.id}`, { body: { hourly: 3, env: 'prod' } }));
  assert.equal(up.hourly, '3.00');
  assert.equal(up.env, 'prod');
  assert.equal(up.note, 'negotiated');
  const cleared = ok(await h.s.api('PATCH', `/api/v1/prices/${p.id}`, { body: { env: null, note: null } }));
  assert.equal(cleared.env, null);
  assert.equal(cleared.note, null);
  // A purchase entry carries amount, not hourly.
  const buy = ok(await post({ kind: 'purchase', model, amount: '25000.5' }), 201);
  assert.equal(buy.amount, '25000.50');
  assert.equal(buy.hourly, undefined);

  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=price&entity_id=${p.id}`));
  assert.deepEqual(audit.items.map((a) => a.action), ['update', 'update', 'create']);
  assert.equal(audit.items[2].after.hourly, '2.123456');

  assert.equal((await h.s.api('DELETE', `/api/v1/prices/${p.id}`)).status, 204);
  assertError(await h.s.api('GET', `/api/v1/prices/${p.id}`), 404);
  assertError(await h.s.api('DELETE', `/api/v1/prices/${p.id}`), 404);
  assertError(await h.s.api('PATCH', '/api/v1/prices/999999', { body: { hourly: '1' } }), 404);
  const del = ok(await h.s.api('GET', `/api/v1/audit?entity=price&entity_id=${p.id}`));
  assert.equal(del.items[0].action, 'delete');
});

test('bad entries are refused with the field named', async () => {
  const cases = [
    [{ hourly: '1.00' }, 'model'],
    [{ model: 'H100' }, 'hourly'],
    [{ model: 'H100', hourly: 2.5 }, 'hourly'],
    [{ model: 'H100', hourly: '1.1234567' }, 'hourly'],
    [{ model: 'H100', hourly: '-1.00' }, 'hourly'],
    [{ model: 'H100', hourly: '1e2' }, 'hourly'],
    [{ model: 'H100', hourly: 'two' }, 'hourly'],
    [{ model: 'H100', hourly: -3 }, 'hourly'],
    [{ model: 'H100', hourly: '1', currency: 'usd' }, 'currency'],
    [{ model: 'H100', hourly: '1', currency: 'EURO' }, 'currency'],
    [{ model: 'H100', hourly: '1', effective_from: 'yesterday' }, 'effective_from'],
    [{ model: 'H100', hourly: '1', kind: 'monthly' }, 'kind'],
    [{ model: 'H100', kind: 'purchase', hourly: '1' }, 'hourly'],
    [{ model: 'H100', amount: '1' }, 'amount'],
    [{ model: 'H100', hourly: '1', estimate: 'yes' }, 'estimate'],
    [{ model: 'H100', hourly: '1', colour: 'red' }, 'colour'],
  ];
  for (const [body, field] of cases) {
    assertError(await post(body), 400, { code: 'validation_failed', field });
  }
  const model = uniq('dup');
  ok(await post({ model, hourly: '1', effective_from: '2026-02-01T00:00:00Z' }), 201);
  assertError(await post({ model: model.toUpperCase(), hourly: '2', effective_from: '2026-02-01T00:00:00Z' }), 409,
    { code: 'conflict' });
  assertError(await h.s.api('PATCH', '/api/v1/prices/1', { body: { hourly: '1.0000001' } }), 400, { field: 'hourly' });
});

test('the most specific entry in force wins; effective dates supersede', async () => {
  const m = uniq('Z7');
  const gpu = `ACME ${m} 96GB`;
  const base = ok(await post({ model: m, hourly: '1.00', effective_from: '2026-01-01T00:00:00Z' }), 201);
  const prod = ok(await post({ model: m, env: 'prod', hourly: '2.00', effective_from: '2026-01-01T00:00:00Z' }), 201);
  const cloud = ok(await post({ model: m, cloud: 'aws', hourly: '3.00', effective_from: '2026-01-01T00:00:00Z' }), 201);
  const pool = ok(await post({ model: m, pool: 'train', hourly: '4.00', effective_from: '2026-01-01T00:00:00Z' }), 201);
  const word = ok(await post({ model: `${m} 96GB`, hourly: '1.50', effective_from: '2026-01-01T00:00:00Z' }), 201);
  const at = '2026-03-01T00:00:00Z';
  const pick = async (q) => ok(await rate({ model: gpu, at, ...q })).price_id;
  // More words in the model win among equally narrow entries.
  assert.equal(await pick({}), word.id);
  assert.equal(await pick({ env: 'dev' }), word.id);
  assert.equal(await pick({ env: 'prod' }), prod.id);
  assert.equal(await pick({ env: 'prod', cloud: 'aws' }), cloud.id);
  assert.equal(await pick({ env: 'prod', cloud: 'aws', pool: 'train' }), pool.id);
  assert.equal(await pick({ pool: 'train' }), pool.id);
  // Before any entry: nothing prices it.
  assertError(await rate({ model: gpu, at: '2025-12-31T23:59:59Z' }), 404);

  // A price change mid-month: the old rate until the new entry's time.
  ok(await h.s.api('DELETE', `/api/v1/prices/${word.id}`), 204);
  const change = ok(await post({ model: m, hourly: '1.25', effective_from: '2026-03-15T12:00:00Z' }), 201);
  assert.equal(ok(await rate({ model: gpu, at: '2026-03-15T11:59:59Z' })).price_id, base.id);
  const after = ok(await rate({ model: gpu, at: '2026-03-15T12:00:00Z' }));
  assert.equal(after.price_id, change.id);
  assert.equal(after.hourly, '1.25');
  const old = ok(await h.s.api('GET', `/api/v1/prices/${base.id}`));
  assert.equal(old.effective_until, '2026-03-15T12:00:00Z');
  // An entry someone set beats the shipped estimate at equal narrowing.
  const own = ok(await post({ model: 'H100', hourly: '9.99', effective_from: '2026-01-01T00:00:00Z' }), 201);
  assert.equal(ok(await rate({ model: 'NVIDIA H100 80GB HBM3', at })).price_id, own.id);
  ok(await h.s.api('DELETE', `/api/v1/prices/${own.id}`), 204);
  // The model filter lists what would price a GPU.
  const fits = ok(await h.s.api('GET', '/api/v1/prices?' + new URLSearchParams({ model: gpu })));
  assert.deepEqual(fits.items.map((p) => p.id).sort((a, b) => a - b),
    [base.id, prod.id, cloud.id, pool.id, change.id].sort((a, b) => a - b));
});

test('a deleted estimate stays deleted; viewers read, editors write, admins set costs', async () => {
  const t4 = (await listAll(h.s, '/api/v1/prices?kind=hourly')).items.find((p) => p.model === 'T4');
  const v = await mkToken(h.s, 'viewer');
  const e = await mkToken(h.s, 'editor');
  ok(await h.s.api('GET', '/api/v1/prices', { auth: v.token }));
  assertError(await h.s.api('POST', '/api/v1/prices', { auth: v.token, body: { model: 'X', hourly: '1' } }), 403);
  assertError(await h.s.api('DELETE', `/api/v1/prices/${t4.id}`, { auth: v.token }), 403);
  assertError(await h.s.api('GET', '/api/v1/prices', { auth: null }), 401);
  assert.equal((await h.s.api('DELETE', `/api/v1/prices/${t4.id}`, { auth: e.token })).status, 204);
  assertError(await rate({ model: 'Tesla T4' }), 404);
  // The estimates are inserted once per database: another start on it
  // does not bring the deleted one back.
  const again = await startServer({ db: h.s.db, token: h.s.token });
  try {
    assertError(await again.api('GET', '/api/v1/prices/rate?model=Tesla%20T4'), 404);
    assert.ok(ok(await again.api('GET', '/api/v1/prices/rate?model=Tesla%20V100-SXM2-16GB')).estimate);
  } finally {
    await stopClean(again);
  }

  // Cost settings: defaults, validation, admin only.
  const s0 = ok(await h.s.api('GET', '/api/v1/cost-settings', { auth: v.token }));
  assert.deepEqual(s0, { amortization_years: 4, energy_price_per_kwh: '0.12', pue: 1.4, currency: 'USD' });
  assertError(await h.s.api('PUT', '/api/v1/cost-settings', { auth: e.token, body: { pue: 1.2 } }), 403);
  assertError(await h.s.api('PUT', '/api/v1/cost-settings', { body: { pue: 0.5 } }), 400, { field: 'pue' });
  assertError(await h.s.api('PUT', '/api/v1/cost-settings', { body: { amortization_years: 0 } }), 400,
    { field: 'amortization_years' });
  assertError(await h.s.api('PUT', '/api/v1/cost-settings', { body: { energy_price_per_kwh: '0.1234567' } }), 400,
    { field: 'energy_price_per_kwh' });
  assertError(await h.s.api('PUT', '/api/v1/cost-settings', { body: { currency: 'eur' } }), 400, { field: 'currency' });
  const s1 = ok(await h.s.api('PUT', '/api/v1/cost-settings', { body: { pue: 1.25, energy_price_per_kwh: '0.2' } }));
  assert.deepEqual(s1, { amortization_years: 4, energy_price_per_kwh: '0.20', pue: 1.25, currency: 'USD' });
  assert.deepEqual(ok(await h.s.api('GET', '/api/v1/cost-settings')), s1);
  const a = ok(await h.s.api('GET', '/api/v1/audit?entity=cost_settings'));
  assert.equal(a.items[0].before.pue, 1.4);
  assert.equal(a.items[0].after.pue, 1.25);
  ok(await h.s.api('PUT', '/api/v1/cost-settings', { body: { pue: 1.4, energy_price_per_kwh: '0.12' } }));
});
