// Samples a push repeats (an agent re-sending an interval under a new batch
// id, or one sample twice in a batch) are stored once: the first stored
// values stay, the reply counts only the new rows, and each value is stored
// as sent (exact reals, absent fields NULL). On PostgreSQL the rows are
// copied in bulk and a repeated row makes the batch fall back to an insert
// that skips it; the results are the same on both stores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, dbQuery, ok } from './helpers.mjs';

const h = useServer();
let token;

const uuids = ['GPU-0ve71a90-0000-0000-0000-000000000001', 'GPU-0ve71a90-0000-0000-0000-000000000002'];
const gpus = uuids.map((uuid, i) => ({ uuid, serial: `OV${i}`, index: i, name: 'NVIDIA H100 80GB HBM3',
  pci_bus_id: `00000000:${(0x18 + i).toString(16)}:00.0`, memory_total_mib: 81559 }));
const t0 = Math.floor(Date.now() / 1000) - 3600;

function push(id, samples) {
  return h.s.api('POST', '/api/v1/ingest', {
    body: { batch_id: id, host: { hostname: 'overlap-host' }, gpus, samples },
    auth: token,
  });
}

const sample = (gpu, ts, util) => ({ time: ts, gpu, util_avg: util, util_max: util, mem_used_mib: 1024,
  power_avg_w: 300.25, temp_c: 55 });

const rows = async (where) => (await dbQuery(h.s.db,
  `SELECT g.uuid, s.ts, CAST(s.util_avg AS BIGINT) FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id ${where} ` +
  'ORDER BY g.uuid, s.ts')).trim().split('\n').filter(Boolean);

test('setup', async () => {
  token = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'overlap', role: 'pusher', source: 'overlap-agent' } }), 201).token;
});

test('a re-sent interval is stored once and the first values stay', async () => {
  const first = [];
  for (const g of uuids) for (let k = 0; k < 3; k++) first.push(sample(g, t0 + 60 * k, 10 + k));
  assert.equal(ok(await push('ov-1', first), 201).samples, 6);

  // ov-2 repeats t0+60 and t0+120 with other values and adds t0+180.
  const second = [];
  for (const g of uuids) for (let k = 1; k < 4; k++) second.push(sample(g, t0 + 60 * k, 90 + k));
  const r = ok(await push('ov-2', second), 201);
  assert.equal(r.samples, 2, JSON.stringify(r));
  const stored = await rows(`WHERE g.uuid = '${uuids[0]}'`);
  assert.deepEqual(stored, [
    `${uuids[0]}|${t0}|10`, `${uuids[0]}|${t0 + 60}|11`, `${uuids[0]}|${t0 + 120}|12`, `${uuids[0]}|${t0 + 180}|93`,
  ]);
  assert.equal((await rows('')).length, 8);
});

test('one sample twice in a batch is stored once', async () => {
  const ts = t0 + 600;
  const r = ok(await push('ov-3', [sample(uuids[0], ts, 33), sample(uuids[0], ts, 34), sample(uuids[1], ts, 35)]), 201);
  assert.equal(r.samples, 2, JSON.stringify(r));
  assert.deepEqual(await rows(`WHERE s.ts = ${ts}`), [`${uuids[0]}|${ts}|33`, `${uuids[1]}|${ts}|35`]);
});

test('values are stored as sent: exact reals, absent fields NULL', async () => {
  const ts = t0 + 1200;
  const r = ok(await push('ov-4', [{ time: ts, gpu: uuids[0], util_avg: 12.345678901234567, power_avg_w: 250.123456789012,
    energy_j: 1e9 + 0.5, ecc_corrected: 7, xid: 79 }]), 201);
  assert.equal(r.samples, 1);
  const out = (await dbQuery(h.s.db,
    'SELECT CASE WHEN util_avg = 12.345678901234567 THEN 1 ELSE 0 END, ' +
    'CASE WHEN power_avg_w = 250.123456789012 THEN 1 ELSE 0 END, ' +
    'CASE WHEN energy_j = 1000000000.5 THEN 1 ELSE 0 END, ' +
    'CASE WHEN util_max IS NULL AND mem_used_mib IS NULL AND temp_c IS NULL THEN 1 ELSE 0 END, ' +
    `ecc_corrected, CASE WHEN ecc_uncorrected IS NULL THEN 1 ELSE 0 END, xid FROM gpu_samples WHERE ts = ${ts}`)).trim();
  assert.equal(out, '1|1|1|1|7|1|79');
});
