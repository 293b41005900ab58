// QR labels: one label is well-formed SVG whose QR code holds the scan URL
// <base URL>/scan/<tag> (the --base-url flag, else the listen address) and
// whose text shows the tag, model and serial, escaped; a sheet is one HTML
// document with one well-formed SVG per page of the paper's grid.
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { useServer, assertError, ok, uniq } from './helpers.mjs';
import { parseXml, unescape } from '../lib/xmlcheck.mjs';

const BASE = 'https://inventory.example.com/gpuinv';

describe('labels behind a proxy', () => {
  const h = useServer({ args: ['--base-url', BASE + '/'] });

  test('one label: its QR code carries the scan URL; its text the tag, model and serial', async () => {
    const tag = uniq('LBL');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'gpu', model: 'H100 <SXM> & "80GB"', serial: "S/N'7" } }), 201);
    const r = await h.s.api('GET', `/api/v1/assets/${tag}/label.svg`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^image\/svg\+xml/);
    const els = parseXml(r.text);
    assert.equal(els[0].name, 'svg');
    assert.equal(els[0].attrs.xmlns, 'http://www.w3.org/2000/svg');
    assert.equal(els[0].attrs.width, '70mm');
    const qr = els.find((e) => e.name === 'svg' && e.attrs['shape-rendering'] === 'crispEdges');
    assert.ok(qr);
    const title = els.find((e) => e.name === 'title');
    assert.equal(unescape(title.text), `${BASE}/scan/${tag}`);
    const texts = els.filter((e) => e.name === 'text').map((e) => unescape(e.text));
    assert.deepEqual(texts, [tag, 'H100 <SXM> & "80GB"', "S/N S/N'7"]);
    assert.equal(els.filter((e) => e.name === 'path').length, 1);
    assertError(await h.s.api('GET', '/api/v1/assets/no-such-tag/label.svg'), 404);
  });

  test('sheets: A4 holds 24 labels a page, Letter 30; tags select, filters too', async () => {
    const model = uniq('M');
    const tags = [];
    for (let i = 0; i < 31; i++) tags.push(`${model}-${String(i).padStart(2, '0')}`);
    const r0 = ok(await h.s.api('POST', '/api/v1/assets/import', {
      body: 'tag,kind,model\n' + tags.map((t) => `${t},ssd,${model}`).join('\n') + '\n', contentType: 'text/csv',
    }));
    assert.equal(r0.created, 31);
    const sheets = (text) => {
      const els = parseXml(text, { html: true });
      return els.filter((e) => e.name === 'svg' && e.attrs.class === 'sheet').map((sheet) => {
        const i = els.indexOf(sheet);
        const next = els.findIndex((e, j) => j > i && e.name === 'svg' && e.attrs.class === 'sheet');
        return els.slice(i, next < 0 ? els.length : next).filter((e) => e.name === 'title').map((e) => unescape(e.text));
      });
    };
    let r = await h.s.api('GET', `/api/v1/assets/labels.svg?model=${model}`);
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type'), /^text\/html/);
    assert.equal(r.headers.get('x-pages'), '2');
    assert.match(r.text, /@page \{ size: 210mm 297mm/);
    let pages = sheets(r.text);
    assert.deepEqual(pages.map((p) => p.length), [24, 7]);
    assert.deepEqual(pages.flat(), tags.map((t) => `${BASE}/scan/${t}`));
    r = await h.s.api('GET', `/api/v1/assets/labels.svg?paper=letter&model=${model}`);
    assert.equal(r.headers.get('x-pages'), '2');
    assert.match(r.text, /@page \{ size: 8.5in 11in/);
    assert.deepEqual(sheets(r.text).map((p) => p.length), [30, 1]);
    r = await h.s.api('GET', `/api/v1/assets/labels.svg?tags=${tags[3]},${tags[1]}`);
    assert.deepEqual(sheets(r.text), [[`${BASE}/scan/${tags[3]}`, `${BASE}/scan/${tags[1]}`]]);
    assertError(await h.s.api('GET', `/api/v1/assets/labels.svg?tags=${tags[0]},missing-${uniq()}`), 404, { field: 'tags' });
    assertError(await h.s.api('GET', '/api/v1/assets/labels.svg?paper=a3'), 400, { field: 'paper' });
  });
});

describe('labels without --base-url', () => {
  const h = useServer();
  test('the scan URL defaults to the listen address', async () => {
    const tag = uniq('DEF');
    ok(await h.s.api('POST', '/api/v1/assets', { body: { tag, kind: 'nic' } }), 201);
    const r = await h.s.api('GET', `/api/v1/assets/${tag}/label.svg`);
    const title = parseXml(r.text).find((e) => e.name === 'title');
    assert.equal(unescape(title.text), `${h.s.url.replace(/\/$/, '')}/scan/${tag}`);
  });
});
