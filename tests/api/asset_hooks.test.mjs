// Asset webhook events against a local receiver: a scan raises
// asset.scanned, the location it moved the asset to asset.location_changed,
// a stage change (through a scan or POST /assets/{tag}/stage)
// asset.stage_changed, each signed and logged like every delivery; a
// refused stage change raises nothing, and a webhook that does not list an
// event does not get it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { createHmac } from 'node:crypto';
import { useServer, ok, assertError, mkDc, mkToken, uniq } from './helpers.mjs';

const h = useServer({ args: ['--webhook-backoff-s', '1'] });

const got = [];
let recv;
let base;
before(async () => {
  recv = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      got.push({ path: req.url, headers: req.headers, raw: Buffer.concat(chunks) });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"ok":true}');
    });
  });
  await new Promise((resolve) => recv.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${recv.address().port}`;
});
after(() => new Promise((resolve) => recv.close(resolve)));

async function waitFor(fn, what) {
  for (let i = 0; i < 200; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const bodiesAt = (path) => got.filter((g) => g.path === path).map((g) => JSON.parse(g.raw.toString('utf8')));

test('a scan, its move and its stage change each raise a signed asset event', async () => {
  const key = Buffer.from('asset-hooks-key-0123456');
  const secret = 'whsec_' + key.toString('base64');
  const path = `/assets/${uniq('h')}`;
  const hook = ok(await h.s.api('POST', '/api/v1/webhooks', { body: {
    name: uniq('assets'), url: `${base}${path}`, secret,
    events: ['asset.scanned', 'asset.stage_changed', 'asset.location_changed'],
  } }), 201);
  const other = `/tickets-only/${uniq('t')}`;
  ok(await h.s.api('POST', '/api/v1/webhooks', { body: {
    name: uniq('tickets'), url: `${base}${other}`, events: ['ticket.opened'],
  } }), 201);
  const dc = await mkDc(h.s);
  const dc2 = await mkDc(h.s);
  const editor = await mkToken(h.s, 'editor');
  const tag = uniq('HOOK');
  ok(await h.s.api('POST', '/api/v1/assets', { body: {
    tag, kind: 'gpu', serial: uniq('SN'), model: 'H100', stage: 'received',
    location: { datacenter: dc.name, room: 'hall-1', rack: 'R01', u: 4 },
  } }), 201);

  ok(await h.s.api('POST', '/api/v1/scans', { auth: editor.token, body: {
    tag, location: { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30 },
    stage: 'active', reason: 'racked', note: 'installed in B7',
  } }), 201);
  const three = await waitFor(() => (bodiesAt(path).length >= 3 ? bodiesAt(path) : null), 'three deliveries');
  const by = Object.fromEntries(three.map((b) => [b.event, b]));
  assert.deepEqual(Object.keys(by).sort(), ['asset.location_changed', 'asset.scanned', 'asset.stage_changed']);
  for (const b of three) {
    assert.equal(b.asset.tag, tag);
    assert.equal(b.asset.kind, 'gpu');
    assert.equal(b.asset.model, 'H100');
    assert.equal(b.actor, editor.name);
    assert.match(b.id, /^msg_[0-9a-f]{32}$/);
  }
  assert.deepEqual(by['asset.location_changed'].change.from,
    { datacenter: dc.name, room: 'hall-1', rack: 'R01', u: 4, storage: null });
  assert.deepEqual(by['asset.location_changed'].change.to,
    { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30, storage: null });
  assert.equal(by['asset.stage_changed'].change.from, 'received');
  assert.equal(by['asset.stage_changed'].change.to, 'active');
  assert.equal(by['asset.stage_changed'].reason, 'racked');
  assert.equal(by['asset.scanned'].change.via, 'tag');
  assert.equal(by['asset.scanned'].change.note, 'installed in B7');
  assert.equal(by['asset.scanned'].asset.stage, 'active');
  assert.equal(by['asset.scanned'].asset.location.datacenter, dc2.name);
  // Signed like every delivery.
  const raw = got.find((g) => g.path === path);
  const want = createHmac('sha256', key)
    .update(Buffer.concat([Buffer.from(`${raw.headers['webhook-id']}.${raw.headers['webhook-timestamp']}.`), raw.raw]))
    .digest('base64');
  assert.equal(raw.headers['webhook-signature'], `v1,${want}`);
  assert.ok(raw.headers['x-gpuinv-event'].startsWith('asset.'));
  // Logged.
  const log = await waitFor(async () => {
    const items = ok(await h.s.api('GET', `/api/v1/webhooks/${hook.id}/deliveries`)).items;
    return items.filter((d) => d.state === 'delivered').length >= 3 ? items : null;
  }, 'the log');
  assert.deepEqual(log.map((d) => d.event).sort(), ['asset.location_changed', 'asset.scanned', 'asset.stage_changed']);

  // A stage change through the lifecycle route; a refused one raises nothing.
  ok(await h.s.api('POST', `/api/v1/assets/${encodeURIComponent(tag)}/stage`, { auth: editor.token,
    body: { stage: 'diagnostic_repair', reason: 'XID 79' } }));
  assertError(await h.s.api('POST', `/api/v1/assets/${encodeURIComponent(tag)}/stage`, { auth: editor.token,
    body: { stage: 'ordered', reason: 'no' } }), 409);
  const four = await waitFor(() => (bodiesAt(path).length >= 4 ? bodiesAt(path) : null), 'the fourth delivery');
  const moved = four.find((b) => b.event === 'asset.stage_changed' && b.change.to === 'diagnostic_repair');
  assert.ok(moved, JSON.stringify(four));
  assert.equal(moved.change.from, 'active');
  assert.equal(moved.reason, 'XID 79');
  // A scan where the asset already is: asset.scanned only.
  ok(await h.s.api('POST', '/api/v1/scans', { auth: editor.token, body: {
    tag, location: { datacenter: dc2.name, room: 'cage-2', rack: 'B7', u: 30 },
  } }), 201);
  const five = await waitFor(() => (bodiesAt(path).length >= 5 ? bodiesAt(path) : null), 'the fifth delivery');
  assert.equal(five.filter((b) => b.event === 'asset.scanned').length, 2);
  assert.equal(five.filter((b) => b.event === 'asset.location_changed').length, 1);
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(bodiesAt(path).length, 5);
  assert.equal(bodiesAt(other).length, 0);
});
