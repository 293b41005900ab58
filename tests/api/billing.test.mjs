// Cloud billing import: each provider's export stored, matched to hosts by
// instance id (hostname, Azure paths ignoring case, GCP instance names, a
// Kubernetes node's providerID) and spread over the host's GPUs, or to a
// team by its tag; re-importing adds nothing; a dry run writes nothing;
// unmatched lines are reported; bad lines name line and column and leave
// the database as it was; the CLI does the same.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { useServer, ok, assertError, mkToken, runCli, dbQuery } from './helpers.mjs';

const h = useServer();
const FIX = new URL('../fixtures/billing/', import.meta.url);
const fixture = (name) => readFileSync(new URL(name, FIX), 'utf8');
const now = () => Math.floor(Date.now() / 1000);

const importCsv = (csv, query = '') =>
  h.s.api('POST', '/api/v1/billing/import' + query, { body: csv, contentType: 'text/csv' });

let pusher;
/** Pushes one host with n GPUs of a model; returns the GPUs' database ids. */
async function host(hostname, n, model, prefix) {
  if (!pusher) {
    pusher = ok(await h.s.api('POST', '/api/v1/tokens',
      { body: { name: 'bill-pusher', role: 'pusher', source: 'bill-src' } }), 201).token;
  }
  const gpus = Array.from({ length: n }, (_, i) => ({
    uuid: `GPU-${prefix}-0000-4000-8000-00000000000${i}`, index: i, name: model,
    serial: `${prefix}-${i}`, pci_bus_id: `0000:${(0x10 + i).toString(16)}:00.0`,
  }));
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: pusher, body: {
    batch_id: 'b-' + hostname, host: { hostname }, gpus,
    samples: gpus.map((g) => ({ time: now() - 60, gpu: g.uuid, util_avg: 50 })) } });
  assert.equal(r.status, 201, r.text);
  const rows = await dbQuery(h.s.db,
    `SELECT g.id FROM gpus g JOIN hosts x ON x.id = g.host_id WHERE x.hostname = '${hostname}' ORDER BY g.idx`);
  return rows.trim().split('\n').map(Number);
}

const count = async (table) => Number((await dbQuery(h.s.db, `SELECT COUNT(*) FROM ${table}`)).trim());
const costs = async (gpuIds) => (await dbQuery(h.s.db,
  `SELECT gpu_id, cost_micros FROM billing_costs WHERE gpu_id IN (${gpuIds.join(',')}) ORDER BY gpu_id`))
  .trim().split('\n').map((l) => l.split('|').map(Number));

test('AWS CUR: a dry run writes nothing; the import spreads cost over the GPUs; again adds nothing', async () => {
  // Resource-based host names start with the instance id.
  const p4d = await host('i-0a1b2c3d4e5f60718.us-east-1.compute.internal', 8, 'NVIDIA A100-SXM4-40GB', 'a0000001');
  const csv = fixture('aws_cur_legacy.csv');
  const dry = ok(await importCsv(csv, '?dry_run=true'));
  assert.equal(dry.dry_run, true);
  assert.equal(dry.provider, 'aws');
  assert.equal(dry.variant, 'aws-cur');
  assert.equal(dry.rows, 5);
  assert.equal(dry.lines, 2);
  assert.equal(dry.skipped, 3);
  assert.equal(dry.added, 2);
  assert.equal(dry.matched_instance, 1);
  assert.equal(dry.matched_tag, 1);
  assert.equal(dry.unmatched, 0);
  assert.equal(await count('billing_lines'), 0);
  assert.equal(await count('billing_costs'), 0);

  const done = ok(await importCsv(csv));
  assert.equal(done.dry_run, false);
  assert.equal(done.added, 2);
  // $32.7726 over 8 GPUs: 4.096575 each.
  assert.deepEqual(await costs(p4d), p4d.map((id) => [id, 4096575]));
  const line = (await dbQuery(h.s.db,
    "SELECT matched_by, team, gpu_ids, cost_micros FROM billing_lines WHERE resource_id = 'i-0a1b2c3d4e5f60718'")).trim();
  assert.equal(line, `instance:i-0a1b2c3d4e5f60718|vision|${JSON.stringify(p4d)}|32772600`);
  const tagged = (await dbQuery(h.s.db,
    "SELECT matched_by, team, host_id, instance_type FROM billing_lines WHERE instance_type = 'g5.xlarge'")).trim();
  assert.equal(tagged, 'tag:team|nlp||g5.xlarge');

  const again = ok(await importCsv(csv));
  assert.equal(again.added, 0);
  assert.equal(again.duplicates, 2);
  assert.equal(await count('billing_lines'), 2);
  assert.equal(await count('billing_costs'), 8);
  const audit = ok(await h.s.api('GET', '/api/v1/audit?entity=billing'));
  assert.equal(audit.items.length, 1, 'an import that adds nothing leaves no audit row');
  assert.equal(audit.items[0].after.added, 2);
});

