// Which events a webhook's "*" list takes: every event for a generic
// webhook, only the ticket events for a ticket system's (Jira,
// ServiceNow), so a scan, a move or a stage change never opens an issue
// there; an explicit events list is honoured as given for every format.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok, mkDc, uniq } from './helpers.mjs';

describe('webhook events of "*" by format', () => {
  const h = useServer();
  // Nothing listens there: only the queued deliveries are of interest.
  const url = 'http://127.0.0.1:9/hook';
  const mkHook = async (fields) => ok(await h.s.api('POST', '/api/v1/webhooks',
    { body: { name: uniq('hook'), url, ...fields } }), 201);
  const events = async (hook) => ok(await h.s.api('GET', `/api/v1/webhooks/${hook.id}/deliveries?limit=100`))
    .items.map((d) => d.event).sort();
  const jiraConfig = { project: 'OPS', issuetype: 'Task' };

  test('a scan that moves an asset and changes its stage, then a ticket', async () => {
    const generic = await mkHook({ events: '*' });
    const jira = await mkHook({ format: 'jira', events: '*', config: jiraConfig });
    const jira2 = await mkHook({ format: 'jira_v2', config: jiraConfig }); // "*" by default
    const snow = await mkHook({ format: 'servicenow', events: '*' });
    const jiraScans = await mkHook({ format: 'jira', events: ['asset.scanned'], config: jiraConfig });
    const dc = await mkDc(h.s);
    const dc2 = await mkDc(h.s);
    const tag = uniq('EVT');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'server', location: { datacenter: dc.name } } }), 201);
    ok(await h.s.api('POST', '/api/v1/scans', { body: { tag, location: { datacenter: dc2.name, room: 'r1' }, stage: 'spare', reason: 'pool' } }), 201);
    ok(await h.s.api('POST', '/api/v1/tickets', { body: { asset_tag: tag, title: 'fan noise' } }), 201);

    assert.deepEqual(await events(generic),
      ['asset.location_changed', 'asset.scanned', 'asset.stage_changed', 'ticket.opened']);
    for (const hook of [jira, jira2, snow]) assert.deepEqual(await events(hook), ['ticket.opened'], hook.format);
    assert.deepEqual(await events(jiraScans), ['asset.scanned']);
  });
});
