// The home page and its two siblings, all drawn from the global filters in
// the address (filters.js):
//   #/                the fleet: KPI cards, usage charts, the hour-of-week
//                     heatmap, cost by team, and the tables of idle and
//                     allocated-idle GPUs, top consumers, cost by team and
//                     savings, each exportable as CSV
//   #/team/{name}     the same for one team ("my team"), its team fixed
//   #/leadership      per team: owned GPUs, utilization, cost, waste, trend
// Every figure is aggregated by the server (/api/v1/usage, /api/v1/usage/
// heatmap|trend, /api/v1/insights/...); the page never reads raw samples.
// A route the server does not offer (404) or that has nothing in the range
// shows as such in its own panel; the rest of the page still draws.
import { h, replace, icon, toast, slug, today } from './dom.js';
import { api, withQuery, csvLink } from './api.js';
import { dataTable } from './table.js';
import { timeAgo, ago } from './fmt.js';
import { timeChart, heatmap, unavailable, fmtValue } from './chart.js';
import { readFilters, filterHref, filterBar, timeWindow, apiFilters, gpuListFilters, GROUPS } from './filters.js';
import { gpuHref } from './gpus.js';

/** The GPU-hour figures of a usage item, as the API names them: [key, label]. */
export const HOURS = [['busy', 'Busy'], ['allocated', 'Allocated'], ['allocated_idle', 'Allocated, idle'],
  ['idle', 'Unallocated, idle'], ['unknown', 'Unknown (no data)'], ['owned', 'Owned']];

const TOP_GROUPS = 8;

/**
 * GET path. Resolves to {data} on success, {missing: true} when the server
 * does not offer the route (404), {error} for any other failure (a 401
 * still signs out through api()).
 */
async function fetchOr(path) {
  try {
    return { data: await api('GET', path) };
  } catch (err) {
    if (err.status === 404) return { missing: true, error: err };
    return { error: err };
  }
}

/** The first of names that o has (not undefined), else undefined. Field names the analytics routes may use. */
function pick(o, ...names) {
  if (!o || typeof o !== 'object') return undefined;
  for (const n of names) {
    const v = n.split('.').reduce((a, k) => (a && typeof a === 'object' ? a[k] : undefined), o);
    if (v !== undefined && v !== null) return v;
  }
  return undefined;
}