test('CUR 2.0 finds a host through its Kubernetes node providerID; GCP and Azure match names and paths', async () => {
  const p5 = await host('node-p5-1', 8, 'NVIDIA H100 80GB HBM3', 'b0000001');
  // The node as a Kubernetes listing records it.
  const t = now();
  await dbQuery(h.s.db, `INSERT INTO sources (name, kind, enabled, created_at, updated_at) VALUES ('bill-k8s', 'kubernetes', 0, ${t}, ${t})`);
  await dbQuery(h.s.db, 'INSERT INTO k8s_nodes (source_id, name, hostname, provider_id, first_seen_at, last_seen_at) ' +
    `SELECT id, 'node-p5-1', 'node-p5-1', 'aws:///us-east-1a/i-0123456789abcdef0', ${t}, ${t} FROM sources WHERE name = 'bill-k8s'`);
  const cur2 = ok(await importCsv(fixture('aws_cur2.csv'), '?format=aws'));
  assert.equal(cur2.variant, 'aws-cur2');
  assert.equal(cur2.matched_instance, 1);
  assert.equal(cur2.matched_tag, 1);
  assert.deepEqual(await costs(p5), p5.map((id) => [id, 6880000]));

  const t4 = await host('gpu-t4-01', 1, 'Tesla T4', 'c0000001');
  const gcp = ok(await importCsv(fixture('gcp_export.csv'), '?format=auto'));
  assert.equal(gcp.provider, 'gcp');
  assert.equal(gcp.matched_instance, 1);
  assert.equal(gcp.matched_tag, 1);
  assert.equal(gcp.skipped, 1);
  // 0.35 less the 0.07 credit.
  assert.deepEqual(await costs(t4), [[t4[0], 280000]]);

  // Azure resource paths compare ignoring case: the host is azgpu-01.
  const az = await host('azgpu-01', 1, 'NVIDIA A100 80GB PCIe', 'd0000001');
  const ea = ok(await importCsv(fixture('azure_ea.csv')));
  assert.equal(ea.variant, 'azure-ea');
  assert.equal(ea.matched_instance, 1);
  assert.equal(ea.matched_tag, 1, 'the line with an empty ResourceId goes to its team tag');
  assert.deepEqual(await costs(az), [[az[0], 88152000]]);
  const mca = ok(await importCsv(fixture('azure_mca.csv')));
  assert.equal(mca.variant, 'azure-mca');
  assert.equal(mca.matched_tag, 1);
  const payg = ok(await importCsv(fixture('azure_payg.csv')));
  assert.equal(payg.variant, 'azure-payg');
  assert.equal(payg.lines, 1);
});

test('lines matching neither an instance nor a team are reported and listed', async () => {
  const csv = 'lineItem/UsageAccountId,lineItem/UsageStartDate,lineItem/UsageEndDate,lineItem/ResourceId,' +
    'lineItem/UnblendedCost,lineItem/CurrencyCode,product/instanceType\r\n' +
    '555500001111,2026-11-05T00:00:00Z,2026-11-05T01:00:00Z,i-0deadbeefdeadbeef,98.32,USD,p5.48xlarge\r\n' +
    '555500001111,2026-11-05T00:00:00Z,2026-11-05T01:00:00Z,,1.01,USD,g5.xlarge\r\n';
  const r = ok(await importCsv(csv));
  assert.equal(r.unmatched, 2);
  assert.equal(r.unmatched_lines.length, 2);
  const [a, b] = r.unmatched_lines;
  assert.equal(a.line, 2);
  assert.equal(a.resource_id, 'i-0deadbeefdeadbeef');
  assert.equal(a.cost, '98.32');
  assert.equal(a.usage_start, '2026-11-05T00:00:00Z');
  assert.match(a.reason, /no host has this instance id/);
  assert.equal(b.resource_id, null);
  assert.match(b.reason, /no resource id/);
  const list = ok(await h.s.api('GET', '/api/v1/billing/unmatched'));
  assert.equal(list.total, 2);
  assert.deepEqual(list.items.map((l) => l.resource_id).sort(), [null, 'i-0deadbeefdeadbeef'].sort());
  assert.equal(list.items.find((l) => l.resource_id).cost, '98.32');
  assert.deepEqual(list.items[0].gpu_ids, []);
  const csvOut = await h.s.api('GET', '/api/v1/billing/unmatched?format=csv');
  assert.equal(csvOut.status, 200);
  assert.match(csvOut.text.split('\r\n')[0], /resource_id/);
  assert.equal(csvOut.text.trim().split('\r\n').length, 3);
  // Re-importing the file without line ids adds nothing either.
  const again = ok(await importCsv(csv));
  assert.equal(again.added, 0);
  assert.equal(again.duplicates, 2);
  assert.equal(again.rematched, 0);
  // Once the instance's host appears, importing the export again matches
  // the stored line and spreads its cost.
  const late = await host('i-0deadbeefdeadbeef', 2, 'NVIDIA H100 80GB HBM3', 'e0000001');
  const re = ok(await importCsv(csv));
  assert.equal(re.added, 0);
  assert.equal(re.rematched, 1);
  assert.equal(re.duplicates, 1);
  assert.deepEqual(await costs(late), late.map((id) => [id, 49160000]));
  assert.equal(ok(await h.s.api('GET', '/api/v1/billing/unmatched')).total, 1);
  assert.equal(ok(await importCsv(csv)).rematched, 0);
});

