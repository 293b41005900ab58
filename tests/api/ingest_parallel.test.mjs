// Push batches that arrive at once, on two replicas of one database. On
// PostgreSQL a batch locks only its host and its GPUs, so batches of other
// hosts run beside it, while batches of one host, or two reports of one
// GPU, wait for each other; on SQLite writers take turns. Either way every
// sample is stored once, a batch sent to both replicas at once is applied
// once, and each GPU row ends as its reports left it: a GPU that moves to
// another host while its old host reports without it stays present.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, dbQuery, ok, stopClean } from './helpers.mjs';
import { startServer } from '../lib/server.mjs';

const h = useServer();
let other; // a second replica on the same database
let token;
const t0 = Math.floor(Date.now() / 1000) - 7200;

after(async () => { if (other) await stopClean(other); });

const gpu = (uuid, i) => ({ uuid, index: i, serial: `PAR-${uuid.slice(-6)}`, name: 'NVIDIA H100 80GB HBM3',
  pci_bus_id: `00000000:${(0x18 + i).toString(16)}:00.0`, memory_total_mib: 81559 });

// A batch of host `host` naming `uuids`, with `per` samples per GPU from ts on.
function batch(id, host, uuids, ts, per) {
  const rows = [];
  for (let k = 0; k < per; k++) uuids.forEach((_, g) => rows.push([ts + 60 * k, g, 10 + k, 20 + k, 1000, 250.5, 50]));
  return {
    batch_id: id, host: { hostname: host }, gpus: uuids.map(gpu),
    samples: { columns: ['time', 'gpu', 'util_avg', 'util_max', 'mem_used_mib', 'power_avg_w', 'temp_c'], rows },
  };
}

const push = (server, body) => server.api('POST', '/api/v1/ingest', { body, auth: token });
const uuidOf = (tag, n) => `GPU-9a7a11e1-0000-0000-${tag}-${String(n).padStart(12, '0')}`;
const count = async (sql) => Number((await dbQuery(h.s.db, sql)).trim());

test('setup: two replicas', async () => {
  token = ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'parallel', role: 'pusher', source: 'parallel-agent' } }), 201).token;
  other = await startServer({ db: h.s.db, token: h.s.token });
});

test('batches of several hosts at once all land, each sample once', async () => {
  const hosts = 6, batches = 5, per = 10;
  const sends = [];
  for (let b = 0; b < batches; b++) {
    for (let x = 0; x < hosts; x++) {
      const uuids = [uuidOf('0001', x * 2), uuidOf('0001', x * 2 + 1)];
      const body = batch(`par-${x}-${b}`, `par-host-${x}`, uuids, t0 + b * per * 60, per);
      sends.push(push((x + b) % 2 ? other : h.s, body));
    }
  }
  const replies = await Promise.all(sends);
  for (const r of replies) assert.equal(ok(r, 201).samples, 2 * per, JSON.stringify(r.json));
  assert.equal(await count("SELECT COUNT(*) FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id " +
    "WHERE g.uuid LIKE 'GPU-9a7a11e1-0000-0000-0001-%'"), hosts * batches * 2 * per);
  // Every GPU sits on its own host, present, showing its newest sample.
  const last = t0 + ((batches - 1) * per + per - 1) * 60;
  const rows = (await dbQuery(h.s.db, 'SELECT g.uuid, h.hostname, g.sample_at, ' +
    'CASE WHEN g.missing_since IS NULL THEN 1 ELSE 0 END FROM gpus g JOIN hosts h ON h.id = g.host_id ' +
    "WHERE g.uuid LIKE 'GPU-9a7a11e1-0000-0000-0001-%' ORDER BY g.uuid")).trim().split('\n');
  assert.equal(rows.length, hosts * 2);
  rows.forEach((row, i) => assert.equal(row, `${uuidOf('0001', i)}|par-host-${Math.floor(i / 2)}|${last}|1`));
  assert.equal(await count("SELECT COUNT(*) FROM ingest_batches WHERE batch_id LIKE 'par-%'"), hosts * batches);
  // The source counts every GPU it reports, whichever batch committed last.
  assert.equal(await count("SELECT gpus_reported FROM sources WHERE name = 'parallel-agent'"), hosts * 2);
});

test('one batch sent to both replicas at once is applied once', async () => {
  const per = 5, rounds = 8;
  const uuids = [uuidOf('0002', 0), uuidOf('0002', 1)];
  for (let b = 0; b < rounds; b++) {
    const body = batch(`twice-${b}`, 'twice-host', uuids, t0 + b * per * 60, per);
    const [a, c] = await Promise.all([push(h.s, body), push(other, body)]);
    // One replica applies it (201); the other finds it applied (200, duplicate).
    const applied = [a, c].filter((r) => r.status === 201);
    const dup = [a, c].filter((r) => r.status === 200);
    assert.equal(applied.length, 1, JSON.stringify([a.json, c.json]));
    assert.equal(dup.length, 1, JSON.stringify([a.json, c.json]));
    assert.equal(applied[0].json.samples, 2 * per);
    assert.equal(dup[0].json.duplicate, true);
  }
  assert.equal(await count("SELECT COUNT(*) FROM gpu_samples s JOIN gpus g ON g.id = s.gpu_id " +
    "WHERE g.uuid LIKE 'GPU-9a7a11e1-0000-0000-0002-%'"), rounds * per * 2);
  assert.equal(await count("SELECT COUNT(*) FROM ingest_batches WHERE batch_id LIKE 'twice-%'"), rounds);
  assert.equal(await count('SELECT COUNT(*) FROM gpus g JOIN hosts h ON h.id = g.host_id ' +
    `WHERE h.hostname = 'twice-host' AND g.sample_at = ${t0 + ((rounds - 1) * per + per - 1) * 60}`), 2);
});

test('a GPU moving to another host while its old host reports without it stays present', async () => {
  const rounds = 8;
  // Each round: host A reports GPUs g and a; then, at once, A reports only a
  // (so g is no longer on A) and host B reports g.
  for (let i = 0; i < rounds; i++) {
    const g = uuidOf('0003', 2 * i), a = uuidOf('0003', 2 * i + 1);
    ok(await push(h.s, batch(`move-a0-${i}`, `move-a-${i}`, [g, a], t0, 1)), 201);
  }
  const sends = [];
  for (let i = 0; i < rounds; i++) {
    const g = uuidOf('0003', 2 * i), a = uuidOf('0003', 2 * i + 1);
    sends.push(push(i % 2 ? h.s : other, batch(`move-a1-${i}`, `move-a-${i}`, [a], t0 + 60, 1)));
    sends.push(push(i % 2 ? other : h.s, batch(`move-b-${i}`, `move-b-${i}`, [g], t0 + 60, 1)));
  }
  for (const r of await Promise.all(sends)) ok(r, 201);
  for (let i = 0; i < rounds; i++) {
    const g = uuidOf('0003', 2 * i);
    const row = (await dbQuery(h.s.db, 'SELECT h.hostname, CASE WHEN g.missing_since IS NULL THEN 1 ELSE 0 END ' +
      `FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE g.uuid = '${g}'`)).trim();
    assert.equal(row, `move-b-${i}|1`, `round ${i}`);
    const doc = ok(await h.s.api('GET', `/api/v1/gpus/${g}`));
    assert.equal(doc.missing_since ?? null, null, JSON.stringify(doc));
  }
});