/** A number from a JSON value (numbers, numeric strings), else null. */
function n(v) {
  if (typeof v === 'number' && Number.isFinite(v)) return v;
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

/** Integer cents of a decimal money string ("1234.50"); null when not one. */
export function cents(s) {
  if (typeof s === 'number' && Number.isFinite(s)) return Math.round(s * 100);
  const m = /^(-?)(\d+)(?:\.(\d+))?$/.exec(typeof s === 'string' ? s.trim() : '');
  if (!m) return null;
  const frac = (m[3] || '').padEnd(3, '0');
  let c = Number(m[2]) * 100 + Number(frac.slice(0, 2)) + (Number(frac[2]) >= 5 ? 1 : 0);
  if (m[1]) c = -c;
  return c;
}

/** "1234.50" for integer cents. */
function centsText(c) {
  const neg = c < 0;
  const a = Math.abs(c);
  return `${neg ? '-' : ''}${Math.floor(a / 100)}.${String(a % 100).padStart(2, '0')}`;
}

/** "$1,234.50" (or "1,234.50 EUR") for a decimal money string and currency. */
export function moneyText(amount, currency) {
  const c = cents(amount);
  if (c === null) return '—';
  const num = (c / 100).toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  if (currency === 'USD' || !currency) return `${c < 0 ? '-' : ''}$${num.replace('-', '')}`;
  return `${num} ${currency}`;
}

/**
 * A money value of the API as {amount, currency, method} or null: a cost
 * object ({amount, currency, method}), or a bare decimal string with the
 * currency given apart.
 */
function money(v, currency) {
  if (v && typeof v === 'object' && v.amount !== undefined) {
    return cents(v.amount) === null ? null : { amount: String(v.amount), currency: v.currency || currency || 'USD', method: v.method };
  }
  if (cents(v) !== null) return { amount: String(v), currency: currency || 'USD' };
  return null;
}

/** A money cell: formatted text, the API's exact amount in data-amount. */
function moneyCell(m) {
  if (!m) return h('span', { class: 'muted', text: '—' });
  return h('span', { class: 'money', dataset: { amount: m.amount, currency: m.currency }, title: m.method ? `by ${m.method}` : null,
    text: moneyText(m.amount, m.currency) });
}

/** Unix seconds of an RFC 3339 string; NaN when absent. */
function secs(v) {
  return typeof v === 'string' ? Date.parse(v) / 1000 : NaN;
}

/** The label of a group value (null: no owner / none). */
function groupLabel(g) {
  return g === null || g === undefined || g === '' ? '(none)' : String(g);
}

/** The hours figures of a usage item or total: {owned, allocated, busy, allocated_idle, idle, unknown}. */
function hoursOf(item) {
  const gh = (item && item.gpu_hours) || {};
  const out = {};
  for (const [k] of HOURS) out[k] = n(gh[k]) ?? 0;
  return out;
}

/**
 * Sums usage items per group over every step: [{group, hours, util_avg
 * (weighted by measured GPU-hours), cost (cents and currency, or null),
 * energy}], by owned GPU-hours, most first.
 */
export function perGroup(items) {
  const m = new Map();
  for (const it of items) {
    const key = it.group ?? null;
    let g = m.get(key);
    if (!g) {
      g = { group: key, hours: {}, utilW: 0, measured: 0, cost: 0, costSeen: false, currency: null, method: null, energy: 0 };
      for (const [k] of HOURS) g.hours[k] = 0;
      m.set(key, g);
    }
    const hr = hoursOf(it);
    for (const [k] of HOURS) g.hours[k] += hr[k];
    const measured = hr.owned - hr.unknown;
    const u = n(it.util_avg);
    if (u !== null && measured > 0) {
      g.utilW += u * measured;
      g.measured += measured;
    }
    const c = money(it.cost);
    if (c) {
      g.cost += cents(c.amount);
      g.costSeen = true;
      g.currency = g.currency || c.currency;
      g.method = g.method || c.method;
    }
    g.energy += n(it.energy_kwh) ?? 0;
  }
  return [...m.values()].map((g) => ({
    group: g.group, hours: g.hours, energy: g.energy,
    util_avg: g.measured > 0 ? g.utilW / g.measured : null,
    cost: g.costSeen ? { amount: centsText(g.cost), currency: g.currency, method: g.method } : null,
  })).sort((a, b) => b.hours.owned - a.hours.owned || groupLabel(a.group).localeCompare(groupLabel(b.group)));
}

/** The points of a window: every step start from `from` to `to` (hour and day steps), else the starts seen. */
function axis(win, items) {
  const seen = [...new Set(items.map((it) => secs(it.start)).filter(Number.isFinite))].sort((a, b) => a - b);
  const size = win.step === 'hour' ? 3600 : win.step === 'day' ? 86400 : 0;
  if (!size) return seen;
  const out = [];
  for (let t = win.from; t < win.to; t += size) out.push(t);
  return out;
}

/**
 * Chart series from usage items: the TOP_GROUPS largest groups by `rank`,
 * the rest summed into "Other" (for summable figures), each as values
 * along x. value(item) gives an item's figure; sum says whether "Other"
 * may add them.
 */
function seriesOf(items, x, value, { sum = true, rank } = {}) {
  const groups = perGroup(items);
  const order = rank ? [...groups].sort((a, b) => rank(b) - rank(a)) : groups;
  const top = order.slice(0, TOP_GROUPS).map((g) => g.group);
  const index = new Map(x.map((t, i) => [t, i]));
  const series = top.map((g) => ({ label: groupLabel(g), key: g, values: x.map(() => null) }));
  const other = { label: 'Other', values: x.map(() => null) };
  const pos = new Map(top.map((g, i) => [g, i]));
  for (const it of items) {
    const i = index.get(secs(it.start));
    if (i === undefined) continue;
    const v = value(it);
    if (v === null) continue;
    const p = pos.get(it.group ?? null);
    if (p !== undefined) series[p].values[i] = (series[p].values[i] ?? 0) + v;
    else if (sum) other.values[i] = (other.values[i] ?? 0) + v;
  }
  if (sum && order.length > TOP_GROUPS) series.push(other);
  return { series, groups: order.length, shown: Math.min(order.length, TOP_GROUPS) };
}

/** One KPI card. */
function kpi(key, label) {
  const value = h('span', { class: 'kpi-value', 'data-testid': `kpi-${key}`, text: '…' });
  const note = h('span', { class: 'kpi-note', 'data-testid': `kpi-${key}-note` });
  return {
    el: h('div', { class: `kpi kpi-${key}` }, h('span', { class: 'kpi-label', text: label }), value, note),
    set(v, noteText, data) {
      replace(value, v);
      note.textContent = noteText || '';
      if (data) Object.assign(value.dataset, data);
    },
  };
}

/** A CSV export link of an API list (path with its query); name: the file name. */
function csvButton(path, name, testid) {
  const a = h('a', { class: 'btn btn-secondary btn-sm', href: withQuery(path.split('?')[0],
    { ...Object.fromEntries(new URLSearchParams(path.split('?')[1] || '')), format: 'csv' }),
  download: name, 'data-testid': testid || 'export-csv' }, icon('download'), 'CSV');
  return csvLink(a, (err) => toast(err.message, 'error'));
}

/** A table panel: title, an export link, and a body that is a table or a state line. */
function tablePanel(title, testid) {
  const actions = h('div', { class: 'panel-actions' });
  const body = h('div', { class: 'panel-body' }, h('p', { class: 'muted pad', text: 'Loading…' }));
  const el = h('section', { class: 'panel table-panel', 'data-testid': testid },
    h('div', { class: 'panel-head panel-head-row' }, h('h2', { text: title }), actions), body);
  return {
    el,
    setState(text, kind = 'empty') {
      const testid = { missing: 'not-available', error: 'load-error' }[kind] || 'empty-state';
      replace(body, h('p', { class: `muted pad state-${kind}`, 'data-testid': testid, text }));
    },
    setTable(t) { replace(body, t.el); },
    setCsv(path, name) { replace(actions, csvButton(path, name)); },
  };
}

/** A short text cell, clipped with its whole text as tooltip; a dash when empty. */
function text(v, cls) {
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted', text: '—' });
  return h('span', { class: `clip${cls ? ` ${cls}` : ''}`, title: String(v), text: String(v) });
}

/** The team cell: its page, and the link to its GPUs. */
function teamCell(team, f) {
  if (team === null || team === undefined || team === '') return h('span', { class: 'muted', text: '(no team)' });
  return h('span', { class: 'stack' },
    h('a', { class: 'row-link clip', href: filterHref(`#/team/${encodeURIComponent(team)}`, { ...f, team: '' }),
      dataset: { team }, text: team }),
    h('a', { class: 'sub', href: withQuery('#/gpus', { ...gpuListFilters(f), team }), dataset: { teamGpus: team },
      text: 'its GPUs' }));
}

/** The uuid of a GPU row: `gpu` in the insights' answers. */
function uuidOf(row) {
  if (!row) return null;
  if (typeof row.gpu === 'string') return row.gpu;
  return row.uuid || row.gpu_uuid || null;
}

/** A GPU cell: model and uuid, linking to its page (with its timeline). */
function gpuCell(row) {
  const uuid = uuidOf(row);
  if (!uuid) return text(row.model);
  return h('span', { class: 'stack' },
    h('a', { class: `row-link clip${row.model ? '' : ' mono'}`, href: gpuHref(uuid), dataset: { gpu: uuid }, title: uuid,
      text: row.model || uuid }),
    h('span', { class: 'sub mono clip', text: row.model ? uuid : row.host || '' }));
}

/** The message of a failed table or chart load. */
function failText(r, route) {
  if (r.missing) return `Not available yet: this server does not answer ${route}.`;
  return `Could not load: ${r.error.message}`;
}

/** A trend arrow from a direction word or a signed change. */
function trendArrow(dir, pct) {
  const d = typeof dir === 'string' ? dir : (n(pct) === null ? '' : n(pct) > 0.5 ? 'up' : n(pct) < -0.5 ? 'down' : 'flat');
  const sym = { up: '▲', down: '▼', flat: '▶' }[d] || '';
  if (!sym) return h('span', { class: 'muted', text: '—' });
  const p = n(pct);
  return h('span', { class: `trend trend-${d}`, dataset: { trend: d }, title: p === null ? d : `${p > 0 ? '+' : ''}${p.toFixed(1)}% vs the previous period` },
    h('span', { 'aria-hidden': 'true', text: sym }),
    h('span', { class: 'sr-only', text: d === 'up' ? 'rising' : d === 'down' ? 'falling' : 'steady' }),
    p === null ? '' : ` ${p > 0 ? '+' : ''}${p.toFixed(1)}%`);
}

/**
 * Renders a view into main. view: {kind: 'fleet' | 'team' | 'leadership',
 * team (for 'team')}.
 */
export function renderHome(main, ctx, view) {
  const f = readFilters(ctx.query);
  const fixed = view.kind === 'team' ? ['team'] : [];
  if (view.kind === 'team') f.team = view.team;
  const base = view.kind === 'team' ? `#/team/${encodeURIComponent(view.team)}` : view.kind === 'leadership' ? '#/leadership' : '#/';
  const win = timeWindow(f);
  const group = f.group || (view.kind === 'team' ? 'consumer' : 'team');
  const groupName = (GROUPS.find(([v]) => v === group) || [group, group])[1].toLowerCase();
  const metric = HOURS.some(([k]) => k === f.metric) ? f.metric : 'busy';
  const filters = apiFilters(f, win);
  const alive = ctx.alive;
  // A team's page carries its team in the path, not the query.
  const nav = (next) => ctx.go(filterHref(base, view.kind === 'team' ? { ...next, team: '' } : next));
  const title = view.kind === 'team' ? `Team ${view.team}` : view.kind === 'leadership' ? 'Leadership summary' : 'GPU fleet';
  document.title = `${title} · gpuinv`;

  const fresh = h('p', { class: 'page-sub small', 'data-testid': 'freshness', text: 'Data freshness: …' });
  const unowned = h('a', { class: 'filter-chip', 'data-testid': 'unowned', hidden: true, href: '#/ownership/unowned',
    title: 'GPUs that no assignment, rule or source gives a team' });
  const scope = h('p', { class: 'page-sub', 'data-testid': 'scope',
    text: `${win.label} · ${new Date(win.from * 1000).toISOString().slice(0, 10)} to ${new Date((win.to - 1) * 1000).toISOString().slice(0, 10)} (UTC)` });
  const tabs = h('nav', { class: 'view-tabs', 'aria-label': 'Views' },
    [['fleet', '#/', 'Fleet'], ['leadership', '#/leadership', 'Leadership']].map(([k, href, label]) => h('a', {
      href: filterHref(href, view.kind === 'team' ? { ...f, team: '' } : f), class: view.kind === k ? 'active' : null,
      'aria-current': view.kind === k ? 'page' : null, dataset: { view: k }, text: label })),
    view.kind === 'team' ? h('a', { class: 'active', 'aria-current': 'page', dataset: { view: 'team' }, href: filterHref(base, { ...f, team: '' }),
      text: `Team ${view.team}` }) : null);
  const headActions = h('div', { class: 'page-actions' }, view.kind === 'team'
    ? h('a', { class: 'btn btn-secondary', 'data-testid': 'team-gpus', href: withQuery('#/gpus', gpuListFilters(f)),
      text: `GPUs of ${view.team}` }) : null);

  const cards = {
    gpus: kpi('gpus', 'GPUs'), in_use: kpi('in_use', 'In use'), idle: kpi('idle', 'Idle'),
    util: kpi('util', 'Average utilization'), cost: kpi('cost', 'Cost this period'), waste: kpi('waste', 'Waste (allocated, idle)'),
  };
  const kpis = h('section', { class: 'kpis', 'aria-label': 'Key figures' }, Object.values(cards).map((c) => c.el));
  const charts = h('div', { class: 'charts' });
  const tables = h('div', { class: 'tables' });

  const usageQ = (g) => withQuery('/api/v1/usage', { group_by: g, step: win.step, ...filters });
  const usage = fetchOr(usageQ(group));
  const teamUsage = group === 'team' ? usage : fetchOr(usageQ('team'));
  // The first chart's question goes out first and alone: the heavier
  // questions (the heatmaps, the insight lists, waste and trends) wait
  // until it is answered, so that on a busy server they do not hold up
  // the first chart. fetchOr never rejects.
  const first = usage.then(() => undefined);
  const bar = filterBar(f, nav, { fixed, after: usage });
  const groupSel = h('select', { name: 'group', class: 'filter-input', 'aria-label': 'Group charts by', dataset: { filter: 'group' },
    on: { change: () => nav({ ...f, group: groupSel.value }) } },
  GROUPS.map(([v, t]) => h('option', { value: v, text: `By ${t.toLowerCase()}` })));
  groupSel.value = group;
  const metricSel = h('select', { name: 'metric', class: 'filter-input', 'aria-label': 'GPU-hours shown', dataset: { filter: 'metric' },
    on: { change: () => nav({ ...f, metric: metricSel.value }) } },
  HOURS.map(([v, t]) => h('option', { value: v, text: `${t} GPU-hours` })));
  metricSel.value = metric;
  const chartBar = h('div', { class: 'chart-controls' }, h('span', { class: 'muted small', text: 'Charts:' }), groupSel,
    view.kind === 'leadership' ? null : metricSel);

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: title }), scope, h('div', { class: 'head-meta' }, fresh, unowned)),
      headActions),
    tabs, bar, kpis, chartBar, charts, tables);

  loadFreshness(fresh, unowned, alive);
  // The period's figures from the team grouping, which splits every GPU-hour once.
  loadKpis(cards, f, teamUsage, filters, alive, first);
  if (view.kind === 'leadership') {
    loadLeadership(tables, f, win, teamUsage, filters, alive, first);
    chartCost(charts, win, teamUsage, alive);
    chartUsage(charts, win, usage, group, groupName, 'allocated_idle', alive, true, teamUsage);
    return;
  }
  chartUsage(charts, win, usage, group, groupName, metric, alive, false, teamUsage);
  // The insight lists wait for the heatmaps' answers too: each costs
  // seconds of CPU at 10,000 GPUs, and asked beside the heatmaps (tens
  // of milliseconds) they held the charts up for as long.
  const charted = chartHeatmap(charts, filters, alive, first).catch(() => undefined);
  chartCost(charts, win, teamUsage, alive);
  loadTables(tables, f, win, teamUsage, filters, alive, charted);
}

