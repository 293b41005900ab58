// Trends and waste by team read the day groups (usage_daily by host or
// GPU) for the whole days of their range and the hourly rollups for the
// rest; their answers equal the same figures computed here from the hourly
// rows, for day-aligned ranges and ranges that start and end inside a day.
// The fixture: 6 GPUs over 16 days from Monday 2026-10-05, each hour split
// differently into busy, allocated-idle, idle and unknown seconds, a half
// GPU, some hours missing, an unpriced GPU without a team, a GPU that
// appears only in the last two days.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery } from './helpers.mjs';
import { daySumsSql } from './day_sums.mjs';

const h = useServer();
const H = 3600;
const D = 86400;
const D0 = Date.parse('2026-10-05T00:00:00Z') / 1000;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');

const GPUS = [
  { id: 1801, team: 'td-a', env: 'prod', rate: 2000000, fraction: 1 },
  { id: 1802, team: 'td-a', env: 'dev', rate: 2000000, fraction: 0.5 },
  { id: 1803, team: 'td-b', env: 'prod', rate: 1500000, fraction: 1 },
  { id: 1804, team: 'td-b', env: 'dev', rate: 1500000, fraction: 1 },
  { id: 1805, team: null, env: 'prod', rate: null, fraction: 1 },
  { id: 1806, team: 'td-b', env: 'prod', rate: 1500000, fraction: 1, from: D0 + 14 * D },
];

/** Every hourly row of the fixture. */
function fixture() {
  const rows = [];
  GPUS.forEach((g, i) => {
    for (let t = g.from || D0; t < D0 + 16 * D; t += H) {
      const k = t / H;
      if (i === 2 && k % 37 === 0) continue; // no data at all that hour
      const unk = (k + i) % 11 === 0 ? 600 : 0;
      const busy = 600 * ((k + i) % 4);
      const ai = 300 * ((k * 7 + i) % 5);
      const idle = 3600 - busy - ai - unk;
      const measured = 3600 - unk;
      rows.push({ ...g, hour: t, owned: 3600, busy, ai, idle, unk, measured, usum: (30 + (k % 50)) * measured });
    }
  });
  return rows;
}
const ROWS = fixture();

const q = (v) => (v === null ? 'NULL' : `'${v}'`);
test('the fleet: hourly rollups and their days as the job leaves them', async () => {
  let sql = '';
  for (const g of GPUS) {
    sql += `INSERT INTO gpus (id, uuid, model, first_seen_at, last_seen_at) VALUES (${g.id}, 'GPU-ind-${g.id}', 'H100', 1, 1);\n`;
  }
  await dbQuery(h.s.db, sql);
  for (let i = 0; i < ROWS.length; i += 100) {
    await dbQuery(h.s.db, `INSERT INTO usage_hourly (gpu_id, hour, team, env, model, host, owned_s, allocated_s, busy_s, alloc_idle_s,
      idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, rate_micros, currency, updated_at) VALUES ` +
      ROWS.slice(i, i + 100).map((r) => `(${r.id}, ${r.hour}, ${q(r.team)}, '${r.env}', 'H100', 'ind-h${r.id % 2}', ${r.owned},
      ${r.busy + r.ai}, ${r.busy}, ${r.ai}, ${r.idle}, ${r.unk}, ${r.measured}, ${r.usum}, 0, 0, ${r.fraction},
      ${r.rate === null ? 'NULL' : r.rate}, ${r.rate === null ? 'NULL' : "'USD'"}, 1)`).join(',\n'));
  }
  await dbQuery(h.s.db, daySumsSql());
  assert.equal((await dbQuery(h.s.db, 'SELECT COUNT(*) FROM usage_hourly WHERE gpu_id BETWEEN 1801 AND 1806')).trim(),
    String(ROWS.length));
});

const round6 = (x) => Math.round(x * 1e6) / 1e6;
const money = (micros) => (Math.round(micros / 1e4) / 100).toFixed(2);

/** Sums of the rows in [from, to) passing pred, per key. */
function sums(from, to, key, pred = () => true) {
  const out = new Map();
  for (const r of ROWS) {
    if (r.hour < from || r.hour >= to || !pred(r)) continue;
    const k = key(r);
    const s = out.get(k) || { owned: 0, busy: 0, ai: 0, idle: 0, usum: 0, meas: 0, cost: 0, aic: 0, ic: 0, priced: false,
      gpus: new Set(), gpusAi: new Set() };
    const f = r.fraction;
    s.owned += r.owned * f; s.busy += r.busy * f; s.ai += r.ai * f; s.idle += r.idle * f;
    s.usum += r.usum * f; s.meas += r.measured * f;
    if (r.rate !== null) {
      s.priced = true;
      s.cost += r.owned * f * r.rate; s.aic += r.ai * f * r.rate; s.ic += r.idle * f * r.rate;
    }
    s.gpus.add(r.id);
    if (r.ai > 0) s.gpusAi.add(r.id);
    out.set(k, s);
  }
  return out;
}

