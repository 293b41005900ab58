// A GPU's timeline on its page: who used it when (allocation intervals as
// lanes and as a table), its hourly utilization, memory, power and
// temperature, its owner over time and the events of the range, from
// GET /api/v1/gpus/{uuid}/timeline?from=&to= (aggregated by the server).
import { h, replace } from './dom.js';
import { api, withQuery } from './api.js';
import { timeChart, utcLabel, fmtValue } from './chart.js';
import { iso, RANGES } from './filters.js';

const CHOICES = RANGES.filter(([v]) => v !== '90d');

/** The first of names that o has, else undefined. */
function pick(o, ...names) {
  for (const k of names) if (o && o[k] !== undefined && o[k] !== null) return o[k];
  return undefined;
}

/** Unix seconds of an RFC 3339 string or a number of seconds; NaN otherwise. */
function secs(v) {
  if (typeof v === 'number') return v;
  return typeof v === 'string' ? Date.parse(v) / 1000 : NaN;
}

/** A number, or null. */
function num(v) {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/** A small table. */
function table(label, head, rows) {
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data-table compact', 'aria-label': label },
    h('thead', {}, h('tr', {}, head.map((t) => h('th', { scope: 'col', text: t })))),
    h('tbody', {}, rows)));
}

/**
 * The timeline section of GPU `apiPath` (its /api/v1/gpus/... path).
 * range: a preset of filters.js ('24h', '7d', '30d'); onRange(next) is
 * told when the user picks another. Returns the section element.
 */
