// Request workers (src/http/workq.c): handlers run on `--threads` workers
// fed by every libmicrohttpd thread, and each reply reaches the request it
// answers; the database pool holds a connection for each worker, each I/O
// thread and the scheduler, which /metrics reports with the borrows that
// had to wait.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, uniq } from './helpers.mjs';

// 3 workers: 2 I/O threads (server_io_threads()), so 3 + 2 + 1 connections.
const h = useServer({ args: ['--threads', '3'] });

const metric = (text, name) => {
  const m = text.match(new RegExp(`^${name} (\\S+)$`, 'm'));
  assert.ok(m, `${name} missing from /metrics`);
  return Number(m[1]);
};

test('/metrics reports the pool: a connection per worker, per I/O thread and one more', async () => {
  const r = await h.s.api('GET', '/metrics');
  assert.equal(r.status, 200);
  assert.equal(metric(r.text, 'gpuinv_db_pool_connections'), 6);
  const waits = metric(r.text, 'gpuinv_db_pool_waits_total');
  assert.ok(Number.isInteger(waits) && waits >= 0);
  assert.ok(metric(r.text, 'gpuinv_db_pool_wait_seconds_total') >= 0);
  assert.match(r.text, /^# TYPE gpuinv_db_pool_waits_total counter$/m);
});

test('many requests at once, more than the workers: each gets its own answer', async () => {
  const names = Array.from({ length: 24 }, () => uniq('wk'));
  const made = await Promise.all(names.map((name) =>
    h.s.api('POST', '/api/v1/datacenters', { body: { name, location: 'here' } })));
  const ids = made.map((r, i) => {
    const dc = ok(r, 201);
    assert.equal(dc.name, names[i]);
    return dc.id;
  });
  assert.equal(new Set(ids).size, names.length);
  // Reads of each, three rounds at once, interleaved with misses.
  const reads = [];
  for (let round = 0; round < 3; round++) {
    ids.forEach((id, i) => {
      reads.push(h.s.api('GET', `/api/v1/datacenters/${id}`).then((res) => {
        assert.equal(ok(res).name, names[i]);
      }));
      reads.push(h.s.api('GET', `/api/v1/datacenters/${id + 1000000}`).then((res) => {
        assert.equal(res.status, 404);
      }));
    });
  }
  await Promise.all(reads);
  const list = ok(await h.s.api('GET', '/api/v1/datacenters?limit=1000'));
  for (const name of names) assert.ok(list.items.some((d) => d.name === name), name);
});