/** Checks a trend answer against the hourly rows. */
function checkTrend(items, from, mid, to, key) {
  const cur = sums(mid, to, key);
  const prev = sums(from, mid, key);
  const groups = new Set([...cur.keys(), ...prev.keys()]);
  assert.deepEqual(new Set(items.map((i) => i.group)), groups);
  const zero = { owned: 0, busy: 0, ai: 0, usum: 0, meas: 0, cost: 0, priced: false };
  for (const it of items) {
    const c = cur.get(it.group) || zero;
    const p = prev.get(it.group) || zero;
    const label = `group ${it.group}`;
    assert.equal(it.owned.current, round6(c.owned / H), label);
    assert.equal(it.owned.previous, round6(p.owned / H), label);
    assert.equal(it.busy.current, round6(c.busy / H), label);
    assert.equal(it.busy.previous, round6(p.busy / H), label);
    assert.equal(it.allocated_idle.current, round6(c.ai / H), label);
    assert.equal(it.allocated_idle.previous, round6(p.ai / H), label);
    assert.equal(it.util_avg.current, c.meas > 0 ? round6(c.usum / c.meas) : null, label);
    assert.equal(it.util_avg.previous, p.meas > 0 ? round6(p.usum / p.meas) : null, label);
    // A half without a priced hour has no cost.
    assert.equal(it.cost.current, c.priced ? money(c.cost / H) : null, label);
    assert.equal(it.cost.previous, p.priced ? money(p.cost / H) : null, label);
    assert.equal(it.cost.currency, c.priced || p.priced ? 'USD' : null, label);
  }
}

const trend = async (qs) => ok(await h.s.api('GET', `/api/v1/usage/trend?${qs}&limit=1000`)).items
  .filter((i) => i.group === null || String(i.group).match(/^(td-|ind-|GPU-ind-)/));

test('trend by team over whole days equals the hourly sums', async () => {
  const to = D0 + 14 * D;
  checkTrend(await trend(`period=week&to=${iso(to)}`), to - 14 * D, to - 7 * D, to, (r) => r.team);
});

test('trend by team with a range that starts, meets and ends inside days equals the hourly sums', async () => {
  const to = D0 + 15 * D + 7 * H;
  const items = await trend(`period=week&to=${iso(to)}`);
  checkTrend(items, to - 14 * D, to - 7 * D, to, (r) => r.team);
  // The GPU that appeared two days back counts in the current week only.
  const b = items.find((i) => i.group === 'td-b');
  assert.ok(b.owned.current > b.owned.previous);
});

test('trend by GPU and by host (from usage_daily) equals the hourly sums, with a filter', async () => {
  const to = D0 + 15 * D + 13 * H;
  const gpu = await trend(`period=week&group_by=gpu&to=${iso(to)}`);
  checkTrend(gpu, to - 14 * D, to - 7 * D, to, (r) => `GPU-ind-${r.id}`);
  const host = (await trend(`period=week&group_by=host&env=prod&to=${iso(to)}`));
  const prod = ROWS.filter((r) => r.env === 'prod');
  const cur = sums(to - 7 * D, to, (r) => `ind-h${r.id % 2}`, (r) => r.env === 'prod');
  assert.deepEqual(new Set(host.map((i) => i.group)), new Set(prod.map((r) => `ind-h${r.id % 2}`)));
  for (const it of host) assert.equal(it.owned.current, round6(cur.get(it.group).owned / H));
});

/** Checks a waste-by-team answer against the hourly rows. */
function checkWaste(items, from, to, pred) {
  const want = sums(from, to, (r) => r.team, pred);
  const got = items.filter((i) => i.team === null || i.team.startsWith('td-'));
  assert.deepEqual(new Set(got.map((i) => i.team)), new Set(want.keys()));
  for (const it of got) {
    const s = want.get(it.team);
    const label = `team ${it.team}`;
    assert.deepEqual(it.gpu_hours, { owned: round6(s.owned / H), allocated_idle: round6(s.ai / H), idle: round6(s.idle / H) }, label);
    assert.equal(it.gpus, s.gpus.size, label);
    assert.equal(it.gpus_allocated_idle, s.gpusAi.size, label);
    if (s.priced) {
      assert.equal(it.allocated_idle_cost.amount, money(s.aic / H), label);
      assert.equal(it.idle_cost.amount, money(s.ic / H), label);
      assert.equal(it.owned_cost.amount, money(s.cost / H), label);
    } else {
      assert.equal(it.owned_cost.amount, null, label);
      assert.equal(it.owned_cost.currency, null, label);
    }
  }
  // Ranked by allocated-idle cost.
  const ranked = got.filter((i) => i.allocated_idle_cost.amount !== null);
  for (let i = 1; i < ranked.length; i++) {
    assert.ok(Number(ranked[i - 1].allocated_idle_cost.amount) >= Number(ranked[i].allocated_idle_cost.amount));
  }
}

const waste = async (qs) => ok(await h.s.api('GET', `/api/v1/insights/waste-by-team?${qs}&limit=1000`)).items;

test('waste by team over whole days equals the hourly sums, GPU counts included', async () => {
  const from = D0 + D, to = D0 + 16 * D;
  checkWaste(await waste(`from=${iso(from)}&to=${iso(to)}`), from, to, () => true);
});

test('waste by team over a range inside days, and with a filter, equals the hourly sums', async () => {
  const from = D0 + 2 * D + 5 * H, to = D0 + 15 * D + 20 * H;
  checkWaste(await waste(`from=${iso(from)}&to=${iso(to)}`), from, to, () => true);
  checkWaste(await waste(`from=${iso(from)}&to=${iso(to)}&env=prod`), from, to, (r) => r.env === 'prod');
  // Within one day: the hourly rows alone.
  const a = D0 + 3 * D + 2 * H, b = D0 + 3 * D + 9 * H;
  checkWaste(await waste(`from=${iso(a)}&to=${iso(b)}`), a, b, () => true);
});
