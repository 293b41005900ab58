// Resource lists are served from documents kept by the database on every
// write; they must always equal the record as GET shows it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from '../lib/server.mjs';

let s;
before(async () => { s = await startServer({ demo: true }); });
after(async () => {
  const { code } = await s.stop();
  assert.equal(code, 0, s.stderr);
});

async function listed(id, dc) {
  const r = await s.api('GET', `/api/v1/resources?datacenter=${dc}&limit=1000`);
  return r.json.items.find((x) => x.id === id);
}

test('list items equal GET after every kind of write', async () => {
  const server = (await s.api('GET', '/api/v1/resources?datacenter=1&kind=server&state=available&limit=1')).json.items[0];
  const check = async (why) => {
    const one = (await s.api('GET', '/api/v1/resources/' + server.id)).json;
    delete one.allocations;
    delete one.discovered; /* read-time figures, not part of the stored document */
    assert.deepEqual(await listed(server.id, one.datacenter_id), one, why);
  };
  await check('as created');
  await s.api('PATCH', '/api/v1/resources/' + server.id, { body: { rack: 'R9', metadata: { owner: 'x' } } });
  await check('after PATCH');
  await s.api('POST', `/api/v1/resources/${server.id}/allocate`, { body: { tenant: 't', project: 'p' } });
  await check('after allocate');
  await s.api('POST', `/api/v1/resources/${server.id}/release`);
  await check('after release');
  await s.api('PATCH', '/api/v1/datacenters/1', { body: { name: 'Frankfurt DC1 (renamed)' } });
  await check('after the data center was renamed');
  assert.equal((await listed(server.id, 1)).datacenter, 'Frankfurt DC1 (renamed)');
});

test('list totals follow writes', async () => {
  const before = (await s.api('GET', '/api/v1/resources?datacenter=2&kind=switch&state=available')).json.total;
  const r = await s.api('POST', '/api/v1/resources', { body: { datacenter_id: 2, kind: 'switch', name: 'tor-new', ports: 48 } });
  assert.equal(r.status, 201, r.text);
  assert.equal((await s.api('GET', '/api/v1/resources?datacenter=2&kind=switch&state=available')).json.total, before + 1);
  await s.api('PATCH', '/api/v1/resources/' + r.json.id, { body: { state: 'maintenance' } });
  assert.equal((await s.api('GET', '/api/v1/resources?datacenter=2&kind=switch&state=available')).json.total, before);
  assert.equal((await s.api('GET', '/api/v1/resources?datacenter=2&kind=switch&state=maintenance')).json.total >= 1, true);
  await s.api('DELETE', '/api/v1/resources/' + r.json.id);
  const ov = (await s.api('GET', '/api/v1/datacenters/2/overview')).json;
  const all = (await s.api('GET', '/api/v1/resources?datacenter=2&kind=switch&limit=1000')).json;
  assert.equal(ov.counts.switches, all.total);
});
