// Lifecycle rules through the API: the seeded examples (disabled), create,
// change (version and audit), delete, validation naming the field, roles,
// a dry run (saved and unsaved) that changes nothing, a run that opens one
// ticket per rule and asset however often it fires, a refused transition
// reported in the run, the lifecycle:rules job itself (--rules-interval-s),
// and the health on the asset document and at /assets/{tag}/health.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkToken, uniq } from './helpers.mjs';

const h = useServer({ args: ['--rules-interval-s', '1'] });

function isoDay(daysFromNow) {
  return new Date(Date.now() + daysFromNow * 86400e3).toISOString().slice(0, 10);
}

async function mkAsset(fields) {
  return ok(await h.s.api('POST', '/api/v1/assets', { body: { kind: 'gpu', ...fields } }), 201);
}

async function events(tag) {
  return ok(await h.s.api('GET', `/api/v1/assets/${tag}/events?limit=500`)).items;
}

test('the five examples are seeded, disabled', async () => {
  const rules = ok(await h.s.api('GET', '/api/v1/lifecycle-rules')).items;
  const seeded = rules.filter((r) => r.created_by === 'gpuinv');
  assert.equal(seeded.length, 5);
  for (const r of seeded) {
    assert.equal(r.enabled, false);
    assert.ok(Array.isArray(r.actions) && r.actions.length > 0);
  }
  const names = seeded.map((r) => r.name).join('\n');
  assert.match(names, /XID/);
  assert.match(names, /ECC/);
  assert.match(names, /Temperature/);
  assert.match(names, /utilization/);
  assert.match(names, /Warranty/);
});

test('validation names the field; roles', async () => {
  const bad = [
    [{ name: 'x', condition: { metric: 'xid_days', window_days: 0, '>': 1 }, actions: [{ type: 'ticket' }] }, 'condition.window_days'],
    [{ name: 'x', condition: { all: [{ attr: 'kind', '=': 'gpu' }, { attr: 'colour', '=': 'red' }] }, actions: [{ type: 'ticket' }] }, 'condition.all[1].attr'],
    [{ name: 'x', condition: { attr: 'kind', '=': 'gpu' }, actions: [{ type: 'stage', to: 'nowhere' }] }, 'actions[0].to'],
    [{ name: 'x', condition: { attr: 'kind', '=': 'gpu' }, actions: [] }, 'actions'],
    [{ name: 'x', condition: { metric: 'temp_p95', window_days: 7, '>': 85, days: 8 }, actions: [{ type: 'ticket' }] }, 'condition.days'],
  ];
  for (const [body, field] of bad) {
    assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', { body }), 400, { code: 'validation_failed', field });
  }
  const viewer = (await mkToken(h.s, 'viewer')).token;
  const editor = (await mkToken(h.s, 'editor')).token;
  const body = { name: uniq('rule'), condition: { attr: 'kind', '=': 'psu' }, actions: [{ type: 'ticket' }] };
  assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', { auth: viewer, body }), 403);
  ok(await h.s.api('GET', '/api/v1/lifecycle-rules', { auth: viewer }));
  const r = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', { auth: editor, body }), 201);
  assertError(await h.s.api('POST', `/api/v1/lifecycle-rules/${r.id}/run`, { auth: viewer }), 403);
  assertError(await h.s.api('POST', '/api/v1/lifecycle-rules', { body }), 409, { field: 'name' });
});

test('create, change, delete: versioned and audited', async () => {
  const name = uniq('rule');
  const r = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name, condition: { attr: 'kind', '=': 'switch' }, actions: [{ type: 'ticket' }] },
  }), 201);
  assert.equal(r.version, 1);
  assert.equal(r.enabled, false);
  assert.deepEqual(r.condition, { attr: 'kind', '=': 'switch' });
  const c = ok(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${r.id}`, { body: { condition: { attr: 'kind', '=': 'nic' } } }));
  assert.equal(c.version, 2);
  assert.equal(c.name, name);
  assert.deepEqual(c.condition, { attr: 'kind', '=': 'nic' });
  assertError(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${r.id}`, { body: { actions: [{ type: 'bogus' }] } }), 400, { field: 'actions[0].type' });
  const audit = ok(await h.s.api('GET', `/api/v1/audit?entity=lifecycle_rule&entity_id=${r.id}`)).items;
  assert.deepEqual(audit.map((a) => a.action).sort(), ['create', 'update']);
  assert.equal(ok(await h.s.api('DELETE', `/api/v1/lifecycle-rules/${r.id}`), 204), null);
  assertError(await h.s.api('GET', `/api/v1/lifecycle-rules/${r.id}`), 404);
});

