// Trends by host and by GPU with no filter read the host days
// (usage_host_days) and, by GPU, rank from the current half's four-day
// blocks (usage_gpu_blocks) before summing the page's GPUs: their answers
// equal the same figures computed here from the hourly rows, and the bytes
// a filter every GPU passes gives (the path over usage_daily), with the
// range's ends at midnight and inside days, a week and a month, limits
// that cut through GPUs tied on the current half's owned hours, after late
// data rewrites a day and after retention prunes the oldest days.
// The fixture: 10 GPUs on 3 hosts (one GPU with none) over the 16 days up
// to today's midnight: four GPUs and the unpriced one owned every hour (a
// tie), a half GPU, one owned half of the even hours, one that stops after
// five days, one that starts two days back, one never owned.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ok, dbQuery, isPg, rollupAll, stopClean } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';
import { daySumsSql } from './day_sums.mjs';

const H = 3600;
const D = 86400;
const NOW = Math.floor(Date.now() / 1000);
const END = NOW - (NOW % D);
const D0 = END - 16 * D;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const MODEL = 'NVIDIA TP' + Math.floor(Math.random() * 1e9);

// The UUIDs do not sort as the ids do.
const GPUS = [
  { id: 2901, uuid: 'GPU-tp-7', host: 'tp-h0', rate: 2000000, fraction: 1 },
  { id: 2902, uuid: 'GPU-tp-3', host: 'tp-h0', rate: 2000000, fraction: 1 },
  { id: 2903, uuid: 'GPU-tp-9', host: 'tp-h0', rate: 1500000, fraction: 1 },
  { id: 2904, uuid: 'GPU-tp-1', host: 'tp-h1', rate: 1500000, fraction: 1 },
  { id: 2905, uuid: 'GPU-tp-5', host: 'tp-h1', rate: 2000000, fraction: 0.5 },
  { id: 2906, uuid: 'GPU-tp-0', host: 'tp-h1', rate: 1500000, fraction: 1, half: true },
  { id: 2907, uuid: 'GPU-tp-4', host: null, rate: null, fraction: 1 },
  { id: 2908, uuid: 'GPU-tp-8', host: 'tp-h2', rate: 1500000, fraction: 1, to: D0 + 5 * D },
  { id: 2909, uuid: 'GPU-tp-2', host: 'tp-h2', rate: 1500000, fraction: 1, from: D0 + 14 * D },
  { id: 2910, uuid: 'GPU-tp-6', host: 'tp-h2', rate: 1500000, fraction: 1, never: true },
];

/** One hourly row of GPU g (index i) at hour t, owned `owned` seconds. */
function row(g, i, t, owned) {
  const k = t / H;
  const unk = g.never ? 3600 : (k + i) % 11 === 0 ? 600 : 0;
  const busy = Math.min(owned, 600 * ((k + i) % 4));
  const ai = Math.min(owned - busy, 300 * ((k * 7 + i) % 5));
  const measured = 3600 - unk;
  return { ...g, hour: t, owned, busy, ai, idle: 3600 - busy - ai - unk, unk, measured, usum: (30 + (k % 50)) * measured };
}

/** Every hourly row of the fixture. */
function fixture() {
  const rows = [];
  GPUS.forEach((g, i) => {
    for (let t = g.from || D0; t < (g.to || END); t += H) {
      if (i === 2 && (t / H) % 37 === 0) continue; // no data at all that hour
      rows.push(row(g, i, t, g.never ? 0 : g.half && (t / H) % 2 === 0 ? 1800 : 3600));
    }
  });
  return rows;
}
let ROWS = fixture();

let s = null;
const q = (v) => (v === null ? 'NULL' : `'${v}'`);

/** The derived rows as the rollup job leaves them: the day groups and daily
 * rows (tests/fixtures/usage_group_sums.sql), then the host days and the
 * GPU blocks with migration 061's own statements. */
function derivedSql(db) {
  const mig = readFileSync(new URL(`../../src/store/migrations/${isPg(db) ? 'pg/' : ''}061_usage_pages.sql`,
    import.meta.url), 'utf8');
  const fill = mig.slice(mig.indexOf('INSERT INTO usage_host_days')).split('\n').filter((l) => !l.startsWith('--'))
    .join('\n');
  return `${daySumsSql()}\nDELETE FROM usage_host_days;\nDELETE FROM usage_gpu_blocks;\n${fill}`;
}

