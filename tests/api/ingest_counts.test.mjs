// A source's stored GPU count (gpus_last_report) follows every change of
// the GPUs it has present: new ones, ones taken from it by a higher
// precedence (counted again on the source that lost them, at once), ones
// marked missing and ones back from missing; batches that change nothing
// leave it. A batch's provenance, written for all its GPUs together,
// names the right source and value per GPU and field, for the owner and
// for a source filling what the owner left absent.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, ok } from './helpers.mjs';

const h = useServer();
const now = () => Math.floor(Date.now() / 1000);

async function pusher(source) {
  return ok(await h.s.api('POST', '/api/v1/tokens',
    { body: { name: 'tok-' + source, role: 'pusher', source } }), 201).token;
}

const uuid = (n) => `GPU-ac000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const gpu = (n, extra = {}) => ({ uuid: uuid(n), index: n % 8, name: 'NVIDIA H100 80GB HBM3', ...extra });

async function push(token, id, hostname, gpus) {
  const r = await h.s.api('POST', '/api/v1/ingest', { auth: token, body: { batch_id: id, host: { hostname }, gpus,
    samples: gpus.map((g) => ({ time: now() - 5, gpu: g.uuid, util_avg: 50 })) } });
  assert.equal(r.status, 201, r.text);
  return r.json;
}

async function counts() {
  const items = ok(await h.s.api('GET', '/api/v1/sources')).items;
  return Object.fromEntries(items.filter((x) => ['ac-first', 'ac-second'].includes(x.name)).map((x) => [x.name, x.gpus_last_report]));
}

test('the stored GPU count follows takeovers, missing GPUs and returns', async () => {
  const a = await pusher('ac-first');
  const b = await pusher('ac-second');
  await push(a, 'a-1', 'ac-host-1', [gpu(1), gpu(2), gpu(3)]);
  await push(a, 'a-2', 'ac-host-2', [gpu(4)]);
  assert.deepEqual(await counts(), { 'ac-first': 4, 'ac-second': 0 });

  // A higher precedence takes one GPU: the first source's count drops at
  // once, without a report of its own.
  const sid = ok(await h.s.api('GET', '/api/v1/sources')).items.find((x) => x.name === 'ac-second').id;
  await push(b, 'b-0', 'ac-host-9', [gpu(9)]);
  ok(await h.s.api('PATCH', `/api/v1/sources/${sid}`, { body: { precedence: 5 } }));
  await push(b, 'b-1', 'ac-host-1', [gpu(3)]);
  assert.deepEqual(await counts(), { 'ac-first': 3, 'ac-second': 2 });

  // The first source reporting the same GPUs again changes nothing.
  await push(a, 'a-3', 'ac-host-1', [gpu(1), gpu(2), gpu(3)]);
  assert.deepEqual(await counts(), { 'ac-first': 3, 'ac-second': 2 });

  // A GPU no longer reported by its host is missing, then comes back.
  await push(a, 'a-4', 'ac-host-1', [gpu(1)]);
  assert.equal(ok(await h.s.api('GET', '/api/v1/gpus/' + uuid(2))).state, 'missing');
  assert.deepEqual(await counts(), { 'ac-first': 2, 'ac-second': 2 });
  await push(a, 'a-5', 'ac-host-1', [gpu(1), gpu(2)]);
  assert.deepEqual(await counts(), { 'ac-first': 3, 'ac-second': 2 });
});

test("a batch's provenance is per GPU and field, set by the owner and filled by others", async () => {
  const owner = await pusher('ac-prov-owner');
  const other = await pusher('ac-prov-other');
  await push(owner, 'p-1', 'ac-prov-1', [gpu(21, { serial: 'S-21', driver: '550.1' }), gpu(22, { serial: 'S-22' })]);
  // Another source reports both: it fills the driver the owner left
  // absent on the second GPU, and nothing on the first.
  await push(other, 'p-2', 'ac-prov-1', [gpu(21, { serial: 'S-21', driver: '999.9' }),
    gpu(22, { serial: 'S-22', driver: '551.2', pci_bus_id: '0000:19:00.0' })]);
  const prov = async (n) => Object.fromEntries(ok(await h.s.api('GET', '/api/v1/gpus/' + uuid(n))).provenance
    .map((p) => [p.field, `${p.source}=${p.value}`]));
  assert.deepEqual(await prov(21), { host: 'ac-prov-owner=ac-prov-1', model: 'ac-prov-owner=NVIDIA H100 80GB HBM3',
    serial: 'ac-prov-owner=S-21', driver: 'ac-prov-owner=550.1' });
  assert.deepEqual(await prov(22), { host: 'ac-prov-owner=ac-prov-1', model: 'ac-prov-owner=NVIDIA H100 80GB HBM3',
    serial: 'ac-prov-owner=S-22', driver: 'ac-prov-other=551.2', pci_bus_id: 'ac-prov-other=0000:19:00.0' });
  // The owner's next report with a new driver sets it in its own name.
  await push(owner, 'p-3', 'ac-prov-1', [gpu(21, { serial: 'S-21', driver: '550.2' }), gpu(22, { serial: 'S-22', driver: '552.0' })]);
  assert.equal((await prov(21)).driver, 'ac-prov-owner=550.2');
  assert.equal((await prov(22)).driver, 'ac-prov-owner=552.0');
});
