// Readiness: GET /readyz answers 200 {"status":"ready"} without a token
// while the database answers, and 503 {"status":"unavailable"} with
// Retry-After while it does not, recovering by itself; /healthz (liveness)
// stays 200 throughout. The database is made unanswerable by another
// process holding the locks SQLite readers need, or, on PostgreSQL, by the
// server refusing and cutting the connections to it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { useServer, sqliteOnly, pgOnly, pgName, pgAdmin } from './helpers.mjs';

const h = useServer();
let locker;

after(() => {
  if (locker && locker.exitCode === null) locker.kill('SIGKILL');
});

// SQLite in WAL mode lets readers in past any writer, so the lock taken is
// the one readers need: every read-mark slot of the shared-memory index
// (bytes 123..127 of the -shm file, per SQLite's documented WAL format),
// held exclusively by another process. A reader then gives up after its
// retries with "locking protocol".
const LOCKER = `
import fcntl, os, sys
fd = os.open(sys.argv[1] + '-shm', os.O_RDWR)
fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 5, 123)
print('locked', flush=True)
sys.stdin.read()
`;

/** Holds the read locks of the database until its stdin closes. */
function lockDatabase(db) {
  return new Promise((resolve, reject) => {
    const p = spawn('python3', ['-c', LOCKER, db], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => {
      out += d;
      if (out.includes('locked')) resolve(p);
    });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('exit', (code) => reject(new Error(`the locker exited ${code} before locking: ${err}`)));
  });
}

test('/readyz is 200 ready without a token while the database answers', async () => {
  const r = await h.s.api('GET', '/readyz', { auth: null });
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { status: 'ready' });
  // A bad token does not matter: the route is public, like /healthz.
  assert.equal((await h.s.api('GET', '/readyz', { auth: 'gpi_not-a-token' })).status, 200);
});

test('/readyz is 503 with Retry-After while the database cannot be read, then ready again',
  sqliteOnly('takes the locks of the SQLite file'), async () => {
    locker = await lockDatabase(h.s.db);
    const r = await h.s.api('GET', '/readyz', { auth: null });
    assert.equal(r.status, 503, r.text);
    assert.deepEqual(r.json, { status: 'unavailable' });
    assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After: ' + r.headers.get('retry-after'));
    // Liveness is not readiness: the process itself is fine.
    assert.equal((await h.s.api('GET', '/healthz', { auth: null })).status, 200);
    locker.stdin.end();
    await new Promise((resolve) => locker.on('exit', resolve));
    const back = await h.s.api('GET', '/readyz', { auth: null });
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(back.json, { status: 'ready' });
  });

test('/readyz is 503 while PostgreSQL refuses the database, then ready again once it is back',
  pgOnly('cuts the connections to a PostgreSQL database'), async () => {
    const name = pgName(h.s.db);
    await pgAdmin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    try {
      await pgAdmin(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}'`);
      const r = await h.s.api('GET', '/readyz', { auth: null });
      assert.equal(r.status, 503, r.text);
      assert.deepEqual(r.json, { status: 'unavailable' });
      assert.ok(Number(r.headers.get('retry-after')) >= 1, 'Retry-After: ' + r.headers.get('retry-after'));
      assert.equal((await h.s.api('GET', '/healthz', { auth: null })).status, 200);
    } finally {
      await pgAdmin(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    }
    // The server reconnects by itself; until it has, it keeps saying unavailable.
    let back;
    for (let i = 0; i < 100; i++) {
      back = await h.s.api('GET', '/readyz', { auth: null });
      if (back.status !== 503) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    assert.equal(back.status, 200, back.text);
    assert.deepEqual(back.json, { status: 'ready' });
    // And it serves again.
    assert.equal((await h.s.api('GET', '/api/v1/datacenters')).status, 200);
  });
