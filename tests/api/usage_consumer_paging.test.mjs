// The consumer report is paged as the host and GPU reports are: groups
// (a consumer, or the rest of the owned time as kind "none") ordered by
// owned GPU-hours over the range (descending, then kind and key), limit and
// offset, groups_total and next_offset, the total over every group. Rows
// written as the rollup job leaves them, on a model of this file's own.
//
// Day D0 (three days ago), GPUs 7701 and 7702 own 8 hours each from 00:00:
// - 7701: pod ml/cp-a holds 3 hours, pod ml/cp-b 2 hours;
// - 7702: process bob/cp-c 2 hours, process carol/cp-d 1 hour;
// the rest (8 hours) is nobody's. Order: none 8, cp-a 3, cp-b 2 (k8s)
// before cp-c 2 (process), cp-d 1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, dbQuery } from './helpers.mjs';
import { daySumsSql, consumerDaysSql } from './day_sums.mjs';

// The rows are written as the rollup job leaves them, so the job itself
// does not run: it would write the same days (the GPUs' unknown hours) while
// the fixture replaces them.
const h = useServer({ args: ['--no-rollup'] });
const H = 3600;
const D0 = Math.floor(Date.now() / 1000 / 86400) * 86400 - 3 * 86400;
const MODEL = 'NVIDIA CP' + Math.floor(Math.random() * 1e9);
const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
const DAY = { from: iso(D0), to: iso(D0 + 86400), model: MODEL };
const ORDER = [['none', null], ['k8s', 'ml/cp-a/main'], ['k8s', 'ml/cp-b/main'], ['process', 'bob/cp-c'], ['process', 'carol/cp-d']];
const OWNED = [8, 3, 2, 2, 1];
const close = (a, b, msg) => assert.ok(Math.abs(a - b) < 1e-5, `${msg}: ${a} != ${b}`);

async function usage(q) {
  return ok(await h.s.api('GET', '/api/v1/usage?' + new URLSearchParams(q)));
}

test('the fleet is written as the rollup job would leave it', async () => {
  let sql = "INSERT INTO hosts (id, hostname, first_seen_at, last_seen_at) VALUES (7700, 'cp-node', 1, 1);\n";
  const held = (gpu, k, kind, name, user) => {
    sql += `INSERT INTO usage_consumers (gpu_id, hour, kind, consumer, team, namespace, pod, username,
      allocated_s, busy_s, alloc_idle_s, util_sum, measured_s, util_max) VALUES (${gpu}, ${D0 + k * H},
      '${kind}', '${name}', 'cp-team', ${kind === 'k8s' ? "'ml'" : 'NULL'},
      ${kind === 'k8s' ? `'${name.split('/')[1]}'` : 'NULL'}, ${user ? `'${user}'` : 'NULL'}, 3600, 3600, 0,
      180000, 3600, 50);\n`;
  };
  const holders = {
    7701: [['k8s', 'ml/cp-a/main'], ['k8s', 'ml/cp-a/main'], ['k8s', 'ml/cp-a/main'], ['k8s', 'ml/cp-b/main'], ['k8s', 'ml/cp-b/main']],
    7702: [['process', 'bob/cp-c', 'bob'], ['process', 'bob/cp-c', 'bob'], ['process', 'carol/cp-d', 'carol']],
  };
  for (const gpu of [7701, 7702]) {
    sql += `INSERT INTO gpus (id, uuid, host_id, model, first_seen_at, last_seen_at) VALUES (${gpu}, 'GPU-cp-${gpu}', 7700, '${MODEL}', 1, 1);\n`;
    for (let k = 0; k < 8; k++) {
      const x = holders[gpu][k];
      sql += `INSERT INTO usage_hourly (gpu_id, hour, team, env, cluster, model, host_id, host, owned_s,
        allocated_s, busy_s, alloc_idle_s, idle_s, unknown_s, measured_s, util_sum, util_max, mem_sum,
        energy_wh, fraction, rate_micros, currency, updated_at) VALUES (${gpu}, ${D0 + k * H}, 'cp-team',
        'prod', 'c1', '${MODEL}', 7700, 'cp-node', 3600, ${x ? 3600 : 0}, ${x ? 3600 : 0}, 0, ${x ? 0 : 3600},
        0, 3600, ${x ? 180000 : 0}, ${x ? 50 : 0}, 0, 0, 1, 1000000, 'USD', 1);\n`;
      if (x) held(gpu, k, ...x);
    }
  }
  await dbQuery(h.s.db, sql);
  await dbQuery(h.s.db, daySumsSql());
  await dbQuery(h.s.db, consumerDaysSql());
});

for (const [what, step] of [['whole days (daily rows)', 'day'], ['hour steps (hourly rows)', 'hour']]) {
  test(`group_by=consumer, ${what}: pages of groups by owned GPU-hours, totals over every page`, async () => {
    const q = { ...DAY, group_by: 'consumer', step };
    const whole = await usage({ ...q, limit: 1000 });
    assert.equal(whole.groups_total, 5);
    assert.equal(whole.next_offset, null);
    const seen = [];
    let offset = 0;
    for (;;) {
      const r = await usage({ ...q, limit: 2, offset });
      assert.equal(r.limit, 2);
      assert.equal(r.offset, offset);
      assert.equal(r.groups_total, 5);
      assert.deepEqual(r.total, whole.total, 'the total is every group\'s on every page');
      const keys = [];
      for (const it of r.items) {
        const k = JSON.stringify([it.kind, it.group]);
        if (keys.at(-1) !== k) keys.push(k);
      }
      assert.ok(keys.length <= 2, 'at most limit groups');
      assert.equal(new Set(keys).size, keys.length, 'a group\'s items are together');
      seen.push(...keys);
      if (r.next_offset === null) break;
      assert.equal(r.next_offset, offset + 2);
      offset = r.next_offset;
      assert.ok(offset < 20, 'pages end');
    }
    assert.deepEqual(seen, ORDER.map((k) => JSON.stringify(k)), 'every group once, by owned GPU-hours then kind and key');
    for (const [i, [kind, group]] of ORDER.entries()) {
      const items = whole.items.filter((it) => it.kind === kind && it.group === group);
      close(items.reduce((a, it) => a + it.gpu_hours.owned, 0), OWNED[i], `${kind} ${group} owned`);
    }
    close(whole.total.gpu_hours.owned, 16, 'owned in all');
    const last = await usage({ ...q, limit: 2, offset: 10 });
    assert.deepEqual(last.items, [], 'an offset past the groups: no items');
    assert.equal(last.next_offset, null);
    assert.deepEqual(last.total, whole.total);
  });
}