/** The header's freshness line (the oldest source's last report) and unowned count. */
async function loadFreshness(el, unownedEl, alive) {
  const r = await fetchOr('/api/v1/sources');
  if (!alive()) return;
  if (r.error) {
    el.textContent = 'Data freshness: unknown';
    return;
  }
  const reporting = (r.data.items || []).filter((s) => s.last_success_at && s.enabled !== 0);
  if (!reporting.length) {
    el.textContent = 'Data freshness: no source has reported yet';
    el.dataset.state = 'none';
  } else {
    const oldest = reporting.reduce((a, b) => (Date.parse(a.last_success_at) <= Date.parse(b.last_success_at) ? a : b));
    const staleCount = reporting.filter((s) => s.stale).length;
    replace(el, 'Data freshness: oldest source ', h('strong', { text: oldest.name }), ' reported ',
      timeAgo(oldest.last_success_at), staleCount ? ` · ${staleCount} stale source${staleCount === 1 ? '' : 's'}` : '');
    el.dataset.state = staleCount ? 'stale' : 'fresh';
    el.dataset.oldest = oldest.name;
    el.title = `${reporting.length} reporting sources; the oldest last reported ${ago(oldest.last_success_at)}`;
  }
  const u = await fetchOr('/api/v1/ownership/unowned');
  if (!alive() || u.error) return;
  const count = n(pick(u.data, 'total', 'count')) ?? (Array.isArray(u.data.items) ? u.data.items.length : null);
  if (count) {
    unownedEl.textContent = `${count} unowned GPU${count === 1 ? '' : 's'}`;
    unownedEl.hidden = false;
  }
}

