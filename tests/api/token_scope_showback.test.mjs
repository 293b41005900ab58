// The showback report narrowed to data centers: three data centers (one,
// two and four GPUs, each with its own team), a price change inside the
// fleet's day (so that day is priced hour by hour), a purchase price, an
// inventory server with its own purchase cost in the second data center, a
// bill line on the first data center's instance, a line tagged with a team
// and a line that matches nothing. Each data center's report (by name, by
// id, or a token of that data center) holds exactly its team's row of the
// whole report and none of the lines that are in no data center; a token
// of the first two gets exactly their two rows; a data center outside the
// token is 403.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, uniq } from './helpers.mjs';
import { scopeFleet } from './scope_fleet.mjs';

const nowS = () => Math.floor(Date.now() / 1000);
const D0 = Math.floor(nowS() / 86400) * 86400 - 3 * 86400;
const T0 = D0 + 10 * 3600;
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const MONTH = iso(D0).slice(0, 7);
const MODEL = 'NVIDIA SB' + Math.floor(Math.random() * 1e9);
const INSTANCE = 'i-0' + [...Array(17)].map(() => Math.floor(Math.random() * 16).toString(16)).join('');
const cents = (s) => Math.round(Number(s) * 100);

describe('showback of data centers', () => {
  const h = useServer();
  let dcs, teams, two, whole;
  const showback = async (q = {}, auth) =>
    h.s.api('GET', '/api/v1/reports/showback?' + new URLSearchParams({ month: MONTH, ...q }), auth ? { auth } : {});
  const rowOf = (rep, team) => rep.items.find((r) => r.team === team);

  test('setup: three data centers, prices, a server bought, three bill lines', async () => {
    ok(await h.s.api('POST', '/api/v1/prices', { body: { model: MODEL, hourly: '2.00', effective_from: iso(D0 - 40 * 86400) } }), 201);
    ok(await h.s.api('POST', '/api/v1/prices', { body: { model: MODEL, hourly: '3.00', effective_from: iso(T0 + 3600) } }), 201);
    ok(await h.s.api('POST', '/api/v1/prices',
      { body: { kind: 'purchase', model: MODEL, amount: '35064', effective_from: iso(D0 - 40 * 86400) } }), 201);
    ({ dcs, teams, two } = await scopeFleet(h.s, {
      model: MODEL, t0: T0,
      hostname: (d) => (d === 0 ? `${INSTANCE}.ec2.internal` : uniq(`hs${d}`)),
      server: (d) => (d === 1 ? { gpu_count: 2, gpu_model: MODEL, metadata: { purchase_cost: '140256', purchase_date: iso(D0 - 40 * 86400).slice(0, 10) } } : {}),
    }));
    const rep = ok(await h.s.api('POST', '/api/v1/billing/import', { contentType: 'text/csv', body:
      'lineItem/UsageStartDate,lineItem/ResourceId,lineItem/UnblendedCost,lineItem/CurrencyCode,product/instanceType,resourceTags/user:team\n' +
      `${iso(T0)},${INSTANCE},10.00,USD,p5.48xlarge,\n` +
      `${iso(T0)},,4.00,USD,g6.xlarge,${uniq('tagged')}\n` +
      `${iso(T0)},i-0nothingnothing00,7.00,USD,p4d.24xlarge,\n` }));
    assert.equal(rep.matched_instance, 1);
    assert.equal(rep.matched_tag, 1);
    assert.equal(rep.unmatched, 1);
    whole = ok(await showback());
    for (const t of teams) assert.ok(rowOf(whole, t).gpu_hours.owned > 0, t);
    assert.equal(rowOf(whole, teams[0]).cost.billed.amount, '10.00');
    assert.ok(cents(rowOf(whole, teams[1]).cost.tco.capital) > 0);
    assert.ok(cents(rowOf(whole, teams[0]).cost.catalog.amount) > 0);
    assert.ok(cents(rowOf(whole, teams[0]).cost.tco.capital) > 0);
    assert.equal(whole.unmatched_billing.lines, 1);
    assert.equal(whole.datacenter_ids, undefined);
    assert.equal(whole.items.length, 4); // the three teams and the tagged one
  });

  test('one data center, by name, by id or by its token: its team row of the whole report', async () => {
    for (let d = 0; d < 3; d++) {
      const tok = ok(await h.s.api('POST', '/api/v1/tokens',
        { body: { name: uniq('sb1'), role: 'viewer', datacenters: [dcs[d].id] } }), 201);
      const answers = [ok(await showback({ datacenter: dcs[d].name })), ok(await showback({ datacenter: String(dcs[d].id) })),
        ok(await showback({}, tok.token)), ok(await showback({ datacenter: dcs[d].name }, tok.token))];
      for (const got of answers) {
        assert.deepEqual(got.items, [rowOf(whole, teams[d])]);
        assert.deepEqual(got.datacenter_ids, [dcs[d].id]);
        assert.equal(got.unmatched_billing, null);
        assert.deepEqual(got.total.cost, { ...rowOf(whole, teams[d]).cost });
        assert.deepEqual(got.total.gpu_hours, rowOf(whole, teams[d]).gpu_hours);
      }
      assertError(await showback({ datacenter: dcs[(d + 1) % 3].name }, tok.token), 403, { code: 'forbidden', field: 'datacenter' });
    }
  });

  test('a token of two data centers: exactly their rows, as JSON and CSV; the third is 403', async () => {
    const got = ok(await showback({}, two.token));
    assert.deepEqual(got.items, [rowOf(whole, teams[0]), rowOf(whole, teams[1])]
      .sort((a, b) => (a.team < b.team ? -1 : 1)));
    assert.deepEqual(got.datacenter_ids, [dcs[0].id, dcs[1].id]);
    assert.equal(got.unmatched_billing, null);
    // A total is its rows' unrounded sum, rounded once: within a cent of
    // the sum of the two rounded rows.
    const sumOfTwo = (got, pick, what) => {
      const d = cents(pick(got.total)) - cents(pick(rowOf(whole, teams[0]))) - cents(pick(rowOf(whole, teams[1])));
      assert.ok(Math.abs(d) <= 1, `${what}: total ${pick(got.total)}, off by ${d} cents`);
    };
    for (const f of ['amount', 'busy', 'waste', 'idle', 'unknown'])
      sumOfTwo(got, (r) => r.cost.catalog[f], f);
    sumOfTwo(got, (r) => r.cost.tco.capital, 'tco.capital');
    assert.equal(got.total.cost.billed.amount, '10.00');
    assert.ok(!JSON.stringify(got).includes(teams[2]));
    const csv = await showback({ format: 'csv' }, two.token);
    assert.equal(csv.status, 200);
    const lines = csv.text.trim().split('\r\n');
    assert.equal(lines.length, 3);
    assert.ok(!csv.text.includes(teams[2]));
    assertError(await showback({ datacenter: dcs[2].name }, two.token), 403, { code: 'forbidden', field: 'datacenter' });
    assertError(await showback({ datacenter: String(dcs[2].id) }, two.token), 403, { code: 'forbidden' });
  });

  test('a data center that does not exist has no rows', async () => {
    const got = ok(await showback({ datacenter: uniq('nowhere') }));
    assert.deepEqual(got.items, []);
    assert.equal(got.total.cost.catalog.amount, '0.00');
    assert.equal(got.unmatched_billing, null);
  });
});
