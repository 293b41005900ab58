// The per-data-center counts (dc_counts, behind the overview and the list
// totals) stay equal to a recount of the resources through a CSV import of
// many rows, a rejected import, a dry run, and the single writes after them.
// On PostgreSQL an import adds its rows' counts at its end rather than one
// row at a time; these checks hold on both stores.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, dbQuery, ok, mkDc, mkRes, uniq } from './helpers.mjs';

const h = useServer();

const importCsv = (csv, query = '') =>
  h.s.api('POST', `/api/v1/resources/import${query}`, { body: csv, contentType: 'text/csv' });

/** dc_counts (groups at zero left out) and a recount of resources, as text. */
async function countsAndRecount() {
  const counts = await dbQuery(h.s.db, 'SELECT datacenter_id, kind, state, n, gpus FROM dc_counts ' +
    'WHERE n <> 0 ORDER BY datacenter_id, kind, state');
  const recount = await dbQuery(h.s.db, 'SELECT datacenter_id, kind, state, COUNT(*), ' +
    'COALESCE(SUM(gpu_count), 0) FROM resources GROUP BY datacenter_id, kind, state ' +
    'ORDER BY datacenter_id, kind, state');
  return { counts, recount };
}

async function assertCounted(why) {
  const { counts, recount } = await countsAndRecount();
  assert.equal(counts, recount, why);
}

const states = ['available', 'in_use', 'reserved', 'maintenance', 'retired'];
const kinds = ['server', 'switch', 'storage'];

/** CSV rows over two data centers, every kind and state above, GPUs on servers. */
function rowsCsv(dcs, n, prefix) {
  const lines = ['datacenter_id,kind,name,state,tenant,gpu_model,gpu_count'];
  for (let i = 0; i < n; i++) {
    const kind = kinds[i % kinds.length];
    const state = states[Math.floor(i / kinds.length) % states.length];
    const tenant = state === 'in_use' || state === 'reserved' ? 'acme' : '';
    const gpus = kind === 'server' ? (i % 4) * 2 : 0;
    lines.push(`${dcs[i % dcs.length].id},${kind},${prefix}-${i},${state},${tenant},` +
      `${gpus ? 'H100' : ''},${gpus}`);
  }
  return lines.join('\n') + '\n';
}

test('an import of many rows is counted exactly, and so are the writes after it', async () => {
  const dcs = [await mkDc(h.s), await mkDc(h.s)];
  const before = ok(await h.s.api('GET', `/api/v1/datacenters/${dcs[0].id}/overview`));
  assert.equal(before.counts.servers, 0);

  ok(await importCsv(rowsCsv(dcs, 240, uniq('imp'))), 201);
  await assertCounted('after the import');
  const ov = ok(await h.s.api('GET', `/api/v1/datacenters/${dcs[0].id}/overview`));
  assert.equal(ov.counts.servers, 40);
  assert.equal(ov.counts.switches, 40);
  assert.equal(ov.counts.storages, 40);
  const avail = ok(await h.s.api('GET', `/api/v1/resources?datacenter=${dcs[1].id}&kind=server&state=available&limit=1`));
  assert.equal(avail.total, 8);

  // The writes after the import, in new transactions, count as they happen.
  const r = await mkRes(h.s, dcs[0].id, { gpu_model: 'H100', gpu_count: 8 });
  await assertCounted('after a create');
  ok(await h.s.api('PATCH', `/api/v1/resources/${r.id}`, { body: { state: 'maintenance', gpu_count: 4 } }));
  await assertCounted('after an update of state and GPUs');
  ok(await h.s.api('POST', `/api/v1/resources/${avail.items[0].id}/allocate`, { body: { tenant: 'beta' } }));
  await assertCounted('after an allocation');
  assert.equal((await h.s.api('DELETE', `/api/v1/resources/${r.id}`)).status, 204);
  await assertCounted('after a delete');
  // A second import into the same groups adds to them.
  ok(await importCsv(rowsCsv(dcs, 30, uniq('again'))), 201);
  await assertCounted('after a second import');
});

test('a rejected import and a dry run leave the counts as they were', async () => {
  const dc = await mkDc(h.s);
  const taken = await mkRes(h.s, dc.id, { gpu_model: 'H100', gpu_count: 8 });
  const { counts: before } = await countsAndRecount();

  // The last row's name is taken: the database refuses it after every other
  // row went in, and the whole import is undone.
  const csv = rowsCsv([dc], 45, uniq('rej')) + `${dc.id},server,${taken.name},available,,H100,8\n`;
  const r = await importCsv(csv);
  assert.ok(r.status >= 400, r.text);
  await assertCounted('after a rejected import');
  assert.equal((await countsAndRecount()).counts, before);

  const dry = ok(await importCsv(rowsCsv([dc], 45, uniq('dry')), '?dry_run=true'));
  assert.ok(dry);
  await assertCounted('after a dry run');
  assert.equal((await countsAndRecount()).counts, before);
});