/**
 * The KPI cards: GPU counts from the GPU list, the period's figures from
 * /api/v1/usage; the teams' waste is asked once `after` settles.
 */
async function loadKpis(cards, f, usageP, filters, alive, after) {
  const gp = gpuListFilters(f);
  api('GET', withQuery('/api/v1/gpus', { ...gp, limit: 1 })).then((res) => {
    if (!alive()) return;
    const s = res.summary || {};
    const partial = f.pool || f.cloud ? ' (pool and cloud not applied)' : '';
    cards.gpus.set(fmtValue(res.total, '', 0), `${fmtValue(s.missing ?? 0, '', 0)} missing · ${fmtValue(s.stale ?? 0, '', 0)} stale${partial}`);
    cards.in_use.set(fmtValue(s.in_use ?? 0, '', 0), 'busy in their newest reading');
    cards.idle.set(fmtValue(s.idle ?? 0, '', 0), `${fmtValue(s.unknown ?? 0, '', 0)} without telemetry`);
  }).catch((err) => {
    if (!alive()) return;
    for (const k of ['gpus', 'in_use', 'idle']) cards[k].set('—', err.message);
  });
  const [r, w] = await Promise.all([usageP,
    after.then(() => fetchOr(withQuery('/api/v1/insights/waste-by-team', { ...filters, limit: 1000 })))]);
  if (!alive()) return;
  const t = (r.data && r.data.total) || {};
  const hr = hoursOf(t);
  const cost = money(t.cost);
  if (r.error) {
    const why = r.missing ? 'not available yet' : r.error.message;
    for (const k of ['util', 'cost']) cards[k].set('—', why);
  } else {
    const u = n(t.util_avg);
    cards.util.set(u === null ? '—' : `${u.toFixed(1)}%`, `over ${fmtValue(hr.owned - hr.unknown, 'measured GPU-hours', 0)}`,
      u === null ? null : { value: String(t.util_avg) });
    if (cost) {
      cards.cost.set(moneyText(cost.amount, cost.currency),
        `${fmtValue(hr.owned, 'GPU-hours owned', 0)}${cost.method ? ` · by ${cost.method}` : ''}`,
        { amount: cost.amount, currency: cost.currency });
    } else {
      cards.cost.set('—', t.cost_note || 'no price covers these GPUs');
    }
  }
  // Waste: the allocated-idle part of the period's cost (its split in
  // /api/v1/usage), else the teams' allocated-idle cost from the
  // insights, else the allocated-idle GPU-hours alone.
  const split = cost ? money(pick(t, 'cost.split.allocated_idle'), cost.currency) : null;
  const hoursNote = r.error ? 'allocated but idle' : `${fmtValue(hr.allocated_idle, 'GPU-hours', 0)} allocated but idle`;
  if (split) {
    cards.waste.set(moneyText(split.amount, split.currency), hoursNote, { amount: split.amount });
    return;
  }
  let sum = null;
  let cur = null;
  for (const it of (w.data && Array.isArray(w.data.items) && w.data.items) || []) {
    const m = money(it.allocated_idle_cost);
    if (m && (!cur || cur === m.currency)) { sum = (sum ?? 0) + cents(m.amount); cur = m.currency; }
  }
  if (sum !== null) cards.waste.set(moneyText(centsText(sum), cur), hoursNote, { amount: centsText(sum) });
  else if (!r.error) cards.waste.set(fmtValue(hr.allocated_idle, 'GPU-h', 0), 'allocated but idle (no price covers them)', { hours: String(hr.allocated_idle) });
  else cards.waste.set('—', r.missing && w.missing ? 'not available yet' : 'no price covers these GPUs');
}

