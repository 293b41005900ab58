// `gpuinv db copy`: a SQLite database copied into an empty PostgreSQL one
// answers the same API reads as the original, keeps its credentials, and a
// copy into a database that is not empty, or one that fails, leaves the
// target as it was.
//
// Needs a PostgreSQL: GPUINV_TEST_PG (a postgresql:// URL without a
// database name, or a directory whose file `conninfo` holds one, as
// tests/lib/pg.sh writes), else a throwaway cluster this file starts itself
// from /usr/lib/postgresql/15/bin (as nobody when run as root). Skipped when
// neither is there.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, chmodSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import { startServer, tempDir } from '../lib/server.mjs';
import { ok, runCli, stopClean, listAll } from './helpers.mjs';

const PG_BIN = process.env.PG_BIN || '/usr/lib/postgresql/15/bin';

/** The PostgreSQL URL base the environment names, or null. */
function envBase() {
  const v = process.env.GPUINV_TEST_PG;
  if (!v) return null;
  if (/^postgres(ql)?:\/\//.test(v)) return v;
  if (statSync(v).isDirectory()) return readFileSync(path.join(v, 'conninfo'), 'utf8').trim();
  throw new Error(`GPUINV_TEST_PG is neither a URL nor a directory: ${v}`);
}

/** The base URL with its database name set to name, keeping the query. */
function dbUrl(base, name) {
  const q = base.indexOf('?');
  const head = q < 0 ? base : base.slice(0, q);
  const query = q < 0 ? '' : base.slice(q);
  return `${head.match(/^(postgres(?:ql)?:\/\/[^/]*)/)[1]}/${name}${query}`;
}

function psql(url, sql) {
  return execFileSync('psql', ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-d', url, '-c', sql],
    { encoding: 'utf8', timeout: 30000 }).trim();
}

/** A cluster of this file's own: initdb, start on a Unix socket; stop(). */
function ownCluster() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gidbc-'));
  const data = path.join(dir, 'data');
  const root = process.getuid() === 0;
  const as = (cmd, args) => execFileSync(root ? 'setpriv' : cmd,
    root ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', '--', cmd, ...args] : args,
    { stdio: 'pipe', timeout: 120000 });
  chmodSync(dir, 0o755);
  if (root) execFileSync('chown', ['nobody:nogroup', dir]);
  as(path.join(PG_BIN, 'initdb'), ['-D', data, '--auth=trust', '-U', 'gpuinv', '-E', 'UTF8',
    '--locale=C', '--no-sync']);
  as(path.join(PG_BIN, 'pg_ctl'), ['-D', data, '-l', path.join(dir, 'log'), '-w', '-t', '60',
    '-o', `-c listen_addresses= -c unix_socket_directories=${dir} -c fsync=off ` +
      '-c synchronous_commit=off -c full_page_writes=off', 'start']);
  return {
    base: `postgresql://gpuinv@/?host=${dir}`,
    stop() {
      try { as(path.join(PG_BIN, 'pg_ctl'), ['-D', data, '-m', 'immediate', '-w', 'stop']); } catch { /* gone */ }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const available = Boolean(process.env.GPUINV_TEST_PG) || existsSync(path.join(PG_BIN, 'postgres'));

let cluster = null;
let base = null;

/** A new, empty database; resolves to its URL. */
function newPgDb() {
  const name = 'gi_copy_' + randomBytes(6).toString('hex');
  psql(dbUrl(base, 'postgres'), `CREATE DATABASE ${name}`);
  return dbUrl(base, name);
}

// Fields that depend on when they are read, not on what is stored: a
// GPU's freshness (seconds since its reading, against the clock) and a
// token's last use, which the reads of this test themselves update.
const TIME_FIELDS = new Set(['freshness_s', 'last_used_at']);

/** The value without the fields of TIME_FIELDS, at any depth. */
function stable(v) {
  if (Array.isArray(v)) return v.map(stable);
  if (v && typeof v === 'object') {
    const o = {};
    for (const k of Object.keys(v).sort()) if (!TIME_FIELDS.has(k)) o[k] = stable(v[k]);
    return o;
  }
  return v;
}

describe('gpuinv db copy', { skip: !available && 'no PostgreSQL for the tests' }, () => {
  const dir = available ? tempDir('gpuinv-dbcopy-') : null;
  const src = dir ? path.join(dir, 'demo.db') : null;
  const adminToken = 'copy-admin-' + randomBytes(16).toString('hex');
  let created; // a token created through the API before the copy
  let target;

  before(async () => {
    base = envBase();
    if (!base) {
      cluster = ownCluster();
      base = cluster.base;
    }
    // The demo fleet, then writes that leave history, audit, samples.
    const s = await startServer({ db: src, demo: true, token: adminToken });
    try {
      created = ok(await s.api('POST', '/api/v1/tokens', { body: { name: 'ci-viewer', role: 'viewer' } }), 201);
      const push = ok(await s.api('POST', '/api/v1/tokens',
        { body: { name: 'agents', role: 'pusher', source: 'lab-agents', team: 'ml', cluster: 'lab' } }), 201);
      const dcs = ok(await s.api('GET', '/api/v1/datacenters')).items;
      ok(await s.api('POST', '/api/v1/allocations',
        { body: { datacenter_id: dcs[0].id, kind: 'server', count: 1, tenant: 'acme', project: 'copy' } }), 201);
      const csv = ['datacenter_id,kind,name,gpu_count,gpu_model,rack',
        `${dcs[1].id},server,imported-1,8,H100,R9`, `${dcs[1].id},server,imported-2,4,"A100 80GB",R9`].join('\n');
      ok(await s.api('POST', '/api/v1/resources/import', { body: csv, contentType: 'text/csv' }), 201);
      const now = Math.floor(Date.now() / 1000);
      const gpus = [0, 1].map((i) => ({ uuid: `GPU-c0c0c0c0-0000-0000-0000-00000000000${i}`, serial: `SC${i}`,
        index: i, name: 'NVIDIA H100 80GB HBM3', memory_total_mib: 81559, driver: '550.54.15' }));
      const samples = [];
      // Readings of today and of three days ago: the older ones need a
      // partition the target does not have yet.
      for (const t of [now - 3 * 86400, now - 60, now]) {
        for (const g of gpus) samples.push({ time: t, gpu: g.uuid, util_avg: 42.5, util_max: 90, mem_used_mib: 1234.25, power_avg_w: 250.5, temp_c: 61 });
      }
      ok(await s.api('POST', '/api/v1/ingest', { auth: push.token, body: {
        batch_id: 'copy-1', host: { hostname: 'copy-node-1', machine_id: 'mid-copy-1' }, gpus, samples,
        processes: [{ gpu: gpus[0].uuid, pid: 4242, name: 'python train.py', user: 'alice', uid: 1000 }],
      } }), 201);
      // More assets than one batch of the copy, the first of them inside
      // the last: a child whose id is far below its parent's.
      const rows = ['asset tag,kind,serial,model'];
      for (let i = 0; i < 1100; i++) rows.push(`CP-${String(i).padStart(5, '0')},gpu,CPS${i},H100`);
      rows.push('CP-SERVER,server,CPSRV,XE9680');
      ok(await s.api('POST', '/api/v1/assets/import', { body: rows.join('\n'), contentType: 'text/csv' }));
      ok(await s.api('PATCH', '/api/v1/assets/CP-00000', { body: { parent: 'CP-SERVER' } }));
    } finally {
      await stopClean(s);
    }
    target = newPgDb();
  });

  after(() => { if (cluster) cluster.stop(); });

  test('usage errors exit 2 and say what is wrong', async () => {
    let r = await runCli(['db', 'copy', '--from', src]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--from and --to are required/);
    r = await runCli(['db', 'copy', '--from', target, '--to', target]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--from must be a SQLite database file/);
    r = await runCli(['db', 'copy', '--from', src, '--to', path.join(dir, 'other.db')]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--to must be a PostgreSQL database/);
    r = await runCli(['db', 'copy', '--from', path.join(dir, 'missing.db'), '--to', target]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /no such database file/);
    assert.equal(existsSync(path.join(dir, 'missing.db')), false);
    r = await runCli(['db', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /gpuinv db copy --from/);
  });

  test('a dry run verifies and leaves the target empty', async () => {
    const r = await runCli(['db', 'copy', '--from', src, '--to', target, '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^resources\s+\d+$/m);
    assert.match(r.stderr, /dry run/);
    assert.equal(psql(target, 'SELECT COUNT(*) FROM resources'), '0');
    assert.equal(psql(target, 'SELECT COUNT(*) FROM audit'), '0');
  });

  test('the copy reports every table with the same row counts as the source', async () => {
    const r = await runCli(['db', 'copy', '--from', src, '--to', target]);
    assert.equal(r.code, 0, r.stderr);
    const report = Object.fromEntries(r.stdout.trim().split('\n').map((l) => {
      const [t, n] = l.trim().split(/\s+/);
      return [t, Number(n)];
    }));
    const tables = execFileSync('sqlite3', ['-readonly', src,
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_version'"],
    { encoding: 'utf8' }).trim().split('\n');
    assert.deepEqual(Object.keys(report).sort(), tables.sort());
    for (const t of tables) {
      const n = Number(execFileSync('sqlite3', ['-readonly', src, `SELECT COUNT(*) FROM "${t}"`], { encoding: 'utf8' }));
      assert.equal(report[t], n, `source rows of ${t}`);
      assert.equal(Number(psql(target, `SELECT COUNT(*) FROM "${t}"`)), n, `target rows of ${t}`);
    }
    for (const t of ['audit', 'resources', 'allocations', 'tokens', 'gpus', 'gpu_samples', 'gpu_events', 'ingest_batches']) {
      assert.ok(report[t] > 0, `${t} has rows to copy`);
    }
    assert.match(r.stderr, /resources: \d+ rows copied/);
    // The old readings got a day partition of their own, not DEFAULT.
    assert.equal(psql(target, 'SELECT COUNT(*) FROM gpu_samples_default'), '0');
    // A child copied a whole batch before its parent keeps its parent.
    assert.equal(psql(target, "SELECT p.tag FROM assets a JOIN assets p ON p.id = a.parent_id WHERE a.tag = 'CP-00000'"), 'CP-SERVER');
  });

  test('the copy answers the same API reads as the original', async () => {
    // Neither server seeds credentials: both answer from what is stored.
    const env = { GPUINV_ADMIN_TOKEN: '', GPUINV_ADMIN_PASSWORD: '' };
    const a = await startServer({ db: src, env });
    const b = await startServer({ db: target, env });
    try {
      const get = async (s, p) => ok(await s.api('GET', p, { auth: adminToken }));
      const same = async (p) => {
        const [x, y] = [await get(a, p), await get(b, p)];
        assert.deepEqual(stable(y), stable(x), `GET ${p}`);
        return x;
      };
      const dcs = await same('/api/v1/datacenters');
      assert.ok(dcs.items.length >= 3);
      for (const dc of dcs.items) {
        await same(`/api/v1/datacenters/${dc.id}`);
        await same(`/api/v1/datacenters/${dc.id}/overview`);
      }
      const all = await listAll(a, '/api/v1/resources?limit=50', { auth: adminToken });
      const allB = await listAll(b, '/api/v1/resources?limit=50', { auth: adminToken });
      assert.deepEqual(stable(allB), stable(all));
      await same('/api/v1/resources?limit=25&sort=name');
      await same('/api/v1/resources?kind=server&state=in_use');
      await same(`/api/v1/resources/${all.items[0].id}`);
      const imported = all.items.find((x) => x.name === 'imported-2');
      await same(`/api/v1/resources/${imported.id}`);
      const gpus = await same('/api/v1/gpus');
      assert.equal(gpus.items.length, 2);
      await same(`/api/v1/gpus/${gpus.items[0].uuid}`);
      const hosts = await same('/api/v1/hosts');
      await same(`/api/v1/hosts/${hosts.items[0].id}`);
      await same('/api/v1/drift');
      await same('/api/v1/sources');
      await same('/api/v1/audit?limit=200');
      await same('/api/v1/tokens');
      await same('/api/v1/kinds');

      // Credentials: the admin token (by its stored hash alone) and the
      // viewer created before the copy authenticate on the copy.
      const me = await b.api('GET', '/api/v1/datacenters', { auth: created.token });
      assert.equal(me.status, 200, me.text);
      const denied = await b.api('POST', '/api/v1/datacenters', { auth: created.token, body: { name: 'x' } });
      assert.equal(denied.status, 403, denied.text);
      assert.equal((await b.api('GET', '/api/v1/datacenters', { auth: 'gpi_not-a-token-at-all-000000' })).status, 401);

      // New rows on the copy get new ids, past the copied ones.
      const dc = ok(await b.api('POST', '/api/v1/datacenters', { auth: adminToken, body: { name: 'after-copy' } }), 201);
      assert.ok(dc.id > Math.max(...dcs.items.map((x) => x.id)));
      const res = ok(await b.api('POST', '/api/v1/resources',
        { auth: adminToken, body: { datacenter_id: dc.id, kind: 'server', name: 'after-1', gpu_count: 8, gpu_model: 'H100' } }), 201);
      assert.ok(res.id > Math.max(...all.items.map((x) => x.id)));
      const t = ok(await b.api('POST', '/api/v1/tokens', { auth: adminToken, body: { name: 'after', role: 'viewer' } }), 201);
      assert.ok(t.id > created.id);
    } finally {
      await stopClean(a);
      await stopClean(b);
    }
  });

  test('a second copy into the same target is refused, naming a table', async () => {
    const before = psql(target, 'SELECT COUNT(*) FROM resources');
    const r = await runCli(['db', 'copy', '--from', src, '--to', target]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /the target is not empty: table \w+ has rows/);
    assert.match(r.stderr, /new, empty database/);
    assert.equal(psql(target, 'SELECT COUNT(*) FROM resources'), before);
  });

  test('a copy that fails leaves the target empty', async () => {
    // A target where a resource's name is refused half way through the
    // copy: the rows before it, in that table and in the others, must go.
    const t = newPgDb();
    let r = await runCli(['db', 'copy', '--from', src, '--to', t, '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    psql(t, "ALTER TABLE resources ADD CONSTRAINT no_imported CHECK (name <> 'imported-2')");
    r = await runCli(['db', 'copy', '--from', src, '--to', t]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /copy failed: cannot insert rows of resources/);
    assert.match(r.stderr, /the target is as it was/);
    for (const table of ['audit', 'datacenters', 'resources', 'tokens', 'users', 'dc_counts', 'gpu_samples']) {
      assert.equal(psql(t, `SELECT COUNT(*) FROM ${table}`), '0', table);
    }
    // The trigger the copy switches off for its transaction is on again.
    assert.equal(psql(t, "SELECT tgenabled FROM pg_trigger WHERE tgname = 'resources_count_insert'"), 'O');
    // And once the obstacle is gone, the same target takes the copy.
    psql(t, 'ALTER TABLE resources DROP CONSTRAINT no_imported');
    r = await runCli(['db', 'copy', '--from', src, '--to', t]);
    assert.equal(r.code, 0, r.stderr);
  });
});
