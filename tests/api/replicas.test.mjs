// Several `gpuinv serve` replicas on one database. What one writes, the
// others read. A pull source is pulled about once per interval by the
// replicas together, not once per replica, because each scheduled pull
// first takes the source's job lease in the database; when the replica
// that pulled last is killed, the survivors go on pulling within about
// one interval. The stand-in exporter counts the scrapes it answers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../lib/server.mjs';
import { ok, assertError, mkDc, mkRes, stopClean } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const metrics = readFileSync(path.join(here, '..', 'fixtures', 'prom', 'dcgm_a100_8gpu.prom'));

// Sources may be pulled every INTERVAL seconds here (the API's floor is 10
// s unless GPUINV_MIN_INTERVAL_S lowers it); each replica then looks for
// due work every second.
const INTERVAL = 3;
const WINDOW_INTERVALS = 5;
const env = { GPUINV_MIN_INTERVAL_S: '1' };

let replicas = [];
let exporter;
let exporterUrl;
const scrapes = []; // the time of each scrape
// While the exporter is slow, a pull lasts longer than a replica waits
// between its looks for due work: the other replicas look while the
// source is being pulled, and only its lease stops them pulling it too.
let delayMs = 0;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(fn, what, ms) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out waiting for ' + what);
    await sleep(100);
  }
}

before(async () => {
  exporter = http.createServer((req, res) => {
    if (req.url !== '/metrics') { res.writeHead(404).end(); return; }
    scrapes.push(Date.now());
    setTimeout(() => res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4' }).end(metrics), delayMs);
  });
  await new Promise((r) => exporter.listen(0, '127.0.0.1', r));
  exporterUrl = `http://127.0.0.1:${exporter.address().port}/metrics`;
  const first = await startServer({ env });
  replicas = [first];
  for (let i = 1; i < 3; i++) {
    replicas.push(await startServer({ db: first.db, dir: first.dir, token: first.token,
      password: first.password, env }));
  }
});

after(async () => {
  for (const s of replicas) if (s.child.exitCode === null && s.child.signalCode === null) await stopClean(s);
  exporter.close();
});

test('what one replica writes, the others read', async () => {
  const [a, b, c] = replicas;
  const dc = await mkDc(a);
  const res = await mkRes(a, dc.id, { rack: 'R1' });
  const seen = ok(await b.api('GET', `/api/v1/resources/${res.id}`));
  assert.equal(seen.name, res.name);
  assert.equal(seen.datacenter_id, dc.id);
  ok(await c.api('PATCH', `/api/v1/resources/${res.id}`, { body: { rack: 'R2' } }));
  assert.equal(ok(await a.api('GET', `/api/v1/resources/${res.id}`)).rack, 'R2');
  assert.equal(ok(await b.api('GET', `/api/v1/datacenters/${dc.id}`)).name, dc.name);
});

/** The replica a holder id ("hostname:pid:random") names. */
function replicaOf(holder) {
  const pid = Number(String(holder).split(':').at(-2));
  return replicas.find((s) => s.pid === pid);
}

test('a source is pulled once per interval by all replicas together, and survives its puller', async () => {
  const [a, b] = replicas;
  const src = ok(await a.api('POST', '/api/v1/sources', {
    body: { name: 'shared-exporter', kind: 'dcgm-exporter', config: { url: exporterUrl }, interval_s: INTERVAL },
  }), 201);
  assert.equal(src.last_pulled_by, null);
  await waitFor(() => scrapes.length >= 1, 'the first scheduled pull', 15000);

  // Count over several intervals. Claims are whole seconds at least
  // INTERVAL apart, so one puller at a time makes at most WINDOW_INTERVALS
  // + 1 of them; three replicas each pulling would make about three times
  // WINDOW_INTERVALS.
  delayMs = 1500;
  const from = scrapes.length;
  await sleep(WINDOW_INTERVALS * INTERVAL * 1000);
  const n = scrapes.length - from;
  delayMs = 0;
  assert.ok(n <= WINDOW_INTERVALS + 1, `${n} pulls in ${WINDOW_INTERVALS} intervals: more than one replica pulls`);
  assert.ok(n >= WINDOW_INTERVALS - 1, `${n} pulls in ${WINDOW_INTERVALS} intervals: pulls are missed`);

  // Every replica shows who pulled last: one of them.
  const doc = ok(await b.api('GET', `/api/v1/sources/${src.id}`));
  assert.match(doc.last_pulled_by, /^[^:]+:\d+:[0-9a-f]{8}$/);
  assert.ok(replicaOf(doc.last_pulled_by), `no replica is ${doc.last_pulled_by}`);
  assert.equal(ok(await a.api('GET', '/api/v1/sources')).items.find((x) => x.id === src.id).last_pulled_by,
    doc.last_pulled_by);

  // Kill the puller just after a pull has finished (pulls take
  // milliseconds again; the next is INTERVAL seconds away), so that it
  // dies between runs, holding no lease.
  await sleep(1600); // a slow pull still in flight ends
  const k = scrapes.length;
  await waitFor(() => scrapes.length > k, 'the next pull', (INTERVAL + 3) * 1000);
  await sleep(500);
  const latest = ok(await a.api('GET', `/api/v1/sources/${src.id}`)).last_pulled_by;
  const victim = replicaOf(latest);
  assert.ok(victim, `no replica is ${latest}`);
  const killedAt = Date.now();
  victim.child.kill('SIGKILL');
  await new Promise((r) => victim.child.once('exit', r));
  const survivors = replicas.filter((s) => s !== victim);

  // The survivors take over within about one interval and a poll.
  const before = scrapes.length;
  await waitFor(() => scrapes.length > before, 'a survivor to pull', (INTERVAL + 1 + 3) * 1000);
  assert.ok(scrapes.at(-1) - killedAt <= (INTERVAL + 1 + 3) * 1000);
  await sleep(500);
  const now = ok(await survivors[0].api('GET', `/api/v1/sources/${src.id}`));
  assert.ok(survivors.includes(replicaOf(now.last_pulled_by)), `pulled by ${now.last_pulled_by}`);
  assert.equal(now.last_error, null);
  // And still about once per interval between the two of them.
  const from2 = scrapes.length;
  await sleep(2 * INTERVAL * 1000);
  const n2 = scrapes.length - from2;
  assert.ok(n2 >= 1 && n2 <= 3, `${n2} pulls in 2 intervals after the failover`);
  replicas = survivors;
});

test('interval_s is at least 10 s unless GPUINV_MIN_INTERVAL_S lowers the floor', async () => {
  const body = (name, interval) => ({ name, kind: 'dcgm-exporter', config: { url: exporterUrl }, interval_s: interval, enabled: false });
  const plain = await startServer();
  try {
    assertError(await plain.api('POST', '/api/v1/sources', { body: body('too-often', 9) }), 400, { field: 'interval_s' });
    ok(await plain.api('POST', '/api/v1/sources', { body: body('often-enough', 10) }), 201);
  } finally {
    await stopClean(plain);
  }
  const [a] = replicas;
  assertError(await a.api('POST', '/api/v1/sources', { body: body('never', 0) }), 400, { field: 'interval_s' });
  ok(await a.api('POST', '/api/v1/sources', { body: body('each-second', 1) }), 201);
});
