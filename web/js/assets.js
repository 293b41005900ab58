// The hardware assets list (#/assets): counts per lifecycle stage (each a
// filter), filters by stage, kind, data center, model, warranty ending and
// a search, a server-side sorted and paged table whose rows open the
// asset's page, and a CSV export of the same filters. The filters live in
// the address's query so a view can be shared.
import { h, replace, icon, num, toast, debounce } from './dom.js';
import { api, withQuery } from './api.js';
import { dataTable, pager } from './table.js';
import { datacenterChoices } from './drift.js';

const PAGE = 50;

/** The lifecycle stages in their order: [name, label]. */
export const STAGES = [
  ['ordered', 'Ordered'], ['received', 'Received'], ['active', 'Active'], ['spare', 'Spare'],
  ['diagnostic_repair', 'Diagnostic & Repair'], ['refurbishment_candidate', 'Refurbishment Candidate'],
  ['decommissioned', 'Decommissioned'],
];
const STAGE_LABELS = Object.fromEntries(STAGES);

/** The allowed moves of the lifecycle (the API refuses any other with 409). */
export const NEXT_STAGES = {
  ordered: ['received', 'decommissioned'],
  received: ['active', 'spare', 'diagnostic_repair'],
  active: ['spare', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned'],
  spare: ['active', 'diagnostic_repair', 'refurbishment_candidate', 'decommissioned'],
  diagnostic_repair: ['active', 'spare', 'refurbishment_candidate', 'decommissioned'],
  refurbishment_candidate: ['active', 'spare', 'diagnostic_repair', 'decommissioned'],
  decommissioned: [],
};

/** The asset kinds: [name, label]. */
export const ASSET_KINDS = [['server', 'Server'], ['gpu', 'GPU'], ['psu', 'Power supply'], ['ssd', 'SSD'],
  ['nic', 'NIC / HCA'], ['switch', 'Switch'], ['other', 'Other']];
const KIND_LABELS = Object.fromEntries(ASSET_KINDS);

/** The warranty-ending choices of the list: [days, label]. */
const EXPIRING = [['30', 'Warranty ends within 30 days'], ['60', 'Warranty ends within 60 days'],
  ['90', 'Warranty ends within 90 days']];

/** A stage's label ("diagnostic_repair" -> "Diagnostic & Repair"). */
export function stageLabel(s) {
  return STAGE_LABELS[s] || (s ? String(s) : '—');
}

/** A kind's label. */
export function kindLabel(k) {
  return KIND_LABELS[k] || (k ? String(k) : '—');
}

/** A badge for a lifecycle stage. */
export function stageBadge(s) {
  return h('span', { class: `badge badge-stage stage-${STAGE_LABELS[s] ? s.replace(/_/g, '-') : 'unknown'}`,
    dataset: { stage: s || '' }, text: stageLabel(s) });
}

/** A badge for a warranty {status, days_left}. */
export function warrantyBadge(w) {
  const status = (w && w.status) || 'unknown';
  const text = { in_warranty: 'In warranty', expiring: 'Expiring', expired: 'Expired', unknown: 'Unknown' }[status] || status;
  const days = w && typeof w.days_left === 'number' ? w.days_left : null;
  return h('span', { class: `badge badge-warranty warranty-${status.replace(/_/g, '-')}`, dataset: { warranty: status },
    title: days === null ? null : `${days} day${Math.abs(days) === 1 ? '' : 's'} left`, text });
}

/** The hash of an asset's page. */
export function assetHref(tag) {
  return `#/assets/${encodeURIComponent(tag)}`;
}

/** A YYYY-MM-DD date `days` after today (UTC). */
export function dateIn(days, from = Date.now()) {
  return new Date(from + days * 86400000).toISOString().slice(0, 10);
}

/** "Rack R12 · U 20", the place of an asset's location, or a dash. */
export function placeText(loc) {
  if (!loc) return '—';
  const parts = [loc.datacenter, loc.room ? `room ${loc.room}` : null, loc.rack ? `rack ${loc.rack}` : null,
    loc.u !== null && loc.u !== undefined ? `U ${loc.u}` : null, loc.storage ? `storage ${loc.storage}` : null];
  return parts.filter(Boolean).join(' · ') || '—';
}

function val(v, cls) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted', text: '—' });
  return h('span', { class: cls || 'clip', title: String(v), text: String(v) });
}

