// The scan page (#/scan/{tag}), reached from the QR code of an asset's
// label on a phone: the asset at a glance, a check-in at a location
// (prefilled with the recorded one) with an optional stage change and a
// note, its latest events, and an audit mode that takes tag after tag for
// an open room audit and shows what is missing and unexpected as it goes.
// Every input is Enter-driven, so a USB or Bluetooth barcode scanner (which
// types the code and presses Enter) works as a keyboard; a scanned label
// URL (…/scan/<tag>) counts as its tag.
import { h, replace, toast } from './dom.js';
import { api, canWrite, withQuery } from './api.js';
import { when } from './fmt.js';

/* The lifecycle's allowed moves (docs/LIFECYCLE.md); the server decides. */
const NEXT = {
  ordered: ['received', 'decommissioned'],
  received: ['active', 'spare', 'diagnostic_repair'],
  active: ['spare', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned'],
  spare: ['active', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned'],
  diagnostic_repair: ['active', 'spare', 'refurbishment_candidate', 'decommissioned'],
  refurbishment_candidate: ['active', 'spare', 'diagnostic_repair', 'decommissioned'],
  decommissioned: [],
};
const STAGE_LABEL = {
  ordered: 'Ordered', received: 'Received', active: 'Active', spare: 'Spare',
  diagnostic_repair: 'Diagnostic & Repair', refurbishment_candidate: 'Refurbishment Candidate',
  decommissioned: 'Decommissioned',
};

/** A typed or scanned code as a tag: a label's URL gives the part after /scan/. */
export function codeToTag(code) {
  const s = String(code || '').trim();
  const m = /\/scan\/([^/?#\s]+)\s*$/.exec(s);
  return m ? decodeURIComponent(m[1]) : s;
}

function locationText(loc) {
  if (!loc) return '—';
  const parts = [loc.datacenter, loc.room && `room ${loc.room}`, loc.rack && `rack ${loc.rack}`,
    loc.u !== null && loc.u !== undefined && `U${loc.u}`, loc.storage && `storage ${loc.storage}`].filter(Boolean);
  return parts.length ? parts.join(' · ') : '—';
}

function fact(label, value, testid) {
  return h('div', { class: 'scan-fact' }, h('dt', { text: label }), h('dd', { 'data-testid': testid, text: value }));
}

function input(name, label, value, attrs = {}) {
  const id = `scan-${name}`;
  return h('div', { class: 'field', dataset: { field: name } }, h('label', { for: id, text: label }),
    h('input', { id, name, value: value === null || value === undefined ? '' : String(value), autocomplete: 'off', ...attrs }));
}

export async function renderScan(main, ctx, tag) {
  document.title = `Scan ${tag} · gpuinv`;
  const lookup = h('input', { name: 'lookup', 'data-testid': 'scan-lookup', placeholder: 'Scan or type a tag',
    autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', 'aria-label': 'Scan or type a tag' });
  const lookupForm = h('form', { class: 'scan-lookup', on: { submit: (e) => {
    e.preventDefault();
    const t = codeToTag(lookup.value);
    if (t) ctx.go(`#/scan/${encodeURIComponent(t)}`);
  } } }, lookup, h('button', { type: 'submit', class: 'btn btn-secondary', text: 'Open' }));
  const assetBox = h('section', { class: 'panel scan-asset', 'data-testid': 'scan-asset' }, h('p', { class: 'muted', text: 'Loading…' }));
  const checkinBox = h('section', { class: 'panel scan-checkin' });
  const eventsBox = h('section', { class: 'panel scan-events' });
  const auditBox = h('section', { class: 'panel scan-audit' });
  replace(main, h('div', { class: 'scan-page' }, lookupForm, assetBox, checkinBox, eventsBox, auditBox));

  let asset;
  try {
    asset = await api('GET', `/api/v1/assets/${encodeURIComponent(tag)}`);
  } catch (e) {
    if (!ctx.alive()) return;
    replace(assetBox, h('h1', { text: tag }), h('p', { class: 'error', 'data-testid': 'scan-error',
      text: e.status === 404 ? 'No asset has this tag.' : e.message }));
    checkinBox.remove();
    eventsBox.remove();
    renderAudit(auditBox, ctx);
    return;
  }
  if (!ctx.alive()) return;
  const dcs = await api('GET', '/api/v1/datacenters?limit=500').then((r) => r.items).catch(() => []);
  if (!ctx.alive()) return;

  const show = (a) => {
    replace(assetBox,
      h('h1', { class: 'scan-tag', 'data-testid': 'asset-tag', text: a.tag }),
      h('dl', { class: 'scan-facts' },
        fact('Kind', a.kind, 'asset-kind'),
        fact('Model', a.model || '—', 'asset-model'),
        fact('Serial', a.serial || '—', 'asset-serial'),
        fact('Stage', STAGE_LABEL[a.stage] || a.stage, 'asset-stage'),
        fact('Location', locationText(a.location), 'asset-location'),
        fact('Warranty', a.warranty && a.warranty.end ? `${a.warranty.end} (${a.warranty.status.replace('_', ' ')})` : 'unknown', 'asset-warranty')));
  };
  const events = async () => {
    const r = await api('GET', `/api/v1/assets/${encodeURIComponent(asset.tag)}/events?limit=8`).catch(() => null);
    if (!r || !ctx.alive()) return;
    replace(eventsBox, h('h2', { text: 'Latest events' }),
      h('ul', { class: 'scan-event-list', 'data-testid': 'scan-events' }, r.items.map((e) => h('li', { dataset: { kind: e.kind } },
        h('span', { class: 'scan-event-kind', text: e.kind }), ' ',
        h('span', { class: 'muted', text: `${e.actor} · ${when(e.at)}` }), ' ',
        h('span', { class: 'scan-event-detail', text: eventText(e) })))));
  };
  const form = () => {
    const loc = asset.location || {};
    const dcSelect = h('select', { id: 'scan-datacenter', name: 'datacenter' },
      h('option', { value: '', text: '(none)' }),
      dcs.map((d) => h('option', { value: d.name, text: d.name, selected: d.name === loc.datacenter })));
    const stage = h('select', { id: 'scan-stage', name: 'stage', 'data-testid': 'stage-select' },
      h('option', { value: '', text: `Keep ${STAGE_LABEL[asset.stage] || asset.stage}` }),
      (NEXT[asset.stage] || []).map((s) => h('option', { value: s, text: STAGE_LABEL[s] })));
    const status = h('p', { class: 'muted small', role: 'status', 'data-testid': 'checkin-status' });
    const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block', 'data-testid': 'checkin',
      text: 'Check in here', disabled: !canWrite() });
    const f = h('form', { class: 'scan-form', 'data-testid': 'checkin-form', on: { submit: async (e) => {
      e.preventDefault();
      const v = (n) => f.elements[n].value.trim();
      const location = { datacenter: v('datacenter') || null, room: v('room') || null, rack: v('rack') || null,
        u: v('u') === '' ? null : Number(v('u')), storage: v('storage') || null };
      const body = { tag: asset.tag, location };
      if (v('note')) body.note = v('note');
      if (v('stage')) body.stage = v('stage');
      submit.disabled = true;
      status.textContent = 'Saving…';
      try {
        const r = await api('POST', '/api/v1/scans', body);
        if (!ctx.alive()) return;
        asset = r.asset;
        show(asset);
        form();
        events();
        toast(r.located ? `Checked in at ${locationText(asset.location)}` : 'Scan recorded');
      } catch (err) {
        status.textContent = err.message;
        status.className = 'error small';
        submit.disabled = !canWrite();
      }
    } } },
    h('div', { class: 'form-grid' },
      h('div', { class: 'field field-wide', dataset: { field: 'datacenter' } }, h('label', { for: 'scan-datacenter', text: 'Data center' }), dcSelect),
      input('room', 'Room', loc.room),
      input('rack', 'Rack', loc.rack),
      input('u', 'U', loc.u, { inputmode: 'numeric', pattern: '[0-9]*' }),
      input('storage', 'Storage', loc.storage),
      h('div', { class: 'field field-wide', dataset: { field: 'stage' } }, h('label', { for: 'scan-stage', text: 'Stage' }), stage),
      h('div', { class: 'field field-wide', dataset: { field: 'note' } }, h('label', { for: 'scan-note', text: 'Note' }),
        h('input', { id: 'scan-note', name: 'note', autocomplete: 'off', maxlength: 1024 }))),
    submit, status);
    replace(checkinBox, h('h2', { text: 'Check in' }), f);
  };
  show(asset);
  form();
  events();
  renderAudit(auditBox, ctx);
}

function eventText(e) {
  const d = e.detail || {};
  if (e.kind === 'located') return `${locationText(d.from)} → ${locationText(d.to)}`;
  if (e.kind === 'stage') return `${d.from} → ${d.to}${d.reason ? ` (${d.reason})` : ''}`;
  if (e.kind === 'scan') return `${locationText(d.location)}${d.note ? ` — ${d.note}` : ''}${d.audit ? ` (audit ${d.audit})` : ''}`;
  return '';
}

/* Audit mode: pick an open audit, then enter or scan tags one after another. */
async function renderAudit(box, ctx) {
  const r = await api('GET', withQuery('/api/v1/audits', { state: 'open', limit: 100 })).catch(() => null);
  if (!ctx.alive()) return;
  const audits = r ? r.items : [];
  const pick = h('select', { name: 'audit', 'data-testid': 'audit-select', 'aria-label': 'Open audit' },
    h('option', { value: '', text: audits.length ? 'Pick an open audit' : 'No open audit' }),
    audits.map((a) => h('option', { value: String(a.id),
      text: `#${a.id} ${locationText({ datacenter: a.location.datacenter, room: a.location.room, rack: a.location.rack })}` })));
  const code = h('input', { name: 'code', 'data-testid': 'audit-input', placeholder: 'Scan or type a tag, then Enter',
    autocomplete: 'off', autocapitalize: 'off', spellcheck: 'false', disabled: true, 'aria-label': 'Tag found' });
  const status = h('p', { class: 'muted small', role: 'status', 'data-testid': 'audit-status' });
  const lists = h('div', { class: 'scan-audit-lists' });
  const showAudit = (a) => {
    const list = (title, items, testid) => h('div', {},
      h('h3', { text: `${title} (${items.length})` }),
      h('ul', { 'data-testid': testid }, items.map((x) => h('li', { text: x.tag }))));
    replace(lists,
      h('p', { class: 'small', 'data-testid': 'audit-counts',
        text: `${a.counts.found} found of ${a.counts.expected} expected · ${a.counts.missing} missing · ${a.counts.unexpected} unexpected` }),
      list('Missing', a.missing, 'audit-missing'), list('Unexpected', a.unexpected, 'audit-unexpected'));
  };
  pick.addEventListener('change', async () => {
    code.disabled = !pick.value || !canWrite();
    replace(lists);
    status.textContent = '';
    if (!pick.value) return;
    const a = await api('GET', `/api/v1/audits/${pick.value}`).catch((e) => { status.textContent = e.message; return null; });
    if (a && ctx.alive()) { showAudit(a); code.focus(); }
  });
  const f = h('form', { class: 'scan-lookup', on: { submit: async (e) => {
    e.preventDefault();
    const t = codeToTag(code.value);
    code.value = '';
    if (!t || !pick.value) return;
    try {
      const a = await api('POST', `/api/v1/audits/${pick.value}/scans`, { tag: t });
      if (!ctx.alive()) return;
      showAudit(a);
      status.className = 'muted small';
      status.textContent = `${a.scanned.tag}: ${a.scanned.expected ? 'expected here' : 'recorded elsewhere'}`;
    } catch (err) {
      status.className = 'error small';
      status.textContent = `${t}: ${err.status === 404 ? 'no asset has this tag' : err.message}`;
    }
    code.focus();
  } } }, code, h('button', { type: 'submit', class: 'btn btn-secondary', text: 'Found' }));
  replace(box, h('h2', { text: 'Audit mode' }), pick, f, status, lists);
}
