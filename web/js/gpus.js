// The discovered-GPU list: a summary strip, filters (text, model, host,
// cluster, team, environment, data center, state, stale only; source from
// the address), a paged table with live telemetry and freshness badges that
// refreshes itself while the tab is visible, CSV export of the filter.
import { h, replace, icon, num, toast, debounce, slug, today } from './dom.js';
import { api, withQuery, csvLink } from './api.js';
import { dataTable, pager } from './table.js';
import { timeAgo, utilBar, memUsed, unit, gpuFlags, isNum, span, autoRefresh } from './fmt.js';

const PAGE = 50;
const REFRESH_S = 20;
const TEXT_FILTERS = ['q', 'model', 'host', 'cluster', 'team', 'env'];

/** The resolved owner's team and environment, "vision · prod". */
function ownerLine(g) {
  const o = g.owner || {};
  const v = (f) => (o[f] && o[f].value) || g[f] || '—';
  return [v('team'), v('env')].join(' · ');
}

/** The export's file name, after what it holds: "gpus-team-speech-2026-12-01.csv". */
export function gpuExportName(p, dcName) {
  const bits = ['gpus'];
  if (p.datacenter) bits.push(slug(dcName || `datacenter-${p.datacenter}`));
  for (const k of ['team', 'env', 'cluster', 'model', 'host', 'state']) if (p[k]) bits.push(k, slug(p[k]));
  if (p.source) bits.push('source', p.source);
  if (p.stale) bits.push('stale');
  if (p.q) bits.push('matching', slug(p.q));
  bits.push(today());
  return `${bits.join('-')}.csv`;
}

/** A cell value with a muted dash when empty. */
function text(v, cls) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted', text: '—' });
  return h('span', { class: `clip${cls ? ` ${cls}` : ''}`, title: String(v), text: String(v) });
}

/** The address of a GPU's page. */
export function gpuHref(uuid) {
  return `#/gpus/${encodeURIComponent(uuid)}`;
}

/** The API path of one GPU. A MIG instance without its own UUID is named
 * `MIG-<parent>/<instance>`: each segment is encoded, and the slash kept. */
export function gpuApiPath(uuid) {
  return `/api/v1/gpus/${uuid.split('/').map(encodeURIComponent).join('/')}`;
}

/** One figure of the summary strip. */
function stat(key, label, note) {
  const value = h('span', { class: 'gpu-stat-value', 'data-testid': `sum-${key}`, text: '—' });
  const noteEl = h('span', { class: 'gpu-stat-note', text: note });
  return { el: h('div', { class: `gpu-stat sum-${key}` }, h('span', { class: 'gpu-stat-label', text: label }), value, noteEl),
    set(v, n) { value.textContent = v; if (n !== undefined) noteEl.textContent = n; } };
}

