// Several lifecycle rules in one pass through the API
// (POST /lifecycle-rules/evaluate): a dry run by default that changes
// nothing and reports each rule as its own dry run would; a real pass in
// which a stage one rule moves an asset to is what the next rule sees; the
// enabled rules when no ids are named; validation naming the field, an
// unknown rule, and roles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, assertError, mkToken, uniq } from './helpers.mjs';

const h = useServer();

const rule = async (body) => ok(await h.s.api('POST', '/api/v1/lifecycle-rules', { body: { name: uniq('pass'), ...body } }), 201);
const evaluate = (body, auth) => h.s.api('POST', '/api/v1/lifecycle-rules/evaluate', { body, auth });

test('a pass of two rules reports each as alone, then runs them in order', async () => {
  const model = uniq('M');
  const tags = [uniq('PA'), uniq('PB')];
  for (const tag of tags) ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'gpu', model } }), 201);
  const move = await rule({ condition: { all: [{ attr: 'model', '=': model }, { attr: 'tag', '=': tags[0] }] },
    actions: [{ type: 'stage', to: 'spare' }] });
  const ticket = await rule({ condition: { all: [{ attr: 'model', '=': model }, { attr: 'stage', '=': 'active' }] },
    actions: [{ type: 'ticket', title: 'active' }] });

  const dry = ok(await evaluate({ ids: [move.id, ticket.id] }));
  assert.equal(dry.dry_run, true);
  assert.equal(dry.rules.length, 2);
  assert.deepEqual(dry.rules.map((r) => r.rule.id), [move.id, ticket.id]);
  for (const [i, id] of [move.id, ticket.id].entries()) {
    const alone = ok(await h.s.api('POST', `/api/v1/lifecycle-rules/${id}/dry-run`));
    assert.deepEqual(dry.rules[i].matches, alone.matches);
    assert.equal(dry.rules[i].matched, alone.matched);
    assert.equal(dry.rules[i].evaluated, dry.evaluated);
  }
  assert.deepEqual(dry.rules[0].matches.map((m) => m.asset), [tags[0]]);
  assert.deepEqual(dry.rules[1].matches.map((m) => m.asset), tags);
  assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${tags[0]}`)).stage, 'active');

  // Run: the first rule moves PA to spare, so the second finds PB only.
  const run = ok(await evaluate({ ids: [move.id, ticket.id], dry_run: false }));
  assert.equal(run.dry_run, false);
  assert.equal(run.rules[0].matches[0].actions[0].result, 'moved');
  assert.deepEqual(run.rules[1].matches.map((m) => m.asset), [tags[1]]);
  assert.equal(run.matched, 2);
  assert.equal(ok(await h.s.api('GET', `/api/v1/assets/${tags[0]}`)).stage, 'spare');
  const stored = ok(await h.s.api('GET', `/api/v1/lifecycle-rules/${ticket.id}`));
  assert.ok(stored.last_run_at);
  assert.equal(stored.last_matched, 1);

  // No ids: the enabled rules only (here: none of these two).
  const enabled = ok(await evaluate({}));
  assert.ok(!enabled.rules.some((r) => r.rule.id === move.id || r.rule.id === ticket.id));
  ok(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${ticket.id}`, { body: { enabled: true } }));
  const again = ok(await evaluate({ dry_run: true }));
  assert.ok(again.rules.some((r) => r.rule.id === ticket.id && r.matched === 1));
  ok(await h.s.api('PATCH', `/api/v1/lifecycle-rules/${ticket.id}`, { body: { enabled: false } }));
});

test('validation names the field; an unknown rule is 404; viewers may not evaluate', async () => {
  assertError(await evaluate({ ids: [] }), 400, { code: 'validation_failed', field: 'ids' });
  assertError(await evaluate({ ids: ['x'] }), 400, { code: 'validation_failed', field: 'ids' });
  assertError(await evaluate({ ids: [0] }), 400, { code: 'validation_failed', field: 'ids' });
  assertError(await evaluate({ dry_run: 'yes' }), 400, { code: 'validation_failed', field: 'dry_run' });
  assertError(await evaluate({ rules: [1] }), 400);
  assertError(await evaluate({ ids: [987654] }), 404);
  const viewer = await mkToken(h.s, 'viewer');
  assertError(await evaluate({}, viewer.token), 403);
});
