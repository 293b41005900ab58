// Outbound webhooks and tickets against a local HTTP receiver: signatures
// checked over the raw bytes with node:crypto, a retry after a 500, 410
// disabling the webhook, dead once the schedule is spent (shortened with
// --webhook-backoff-s 1), write-only secrets, Jira and ServiceNow replies
// filling the ticket, validation and roles.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { useServer, ok, assertError, mkToken, uniq } from './helpers.mjs';

const h = useServer({ args: ['--webhook-backoff-s', '1'] });

// The receiver: every request kept with its raw body; the answer picked
// by path.
const got = [];
const hits = {};
let recv;
let base;
before(async () => {
  recv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      got.push({ path: req.url, headers: req.headers, raw });
      hits[req.url] = (hits[req.url] || 0) + 1;
      const reply = (status, body) => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.url.startsWith('/flaky')) reply(hits[req.url] === 1 ? 500 : 200, { ok: true });
      else if (req.url.startsWith('/gone')) reply(410, { gone: true });
      else if (req.url.startsWith('/down')) reply(500, { error: 'down' });
      else if (req.url === '/jira/rest/api/3/issue') {
        reply(201, { id: '10042', key: 'OPS-17', self: `${base}/jira/rest/api/3/issue/10042` });
      } else if (req.url === '/snow/api/now/table/incident') {
        reply(201, { result: { number: 'INC0010042', sys_id: '9d385017c611228701d22104cc95c371' } });
      } else reply(200, { ok: true });
    });
  });
  await new Promise((resolve) => recv.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${recv.address().port}`;
});
after(() => new Promise((resolve) => recv.close(resolve)));

/** Polls fn until it returns a truthy value (the sender runs every second). */
async function waitFor(fn, what) {
  for (let i = 0; i < 200; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const mkHook = async (fields) => ok(await h.s.api('POST', '/api/v1/webhooks',
  { body: { name: uniq('hook'), ...fields } }), 201);
const deliveries = async (id) => ok(await h.s.api('GET', `/api/v1/webhooks/${id}/deliveries`)).items;
const openTicket = async (fields) => ok(await h.s.api('POST', '/api/v1/tickets',
  { body: { title: 'GPU fault', ...fields } }), 201);

test('a ticket.opened delivery is signed over its raw bytes; secrets are never returned', async () => {
  const key = Buffer.from('0123456789abcdef01234567');
  const secret = 'whsec_' + key.toString('base64');
  const hook = await mkHook({ url: `${base}/ok/signed`, secret, auth: 'Bearer receiver-token',
    events: ['ticket.opened'] });
  assert.equal(hook.secret_set, true);
  assert.equal(hook.auth_set, true);
  for (const doc of [hook, ok(await h.s.api('GET', `/api/v1/webhooks/${hook.id}`)),
    ...ok(await h.s.api('GET', '/api/v1/webhooks')).items]) {
    assert.equal('secret' in doc, false);
    assert.equal('auth' in doc, false);
    assert.ok(!JSON.stringify(doc).includes(key.toString('base64')));
  }
  const t = await openTicket({ asset_tag: 'GI-000123', body: 'XID 79 seen\nthree times' });
  assert.equal(t.dedupe_key, `manual:${t.id}`);
  assert.equal(t.state, 'open');
  const r = await waitFor(() => got.find((g) => g.path === '/ok/signed'), 'the signed delivery');
  const id = r.headers['webhook-id'];
  const ts = r.headers['webhook-timestamp'];
  assert.match(id, /^msg_[0-9a-f]{32}$/);
  const want = createHmac('sha256', key).update(Buffer.concat([Buffer.from(`${id}.${ts}.`), r.raw]))
    .digest('base64');
  assert.equal(r.headers['webhook-signature'], `v1,${want}`);
  const gh = createHmac('sha256', secret).update(r.raw).digest('hex');
  assert.equal(r.headers['x-gpuinv-signature-256'], `sha256=${gh}`);
  assert.equal(r.headers.authorization, 'Bearer receiver-token');
  assert.equal(r.headers['x-gpuinv-event'], 'ticket.opened');
  const body = JSON.parse(r.raw.toString('utf8'));
  assert.equal(body.event, 'ticket.opened');
  assert.equal(body.id, id);
  assert.equal(body.asset.tag, 'GI-000123');
  assert.equal(body.ticket.id, t.id);
  assert.equal(body.ticket.dedupe_key, `manual:${t.id}`);
  const log = await waitFor(async () => (await deliveries(hook.id)).find((d) => d.state === 'delivered'),
    'the delivery to be logged');
  assert.equal(log.msg_id, id);
  assert.equal(log.last_status, 200);
  assert.equal(log.ticket_id, t.id);
  // Reads and writes of tickets.
  assert.equal(ok(await h.s.api('GET', `/api/v1/tickets/${t.id}`)).title, 'GPU fault');
  const open = ok(await h.s.api('GET', '/api/v1/tickets?state=open&asset=GI-000123')).items;
  assert.ok(open.some((x) => x.id === t.id));
  assert.equal(ok(await h.s.api('POST', `/api/v1/tickets/${t.id}/close`)).state, 'closed');
  assertError(await h.s.api('POST', `/api/v1/tickets/${t.id}/close`), 409);
  const closed = ok(await h.s.api('GET', '/api/v1/tickets?state=closed')).items;
  assert.ok(closed.some((x) => x.id === t.id && x.closed_at));
});

test('a 500 is retried with the same message and bytes, then delivered', async () => {
  const hook = await mkHook({ url: `${base}/flaky/${uniq('f')}`, events: ['webhook.test'] });
  const d = ok(await h.s.api('POST', `/api/v1/webhooks/${hook.id}/test`), 202);
  assert.equal(d.state, 'pending');
  assert.equal(d.event, 'webhook.test');
  const done = await waitFor(async () => (await deliveries(hook.id)).find((x) => x.state === 'delivered'),
    'the retried delivery');
  assert.equal(done.attempts, 2);
  const reqs = got.filter((g) => g.path === new URL(hook.url).pathname);
  assert.equal(reqs.length, 2);
  assert.equal(reqs[0].headers['webhook-id'], reqs[1].headers['webhook-id']);
  assert.ok(reqs[0].raw.equals(reqs[1].raw));
});

test('410 disables the webhook with its reason', async () => {
  const hook = await mkHook({ url: `${base}/gone/${uniq('g')}` });
  ok(await h.s.api('POST', `/api/v1/webhooks/${hook.id}/test`), 202);
  const w = await waitFor(async () => {
    const x = ok(await h.s.api('GET', `/api/v1/webhooks/${hook.id}`));
    return x.enabled === false ? x : null;
  }, 'the webhook to be disabled');
  assert.match(w.disabled_reason, /410/);
  const [d] = await deliveries(hook.id);
  assert.equal(d.state, 'failed');
  assert.equal(d.last_status, 410);
  assertError(await h.s.api('POST', `/api/v1/webhooks/${hook.id}/test`), 409);
  // Enabling it again clears the reason.
  const again = ok(await h.s.api('PATCH', `/api/v1/webhooks/${hook.id}`, { body: { enabled: true } }));
  assert.equal(again.enabled, true);
  assert.equal(again.disabled_reason, null);
});

test('a receiver that keeps failing makes the delivery dead after the schedule; it can be retried', async () => {
  const hook = await mkHook({ url: `${base}/down/${uniq('d')}` });
  const d = ok(await h.s.api('POST', `/api/v1/webhooks/${hook.id}/test`), 202);
  const dead = await waitFor(async () => (await deliveries(hook.id)).find((x) => x.state === 'dead'),
    'the delivery to be dead');
  assert.equal(dead.attempts, 7); // the first attempt and six retries
  assert.equal(dead.last_status, 500);
  assert.match(dead.last_error, /500/);
  assert.match(dead.response, /down/);
  const again = ok(await h.s.api('POST', `/api/v1/webhook-deliveries/${d.id}/retry`), 202);
  assert.equal(again.state, 'pending');
  assert.equal(again.attempts, 0);
  assertError(await h.s.api('POST', `/api/v1/webhook-deliveries/${d.id}/retry`), 409);
  // Deleted, it stops: its pending delivery fails and the log stays readable until it goes.
  assert.equal((await h.s.api('DELETE', `/api/v1/webhooks/${hook.id}`)).status, 204);
  assertError(await h.s.api('GET', `/api/v1/webhooks/${hook.id}`), 404);
});

test('Jira and ServiceNow replies fill the ticket\'s key and link', async () => {
  const jira = await mkHook({ url: `${base}/jira/rest/api/3/issue`, format: 'jira',
    auth: 'Basic b3BzQGV4YW1wbGUuY29tOnRva2Vu', events: ['ticket.opened'],
    config: { project: 'OPS', issuetype: 'Task', labels: ['gpu fault'] } });
  const t1 = await openTicket({ gpu_uuid: 'GPU-6f1c', title: 'GPU-6f1c: XID errors' });
  const f = await waitFor(async () => {
    const x = ok(await h.s.api('GET', `/api/v1/tickets/${t1.id}`));
    return x.external_key ? x : null;
  }, 'the Jira key');
  assert.equal(f.external_system, 'jira');
  assert.equal(f.external_key, 'OPS-17');
  assert.equal(f.external_url, `${base}/browse/OPS-17`);
  const jr = got.find((g) => g.path === '/jira/rest/api/3/issue');
  assert.equal(jr.headers.authorization, 'Basic b3BzQGV4YW1wbGUuY29tOnRva2Vu');
  const issue = JSON.parse(jr.raw.toString('utf8'));
  assert.equal(issue.fields.project.key, 'OPS');
  assert.equal(issue.fields.summary, 'GPU-6f1c: XID errors');
  assert.deepEqual(issue.fields.labels, ['gpu-fault']);
  assert.equal(issue.fields.description.type, 'doc');
  ok(await h.s.api('PATCH', `/api/v1/webhooks/${jira.id}`, { body: { enabled: false } }));

  await mkHook({ url: `${base}/snow/api/now/table/incident`, format: 'servicenow',
    events: ['ticket.opened'], config: { assignment_group: 'GPU Ops', urgency: 2, impact: '1' } });
  const t2 = await openTicket({ asset_tag: 'GI-000777', title: 'PSU failure' });
  const s = await waitFor(async () => {
    const x = ok(await h.s.api('GET', `/api/v1/tickets/${t2.id}`));
    return x.external_key ? x : null;
  }, 'the ServiceNow number');
  assert.equal(s.external_system, 'servicenow');
  assert.equal(s.external_key, 'INC0010042');
  assert.equal(s.external_url,
    `${base}/nav_to.do?uri=incident.do?sys_id=9d385017c611228701d22104cc95c371`);
  const inc = JSON.parse(got.find((g) => g.path === '/snow/api/now/table/incident').raw.toString('utf8'));
  assert.equal(inc.short_description, 'PSU failure');
  assert.equal(inc.urgency, '2');
  assert.equal(inc.impact, '1');
  assert.equal(inc.assignment_group, 'GPU Ops');
  assert.equal(inc.cmdb_ci, 'GI-000777');
  assert.equal(inc.correlation_id, `manual:${t2.id}`);
});

test('webhook input is validated and webhooks are for admins', async () => {
  const post = (body) => h.s.api('POST', '/api/v1/webhooks', { body: { name: uniq('v'), ...body } });
  assertError(await post({ url: 'ftp://example.com/x' }), 400, { field: 'url' });
  assertError(await post({ url: 'file:///etc/passwd' }), 400, { field: 'url' });
  assertError(await post({ url: `${base}/x`, format: 'teams' }), 400, { field: 'format' });
  assertError(await post({ url: `${base}/x`, format: 'jira' }), 400, { field: 'config' });
  assertError(await post({ url: `${base}/x`, format: 'servicenow', config: { urgency: 5 } }), 400,
    { field: 'config' });
  assertError(await post({ url: `${base}/x`, events: ['Ticket Opened'] }), 400, { field: 'events' });
  assertError(await post({ url: `${base}/x`, bogus: 1 }), 400);
  const name = uniq('dup');
  ok(await h.s.api('POST', '/api/v1/webhooks', { body: { name, url: `${base}/x` } }), 201);
  assertError(await h.s.api('POST', '/api/v1/webhooks', { body: { name, url: `${base}/x` } }), 409);
  assertError(await h.s.api('POST', '/api/v1/tickets', { body: { title: 'no subject' } }), 400,
    { field: 'asset_tag' });
  const editor = (await mkToken(h.s, 'editor')).token;
  const viewer = (await mkToken(h.s, 'viewer')).token;
  assertError(await h.s.api('GET', '/api/v1/webhooks', { auth: editor }), 403);
  assertError(await h.s.api('POST', '/api/v1/tickets', { auth: viewer, body: { title: 'x', asset_tag: 'GI-1' } }), 403);
  ok(await h.s.api('POST', '/api/v1/tickets', { auth: editor, body: { title: 'x', asset_tag: 'GI-1' } }), 201);
  ok(await h.s.api('GET', '/api/v1/tickets', { auth: viewer }));
  // Every write is audited.
  const audit = ok(await h.s.api('GET', '/api/v1/audit?entity=webhook')).items;
  assert.ok(audit.some((a) => a.action === 'create'));
});