/** Replaces the hourly rows of the fixture's GPUs by ROWS and derives the rest. */
async function load() {
  await dbQuery(s.db, 'DELETE FROM usage_hourly WHERE gpu_id BETWEEN 2901 AND 2910');
  for (let i = 0; i < ROWS.length; i += 200) {
    await dbQuery(s.db, `INSERT INTO usage_hourly (gpu_id, hour, team, env, model, host, owned_s, allocated_s, busy_s,
      alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, mem_sum, energy_wh, fraction, rate_micros, currency,
      updated_at) VALUES ` + ROWS.slice(i, i + 200).map((r) => `(${r.id}, ${r.hour}, 'tp-team', 'prod', '${MODEL}',
      ${q(r.host)}, ${r.owned}, ${r.busy + r.ai}, ${r.busy}, ${r.ai}, ${r.idle}, ${r.unk}, ${r.measured}, ${r.usum}, 0,
      0, ${r.fraction}, ${r.rate === null ? 'NULL' : r.rate}, ${r.rate === null ? 'NULL' : "'USD'"}, 1)`).join(',\n'));
  }
  await dbQuery(s.db, derivedSql(s.db));
}

const round6 = (x) => Math.round(x * 1e6) / 1e6;
const money = (micros) => (Math.round(micros / 1e4) / 100).toFixed(2);

/** Sums of the rows in [from, to) per key. */
function sums(from, to, key) {
  const out = new Map();
  for (const r of ROWS) {
    if (r.hour < from || r.hour >= to) continue;
    const k = key(r);
    const x = out.get(k) || { owned: 0, busy: 0, ai: 0, usum: 0, meas: 0, cost: 0, priced: false };
    const f = r.fraction;
    x.owned += r.owned * f; x.busy += r.busy * f; x.ai += r.ai * f;
    x.usum += r.usum * f; x.meas += r.measured * f;
    if (r.rate !== null) {
      x.priced = true;
      x.cost += r.owned * f * r.rate;
    }
    out.set(k, x);
  }
  return out;
}

/** The trend of [from, mid) against [mid, to) by key, computed from ROWS:
 * the groups with a row in either half, most owned in the current half
 * first, then by name (nulls as the store sorts them), at most limit. */
function expected(from, mid, to, key, limit) {
  const cur = sums(mid, to, key);
  const prev = sums(from, mid, key);
  const zero = { owned: 0, busy: 0, ai: 0, usum: 0, meas: 0, cost: 0, priced: false };
  const nullFirst = !isPg(s.db);
  const byName = (a, b) => (a === b ? 0 : a === null ? (nullFirst ? -1 : 1) : b === null ? (nullFirst ? 1 : -1)
    : a < b ? -1 : 1);
  const groups = [...new Set([...cur.keys(), ...prev.keys()])];
  groups.sort((a, b) => (cur.get(b) || zero).owned - (cur.get(a) || zero).owned || byName(a, b));
  return groups.slice(0, limit).map((g) => {
    const c = cur.get(g) || zero;
    const p = prev.get(g) || zero;
    return {
      group: g,
      owned: [round6(c.owned / H), round6(p.owned / H)],
      busy: [round6(c.busy / H), round6(p.busy / H)],
      allocated_idle: [round6(c.ai / H), round6(p.ai / H)],
      util_avg: [c.meas > 0 ? round6(c.usum / c.meas) : null, p.meas > 0 ? round6(p.usum / p.meas) : null],
      cost: [c.priced ? money(c.cost / H) : null, p.priced ? money(p.cost / H) : null,
        c.priced || p.priced ? 'USD' : null],
    };
  });
}

async function trendText(qs) {
  const r = await s.api('GET', `/api/v1/usage/trend?${qs}`);
  assert.equal(r.status, 200, r.text);
  return r.text;
}

/** Checks the trend of qs (no filter) against ROWS over [from, mid, to),
 * and its bytes against those of the same trend with the model filter. */
async function check(qs, from, mid, to, limit) {
  for (const [by, key] of [['host', (r) => r.host], ['gpu', (r) => r.uuid]]) {
    const full = `${qs}&group_by=${by}&limit=${limit}`;
    const text = await trendText(full);
    assert.equal(text, await trendText(`${full}&model=${encodeURIComponent(MODEL)}`), full);
    const got = JSON.parse(text).items.map((i) => ({
      group: i.group,
      owned: [i.owned.current, i.owned.previous],
      busy: [i.busy.current, i.busy.previous],
      allocated_idle: [i.allocated_idle.current, i.allocated_idle.previous],
      util_avg: [i.util_avg.current, i.util_avg.previous],
      cost: [i.cost.current, i.cost.previous, i.cost.currency],
    }));
    assert.deepEqual(got, expected(from, mid, to, key, limit), full);
  }
}