test('dry run changes nothing; a run opens one ticket per rule and asset', async () => {
  const soon = await mkAsset({ tag: uniq('W'), serial: uniq('S'), warranty_end: isoDay(10) });
  const later = await mkAsset({ tag: uniq('W'), serial: uniq('S'), warranty_end: isoDay(90) });
  const rule = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: {
      name: uniq('warranty'),
      condition: { all: [{ attr: 'tag', in: [soon.tag, later.tag] }, { attr: 'warranty_days_left', '<=': 30 }] },
      actions: [{ type: 'ticket', title: 'Warranty ending' }, { type: 'stage', to: 'received' }],
    },
  }), 201);
  const before = (await events(soon.tag)).length;
  const dry = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${rule.id}/dry-run`));
  assert.equal(dry.dry_run, true);
  assert.equal(dry.matched, 1);
  assert.equal(dry.matches[0].asset, soon.tag);
  assert.match(dry.matches[0].why[0], /warranty_days_left 1?\d <= 30/);
  assert.deepEqual(dry.matches[0].actions.map((a) => a.result), ['would_open', 'refused']);
  const unsaved = ok(await h.s.api('POST', '/api/v1/lifecycle-rules/dry-run', {
    body: { condition: { attr: 'tag', '=': later.tag }, actions: [{ type: 'stage', to: 'spare' }] },
  }));
  assert.equal(unsaved.matched, 1);
  assert.equal(unsaved.matches[0].actions[0].result, 'would_move');
  assert.equal((await events(soon.tag)).length, before);
  assert.equal(ok(await h.s.api('GET', `/api/v1/tickets?asset=${soon.tag}`)).total, 0);
  assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${later.tag}`)).stage, 'active');

  const run = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${rule.id}/run`));
  assert.equal(run.dry_run, false);
  assert.equal(run.matched, 1);
  assert.equal(run.matches[0].actions[0].result, 'opened');
  assert.equal(run.matches[0].actions[0].dedupe_key, `rule:${rule.id}:${soon.tag}`);
  // active -> received is not allowed: reported, not a failure of the run.
  assert.equal(run.matches[0].actions[1].result, 'refused');
  assert.match(run.matches[0].actions[1].error, /cannot move/);
  const again = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${rule.id}/run`));
  assert.equal(again.matches[0].actions[0].result, 'existing');
  const tickets = ok(await h.s.api('GET', `/api/v1/tickets?asset=${soon.tag}`)).items;
  assert.equal(tickets.length, 1);
  assert.equal(tickets[0].rule_id, rule.id);
  assert.match(tickets[0].title, /^Warranty ending/);
  const ev = await events(soon.tag);
  assert.equal(ev.filter((e) => e.kind === 'rule').length, 1, 'only the firing that did something is recorded');
  assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${soon.tag}`)).stage, 'active');
  const stored = ok(await h.s.api('GET', `/api/v1/lifecycle-rules/${rule.id}`));
  assert.equal(stored.last_matched, 1);
  assert.ok(stored.last_run_at);
});

test('the lifecycle:rules job runs the enabled rules', async () => {
  const a = await mkAsset({ tag: uniq('J'), serial: uniq('S') });
  const rule = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('job'), enabled: true, condition: { attr: 'tag', '=': a.tag }, actions: [{ type: 'stage', to: 'spare' }] },
  }), 201);
  let stage = 'active';
  for (let i = 0; i < 100 && stage === 'active'; i++) {
    await new Promise((r) => setTimeout(r, 200));
    stage = ok(await h.s.api('GET', `/api/v1/assets/${a.tag}`)).stage;
  }
  assert.equal(stage, 'spare');
  const ev = (await events(a.tag)).filter((e) => e.kind === 'stage');
  assert.equal(ev.length, 1);
  assert.equal(ev[0].actor, 'lifecycle:rules');
  assert.match(ev[0].detail.reason, new RegExp(`rule ${rule.id}`));
  ok(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${rule.id}`, { body: { enabled: false } }));
});

test('health on the asset and at /health', async () => {
  const a = await mkAsset({ tag: uniq('H'), serial: uniq('S'), purchase_date: isoDay(-6 * 365), depreciation_years: 5 });
  const doc = ok(await h.s.api('GET', `/api/v1/assets/${a.tag}`));
  assert.equal(doc.health.score, 80);
  assert.deepEqual(doc.health.reasons.map((r) => r.reason), ['age']);
  assert.deepEqual(doc.health.absent, ['remap_failures']);
  const hh = ok(await h.s.api('GET', `/api/v1/assets/${a.tag}/health`));
  assert.equal(hh.score, 80);
  assert.equal(hh.reasons[0].penalty, 20);
  assertError(await h.s.api('GET', '/api/v1/assets/NOPE-404/health'), 404);
});

test("a stage action's own reason comes first in the move's reason", async () => {
  const a = await mkAsset({ tag: uniq('RSN'), model: uniq('m') });
  const r = ok(await h.s.api('POST', '/api/v1/lifecycle-rules', {
    body: { name: uniq('reason'), condition: { attr: 'tag', '=': a.tag },
      actions: [{ type: 'stage', to: 'diagnostic_repair', reason: 'reseat and test' }] },
  }), 201);
  const rep = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${r.id}/run`));
  assert.equal(rep.matches[0].actions[0].result, 'moved');
  const [ev] = (await events(a.tag)).filter((e) => e.kind === 'stage');
  assert.equal(ev.detail.to, 'diagnostic_repair');
  assert.equal(ev.detail.reason, `reseat and test; rule ${r.id} (${r.name})`);
});
