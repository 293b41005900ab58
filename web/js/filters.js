// The dashboard's global filters: team, environment, pool, cloud, cluster,
// data center, model and time range, kept in the address's query
// (`#/?team=vision&range=30d`) so that every view can be shared and the
// back button steps through them. A change of filter is a new history
// entry; the page is drawn from the address, never from memory.
import { h, replace } from './dom.js';
import { api } from './api.js';

/** The owner and place filters, in the order the bar shows them: [key, label, usage parameter]. */
export const DIMENSIONS = [
  ['team', 'Team'], ['env', 'Environment'], ['pool', 'Pool'], ['cloud', 'Cloud'], ['cluster', 'Cluster'],
  ['datacenter', 'Data center'], ['model', 'Model'],
];

/** The range presets: [value, label, seconds]. */
export const RANGES = [['24h', 'Last 24 hours', 86400], ['7d', 'Last 7 days', 7 * 86400],
  ['30d', 'Last 30 days', 30 * 86400], ['90d', 'Last 90 days', 90 * 86400]];

export const DEFAULT_RANGE = '7d';

/** What the charts can be grouped by: [value, label]. */
export const GROUPS = [['team', 'Team'], ['env', 'Environment'], ['pool', 'Pool'], ['cluster', 'Cluster'],
  ['cloud', 'Cloud'], ['model', 'Model'], ['datacenter', 'Data center'], ['host', 'Host'], ['consumer', 'Consumer']];

const DAY = 86400;
const HOUR = 3600;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

/** Unix seconds of a YYYY-MM-DD date at 00:00 UTC; NaN when malformed. */
function dateSeconds(s) {
  return DATE_RE.test(s || '') ? Date.parse(`${s}T00:00:00Z`) / 1000 : NaN;
}