/**
 * A paged grouping (by host: the page of the hosts owning the most
 * GPU-hours) does not hold every group, so its "Other" is the fleet's
 * figure per step (the sum over every team, which covers every GPU) less
 * the groups shown. Returns seriesOf's answer with that "Other".
 */
function otherFromFleet(s, x, teamItems, value, total) {
  const tops = s.series.filter((one) => 'key' in one);
  const index = new Map(x.map((t, i) => [t, i]));
  const fleet = x.map(() => null);
  for (const it of teamItems) {
    const i = index.get(secs(it.start));
    const v = i === undefined ? null : value(it);
    if (v !== null) fleet[i] = (fleet[i] ?? 0) + v;
  }
  const values = fleet.map((v, i) => {
    if (v === null) return null;
    const rest = v - tops.reduce((a, one) => a + (one.values[i] ?? 0), 0);
    return rest > 1e-6 ? rest : null;
  });
  return { series: values.some((v) => v !== null) ? [...tops, { label: 'Other', values }] : tops, groups: total, shown: tops.length };
}

/** The utilization and GPU-hours charts of the chosen grouping. */
async function chartUsage(el, win, usageP, group, groupName, metric, alive, wasteOnly, teamUsageP) {
  const holder = h('div', { class: 'chart-pair' });
  el.append(holder);
  const r = await usageP;
  if (!alive()) return;
  if (r.error) {
    replace(holder, unavailable('Usage over time', failText(r, '/api/v1/usage'), 'chart-usage'));
    return;
  }
  const items = Array.isArray(r.data.items) ? r.data.items : [];
  const x = axis(win, items);
  const bars = win.step !== 'hour';
  const label = (HOURS.find(([k]) => k === metric) || [metric, metric])[1];
  let hoursS = seriesOf(items, x, (it) => hoursOf(it)[metric], { rank: (g) => g.hours[metric] });
  const total = Number.isInteger(r.data.groups_total) ? r.data.groups_total : null;
  if (total !== null && total > perGroup(items).length && teamUsageP) {
    const t = await teamUsageP;
    if (!alive()) return;
    if (!t.error && Array.isArray(t.data.items)) {
      hoursS = otherFromFleet(hoursS, x, t.data.items, (it) => hoursOf(it)[metric], total);
    }
  }
  const hoursChart = timeChart({
    title: `${label} GPU-hours by ${groupName}`, testid: 'chart-hours', unit: 'GPU-hours', kind: bars ? 'bars' : 'area',
    stacked: true, x, series: hoursS.series, step: win.step,
    note: hoursS.groups > hoursS.shown ? `${hoursS.shown} largest of ${hoursS.groups}, the rest as Other` : `per ${win.step}`,
    empty: 'No usage has been rolled up for this range yet.',
  });
  if (wasteOnly) {
    replace(holder, hoursChart.el);
    return;
  }
  const utilS = seriesOf(items, x, (it) => n(it.util_avg), { sum: false, rank: (g) => g.hours.owned });
  const utilChart = timeChart({
    title: `Utilization by ${groupName}`, testid: 'chart-util', unit: '%', kind: 'line', max: 100, x, series: utilS.series,
    step: win.step, note: (total ?? utilS.groups) > utilS.shown ? `${utilS.shown} largest of ${total ?? utilS.groups}` : `average per ${win.step}`,
    empty: 'No utilization has been measured in this range.',
  });
  replace(holder, utilChart.el, hoursChart.el);
}

