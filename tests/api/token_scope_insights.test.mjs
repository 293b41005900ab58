// The insights of a token confined to several data centers: three data
// centers (three, four and five GPUs, each with its own team and pod), a
// token of the first two. In each data center the pod holds every GPU but
// the last, using only the first (80 %) and leaving the others at 0 %
// (allocated-idle, over-requesting); nobody holds the last, at 0 % (idle).
// Without `datacenter` every route answers exactly the combination of the
// single-data-center answers of an unconfined token (the heatmap's cells
// summed, every other route's items united) and nothing of the third,
// including the paths that read the team sums when nothing but the team
// filters; a token of another set of data centers never gets the first's
// kept savings; `datacenter` of its own narrows to it, of another is 403.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { useServer, assertError, ok, uniq } from './helpers.mjs';
import { scopeFleet } from './scope_fleet.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const MODEL = 'NVIDIA SI' + Math.floor(Math.random() * 1e9);
const COUNTS = [3, 4, 5];

// Items as comparable text, their rank (a position in the list) aside.
const norm = (items) => items.map(({ rank, ...x }) => JSON.stringify(x)).sort();

describe('insights of a token of several data centers', () => {
  const h = useServer();
  let f;
  const range = { from: iso(T0), to: iso(T0 + 3 * 3600) };
  const get = async (path, q, auth) => h.s.api('GET', `${path}?` + new URLSearchParams({ ...range, ...q }), auth ? { auth } : {});
  // The answers of an unconfined token for each data center alone.
  const single = async (path, q = {}) => {
    const one = [];
    for (const dc of f.dcs) one.push(ok(await get(path, { ...q, datacenter: dc.name })));
    return one;
  };
  // Nothing of the third data center: its team, name, host and GPUs.
  const noneOfThird = (body, what) => {
    const text = JSON.stringify(body);
    for (const x of [f.teams[2], f.dcs[2].name, f.hosts[2], ...f.gpus[2]]) assert.ok(!text.includes(x), `${what}: ${x}`);
  };

  test('setup: three data centers with 3, 4 and 5 GPUs for three hours', async () => {
    f = await scopeFleet(h.s, {
      model: MODEL, t0: T0, hours: 3, counts: COUNTS,
      gpu: (d, i) => ({ util: i === 0 ? 80 : 0, pod: i < COUNTS[d] - 1 ? `job-d${d}` : null }),
    });
  });

  test('heatmap: each hour of the week the sum of its data centers', async () => {
    for (const q of [{}, { model: MODEL }]) {
      const one = await single('/api/v1/usage/heatmap', q);
      const got = ok(await get('/api/v1/usage/heatmap', q, f.two.token));
      const all = ok(await get('/api/v1/usage/heatmap', q));
      let owned = 0;
      got.items.forEach((cell, i) => {
        for (const k of Object.keys(cell.gpu_hours)) {
          const want = one[0].items[i].gpu_hours[k] + one[1].items[i].gpu_hours[k];
          assert.ok(Math.abs(cell.gpu_hours[k] - want) < 1e-6, `${JSON.stringify(q)} ${i} ${k}: ${cell.gpu_hours[k]} != ${want}`);
        }
        owned += cell.gpu_hours.owned;
      });
      // 3 + 4 GPUs for the three hours; the third's 5 are not in it.
      assert.ok(Math.abs(owned - 21) < 1e-6, String(owned));
      assert.ok(Math.abs(all.items.reduce((s, c) => s + c.gpu_hours.owned, 0) - 36) < 1e-6);
    }
  });

  test('trend, idle, allocated-idle, waste, top consumers, over-request, savings: the union of its data centers', async () => {
    const routes = [
      ['/api/v1/usage/trend', { group_by: 'team' }],
      ['/api/v1/usage/trend', { group_by: 'datacenter' }],
      ['/api/v1/usage/trend', { group_by: 'gpu', model: MODEL }],
      ['/api/v1/insights/idle', {}],
      ['/api/v1/insights/allocated-idle', {}],
      ['/api/v1/insights/waste-by-team', {}],
      ['/api/v1/insights/waste-by-team', { team: '' }],
      ['/api/v1/insights/top-consumers', {}],
      ['/api/v1/insights/overrequest', {}],
      ['/api/v1/insights/savings', { min_hours: '2' }],
    ];
    for (const [path, q] of routes) {
      const what = `${path} ${JSON.stringify(q)}`;
      const one = await single(path, q);
      for (const o of one) assert.ok(o.items.length > 0, what);
      const got = ok(await get(path, q, f.two.token));
      assert.deepEqual(norm(got.items), norm([...one[0].items, ...one[1].items]), what);
      noneOfThird(got, what);
      const all = ok(await get(path, q));
      assert.equal(all.items.length, one[0].items.length + one[1].items.length + one[2].items.length, what);
    }
    // By hand: the over-requesting pods hold 2 and 3 GPUs idle of 3 and 4.
    const over = ok(await get('/api/v1/insights/overrequest', {}, f.two.token)).items.sort((a, b) => a.n - b.n);
    assert.deepEqual(over.map((x) => [x.workload, x.n, x.k]), [['ns/job-d0', 2, 1], ['ns/job-d1', 3, 2]]);
    // The idle GPUs: the last of each of its data centers.
    const idle = ok(await get('/api/v1/insights/idle', {}, f.two.token)).items.map((x) => x.gpu).sort();
    assert.deepEqual(idle, [f.gpus[0][2], f.gpus[1][3]].sort());
  });

  test('CSV: the rows of its data centers only', async () => {
    const r = await get('/api/v1/insights/waste-by-team', { format: 'csv' }, f.two.token);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text.trim().split('\r\n').length, 3, r.text);
    assert.ok(r.text.includes(f.teams[0]) && r.text.includes(f.teams[1]) && !r.text.includes(f.teams[2]));
  });

  test('the kept savings of one set of data centers are never another set\'s', async () => {
    await sleep(1100); // an answer is kept only when read in a later second than the rollup's write
    const q = { min_hours: '1' };
    const one = await single('/api/v1/insights/savings', q);
    const mine = ok(await get('/api/v1/insights/savings', q, f.two.token));
    assert.deepEqual(norm(mine.items), norm([...one[0].items, ...one[1].items]));
    // The same question again: the same answer (kept).
    assert.deepEqual(ok(await get('/api/v1/insights/savings', q, f.two.token)).items, mine.items);
    const other = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('other'), role: 'viewer', datacenters: [f.dcs[2].id, f.dcs[1].id] } }), 201);
    const theirs = ok(await get('/api/v1/insights/savings', q, other.token));
    assert.deepEqual(norm(theirs.items), norm([...one[1].items, ...one[2].items]));
    const text = JSON.stringify(theirs);
    for (const g of f.gpus[0]) assert.ok(!text.includes(g), g);
    // The same set in another order asks the same question.
    const again = ok(await h.s.api('POST', '/api/v1/tokens', { body: { name: uniq('again'), role: 'viewer', datacenters: [f.dcs[1].id, f.dcs[0].id] } }), 201);
    assert.deepEqual(ok(await get('/api/v1/insights/savings', q, again.token)).items, mine.items);
  });

  test('datacenter= of its own narrows to it; of another is 403', async () => {
    const one = await single('/api/v1/insights/waste-by-team');
    const mine = ok(await get('/api/v1/insights/waste-by-team', { datacenter: f.dcs[1].name }, f.two.token));
    assert.deepEqual(mine.items, one[1].items);
    for (const path of ['/api/v1/usage/heatmap', '/api/v1/usage/trend', '/api/v1/insights/idle', '/api/v1/insights/savings']) {
      assertError(await get(path, { datacenter: f.dcs[2].name }, f.two.token), 403, { code: 'forbidden', field: 'datacenter' });
      assertError(await get(path, { datacenter: String(f.dcs[2].id) }, f.two.token), 403, { code: 'forbidden' });
    }
  });
});