/** RFC 3339 UTC without fractions for unix seconds. */
export function iso(sec) {
  return new Date(sec * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * The filter state of an address query (URLSearchParams): every dimension
 * ('' when unset), range (a preset or 'custom' with from/to dates), group
 * (group-by of the charts), metric (GPU-hours shown stacked).
 */
export function readFilters(query) {
  const f = {};
  for (const [k] of DIMENSIONS) f[k] = (query.get(k) || '').trim();
  if (!/^\d+$/.test(f.datacenter)) f.datacenter = '';
  const range = query.get('range') || '';
  f.range = RANGES.some(([v]) => v === range) ? range : DEFAULT_RANGE;
  f.from = '';
  f.to = '';
  if (range === 'custom') {
    const from = dateSeconds(query.get('from'));
    const to = dateSeconds(query.get('to'));
    if (Number.isFinite(from) && Number.isFinite(to) && to >= from) {
      f.range = 'custom';
      f.from = query.get('from');
      f.to = query.get('to');
    }
  }
  const group = query.get('group') || '';
  f.group = GROUPS.some(([v]) => v === group) ? group : '';
  f.metric = query.get('metric') || '';
  return f;
}

/** The address query of a filter state (defaults left out), as "k=v&...". */
export function filterQuery(f) {
  const q = new URLSearchParams();
  for (const [k] of DIMENSIONS) if (f[k]) q.set(k, f[k]);
  if (f.range === 'custom') {
    q.set('range', 'custom');
    q.set('from', f.from);
    q.set('to', f.to);
  } else if (f.range && f.range !== DEFAULT_RANGE) {
    q.set('range', f.range);
  }
  if (f.group) q.set('group', f.group);
  if (f.metric) q.set('metric', f.metric);
  return q.toString();
}

/** An address: base ("#/", "#/leadership") with the filter state's query. */
export function filterHref(base, f) {
  const q = filterQuery(f);
  return q ? `${base}?${q}` : base;
}

/**
 * The time window of a filter state, at `now` (ms): {from, to} in unix
 * seconds, step ('hour' up to 8 days, 'day' up to 120, else 'week'),
 * label, hours (its length) and elapsedHours (those before now). Windows
 * with day steps are whole UTC days (the server answers those from its
 * daily rollups); hour windows end at the next full hour.
 */
export function timeWindow(f, now = Date.now()) {
  const nowS = Math.floor(now / 1000);
  let from;
  let to;
  let label;
  if (f.range === 'custom') {
    from = dateSeconds(f.from);
    to = dateSeconds(f.to) + DAY;
    label = f.from === f.to ? f.from : `${f.from} – ${f.to}`;
  } else {
    const [, name, secs] = RANGES.find(([v]) => v === f.range);
    label = name;
    if (secs <= 8 * DAY) {
      to = nowS - (nowS % HOUR) + HOUR;
    } else {
      to = nowS - (nowS % DAY) + DAY;
    }
    from = to - secs;
  }
  const span = to - from;
  const step = span <= 8 * DAY ? 'hour' : span <= 120 * DAY ? 'day' : 'week';
  // Hours of the window already past (a window ends at the next full hour or day).
  const elapsed = Math.max(HOUR, Math.min(to, nowS) - from);
  return { from, to, step, label, hours: span / HOUR, elapsedHours: elapsed / HOUR };
}

/**
 * The query parameters the analytics routes take for a filter state: the
 * dimensions set and the window's from/to (RFC 3339).
 */
export function apiFilters(f, win) {
  const p = {};
  for (const [k] of DIMENSIONS) if (f[k]) p[k] = f[k];
  p.from = iso(win.from);
  p.to = iso(win.to);
  return p;
}

/** The GPU list's own filters (it has no pool or cloud). */
export function gpuListFilters(f) {
  const p = {};
  for (const k of ['team', 'env', 'cluster', 'model', 'datacenter']) if (f[k]) p[k] = f[k];
  return p;
}

// Choices for each dimension, loaded once per page load.
let choicesCache = null;

/** Names from a dimension route's answer ({items:[{name}]}), or null when the route is absent. */
async function dimension(path) {
  try {
    const res = await api('GET', path);
    const items = Array.isArray(res && res.items) ? res.items : [];
    return items.map((d) => ({ value: String(d.name ?? d.id ?? ''), label: d.display || d.name || String(d.id ?? ''),
      cloud: d.attrs && typeof d.attrs === 'object' ? d.attrs.cloud : undefined })).filter((d) => d.value);
  } catch (err) {
    if (err.status === 401) throw err;
    return null;
  }
}

/**
 * The choices of every dimension: {team: [{value, label}], ...}: the
 * entries of the dimension routes (/api/v1/teams, environments, pools,
 * clusters; /api/v1/datacenters) with the team, environment, cluster and
 * model values in use (the usage of the last 30 days, else the GPU list).
 */
export function loadChoices() {
  if (!choicesCache) {
    choicesCache = (async () => {
      const [teams, envs, pools, clusters, dcs] = await Promise.all([
        dimension('/api/v1/teams'), dimension('/api/v1/environments'), dimension('/api/v1/pools'),
        dimension('/api/v1/clusters'),
        api('GET', '/api/v1/datacenters?sort=name&limit=1000').then((r) => r.items).catch(() => []),
      ]);
      const seen = { team: new Set(), env: new Set(), cluster: new Set(), model: new Set() };
      // The values of the last 30 days, as the usage rollups group them (a
      // few rows whatever the fleet's size); without them, the values of
      // the GPU list's first page.
      const nowS = Math.floor(Date.now() / 1000);
      const to = nowS - (nowS % DAY) + DAY;
      const wanted = Object.keys(seen);
      const grouped = await Promise.all(wanted.map((k) => api('GET',
        `/api/v1/usage?group_by=${k}&step=month&from=${iso(to - 30 * DAY)}&to=${iso(to)}`).catch(() => null)));
      if (grouped.every(Boolean)) {
        wanted.forEach((k, i) => {
          for (const it of grouped[i].items || []) if (it.group) seen[k].add(String(it.group));
        });
      } else {
        try {
          const gpus = await api('GET', '/api/v1/gpus?limit=1000');
          for (const g of gpus.items || []) {
            for (const k of Object.keys(seen)) {
              const v = g.owner && g.owner[k] && typeof g.owner[k] === 'object' ? g.owner[k].value : g[k];
              if (v) seen[k].add(String(v));
            }
          }
        } catch {
          /* the lists below stay as the routes gave them */
        }
      }
      // A dimension's own entries, and the values in use that are none
      // (a source's default team, say), sorted by value.
      const both = (k, listed) => {
        const out = new Map((listed || []).map((d) => [d.value, d]));
        for (const v of seen[k] || []) if (!out.has(v)) out.set(v, { value: v, label: v });
        return [...out.values()].sort((a, b) => a.value.localeCompare(b.value));
      };
      const clouds = new Set((clusters || []).map((c) => c.cloud).filter(Boolean));
      return {
        team: both('team', teams),
        env: both('env', envs),
        pool: pools || [],
        cluster: both('cluster', clusters),
        cloud: [...clouds].sort().map((v) => ({ value: v, label: v })),
        datacenter: dcs.map((d) => ({ value: String(d.id), label: d.name })),
        model: both('model', []),
      };
    })().catch((e) => {
      choicesCache = null;
      throw e;
    });
  }
  return choicesCache;
}

/** Forgets the loaded choices (a dimension was created elsewhere). */
export function resetChoices() {
  choicesCache = null;
}

/**
 * The filter bar for state f. onChange(next) is called with a whole new
 * state when the user changes a filter. fixed: keys the view fixes (a
 * team's page fixes its team), shown but not changeable. after: a promise
 * the choices wait for (the page's own figures go first).
 * Returns the bar element.
 */
export function filterBar(f, onChange, { fixed = [], after = null } = {}) {
  const selects = {};
  const change = (patch) => onChange({ ...f, ...patch });
  for (const [k, label] of DIMENSIONS) {
    const sel = h('select', { name: k, class: `filter-input filter-${k}`, 'aria-label': label, disabled: fixed.includes(k),
      dataset: { filter: k }, on: { change: () => change({ [k]: sel.value }) } },
    h('option', { value: '', text: `All ${label === 'Data center' ? 'data centers' : `${label.toLowerCase()}s`}` }));
    if (f[k]) {
      sel.append(h('option', { value: f[k], text: k === 'datacenter' ? `Data center #${f[k]}` : f[k] }));
      sel.value = f[k];
    }
    selects[k] = sel;
  }
  const range = h('select', { name: 'range', class: 'filter-input filter-range', 'aria-label': 'Time range',
    dataset: { filter: 'range' },
    on: { change: () => {
      if (range.value !== 'custom') return change({ range: range.value, from: '', to: '' });
      custom.hidden = false;
      fromIn.focus();
      return undefined;
    } } },
  RANGES.map(([v, t]) => h('option', { value: v, text: t })), h('option', { value: 'custom', text: 'Custom…' }));
  range.value = f.range;
  const today = new Date().toISOString().slice(0, 10);
  const fromIn = h('input', { type: 'date', name: 'from', value: f.from || '', max: today, 'aria-label': 'From (UTC)' });
  const toIn = h('input', { type: 'date', name: 'to', value: f.to || today, max: today, 'aria-label': 'To (UTC)' });
  const apply = h('button', { type: 'submit', class: 'btn btn-secondary btn-sm', text: 'Apply' });
  const customErr = h('span', { class: 'field-error', role: 'alert' });
  const custom = h('form', { class: 'range-custom', hidden: f.range !== 'custom', 'data-testid': 'range-custom',
    on: { submit: (ev) => {
      ev.preventDefault();
      if (!DATE_RE.test(fromIn.value) || !DATE_RE.test(toIn.value)) {
        customErr.textContent = 'Give both dates.';
        return;
      }
      if (toIn.value < fromIn.value) {
        customErr.textContent = 'The end is before the start.';
        return;
      }
      change({ range: 'custom', from: fromIn.value, to: toIn.value });
    } } }, fromIn, h('span', { 'aria-hidden': 'true', text: '–' }), toIn, apply, customErr);
  const active = DIMENSIONS.some(([k]) => f[k] && !fixed.includes(k)) || f.range !== DEFAULT_RANGE;
  const clear = h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Clear filters', hidden: !active,
    'data-testid': 'clear-filters',
    on: { click: () => {
      const next = { ...f, range: DEFAULT_RANGE, from: '', to: '' };
      for (const [k] of DIMENSIONS) if (!fixed.includes(k)) next[k] = '';
      onChange(next);
    } } });
  const bar = h('section', { class: 'panel filter-bar', 'aria-label': 'Filters', 'data-testid': 'filter-bar' },
    h('div', { class: 'toolbar' }, Object.values(selects), range, custom, clear));

  Promise.resolve(after).catch(() => null).then(() => loadChoices()).then((choices) => {
    for (const [k, label] of DIMENSIONS) {
      const sel = selects[k];
      const opts = choices[k] || [];
      replace(sel, h('option', { value: '', text: sel.options[0].textContent }),
        opts.map((o) => h('option', { value: o.value, text: o.label })));
      if (f[k] && !opts.some((o) => o.value === f[k])) {
        sel.append(h('option', { value: f[k], text: k === 'datacenter' ? `Data center #${f[k]}` : f[k] }));
      }
      sel.value = f[k];
      sel.title = opts.length ? '' : `No ${label.toLowerCase()}s are known yet`;
    }
    bar.dataset.ready = 'true';
  }).catch(() => { bar.dataset.ready = 'true'; });
  return bar;
}