/** Cost by team over time, stacked. */
async function chartCost(el, win, teamUsageP, alive) {
  const holder = h('div', { class: 'chart-slot' });
  el.append(holder);
  const r = await teamUsageP;
  if (!alive()) return;
  if (r.error) {
    replace(holder, unavailable('Cost by team', failText(r, '/api/v1/usage'), 'chart-cost'));
    return;
  }
  const items = Array.isArray(r.data.items) ? r.data.items : [];
  const x = axis(win, items);
  const currencies = new Set(items.map((it) => money(it.cost)).filter(Boolean).map((m) => m.currency));
  const cur = currencies.size ? [...currencies][0] : 'USD';
  const costOf = (it) => {
    const m = money(it.cost);
    return m && m.currency === cur ? cents(m.amount) / 100 : null;
  };
  const s = seriesOf(items, x, costOf, { rank: (g) => (g.cost ? cents(g.cost.amount) : 0) });
  replace(holder, timeChart({
    title: 'Cost by team', testid: 'chart-cost', unit: cur, kind: 'bars', stacked: true, x, series: s.series, step: win.step,
    digits: 2, note: currencies.size > 1 ? `in ${cur} only; other currencies are in the table` : `per ${win.step}, ${cur}`,
    empty: 'No cost in this range (no usage, or no price covers these GPUs).',
  }).el);
}

/**
 * Cells of a heatmap answer: {items: [{hour_of_week (0 = Monday 00h), day,
 * hour, value (%), gpu_hours: {owned, ...}}]}.
 */
function heatCells(data) {
  const items = Array.isArray(data && data.items) ? data.items : [];
  return items.map((c) => {
    const how = n(c.hour_of_week);
    return { dow: how === null ? null : Math.floor(how / 24), hour: how === null ? null : how % 24, value: n(c.value),
      hours: c.gpu_hours && typeof c.gpu_hours === 'object' ? n(c.gpu_hours.owned) : null };
  }).filter((c) => c.dow !== null);
}

/** The hour-of-week heatmaps (utilization and allocation), asked once `after` settles. */
async function chartHeatmap(el, filters, alive, after) {
  const holder = h('div', { class: 'chart-slot' });
  el.append(holder);
  await after;
  if (!alive()) return;
  const [util, alloc] = await Promise.all([
    fetchOr(withQuery('/api/v1/usage/heatmap', { metric: 'util', ...filters })),
    fetchOr(withQuery('/api/v1/usage/heatmap', { metric: 'allocation', ...filters })),
  ]);
  if (!alive()) return;
  if (util.error) {
    replace(holder, unavailable('Utilization by hour of week', failText(util, '/api/v1/usage/heatmap'), 'chart-heatmap'));
    return;
  }
  const panels = [heatmap({ title: 'Utilization by hour of week', testid: 'chart-heatmap', unit: '%', max: 100,
    cells: heatCells(util.data), note: 'UTC, average over the range' }).el];
  if (!alloc.error) {
    panels.push(heatmap({ title: 'Allocation by hour of week', testid: 'chart-heatmap-alloc', unit: '%', max: 100,
      cells: heatCells(alloc.data),
      note: 'share of owned GPU-hours allocated' }).el);
  }
  replace(holder, ...panels);
}