/** Renders the GPU list into main. */
export function renderGpus(main, ctx) {
  document.title = 'GPUs · gpuinv';
  const filter = {};
  for (const k of TEXT_FILTERS) filter[k] = ctx.query.get(k) || '';
  filter.stale = ctx.query.get('stale') === 'true';
  filter.state = ctx.query.get('state') || '';
  filter.sort = ctx.query.get('sort') || '';
  filter.datacenter = /^\d+$/.test(ctx.query.get('datacenter') || '') ? ctx.query.get('datacenter') : '';
  // Set only by links from other pages (a source).
  filter.source = /^\d+$/.test(ctx.query.get('source') || '') ? ctx.query.get('source') : '';
  const seen = { model: new Set(), host: new Set(), cluster: new Set(), team: new Set(), env: new Set() };
  const dcNames = new Map();
  let seq = 0;
  let freshness = null;

  // Figures over the whole filter, from the list's summary (not the page).
  const sums = { total: stat('total', 'GPUs', 'matching the filters'), stale: stat('stale', 'Stale', 'no fresh reading'),
    missing: stat('missing', 'Missing', 'of these GPUs'), util: stat('util', 'Average utilization', 'of these GPUs') };
  const scope = h('p', { class: 'page-sub', 'data-testid': 'gpu-scope' });
  const fresh = h('p', { class: 'page-sub small', 'data-testid': 'gpu-freshness' });

  const filtered = () => Object.entries(params()).some(([k, v]) => k !== 'sort' && v);
  let lastRows = [];
  const table = dataTable({
    label: 'GPUs',
    minWidth: 1200,
    empty: () => (filtered()
      ? 'No GPUs match these filters.'
      : h('div', { class: 'empty-state' },
        h('strong', { text: 'No GPUs have been reported yet.' }),
        h('span', { text: 'Connect a source: run the agent on a GPU host with a pusher token, or add a pull source.' }),
        h('div', { class: 'empty-actions' },
          h('a', { class: 'btn btn-primary btn-sm', href: '#/sources', text: 'Connect a source' })))),
    sort: filter.sort,
    onSort: (next) => { filter.sort = next; pg.reset(); load(); },
    onRow: (g) => ctx.go(gpuHref(g.uuid)),
    rowClass: (g) => (g.stale || g.missing_since ? 'row-stale' : null),
    columns: [
      { label: 'Model', sortKey: 'model', width: '19%', cell: (g) => h('div', { class: 'stack' },
        h('a', { class: 'row-link clip clip-model', href: gpuHref(g.uuid), title: `${g.model || ''}\n${g.uuid}`, text: g.model || g.uuid }),
        h('span', { class: 'sub mono', text: g.parent_uuid ? `MIG ${g.mig_profile || 'instance'}`
          : `#${g.index ?? '?'} · ${g.pci_bus_id || g.uuid.slice(0, 12)}` })) },
      { label: 'Host', sortKey: 'host', width: '14%', cell: (g) => (g.resource_id
        ? h('a', { class: 'clip mono', href: `#/resources/${g.resource_id}`, title: g.host || '', text: g.host || `#${g.resource_id}` })
        : text(g.host, 'mono')) },
      { label: 'Data center', cell: (g) => (g.datacenter_id
        ? h('a', { href: `#/datacenters/${g.datacenter_id}`, class: 'clip', text: g.datacenter || `#${g.datacenter_id}` })
        : text(g.datacenter)) },
      { label: 'Cluster / team / env', cell: (g) => h('div', { class: 'stack' }, text(g.cluster),
        h('span', { class: 'sub', title: ownerLine(g), text: ownerLine(g) })) },
      { label: 'Utilization', sortKey: 'util_pct', cls: 'util-cell', width: '124px', cell: (g) => utilBar(g.util_pct) },
      { label: 'Memory used', sortKey: 'mem_used_mib', cls: 'n', width: '122px', cell: (g) => memUsed(g.mem_used_mib, g.memory_total_mib) },
      { label: 'Power', sortKey: 'power_w', cls: 'n', width: '76px', cell: (g) => unit(g.power_w, 'W') },
      { label: 'Temp.', sortKey: 'temp_c', cls: 'n', width: '72px', cell: (g) => unit(g.temp_c, '°C') },
      { label: 'Last seen', sortKey: 'last_seen_at', width: '106px', cell: (g) => timeAgo(g.newest_at) },
      { label: 'Status', key: 'status', cls: 'flags', width: '120px', cell: (g) => {
        const f = gpuFlags(g);
        return f.length ? h('span', { class: 'flag-list' }, f) : h('span', { class: 'muted', text: '—' });
      } },
    ],
  });
  const pg = pager(() => load());

  const csv = h('a', { class: 'btn btn-secondary', 'data-testid': 'export-csv', download: 'gpus.csv' },
    icon('download'), 'Export CSV');
  csvLink(csv, (err) => toast(err.message, 'error'));
  const dcSel = h('select', { name: 'datacenter', class: 'filter-input filter-datacenter', 'aria-label': 'Data center' },
    h('option', { value: '', text: 'All data centers' }));
  if (filter.datacenter) dcSel.append(h('option', { value: filter.datacenter, text: `Data center #${filter.datacenter}` }));
  dcSel.value = filter.datacenter;
  const refresh = h('button', { type: 'button', class: 'btn btn-secondary', 'data-testid': 'refresh', text: 'Refresh',
    on: { click: () => load() } });
  const search = h('input', { type: 'search', class: 'search-input', name: 'q', value: filter.q,
    placeholder: 'Search UUID, serial, host', 'aria-label': 'Search GPUs' });
  const lists = {};
  const inputs = {};
  for (const [k, label] of [['model', 'Model'], ['host', 'Host'], ['cluster', 'Cluster'], ['team', 'Team'], ['env', 'Environment']]) {
    lists[k] = h('datalist', { id: `gpu-${k}-list` });
    inputs[k] = h('input', { type: 'text', name: k, value: filter[k], placeholder: label, 'aria-label': label,
      class: `filter-input filter-${k}`, list: `gpu-${k}-list`, autocomplete: 'off' });
  }
  const staleBox = h('input', { type: 'checkbox', name: 'stale', checked: filter.stale });
  const staleLabel = h('label', { class: 'check-filter' }, staleBox, 'Stale only');
  const stateSel = h('select', { name: 'state', class: 'filter-input filter-state', 'aria-label': 'State' },
    [['', 'Any state'], ['in_use', 'In use'], ['idle', 'Idle'], ['unknown', 'No telemetry'], ['stale', 'Stale'], ['missing', 'Missing']]
      .map(([v, t]) => h('option', { value: v, text: t, selected: v === filter.state })));
  const linked = h('span', { class: 'filter-chip', 'data-testid': 'linked-filter', hidden: true });
  const clear = h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Clear filters',
    on: { click: () => {
      search.value = '';
      for (const k of Object.keys(inputs)) inputs[k].value = '';
      staleBox.checked = false;
      stateSel.value = '';
      dcSel.value = '';
      Object.assign(filter, { q: '', model: '', host: '', cluster: '', team: '', env: '', stale: false, state: '',
        datacenter: '', source: '' });
      pg.reset();
      load();
    } } });

  function params() {
    return { q: filter.q, model: filter.model, host: filter.host, cluster: filter.cluster, team: filter.team,
      env: filter.env, datacenter: filter.datacenter, source: filter.source, stale: filter.stale ? 'true' : '',
      state: filter.state, sort: filter.sort };
  }

  /** "5 min" for a freshness limit in seconds. */
  function span(s) {
    if (!isNum(s)) return '';
    if (s % 3600 === 0) return `${s / 3600} h`;
    if (s % 60 === 0) return `${s / 60} min`;
    return `${s} s`;
  }

  /** Says how often the page updates and, when the server tells, the freshness limit. */
  function drawFresh(at) {
    const limit = isNum(freshness) ? ` · a reading older than ${span(freshness)} is stale` : '';
    fresh.textContent = `Updates every ${REFRESH_S} s while this tab is open · updated ${at.toLocaleTimeString()}${limit}`;
  }

  async function load() {
    const my = ++seq;
    const p = params();
    history.replaceState(null, '', withQuery('#/gpus', p));
    csv.href = withQuery('/api/v1/gpus', { ...p, format: 'csv' });
    csv.setAttribute('download', gpuExportName(p, dcNames.get(p.datacenter)));
    clear.hidden = !filtered();
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/gpus', { ...p, limit: PAGE, cursor: pg.cursor() }));
      if (my !== seq || !ctx.alive()) return;
      if (isNum(res.freshness_s)) freshness = res.freshness_s;
      drawFresh(new Date());
      const rows = res.items.map((g) => ({ ...g, id: g.uuid }));
      for (const g of rows) for (const k of Object.keys(seen)) if (g[k]) seen[k].add(g[k]);
      for (const k of Object.keys(seen)) replace(lists[k], [...seen[k]].sort().map((v) => h('option', { value: v })));
      table.setRows(rows);
      pg.update(rows.length, res.total, res.next);
      lastRows = rows;
      drawLinked(rows);
      const sum = res.summary || {};
      sums.total.set(num(res.total));
      sums.missing.set(num(sum.missing ?? 0));
      const measured = (sum.in_use ?? 0) + (sum.idle ?? 0);
      sums.util.set(isNum(sum.util_avg) ? `${Math.round(sum.util_avg)}%` : '—',
        measured ? `over ${num(measured)} measured GPU${measured === 1 ? '' : 's'}` : 'no fresh telemetry');
      sums.stale.set(num(sum.stale ?? 0), res.freshness_s ? `no reading in ${span(res.freshness_s)}` : 'no fresh reading');
      sums.stale.el.classList.toggle('sum-alert', (sum.stale ?? 0) > 0);
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      pg.update(0, 0, null);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }

  /** Names the data-center or source filter that came with the address. */
  function drawLinked(rows) {
    const bits = [];
    if (filter.datacenter) {
      bits.push(`Data center: ${dcNames.get(filter.datacenter) || (rows[0] && rows[0].datacenter) || `#${filter.datacenter}`}`);
    }
    if (filter.source) bits.push(`Source: ${(rows[0] && rows[0].source) || `#${filter.source}`}`);
    linked.textContent = bits.join(' · ');
    linked.hidden = bits.length === 0;
    scope.textContent = bits.length ? `Reported by ${bits.join(', ').toLowerCase()}` : 'Every GPU the sources have reported';
  }

  const refilter = () => {
    const next = { q: search.value.trim(), stale: staleBox.checked, state: stateSel.value, datacenter: dcSel.value };
    for (const k of Object.keys(inputs)) next[k] = inputs[k].value.trim();
    if (Object.keys(next).every((k) => next[k] === filter[k])) return;
    Object.assign(filter, next);
    pg.reset();
    load();
  };
  const later = debounce(refilter, 250);
  search.addEventListener('input', later);
  for (const el of Object.values(inputs)) el.addEventListener('input', later);
  staleBox.addEventListener('change', refilter);
  stateSel.addEventListener('change', refilter);
  dcSel.addEventListener('change', refilter);

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'GPUs' }), scope, fresh),
      h('div', { class: 'page-actions' }, refresh, csv)),
    h('section', { class: 'summary-strip', 'aria-label': 'Summary' }, Object.values(sums).map((s) => s.el)),
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' },
        h('label', { class: 'search' }, icon('search'), search),
        dcSel, Object.values(inputs), Object.values(lists), stateSel, staleLabel, linked, clear),
      table.el,
      pg.el));
  load();
  autoRefresh(REFRESH_S, ctx.alive, () => load());
  // The data-center choices (names also label the linked filter and the export).
  api('GET', '/api/v1/datacenters?sort=name&limit=1000').then((res) => {
    if (!ctx.alive()) return;
    const keep = dcSel.value;
    replace(dcSel, h('option', { value: '', text: 'All data centers' }),
      res.items.map((d) => h('option', { value: String(d.id), text: d.name })));
    for (const d of res.items) dcNames.set(String(d.id), d.name);
    dcSel.value = keep;
    if (dcSel.value !== keep) {
      dcSel.append(h('option', { value: keep, text: `Data center #${keep}` }));
      dcSel.value = keep;
    }
    csv.setAttribute('download', gpuExportName(params(), dcNames.get(filter.datacenter)));
    drawLinked(lastRows);
  }).catch(() => {});
}
