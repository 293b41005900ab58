// The team hours (usage_team_hours): the hour groups summed per hour, team
// and currency, kept by the rollup job beside them. Questions with no
// filter but the team's read them: the hour-of-week heatmap, a team report
// with step=hour, the total of a paged host or GPU report over hours.
// Checked: the table equals the sums of the hour groups after a rollup,
// late data, an owner change, a re-run and retention pruning; and those
// answers equal the same questions asked with a filter that makes them read
// the hour groups instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery, rollupAll } from './helpers.mjs';

const h = useServer({ args: ['--retain-hourly-days', '30'] });
const nowS = () => Math.floor(Date.now() / 1000);
const H = 3600;
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 9 * H;
const MODEL = 'NVIDIA TH' + Math.floor(Math.random() * 1e9);
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-6, `${msg}: ${a} != ${b}`);

const A = 'GPU-f1000000-0000-4000-8000-000000000001';
const B = 'GPU-f1000000-0000-4000-8000-000000000002';
const C = 'GPU-f1000000-0000-4000-8000-000000000003';

const gpu = (uuid, index) => ({ uuid, index, name: MODEL, serial: 'S-' + uuid.slice(-6) });
function every(uuid, from, to, fields) {
  const out = [];
  for (let t = from; t <= to; t += 60) out.push({ time: t, gpu: uuid, ...fields });
  return out;
}
async function push(token, body) {
  const r = await h.s.api('POST', '/api/v1/ingest', { body, auth: token });
  assert.equal(r.status, 201, r.text);
}
async function rollup() {
  const r = await rollupAll(h.s);
  assert.equal(r.dirty_left, 0);
  assert.equal(r.redo_left, 0);
  return r;
}

const SUMS = 'SUM(gpus), ROUND(SUM(owned_s)), ROUND(SUM(allocated_s)), ROUND(SUM(busy_s)), ' +
  'ROUND(SUM(alloc_idle_s)), ROUND(SUM(idle_s)), ROUND(SUM(unknown_s)), ROUND(SUM(util_sum)), ' +
  'ROUND(SUM(measured_s)), ROUND(SUM(energy_wh)), ROUND(SUM(COALESCE(owned_cost, 0)) / 1e6), ' +
  'ROUND(SUM(COALESCE(alloc_idle_cost, 0)) / 1e6), ROUND(SUM(unpriced_s))';
/** Every team hour equals the sum of its hour groups, and nothing else is there. */
async function assertTeamHoursAreSums(what) {
  const q = (table) => dbQuery(h.s.db, `SELECT hour, COALESCE(team, '-'), currency, ${SUMS} FROM ${table} ` +
    'GROUP BY hour, team, currency ORDER BY 1, 2, 3');
  const groups = await q('usage_groups_hourly');
  assert.ok(groups.trim().length > 0, `${what}: hour groups written`);
  assert.equal(await q('usage_team_hours'), groups, `${what}: the team hours are the sums of the hour groups`);
  const dup = await dbQuery(h.s.db, 'SELECT COUNT(*) FROM (SELECT hour, team, currency FROM usage_team_hours ' +
    'GROUP BY hour, team, currency HAVING COUNT(*) > 1) d');
  assert.equal(dup.trim(), '0', `${what}: one row per hour, team and currency`);
}

async function get(path, q) {
  return ok(await h.s.api('GET', `${path}?${new URLSearchParams(q)}`));
}
const strip = (rep) => JSON.stringify({ items: rep.items, total: rep.total });
/** The same questions from the team hours (team filter alone) and from the
 * hour groups (the model filter too: every GPU here has that model). */
async function assertSameAnswers(team, what) {
  const range = { from: iso(T0 - H), to: iso(T0 + 3 * H) };
  const filters = team ? { team } : {};
  const viaTeams = await get('/api/v1/usage', { group_by: 'team', step: 'hour', ...range, ...filters });
  const viaGroups = await get('/api/v1/usage', { group_by: 'team', step: 'hour', ...range, ...filters, model: MODEL });
  assert.ok(viaTeams.items.length > 0, `${what}: items`);
  assert.equal(strip(viaTeams), strip(viaGroups), `${what}: the hourly team report`);
  for (const metric of ['util', 'allocation']) {
    const a = await get('/api/v1/usage/heatmap', { metric, ...range, ...filters });
    const b = await get('/api/v1/usage/heatmap', { metric, ...range, ...filters, model: MODEL });
    assert.deepEqual(a.items, b.items, `${what}: the ${metric} heatmap`);
  }
  const pageA = await get('/api/v1/usage', { group_by: 'gpu', step: 'hour', ...range, ...filters, limit: 2 });
  const pageB = await get('/api/v1/usage', { group_by: 'gpu', step: 'hour', ...range, ...filters, model: MODEL, limit: 2 });
  assert.equal(strip(pageA), strip(pageB), `${what}: a page of GPUs and its total`);
  return viaTeams;
}

let tok;