test('a bad file imports nothing and names each bad line and column', async () => {
  const before = await count('billing_lines');
  const r = await importCsv(fixture('aws_bad.csv'));
  assertError(r, 422, { code: 'validation_failed' });
  assert.equal(r.json.error_count, 2);
  assert.deepEqual(r.json.errors.map((e) => [e.line, e.column]),
    [[3, 'lineItem/UnblendedCost'], [4, 'lineItem/UsageStartDate']]);
  assert.equal(await count('billing_lines'), before);
  // Told it is GCP, an AWS file lacks GCP's columns.
  const wrong = await importCsv(fixture('aws_cur2.csv'), '?format=gcp');
  assertError(wrong, 422);
  assert.match(wrong.json.errors[0].reason, /gcp export needs this column/);
  assertError(await importCsv('a,b\n1,2\n'), 422);
  assertError(await importCsv(''), 422);
  assertError(await importCsv(fixture('aws_cur2.csv'), '?format=oracle'), 400, { field: 'format' });
  assertError(await h.s.api('POST', '/api/v1/billing/import', { body: fixture('aws_cur2.csv') }), 415);
  const v = await mkToken(h.s, 'viewer');
  assertError(await h.s.api('POST', '/api/v1/billing/import',
    { body: fixture('aws_cur2.csv'), contentType: 'text/csv', auth: v.token }), 403);
  ok(await h.s.api('GET', '/api/v1/billing/unmatched', { auth: v.token }));
  assert.equal(await count('billing_lines'), before);
});

test('gpuinv import billing: dry run, import, problems on stderr', async () => {
  const file = new URL('aws_cur2.csv', FIX).pathname;
  const csv = 'lineItem/UsageAccountId,lineItem/UsageStartDate,lineItem/ResourceId,lineItem/UnblendedCost,product/instanceType\n' +
    '777700001111,2026-11-06T00:00:00Z,i-0c11c11c11c11c11c,12.5,g6.12xlarge\n';
  const tmp = new URL('cli.csv', `file://${h.s.dir}/`).pathname;
  (await import('node:fs')).writeFileSync(tmp, csv);
  const before = await count('billing_lines');
  const dry = await runCli(['import', 'billing', tmp, '--db', h.s.db, '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  const rep = JSON.parse(dry.stdout);
  assert.equal(rep.dry_run, true);
  assert.equal(rep.added, 1);
  assert.equal(await count('billing_lines'), before);
  const real = await runCli(['import', 'billing', tmp, '--db', h.s.db, '--format', 'aws']);
  assert.equal(real.code, 0, real.stderr);
  assert.equal(JSON.parse(real.stdout).unmatched, 1);
  assert.equal(await count('billing_lines'), before + 1);
  const bad = await runCli(['import', 'billing', new URL('aws_bad.csv', FIX).pathname, '--db', h.s.db]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /line 3, column lineItem\/UnblendedCost: /);
  assert.match(bad.stderr, /nothing was imported/);
  assert.equal((await runCli(['import', 'billing', file, '--db', h.s.db, '--format', 'x'])).code, 2);
  assert.equal((await runCli(['import', 'billing', '--db', h.s.db])).code, 2);
  assert.equal(await count('billing_lines'), before + 1);
});