/** The tables of the fleet and team views; the insight lists are asked once `after` settles. */
function loadTables(el, f, win, teamUsageP, filters, alive, after) {
  const file = (what) => `${what}-${slug(f.team || 'fleet')}-${today()}.csv`;
  costByTeam(el, f, win, teamUsageP, alive, file('cost-by-team'));
  const idle = tablePanel('Idle GPUs', 'table-idle');
  const held = tablePanel('Allocated but idle', 'table-allocated-idle');
  const top = tablePanel('Top consumers', 'table-top-consumers');
  const over = tablePanel('Workloads holding GPUs they do not use', 'table-overrequest');
  const save = tablePanel('Savings', 'table-savings');
  el.append(held.el, idle.el, top.el, over.el, save.el);
  const q = { ...filters, limit: 50 };
  insight(held, '/api/v1/insights/allocated-idle', q, after, file('allocated-idle'), alive, 'No GPU was allocated and idle in this range.', [
    { label: 'GPU', width: '24%', cell: gpuCell },
    { label: 'Held by', cell: (r) => (r.consumer && typeof r.consumer === 'object'
      ? h('span', { class: 'stack' }, text(r.consumer.name), h('span', { class: 'sub', text: r.consumer.kind || '' }))
      : text(r.consumer)) },
    { label: 'Team', cell: (r) => teamCell(r.team, f) },
    { label: 'Since', width: '100px', cell: (r) => h('span', { class: 'stack' }, timeAgo(r.since),
      r.idle_now === false ? h('span', { class: 'sub', text: 'not idle now' }) : null) },
    { label: 'Idle GPU-h', key: 'hours', cls: 'n', width: '90px', cell: (r) => fmtValue(n(r.allocated_idle_gpu_hours), '', 1) },
    { label: 'Wasted', key: 'cost', cls: 'n', width: '100px', cell: (r) => moneyCell(money(r.cost)) },
  ], (r, i) => `${uuidOf(r)}:${(r.consumer && r.consumer.name) || i}`);
  insight(idle, '/api/v1/insights/idle', q, after, file('idle-gpus'), alive, 'No GPU has been idle that long.', [
    { label: 'GPU', width: '28%', cell: gpuCell },
    { label: 'Host', cell: (r) => text(r.host, 'mono') },
    { label: 'Team', cell: (r) => teamCell(r.team, f) },
    { label: 'Idle since', width: '100px', cell: (r) => timeAgo(r.since) },
    { label: 'Hours', key: 'hours', cls: 'n', width: '70px', cell: (r) => fmtValue(n(r.hours), '', 0) },
    { label: 'Idle cost', key: 'cost', cls: 'n', width: '100px', cell: (r) => moneyCell(money(r.cost)) },
  ], (r, i) => uuidOf(r) || String(i));
  insight(top, '/api/v1/insights/top-consumers', q, after, file('top-consumers'), alive, 'No consumer used a GPU in this range.', [
    { label: 'Consumer', width: '30%', cell: (r) => h('span', { class: 'stack' }, text(r.consumer),
      h('span', { class: 'sub', text: `${r.kind || ''}${n(r.gpus) !== null ? ` · ${r.gpus} GPU${r.gpus === 1 ? '' : 's'}` : ''}` })) },
    { label: 'Team', cell: (r) => teamCell(r.team, f) },
    { label: 'GPU-hours', key: 'hours', cls: 'n', width: '90px', cell: (r) => fmtValue(n(r.gpu_hours), '', 1) },
    { label: 'Busy', key: 'busy', cls: 'n', width: '64px', cell: (r) => (n(r.busy_pct) === null ? '—' : `${n(r.busy_pct).toFixed(0)}%`) },
    { label: 'Cost', key: 'cost', cls: 'n', width: '100px', cell: (r) => moneyCell(money(r.cost)) },
  ], (r, i) => `${r.kind || ''}:${r.consumer || i}`);
  insight(over, '/api/v1/insights/overrequest', q, after, file('overrequest'), alive, 'No workload holds GPUs it does not use.', [
    { label: 'Workload', width: '30%', cell: (r) => h('span', { class: 'stack' }, text(r.workload),
      h('span', { class: 'sub', text: [r.kind, r.host].filter(Boolean).join(' · ') })) },
    { label: 'Team', cell: (r) => teamCell(r.team, f) },
    { label: 'Idle of held', key: 'kn', cls: 'n', width: '90px', cell: (r) => {
      const idleGpus = Array.isArray(r.idle_gpus) ? r.idle_gpus : [];
      return idleGpus.length
        ? h('a', { href: gpuHref(idleGpus[0]), dataset: { gpu: idleGpus[0] }, title: idleGpus.join('\n'), text: `${r.k} of ${r.n}` })
        : `${r.k ?? '—'} of ${r.n ?? '—'}`;
    } },
    { label: 'Idle GPU-h', key: 'hours', cls: 'n', width: '90px', cell: (r) => fmtValue(n(r.idle_gpu_hours), '', 1) },
    { label: 'Idle cost', key: 'cost', cls: 'n', width: '100px', cell: (r) => moneyCell(money(r.idle_cost)) },
  ], (r, i) => `${r.kind || ''}:${r.workload || i}`);
  insight(save, '/api/v1/insights/savings', q, after, file('savings'), alive, 'No saving stands out in this range.', [
    { label: 'Opportunity', width: '50%', cell: (r) => h('span', { class: 'wrap', text: r.text || '—' }) },
    { label: 'Per month', key: 'saving', cls: 'n', width: '110px', cell: (r) => moneyCell(r.saving && typeof r.saving === 'object'
      ? money(r.saving.monthly, r.saving.currency) : null) },
    { label: 'GPUs', cell: (r) => {
      const list = Array.isArray(r.gpu_uuids) ? r.gpu_uuids : [];
      if (!list.length) return h('span', { class: 'muted', text: n(r.gpus) === null ? '—' : String(r.gpus) });
      const count = n(r.gpus) ?? list.length;
      return h('span', { class: 'stack' }, h('a', { class: 'row-link', href: gpuHref(list[0]), dataset: { gpu: list[0] },
        text: count === 1 ? '1 GPU' : `${count} GPUs` }), h('span', { class: 'sub mono clip', title: list.join('\n'), text: list[0] }));
    } },
  ], (r, i) => `${r.kind || ''}:${i}`);
}

/**
 * Fills a table panel from an insights route, asked once `after` settles.
 * idOf(row, i) names each row.
 */
async function insight(panel, path, q, after, fileName, alive, emptyText, columns, idOf) {
  const url = withQuery(path, q);
  // The export has every row, not the page's first ones.
  const all = { ...q };
  delete all.limit;
  panel.setCsv(withQuery(path, all), fileName);
  await after;
  if (!alive()) return;
  const r = await fetchOr(url);
  if (!alive()) return;
  if (r.error) {
    panel.setState(failText(r, path), r.missing ? 'missing' : 'error');
    return;
  }
  const items = Array.isArray(r.data.items) ? r.data.items : [];
  if (!items.length) {
    panel.setState(emptyText);
    return;
  }
  const t = dataTable({ label: path, minWidth: 560, columns, empty: emptyText,
    onRow: (row) => { const g = uuidOf(row); if (g) location.hash = gpuHref(g); } });
  t.setRows(items.map((row, i) => ({ ...row, id: idOf(row, i) ?? i })));
  panel.setTable(t);
  const total = n(r.data.total);
  if (total !== null && total > items.length) {
    panel.el.querySelector('.panel-body').append(h('p', { class: 'muted small', 'data-testid': 'more-rows',
      text: `The first ${items.length} of ${total}; the CSV has them all.` }));
  }
}