export function timelineSection(apiPath, range, onRange, alive) {
  const chosen = CHOICES.some(([v]) => v === range) ? range : '7d';
  const sel = h('select', { class: 'filter-input', name: 'timeline-range', 'aria-label': 'Timeline range',
    on: { change: () => onRange(sel.value) } }, CHOICES.map(([v, t]) => h('option', { value: v, text: t })));
  sel.value = chosen;
  const body = h('div', { class: 'tl-content' }, h('p', { class: 'muted pad', text: 'Loading…' }));
  const el = h('section', { class: 'panel stack-gap', 'data-testid': 'timeline' },
    h('div', { class: 'panel-head panel-head-row' }, h('h2', { text: 'Timeline' }), h('div', { class: 'tl-controls' }, sel)),
    body);
  const secsOf = CHOICES.find(([v]) => v === chosen)[2];
  const nowS = Math.floor(Date.now() / 1000);
  const to = nowS - (nowS % 3600) + 3600;
  const from = to - secsOf;
  load();
  return el;

  async function load() {
    let data;
    try {
      data = await api('GET', withQuery(`${apiPath}/timeline`, { from: iso(from), to: iso(to) }));
    } catch (err) {
      if (!alive()) return;
      // A server without timelines answers from the GPU route, which
      // takes no range (400 unknown_parameter), or not at all (404).
      const missing = err.status === 404 || err.code === 'unknown_parameter';
      replace(body, h('p', { class: 'muted pad', 'data-testid': missing ? 'not-available' : 'timeline-error',
        text: missing ? 'Not available yet: this server does not keep GPU timelines.' : `Could not load the timeline: ${err.message}` }));
      return;
    }
    if (!alive()) return;
    replace(body, ...draw(data || {}));
  }

  function draw(data) {
    const parts = [];
    const intervals = pick(data, 'intervals', 'consumers', 'usage') || [];
    const hours = Array.isArray(data.hours) ? data.hours : [];
    // Telemetry: raw samples for a short range, else the hourly rollups.
    const points = data.telemetry_source === 'samples' && Array.isArray(data.samples) ? data.samples : hours;
    const owners = pick(data, 'owners', 'owner_changes', 'ownership') || [];
    const events = pick(data, 'events') || [];
    // Who used it when: one lane per consumer, spans placed in the range.
    const lanes = new Map();
    for (const iv of intervals) {
      const who = `${pick(iv, 'consumer', 'who', 'name') || 'unknown'}`;
      const s = Math.max(from, secs(pick(iv, 'start', 'started_at', 'from')));
      const endRaw = pick(iv, 'end', 'ended_at', 'to');
      const e = Math.min(to, endRaw === undefined ? to : secs(endRaw));
      if (!Number.isFinite(s) || !Number.isFinite(e) || e <= s) continue;
      if (!lanes.has(who)) lanes.set(who, []);
      lanes.get(who).push([s, e, iv]);
    }
    const span = to - from;
    parts.push(h('h3', { class: 'pad-x', text: 'Who used it' }));
    if (!lanes.size) {
      parts.push(h('p', { class: 'muted pad', 'data-testid': 'timeline-no-use', text: 'No consumer held this GPU in this range.' }));
    } else {
      parts.push(h('div', { class: 'tl-bars', 'data-testid': 'timeline-lanes' }, [...lanes.entries()].map(([who, spans]) =>
        h('div', { class: 'tl-bar-row' }, h('span', { class: 'clip', title: who, text: who }),
          h('div', { class: 'tl-track' }, spans.map(([s, e, iv]) => {
            const bar = h('span', { class: 'tl-span',
              title: `${who}${iv.team ? ` (team ${iv.team})` : ''}: ${utcLabel(s)} – ${utcLabel(e)} UTC` });
            bar.style.left = `${((s - from) / span) * 100}%`;
            bar.style.width = `${Math.max(0.4, ((e - s) / span) * 100)}%`;
            return bar;
          }))))));
      parts.push(h('details', { class: 'chart-data' }, h('summary', { text: 'Intervals as a table' }),
        table('Intervals', ['Consumer', 'Kind', 'Team', 'From (UTC)', 'To (UTC)', 'Hours'],
          intervals.map((iv) => {
            const s = secs(pick(iv, 'start', 'started_at', 'from'));
            const endRaw = pick(iv, 'end', 'ended_at', 'to');
            const e = endRaw === undefined ? null : secs(endRaw);
            return h('tr', { dataset: { consumer: pick(iv, 'consumer', 'who') || '' } },
              h('td', { text: pick(iv, 'consumer', 'who', 'name') || 'unknown' }), h('td', { text: pick(iv, 'kind') || '—' }),
              h('td', { text: pick(iv, 'team') || '—' }), h('td', { text: Number.isFinite(s) ? utcLabel(s) : '—' }),
              h('td', { text: e === null ? 'still holding' : Number.isFinite(e) ? utcLabel(e) : '—' }),
              h('td', { class: 'n', text: Number.isFinite(s) ? fmtValue(((e ?? nowS) - s) / 3600, '', 1) : '—' }));
          }))));
    }
    // Telemetry per hour.
    const xs = points.map((p) => secs(pick(p, 'start', 'hour', 'ts', 'time', 'at')));
    const ok = xs.map((x, i) => [x, points[i]]).filter(([x]) => Number.isFinite(x)).sort((a, b) => a[0] - b[0]);
    const x = ok.map(([t]) => t);
    const col = (...names) => ok.map(([, p]) => num(pick(p, ...names)));
    const mem = col('mem_used_mib', 'mem_avg_mib', 'mem_max_mib').map((v) => (v === null ? null : v / 1024));
    const charts = h('div', { class: 'charts tl-charts' },
      timeChart({ title: 'Utilization', testid: 'timeline-util', unit: '%', kind: 'line', max: 100, x,
        series: [{ label: 'Average', values: col('util_avg', 'util', 'util_pct') }, { label: 'Peak', values: col('util_max') }]
          .filter((s) => s.values.some((v) => v !== null)), empty: 'No utilization was measured in this range.' }).el,
      timeChart({ title: 'Memory used', testid: 'timeline-mem', unit: 'GiB', kind: 'line', x,
        series: [{ label: 'Memory', values: mem }], empty: 'No memory reading in this range.' }).el,
      timeChart({ title: 'Power', testid: 'timeline-power', unit: 'W', kind: 'line', x, digits: 0,
        series: [{ label: 'Power', values: col('power_avg_w', 'power_w', 'power_max_w') }], empty: 'No power reading in this range.' }).el,
      timeChart({ title: 'Temperature', testid: 'timeline-temp', unit: '°C', kind: 'line', x, digits: 0,
        series: [{ label: 'Temperature', values: col('temp_c', 'temp_avg_c', 'temp_max_c') }],
        empty: 'No temperature reading in this range.' }).el);
    // How each hour was spent (busy, allocated-idle, idle, unknown).
    const hx = hours.map((p) => secs(p.start));
    const share = (k) => hours.map((p) => (num(p[k]) === null ? null : p[k] / 3600));
    charts.prepend(timeChart({ title: 'Use per hour', testid: 'timeline-use', unit: 'hours', kind: 'bars', stacked: true, x: hx,
      digits: 2, series: [{ label: 'Busy', values: share('busy_s') }, { label: 'Allocated, idle', values: share('alloc_idle_s') },
        { label: 'Unallocated, idle', values: share('idle_s') }, { label: 'Unknown', values: share('unknown_s') }],
      empty: 'No rolled-up hour in this range.' }).el);
    parts.push(charts);
    // Owner over time.
    parts.push(h('h3', { class: 'pad-x', text: 'Owner' }));
    parts.push(owners.length
      ? table('Owner over time', ['From (UTC)', 'Team', 'Environment', 'Pool', 'Decided by'], owners.map((o) => {
        const at = secs(pick(o, 'from', 'at', 'effective_from', 'start'));
        const v = (k) => (o[k] && typeof o[k] === 'object' ? o[k].value : o[k]);
        const by = (k) => (o[k] && typeof o[k] === 'object' ? o[k].by : null);
        return h('tr', {}, h('td', { text: Number.isFinite(at) ? utcLabel(at) : '—' }), h('td', { text: v('team') || '—' }),
          h('td', { text: v('env') || '—' }), h('td', { text: v('pool') || '—' }),
          h('td', { class: 'mono', text: o.by || by('team') || '—' }));
      }))
      : h('p', { class: 'muted pad', text: 'No owner change in this range.' }));
    if (events.length) {
      parts.push(h('h3', { class: 'pad-x', text: 'Events in this range' }));
      parts.push(table('Events', ['When (UTC)', 'Event'], events.map((e) => {
        const at = secs(pick(e, 'occurred_at', 'at', 'ts', 'time'));
        return h('tr', {}, h('td', { text: Number.isFinite(at) ? utcLabel(at) : '—' }), h('td', { text: String(e.kind || '') }));
      })));
    }
    const cost = data.cost && typeof data.cost === 'object' && data.cost.amount !== undefined ? data.cost : null;
    if (cost) {
      parts.push(h('p', { class: 'pad', 'data-testid': 'timeline-cost', dataset: { amount: String(cost.amount) },
        text: `Cost in this range: ${cost.amount} ${cost.currency || ''}${cost.method ? ` (${cost.method})` : ''}` }));
    }
    return parts;
  }
}
