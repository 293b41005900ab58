// The showback report reads the day groups for the days in which no
// catalog entry takes effect and the hourly rollups for the others; either
// way its figures are the hours' at the rate in force at each hour, priced
// from the catalog as it stands when asked. Hand-computed, September 2026:
// - model Kappa: 2.00/h, 3.00/h from 2026-09-15T12:00Z (mid-day): GPU 1701
//   of team sd-a busy all of the 10th (24 h x 2.00 = 48.00) and all of the
//   15th (12 h x 2.00 + 12 h x 3.00 = 60.00): 108.00;
// - model Lambda: 1.00/h, 4.00/h from 2026-09-20T00:00Z (midnight): GPU 1702
//   of team sd-b idle all of the 19th (24 x 1.00) and allocated-idle all of
//   the 20th (24 x 4.00): 120.00, of which 96.00 waste;
// - model Mu: 1.00/h, 5.00/h from 2026-09-05T10:30Z (between hours): GPU
//   1703 of team sd-c busy from 09:00 to 12:00 on the 5th: the 09:00 and
//   10:00 hours at 1.00 (the entry takes effect after 10:00 starts), the
//   11:00 hour at 5.00: 7.00.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery } from './helpers.mjs';
import { daySumsSql } from './day_sums.mjs';

const h = useServer();
const T = (iso) => Date.parse(iso) / 1000;
const H = 3600;

function hourRow(gpu, at, team, model, s) {
  const busy = s.busy || 0, ai = s.ai || 0, idle = s.idle || 0;
  return `INSERT INTO usage_hourly (gpu_id, hour, team, model, owned_s, allocated_s, busy_s, alloc_idle_s,
    idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, updated_at) VALUES (${gpu}, ${at},
    '${team}', '${model}', ${busy + ai + idle}, ${busy + ai}, ${busy}, ${ai}, ${idle}, 0, ${busy + ai + idle},
    0, 0, 0, 1, 1);\n`;
}

/** The rows of one GPU for each hour of [from, from + n hours). */
function hours(gpu, from, n, team, model, s) {
  let sql = '';
  for (let k = 0; k < n; k++) sql += hourRow(gpu, from + k * H, team, model, s);
  return sql;
}

const price = (model, hourly, from) =>
  h.s.api('POST', '/api/v1/prices', { body: { model, hourly, effective_from: from } });
const showback = async () => ok(await h.s.api('GET', '/api/v1/reports/showback?month=2026-09'));
const row = (sb, team) => sb.items.find((r) => r.team === team);

test('the fleet: hourly rollups and their days as the job leaves them', async () => {
  let sql = '';
  for (const [id, model] of [[1701, 'Kappa'], [1702, 'Lambda'], [1703, 'Mu']]) {
    sql += `INSERT INTO gpus (id, uuid, model, first_seen_at, last_seen_at) VALUES (${id}, 'GPU-sbd-${id}', '${model}', 1, 1);\n`;
  }
  sql += hours(1701, T('2026-09-10T00:00:00Z'), 24, 'sd-a', 'Kappa', { busy: 3600 });
  sql += hours(1701, T('2026-09-15T00:00:00Z'), 24, 'sd-a', 'Kappa', { busy: 3600 });
  sql += hours(1702, T('2026-09-19T00:00:00Z'), 24, 'sd-b', 'Lambda', { idle: 3600 });
  sql += hours(1702, T('2026-09-20T00:00:00Z'), 24, 'sd-b', 'Lambda', { ai: 3600 });
  sql += hours(1703, T('2026-09-05T09:00:00Z'), 3, 'sd-c', 'Mu', { busy: 3600 });
  await dbQuery(h.s.db, sql);
  await dbQuery(h.s.db, daySumsSql());
  for (const [model, a, b, at] of [['Kappa', '2.00', '3.00', '2026-09-15T12:00:00Z'],
    ['Lambda', '1.00', '4.00', '2026-09-20T00:00:00Z'], ['Mu', '1.00', '5.00', '2026-09-05T10:30:00Z']]) {
    ok(await price(model, a, '2026-01-01T00:00:00Z'), 201);
    ok(await price(model, b, at), 201);
  }
});

test('a price taking effect mid-day prices that day hour by hour', async () => {
  const a = row(await showback(), 'sd-a');
  assert.deepEqual(a.gpu_hours, { owned: 48, busy: 48, allocated_idle: 0, idle: 0, unknown: 0 });
  assert.equal(a.cost.catalog.amount, '108.00');
  assert.equal(a.cost.catalog.busy, '108.00');
  assert.equal(a.cost.catalog.unpriced_gpu_hours, 0);
});

test('a price taking effect at midnight prices whole days', async () => {
  const b = row(await showback(), 'sd-b');
  assert.deepEqual(b.gpu_hours, { owned: 48, busy: 0, allocated_idle: 24, idle: 24, unknown: 0 });
  assert.equal(b.cost.catalog.idle, '24.00');
  assert.equal(b.cost.catalog.waste, '96.00');
  assert.equal(b.cost.catalog.amount, '120.00');
});

test('a price taking effect between hours applies from the next hour', async () => {
  const c = row(await showback(), 'sd-c');
  assert.equal(c.gpu_hours.owned, 3);
  assert.equal(c.cost.catalog.amount, '7.00');
});

test('an edited price shows at once, on whole days as on the hours', async () => {
  const list = ok(await h.s.api('GET', '/api/v1/prices?kind=hourly'));
  const items = list.items || list;
  const kappaOld = items.find((p) => p.model === 'Kappa' && p.hourly === '2.00');
  ok(await h.s.api('PATCH', `/api/v1/prices/${kappaOld.id}`, { body: { hourly: '1.00' } }));
  // 24 x 1.00 on the 10th, 12 x 1.00 + 12 x 3.00 on the 15th.
  const sb = await showback();
  assert.equal(row(sb, 'sd-a').cost.catalog.amount, '72.00');
  assert.equal(sb.total.cost.catalog.amount, '199.00');
  assert.equal(sb.total.gpu_hours.owned, 99);
});
