// The savings are kept per process for the same question while nothing
// has been rolled up in its range since: a repeated request gets the same
// answer without reading the lists again, and a rollup that writes an
// hour of the range (here late data of another GPU) makes the next
// request compute it afresh.
//
// Three days back, from 10:00 UTC for 3 hours, host sc-node of team sc-t
// has GPU a at 0 % with nobody holding it: idle for the range's 3 hours.
// Later, readings of GPU b for the same hours arrive, also idle.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { useServer, ok, dbQuery, rollupAll } from './helpers.mjs';

const h = useServer();
const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const RANGE = `team=sc-t&from=${iso(T0)}&to=${iso(T0 + 3 * 3600)}&min_hours=3`;
const A = 'GPU-5cac0000-0000-4000-8000-00000000000a';
const B = 'GPU-5cac0000-0000-4000-8000-00000000000b';

async function push(tok, id, uuids) {
  const gpus = uuids.map((u) => ({ uuid: u, index: u === A ? 0 : 1, name: 'NVIDIA H100 80GB HBM3', serial: `S-${u.slice(-1)}` }));
  const samples = [];
  for (let t = T0; t <= T0 + 3 * 3600; t += 60) for (const u of uuids) samples.push({ time: t, gpu: u, util_avg: 0, util_max: 0 });
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: tok, body: { batch_id: id, host: { hostname: 'sc-node' }, gpus, samples } });
  assert.equal(r.status, 201, r.text);
  assert.equal((await rollupAll(h.s)).dirty_left, 0);
}

const savings = async () => ok(await h.s.api('GET', `/api/v1/insights/savings?${RANGE}`)).items
  .map((i) => [i.kind, i.gpu_uuids]);

test('a repeated savings request is answered from the cache until a rollup writes its range', async () => {
  const tok = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-sc', role: 'pusher', source: 'sc-src', team: 'sc-t' } }), 201).token;
  await push(tok, 'sc-1', [A]);
  await sleep(1100); // the answer is read in a later second than the rollup's write
  const first = await savings();
  assert.deepEqual(first, [['idle', [A]]]);

  // Rows changed behind the rollup job's back do not change the revision:
  // the same question gets the kept answer, not a fresh computation.
  await dbQuery(h.s.db, `UPDATE usage_hourly SET idle_s = 0, busy_s = owned_s, allocated_s = owned_s
    WHERE gpu_id = (SELECT id FROM gpus WHERE uuid = '${A}')`);
  assert.deepEqual(await savings(), first);
  // Another question (another min_hours) is computed afresh and sees them.
  const other = ok(await h.s.api('GET', `/api/v1/insights/savings?${RANGE.replace('min_hours=3', 'min_hours=2')}`));
  assert.deepEqual(other.items, []);

  // Late data of b rolled up for the same hours: the day's groups are
  // rewritten, the revision changes, the answer is computed again.
  await push(tok, 'sc-2', [B]);
  assert.deepEqual(await savings(), [['idle', [B]]]);
});