/** Cost by team over the range, summed from the usage steps. */
async function costByTeam(el, f, win, teamUsageP, alive, fileName) {
  const panel = tablePanel('Cost by team', 'table-cost-by-team');
  el.append(panel.el);
  panel.setCsv(withQuery('/api/v1/usage', { group_by: 'team', step: win.step, ...apiFilters(f, win) }), fileName);
  const r = await teamUsageP;
  if (!alive()) return;
  if (r.error) {
    panel.setState(failText(r, '/api/v1/usage'), r.missing ? 'missing' : 'error');
    return;
  }
  const rows = perGroup(Array.isArray(r.data.items) ? r.data.items : []);
  if (!rows.length) {
    panel.setState('No usage has been rolled up for this range yet.');
    return;
  }
  const t = dataTable({ label: 'Cost by team', minWidth: 620,
    onRow: (row) => { if (row.group) location.hash = withQuery('#/gpus', { ...gpuListFilters(f), team: row.group }); },
    columns: [
      { label: 'Team', key: 'team', width: '24%', cell: (row) => teamCell(row.group, f) },
      { label: 'Owned GPU-h', key: 'owned', cls: 'n', cell: (row) => fmtValue(row.hours.owned, '', 1) },
      { label: 'Busy GPU-h', key: 'busy', cls: 'n', cell: (row) => fmtValue(row.hours.busy, '', 1) },
      { label: 'Allocated idle GPU-h', key: 'allocated_idle', cls: 'n', cell: (row) => fmtValue(row.hours.allocated_idle, '', 1) },
      { label: 'Utilization', key: 'util', cls: 'n', width: '96px', cell: (row) => (row.util_avg === null ? '—' : `${row.util_avg.toFixed(1)}%`) },
      { label: 'Cost', key: 'cost', cls: 'n', width: '110px', cell: (row) => moneyCell(row.cost) },
    ] });
  t.setRows(rows.map((row) => ({ ...row, id: row.group ?? '' })));
  panel.setTable(t);
}

/** The leadership table: per team owned GPUs, utilization, cost, waste and trend. */
async function loadLeadership(el, f, win, teamUsageP, filters, alive, after) {
  const panel = tablePanel('Teams', 'table-leadership');
  el.append(panel.el);
  panel.setCsv(withQuery('/api/v1/usage', { group_by: 'team', step: win.step, ...filters }), `teams-${today()}.csv`);
  // The trend compares the latest whole days (7 or 30, up to today's UTC
  // midnight) with as many before them: no range but its end, whole days
  // that the server answers from its day groups.
  const dims = { ...filters };
  delete dims.from;
  const nowS = Math.floor(Date.now() / 1000);
  dims.to = new Date((nowS - (nowS % 86400)) * 1000).toISOString().replace('.000Z', 'Z');
  await after;
  if (!alive()) return;
  const [r, trend, waste] = await Promise.all([teamUsageP,
    fetchOr(withQuery('/api/v1/usage/trend', { period: win.hours > 24 * 8 ? 'month' : 'week', group_by: 'team', ...dims })),
    fetchOr(withQuery('/api/v1/insights/waste-by-team', { ...filters, limit: 1000 }))]);
  if (!alive()) return;
  if (r.error) {
    panel.setState(failText(r, '/api/v1/usage'), r.missing ? 'missing' : 'error');
    return;
  }
  const rows = perGroup(Array.isArray(r.data.items) ? r.data.items : []);
  if (!rows.length) {
    panel.setState('No usage has been rolled up for this range yet.');
    return;
  }
  const trends = new Map(((trend.data && trend.data.items) || []).map((it) => [it.group ?? null, it]));
  const wastes = new Map(((waste.data && waste.data.items) || []).map((it) => [it.team ?? null, it]));
  const t = dataTable({ label: 'Teams', minWidth: 640,
    onRow: (row) => { if (row.group) location.hash = filterHref(`#/team/${encodeURIComponent(row.group)}`, { ...f, team: '' }); },
    columns: [
      { label: 'Team', key: 'team', width: '24%', cell: (row) => teamCell(row.group, f) },
      { label: 'GPUs owned', key: 'gpus', cls: 'n', cell: (row) => h('span', { title: 'owned GPU-hours over the hours of the range so far',
        text: fmtValue(row.hours.owned / win.elapsedHours, '', 1) }) },
      { label: 'Utilization', key: 'util', cls: 'n', cell: (row) => (row.util_avg === null ? '—' : `${row.util_avg.toFixed(1)}%`) },
      { label: 'Cost', key: 'cost', cls: 'n', cell: (row) => moneyCell(row.cost) },
      { label: 'Waste', key: 'waste', cls: 'n', cell: (row) => {
        const w = wastes.get(row.group);
        const m = w ? money(w.allocated_idle_cost) : null;
        return m ? moneyCell(m) : h('span', { title: 'allocated-idle GPU-hours', text: `${fmtValue(row.hours.allocated_idle, 'GPU-h', 0)}` });
      } },
      { label: 'Utilization trend', key: 'trend', cls: 'n', width: '110px', cell: (row) => {
        const tr = trends.get(row.group);
        if (!tr) return h('span', { class: 'muted', text: trend.missing ? 'n/a' : '—' });
        const c = tr.util_avg || {};
        return trendArrow(c.direction, c.change_pct);
      } },
    ] });
  t.setRows(rows.map((row) => ({ ...row, id: row.group ?? '' })));
  panel.setTable(t);
}
