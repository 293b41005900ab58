// The Drift page: where the declared inventory and discovery disagree.
// Counts per kind (each a filter), filters by kind and data center, a paged
// table whose rows link to the resource, the host and its GPUs, and CSV
// export of the filter. The Hosts tab (hosts.js) shares the header.
import { h, replace, icon, num, toast } from './dom.js';
import { api, withQuery } from './api.js';
import { dataTable, pager } from './table.js';

const PAGE = 50;

/** Every drift kind, in the order the API lists them, with its label and meaning. */
export const DRIFT_KINDS = [
  ['gpu_count_mismatch', 'GPU count', 'declared GPU count differs from the GPUs discovered'],
  ['gpu_model_mismatch', 'GPU model', 'declared GPU model does not name the discovered one'],
  ['retired_busy', 'Busy in maintenance', 'maintenance or retired server with busy GPUs'],
  ['unallocated_busy', 'Busy unallocated', 'available (unallocated) server with busy GPUs'],
  ['unlinked_host', 'Unlinked host', 'discovered host with no inventory server'],
  ['never_seen', 'Never seen', 'inventory server no discovered host is linked to'],
  ['ambiguous_match', 'Ambiguous match', 'more than one server fits a discovered host'],
];
const LABELS = Object.fromEntries(DRIFT_KINDS.map(([k, l]) => [k, l]));

/** The page header and the Drift / Hosts tabs; returns the content node. */
export function driftFrame(main, active, actions) {
  const tab = (href, label, key) => h('a', { href, class: `tab${active === key ? ' active' : ''}`,
    'aria-current': active === key ? 'page' : null, dataset: { tab: key }, text: label });
  const content = h('div', { class: 'tab-content' });
  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Drift' }),
        h('p', { class: 'page-sub', text: 'Where the inventory and what discovery reports disagree' })),
      h('div', { class: 'page-actions' }, actions || null)),
    h('nav', { class: 'tabs', 'aria-label': 'Drift sections' },
      tab('#/drift', 'Drift', 'drift'), tab('#/drift/hosts', 'Discovered hosts', 'hosts')),
    content);
  return content;
}

/** A value cell, a muted dash when empty. */
function val(v) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted', text: '—' });
  return h('span', { class: 'clip', title: String(v), text: String(v) });
}

/** Data centers for the filter (the first 1000). */
export async function datacenterChoices() {
  try {
    return (await api('GET', '/api/v1/datacenters?limit=1000&sort=name')).items;
  } catch {
    return [];
  }
}

/** Renders the Drift tab into main. */
export async function renderDrift(main, ctx) {
  document.title = 'Drift · gpuinv';
  const filter = {
    kind: LABELS[ctx.query.get('kind')] ? ctx.query.get('kind') : '',
    datacenter: /^\d+$/.test(ctx.query.get('datacenter') || '') ? ctx.query.get('datacenter') : '',
  };
  let seq = 0;
  const csv = h('a', { class: 'btn btn-secondary', 'data-testid': 'export-csv', download: 'drift.csv' },
    icon('download'), 'Export CSV');
  const content = driftFrame(main, 'drift', csv);

  const counts = {};
  const strip = h('section', { class: 'summary-strip', 'aria-label': 'Drift by kind' },
    DRIFT_KINDS.map(([k, label, note]) => {
      counts[k] = h('span', { class: 'gpu-stat-value', 'data-testid': `count-${k}`, text: '—' });
      return h('button', { type: 'button', class: 'gpu-stat drift-count', dataset: { kind: k }, title: note,
        'aria-pressed': 'false',
        on: { click: () => { kindSel.value = filter.kind === k ? '' : k; refilter(); } } },
      h('span', { class: 'gpu-stat-label', text: label }), counts[k], h('span', { class: 'gpu-stat-note', text: note }));
    }));

  const kindSel = h('select', { name: 'kind', class: 'filter-select', 'aria-label': 'Kind' },
    h('option', { value: '', text: 'Every kind' }),
    DRIFT_KINDS.map(([k, label]) => h('option', { value: k, text: label, selected: k === filter.kind })));
  const dcSel = h('select', { name: 'datacenter', class: 'filter-select', 'aria-label': 'Data center' },
    h('option', { value: '', text: 'Every data center' }));

  const table = dataTable({
    label: 'Drift',
    empty: 'No drift: the inventory and discovery agree here.',
    columns: [
      { label: 'Kind', cell: (d) => h('span', { class: 'badge badge-flag badge-stale', dataset: { kind: d.kind },
        text: LABELS[d.kind] || d.kind }) },
      { label: 'Server', cell: (d) => (d.resource_id
        ? h('a', { class: 'row-link clip', href: `#/resources/${d.resource_id}`, title: d.resource, text: d.resource })
        : val(null)) },
      { label: 'Host', cell: (d) => (d.host
        ? h('div', { class: 'stack' },
          h('a', { class: 'clip mono', href: withQuery('#/drift/hosts', { q: d.host }), title: d.host, text: d.host }),
          h('a', { class: 'sub', href: withQuery('#/gpus', { host: d.host }), text: 'its GPUs' }))
        : val(null)) },
      { label: 'Data center', cell: (d) => (d.datacenter_id
        ? h('a', { class: 'clip', href: `#/datacenters/${d.datacenter_id}`, text: d.datacenter || `#${d.datacenter_id}` })
        : val(null)) },
      { label: 'Expected', cls: 'n', cell: (d) => val(d.expected) },
      { label: 'Found', cls: 'n', cell: (d) => val(d.found) },
      { label: 'What', cell: (d) => h('span', { class: 'clip clip-wide', title: d.message, text: d.message }) },
    ],
  });
  const pg = pager(() => load());

  async function load() {
    const my = ++seq;
    const p = { kind: filter.kind, datacenter: filter.datacenter };
    history.replaceState(null, '', withQuery('#/drift', p));
    csv.href = withQuery('/api/v1/drift', { ...p, format: 'csv' });
    for (const b of strip.querySelectorAll('.drift-count')) b.setAttribute('aria-pressed', String(b.dataset.kind === filter.kind));
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/drift', { ...p, limit: PAGE, cursor: pg.cursor() }));
      if (my !== seq || !ctx.alive()) return;
      table.setRows(res.items.map((d, i) => ({ ...d, id: `${d.kind}-${d.resource_id || ''}-${d.host_id || ''}-${i}` })));
      pg.update(res.items.length, res.total, res.next);
      for (const [k] of DRIFT_KINDS) {
        counts[k].textContent = num(res.counts[k] || 0);
        counts[k].parentElement.classList.toggle('sum-alert', (res.counts[k] || 0) > 0);
      }
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
    filter.kind = kindSel.value;
    filter.datacenter = dcSel.value;
    pg.reset();
    load();
  }
  kindSel.addEventListener('change', refilter);
  dcSel.addEventListener('change', refilter);

  replace(content, strip,
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' }, kindSel, dcSel),
      table.el, pg.el));
  load();
  const dcs = await datacenterChoices();
  if (!ctx.alive()) return;
  for (const d of dcs) dcSel.append(h('option', { value: String(d.id), text: d.name, selected: String(d.id) === filter.datacenter }));
}
