// The usage report of a token confined to several data centers: three data
// centers (one, two and four GPUs, each with its own team), a token of the
// first two. Without `datacenter` it gets exactly the sum of the
// single-data-center answers of an unconfined token, by team, by data
// center and as CSV, and nothing of the third; `datacenter` of its own
// narrows to it, of another is 403.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok } from './helpers.mjs';
import { scopeFleet } from './scope_fleet.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const MODEL = 'NVIDIA SC' + Math.floor(Math.random() * 1e9);

describe('usage of a token of several data centers', () => {
  const h = useServer();
  let dcs, teams, two;
  const range = { model: MODEL, from: iso(D0), to: iso(D0 + 86400), step: 'day' };
  const usage = async (q, auth) => h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...range, ...q }), auth ? { auth } : {});

  test('setup: three data centers with 1, 2 and 4 GPUs busy two hours', async () => {
    ({ dcs, teams, two } = await scopeFleet(h.s, { model: MODEL, t0: T0 }));
  });

  test('by team and by data center: the sum of its data centers, nothing of the third', async () => {
    for (const group_by of ['team', 'datacenter']) {
      const one = [];
      for (const dc of dcs) one.push(ok(await usage({ group_by, datacenter: dc.name })));
      for (const o of one) assert.ok(o.total.gpu_hours.owned > 0, JSON.stringify(o.total));
      const got = ok(await usage({ group_by }, two.token));
      const want = [...one[0].items, ...one[1].items].map((x) => x.group).sort();
      assert.deepEqual(got.items.map((x) => x.group).sort(), want);
      for (const x of got.items) assert.ok(![teams[2], dcs[2].name].includes(x.group), x.group);
      for (const k of Object.keys(got.total.gpu_hours))
        assert.ok(Math.abs(got.total.gpu_hours[k] - one[0].total.gpu_hours[k] - one[1].total.gpu_hours[k]) < 1e-6, k);
      // the data centers hold 1 and 2 GPUs: the owned hours are three times the first's
      assert.ok(Math.abs(got.total.gpu_hours.owned - 3 * one[0].total.gpu_hours.owned) < 1e-6);
      const all = ok(await usage({ group_by }));
      assert.ok(all.total.gpu_hours.owned > got.total.gpu_hours.owned + 1e-6);
    }
  });

  test('the hourly team sums and the paged GPU and host reports: its data centers only', async () => {
    // no filter but the team's: the paths that read the team hours and the rank index
    const bare = { from: iso(T0 - 3600), to: iso(T0 + 3 * 3600), step: 'hour' };
    const get = async (q, auth) => ok(await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams({ ...bare, ...q }), auth ? { auth } : {}));
    for (const q of [{ group_by: 'team' }, { group_by: 'gpu', limit: '2' }, { group_by: 'host', limit: '1' }]) {
      const one = [];
      for (const dc of dcs) one.push(await get({ ...q, datacenter: dc.name }));
      const got = await get(q, two.token);
      assert.ok(Math.abs(got.total.gpu_hours.owned - one[0].total.gpu_hours.owned - one[1].total.gpu_hours.owned) < 1e-6, JSON.stringify(q));
      assert.ok(one[2].total.gpu_hours.owned > 0);
      if (q.limit) assert.equal(got.groups_total, one[0].groups_total + one[1].groups_total, JSON.stringify(q));
      const mineGroups = new Set([...one[0].items, ...one[1].items].map((x) => x.group));
      for (const x of got.items) assert.ok(mineGroups.has(x.group), `${JSON.stringify(q)} ${x.group}`);
    }
  });

  test('CSV: the rows of its data centers only', async () => {
    const r = await usage({ group_by: 'datacenter', format: 'csv' }, two.token);
    assert.equal(r.status, 200, r.text);
    const groups = r.text.trim().split('\r\n').slice(1).map((l) => l.split(',')[0]).sort();
    assert.deepEqual(groups, [dcs[0].name, dcs[1].name].sort());
    assert.ok(!r.text.includes(dcs[2].name));
  });

  test('datacenter= of its own narrows to it; of another is 403', async () => {
    const mine = ok(await usage({ group_by: 'team', datacenter: dcs[1].name }, two.token));
    assert.deepEqual(mine.items.map((x) => x.group), [teams[1]]);
    assertError(await usage({ group_by: 'team', datacenter: dcs[2].name }, two.token), 403, { code: 'forbidden', field: 'datacenter' });
    assertError(await usage({ group_by: 'team', datacenter: String(dcs[2].id) }, two.token), 403, { code: 'forbidden' });
  });
});