/** Renders the assets list into main. */
export async function renderAssets(main, ctx) {
  document.title = 'Assets · gpuinv';
  const q = ctx.query;
  const filter = {
    stage: STAGE_LABELS[q.get('stage')] ? q.get('stage') : '',
    kind: KIND_LABELS[q.get('kind')] ? q.get('kind') : '',
    datacenter: /^\d+$/.test(q.get('datacenter') || '') ? q.get('datacenter') : '',
    model: (q.get('model') || '').trim(),
    expiring: EXPIRING.some(([d]) => d === q.get('expiring')) ? q.get('expiring') : '',
    q: (q.get('q') || '').trim(),
    sort: q.get('sort') || '',
  };
  let seq = 0;
  const csv = h('a', { class: 'btn btn-secondary', 'data-testid': 'export-csv', download: 'assets.csv' },
    icon('download'), 'Export CSV');

  const counts = {};
  const strip = h('section', { class: 'summary-strip stage-strip', 'aria-label': 'Assets by stage' },
    STAGES.map(([s, label]) => {
      counts[s] = h('span', { class: 'gpu-stat-value', 'data-testid': `count-${s}`, text: '—' });
      return h('button', { type: 'button', class: 'gpu-stat stage-count', dataset: { stage: s }, 'aria-pressed': 'false',
        on: { click: () => { stageSel.value = filter.stage === s ? '' : s; refilter(); } } },
      h('span', { class: 'gpu-stat-label', text: label }), counts[s]);
    }));

  const sel = (name, label, blank, choices, current) => h('select', { name, class: 'filter-select', 'aria-label': label },
    h('option', { value: '', text: blank }),
    choices.map(([v, l]) => h('option', { value: v, text: l, selected: v === current })));
  const stageSel = sel('stage', 'Stage', 'Every stage', STAGES, filter.stage);
  const kindSel = sel('kind', 'Kind', 'Every kind', ASSET_KINDS, filter.kind);
  const dcSel = sel('datacenter', 'Data center', 'Every data center', [], '');
  const expSel = sel('expiring', 'Warranty', 'Any warranty', EXPIRING, filter.expiring);
  const modelIn = h('input', { type: 'text', name: 'model', class: 'filter-input', value: filter.model,
    placeholder: 'Model', 'aria-label': 'Model' });
  const search = h('input', { type: 'search', class: 'search-input', name: 'q', value: filter.q,
    placeholder: 'Tag, serial or model', 'aria-label': 'Search assets' });

  const table = dataTable({
    label: 'Assets',
    sort: filter.sort,
    onSort: (next) => { filter.sort = next; pg.reset(); load(); },
    empty: 'No asset matches these filters.',
    onRow: (a) => ctx.go(assetHref(a.tag)),
    columns: [
      { label: 'Tag', sortKey: 'tag', width: '13%', cell: (a) => h('a', { class: 'row-link clip mono', href: assetHref(a.tag),
        title: a.tag, text: a.tag }) },
      { label: 'Kind', sortKey: 'kind', width: '9%', cell: (a) => kindLabel(a.kind) },
      { label: 'Model', sortKey: 'model', cell: (a) => val(a.model) },
      { label: 'Serial', sortKey: 'serial', cell: (a) => val(a.serial, 'clip mono') },
      { label: 'Stage', sortKey: 'stage', width: '15%', cell: (a) => stageBadge(a.stage) },
      { label: 'Location', sortKey: 'datacenter', cell: (a) => val(placeText(a.location) === '—' ? null : placeText(a.location)) },
      { label: 'Warranty', sortKey: 'warranty_end', width: '15%', cell: (a) => h('div', { class: 'stack' },
        warrantyBadge(a.warranty), a.warranty_end ? h('span', { class: 'sub', text: a.warranty_end }) : null) },
    ],
  });
  const pg = pager(() => load());

  function params() {
    return {
      stage: filter.stage, kind: filter.kind, datacenter: filter.datacenter, model: filter.model, q: filter.q,
      warranty_after: filter.expiring ? dateIn(0) : '',
      warranty_before: filter.expiring ? dateIn(Number(filter.expiring) + 1) : '',
    };
  }

  async function load() {
    const my = ++seq;
    history.replaceState(null, '', withQuery('#/assets', { stage: filter.stage, kind: filter.kind,
      datacenter: filter.datacenter, model: filter.model, expiring: filter.expiring, q: filter.q, sort: filter.sort }));
    const p = params();
    csv.href = withQuery('/api/v1/assets', { ...p, sort: filter.sort, format: 'csv' });
    for (const b of strip.querySelectorAll('.stage-count')) b.setAttribute('aria-pressed', String(b.dataset.stage === filter.stage));
    table.setBusy(true);
    try {
      const [res, st] = await Promise.all([
        api('GET', withQuery('/api/v1/assets', { ...p, sort: filter.sort, limit: PAGE, cursor: pg.cursor() })),
        api('GET', withQuery('/api/v1/asset-stages', { ...p, stage: '' })),
      ]);
      if (my !== seq || !ctx.alive()) return;
      table.setRows(res.items.map((a) => ({ ...a, id: a.tag })));
      pg.update(res.items.length, res.total, res.next);
      for (const [s] of STAGES) counts[s].textContent = num(st.stages[s] || 0);
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      pg.update(0, 0, null);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }

  function refilter() {
    filter.stage = stageSel.value;
    filter.kind = kindSel.value;
    filter.datacenter = dcSel.value;
    filter.expiring = expSel.value;
    filter.model = modelIn.value.trim();
    filter.q = search.value.trim();
    pg.reset();
    load();
  }
  for (const s of [stageSel, kindSel, dcSel, expSel]) s.addEventListener('change', refilter);
  const typed = debounce(refilter, 250);
  modelIn.addEventListener('input', typed);
  search.addEventListener('input', typed);

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Assets' }),
        h('p', { class: 'page-sub', text: 'Every physical component: its tag, place, warranty and lifecycle stage' })),
      h('div', { class: 'page-actions' },
        h('a', { class: 'btn btn-secondary', href: '#/lifecycle', text: 'Lifecycle board' }),
        h('a', { class: 'btn btn-secondary', href: '#/warranty', text: 'Warranty calendar' }), csv)),
    strip,
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' }, search, stageSel, kindSel, dcSel, modelIn, expSel),
      table.el, pg.el));
  load();
  const dcs = await datacenterChoices();
  if (!ctx.alive()) return;
  for (const d of dcs) dcSel.append(h('option', { value: String(d.id), text: d.name, selected: String(d.id) === filter.datacenter }));
}