test('the team hours are the hour groups summed, and answer as the hour groups do', async () => {
  ok(await h.s.api('POST', '/api/v1/prices', { body: { model: MODEL, hourly: '3.00', effective_from: '2020-01-01T00:00:00Z' } }), 201);
  tok = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: 'tok-th', role: 'pusher', source: 'th-src', team: 'th-a' } }), 201).token;
  // A busy for two hours, B idle for two hours, C (on another host) busy for one.
  await push(tok, { batch_id: 'th-1', host: { hostname: 'th-node-1' }, gpus: [gpu(A, 0), gpu(B, 1)],
    samples: [...every(A, T0, T0 + 2 * H, { util_avg: 80, power_avg_w: 300 }),
      ...every(B, T0, T0 + 2 * H, { util_avg: 0, power_avg_w: 60 })] });
  await push(tok, { batch_id: 'th-2', host: { hostname: 'th-node-2' }, gpus: [gpu(C, 0)],
    samples: every(C, T0, T0 + H, { util_avg: 40 }) });
  await rollup();
  await assertTeamHoursAreSums('after the first rollup');
  const rep = await assertSameAnswers('th-a', 'after the first rollup');
  const first = rep.items.find((x) => x.start === iso(T0));
  // Hand-computed: 09:00 A, B and C owned; A and C busy.
  close(first.gpu_hours.owned, 3, '09:00 owned');
  close(first.gpu_hours.busy, 2, '09:00 busy');
  assert.equal(first.cost.amount, '9.00');
  await assertSameAnswers(null, 'no filter, after the first rollup');
});

test('late data, an owner change and a re-run keep the team hours the sums', async () => {
  // C's second hour arrives late: its 10:00 hour is done again.
  await push(tok, { batch_id: 'th-3', host: { hostname: 'th-node-2' }, gpus: [gpu(C, 0)],
    samples: every(C, T0 + H + 60, T0 + 2 * H, { util_avg: 90 }) });
  await rollup();
  await assertTeamHoursAreSums('after late data');
  let rep = await assertSameAnswers('th-a', 'after late data');
  close(rep.items.find((x) => x.start === iso(T0 + H)).gpu_hours.busy, 2, '10:00: A and C busy');

  // B moves to th-b from 10:00: its 10:00 hour leaves th-a's team hours.
  ok(await h.s.api('POST', '/api/v1/teams', { body: { name: 'th-b' } }), 201);
  ok(await h.s.api('PUT', `/api/v1/gpus/${B}/owner`, { body: { team: 'th-b', effective_from: iso(T0 + H) } }));
  await rollup();
  await assertTeamHoursAreSums('after the owner change');
  rep = await assertSameAnswers('th-a', 'after the owner change');
  close(rep.items.find((x) => x.start === iso(T0 + H)).gpu_hours.owned, 2, '10:00: A and C');
  const b = await assertSameAnswers('th-b', 'th-b after the owner change');
  assert.equal(b.items[0].start, iso(T0 + H), 'th-b holds B from 10:00');
  close(b.items[0].gpu_hours.idle, 1, 'B idle at 10:00');
  await assertSameAnswers(null, 'no filter, after the owner change');

  // A run with nothing new changes nothing.
  const before = await dbQuery(h.s.db, `SELECT hour, COALESCE(team, '-'), currency, ${SUMS} FROM usage_team_hours ` +
    'GROUP BY hour, team, currency ORDER BY 1, 2, 3');
  await rollup();
  assert.equal(await dbQuery(h.s.db, `SELECT hour, COALESCE(team, '-'), currency, ${SUMS} FROM usage_team_hours ` +
    'GROUP BY hour, team, currency ORDER BY 1, 2, 3'), before);
  await assertTeamHoursAreSums('after a re-run');
});

test('retention prunes the team hours with the hour groups they sum', async () => {
  // Group rows 40 days back (past the 30-day retention) and 20 days back.
  const old = Math.floor((nowS() - 40 * 86400) / H) * H;
  const kept = Math.floor((nowS() - 20 * 86400) / H) * H;
  let sql = '';
  for (const t of [old, kept]) {
    sql += 'INSERT INTO usage_groups_hourly (hour, team, env, pool, cluster, cloud, model, datacenter_id, ' +
      'currency, gpus, owned_s, allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, ' +
      'energy_wh, owned_cost, busy_cost, alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at) ' +
      `VALUES (${t}, 'th-a', NULL, NULL, NULL, NULL, '${MODEL}', NULL, '', 1, 3600, 0, 0, 0, 3600, 0, 0, ` +
      `3600, 0, NULL, NULL, NULL, NULL, NULL, 3600, ${t});\n`;
    sql += 'INSERT INTO usage_team_hours (hour, team, currency, gpus, owned_s, allocated_s, busy_s, ' +
      'alloc_idle_s, idle_s, unknown_s, util_sum, measured_s, energy_wh, owned_cost, busy_cost, ' +
      'alloc_idle_cost, idle_cost, unknown_cost, unpriced_s, updated_at) ' +
      `VALUES (${t}, 'th-a', '', 1, 3600, 0, 0, 0, 3600, 0, 0, 3600, 0, NULL, NULL, NULL, NULL, NULL, 3600, ${t});\n`;
  }
  await dbQuery(h.s.db, sql);
  await assertTeamHoursAreSums('before pruning');
  const r = await rollup();
  // (on PostgreSQL the hour groups go with their partitions, not counted as rows)
  assert.ok(r.pruned >= 1, `pruned ${r.pruned}`);
  const left = async (table) => (await dbQuery(h.s.db, `SELECT COUNT(*) FROM ${table} WHERE hour IN (${old}, ${kept})`)).trim();
  assert.equal(await left('usage_groups_hourly'), '1');
  assert.equal(await left('usage_team_hours'), '1');
  await assertTeamHoursAreSums('after pruning');
});