/** Every case: to at midnight and inside a day, a week and a month, limits
 * that cut through the tie (4), take every GPU owning anything in the
 * current week (8) and more (9: a GPU owning nothing there, 1000). */
async function checkAll() {
  const mid = END - 3 * D + 13 * H;
  for (const limit of [1, 4, 8, 9, 1000]) {
    await check(`period=week&to=${iso(END)}`, END - 14 * D, END - 7 * D, END, limit);
    await check(`period=week&to=${iso(mid)}`, mid - 14 * D, mid - 7 * D, mid, limit);
  }
  for (const limit of [4, 1000]) {
    await check(`period=month&to=${iso(END)}`, END - 60 * D, END - 30 * D, END, limit);
    await check(`period=month&to=${iso(mid)}`, mid - 60 * D, mid - 30 * D, mid, limit);
    // A current period of 5 days 7 hours from 01:00, starting and ending inside days.
    const from = END - 9 * D + H, to = END - 4 * D + 8 * H;
    await check(`period=week&from=${iso(from)}&to=${iso(to)}`, 2 * from - to, from, to, limit);
  }
}

test('trends by host and by GPU with no filter equal the hourly sums and the filtered path', async () => {
  s = await startServer();
  try {
    let sql = '';
    for (const g of GPUS) {
      sql += `INSERT INTO gpus (id, uuid, model, first_seen_at, last_seen_at) VALUES (${g.id}, '${g.uuid}', '${MODEL}', 1, 1);\n`;
    }
    await dbQuery(s.db, sql);
    await load();
    assert.ok(+(await dbQuery(s.db, 'SELECT COUNT(*) FROM usage_gpu_blocks')).trim() > 0);
    assert.ok(+(await dbQuery(s.db, 'SELECT COUNT(*) FROM usage_host_days')).trim() > 0);
    // The tie: five GPUs own every hour of the current week; the UUIDs order them.
    const top = JSON.parse(await trendText(`period=week&group_by=gpu&to=${iso(END)}&limit=4`)).items;
    assert.deepEqual(top.map((i) => i.group), ['GPU-tp-1', 'GPU-tp-3', 'GPU-tp-4', 'GPU-tp-7']);
    assert.equal(top[0].owned.current, 168);
    await checkAll();

    // Late data rewrites a day of the current week: GPU-tp-0 owned every
    // hour of it, GPU-tp-2 six hours it had none of, GPU-tp-8 an hour
    // there after it had stopped.
    const L = END - 4 * D;
    ROWS = ROWS.map((r) => (r.uuid === 'GPU-tp-0' && r.hour >= L && r.hour < L + D ? row(r, 5, r.hour, 3600) : r));
    for (let t = L; t < L + 6 * H; t += H) ROWS.push(row(GPUS[8], 8, t, 3600));
    ROWS.push(row(GPUS[7], 7, L + 3 * H, 3600));
    await load();
    await checkAll();
    const after = JSON.parse(await trendText(`period=week&group_by=gpu&to=${iso(END)}&limit=9`)).items;
    assert.deepEqual(after.slice(-2).map((i) => [i.group, i.owned.current]), [['GPU-tp-2', 54], ['GPU-tp-8', 1]]);
  } finally {
    await stopClean(s);
  }

  // Retention of 8 days: the daily rows before now - 8 days go (and the host
  // days and blocks with them). A range reaching there reads what is left as
  // the filtered path does; one inside the kept days reads the host days.
  s = await startServer({ db: s.db, dir: s.dir, token: s.token, args: ['--retain-daily-days', '8'] });
  try {
    const run = await rollupAll(s);
    assert.equal(run.dirty_left, 0);
    const oldest = +(await dbQuery(s.db, 'SELECT MIN(day) FROM usage_daily')).trim();
    assert.ok(oldest >= NOW - 8 * D - D && oldest > D0, `oldest ${oldest}`);
    for (const by of ['host', 'gpu']) {
      for (const limit of [4, 1000]) {
        const qs = `period=week&group_by=${by}&to=${iso(END)}&limit=${limit}`;
        assert.equal(await trendText(qs), await trendText(`${qs}&model=${encodeURIComponent(MODEL)}`), qs);
      }
    }
    const from = END - 3 * D + 5 * H, to = END;
    for (const limit of [4, 8, 1000]) {
      await check(`period=week&from=${iso(from)}&to=${iso(to)}`, 2 * from - to, from, to, limit);
    }
  } finally {
    await stopClean(s);
  }
});
