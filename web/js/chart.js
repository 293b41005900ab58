// Charts over uPlot (bundled into the server's assets at build time and
// loaded as the global `uPlot` by index.html): time series as lines,
// stacked areas or stacked bars, and an hour-of-week heatmap drawn as an
// HTML grid. Every chart has a legend with the hovered values, units on its
// value axis, and its data as a table in a <details> for screen readers
// and copying. All times are UTC.
import { h, replace } from './dom.js';

/** Distinct colours for series, in order. */
export const PALETTE = ['#2563eb', '#16a34a', '#f59e0b', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d',
  '#ea580c', '#475569'];

/** "2026-11-01 14:00" (UTC) for unix seconds; the date alone when dayOnly. */
export function utcLabel(sec, dayOnly = false) {
  const s = new Date(sec * 1000).toISOString();
  return dayOnly ? s.slice(0, 10) : `${s.slice(0, 10)} ${s.slice(11, 16)}`;
}

/** A value with up to `digits` decimals and its unit; "—" for null. */
export function fmtValue(v, unit = '', digits = 1) {
  if (v === null || v === undefined || !Number.isFinite(v)) return '—';
  const n = v.toLocaleString('en-US', { maximumFractionDigits: digits });
  return unit ? `${n} ${unit}` : n;
}

/** The chart's data as a table inside a closed <details>. */
function dataTable(caption, head, rows) {
  return h('details', { class: 'chart-data', 'data-testid': 'chart-data' },
    h('summary', { text: 'Data as a table' }),
    h('div', { class: 'table-wrap table-scroll' }, h('table', { class: 'data-table compact' },
      h('caption', { class: 'sr-only', text: caption }),
      h('thead', {}, h('tr', {}, head.map((t, i) => h('th', { scope: 'col', class: i ? 'n' : null, text: t })))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c, i) => (i === 0
        ? h('th', { scope: 'row', text: c }) : h('td', { class: 'n', text: c })))))))));
}

/** An empty chart box saying why there is nothing to draw. */
function emptyBox(text) {
  return h('div', { class: 'chart-empty', 'data-testid': 'chart-empty', text });
}

/**
 * A chart panel. opts:
 *   title, testid, unit (the value axis' unit, e.g. "GPU-hours", "%"),
 *   kind: 'line' | 'area' | 'bars', stacked (areas and bars),
 *   x: unix seconds of each point, series: [{label, values: [number|null]}],
 *   step: 'hour' | 'day' | 'week' (labels), max (value axis top, e.g. 100),
 *   digits (decimals shown), empty (text with no data), note (a line under the title).
 * Returns {el}. The chart follows its box's width.
 */
export function timeChart(opts) {
  const { x = [], series = [], unit = '', digits = 1 } = opts;
  const dayOnly = opts.step && opts.step !== 'hour';
  const body = h('div', { class: 'chart-body' });
  const el = h('figure', { class: 'panel chart', 'data-testid': opts.testid || null },
    h('figcaption', { class: 'panel-head' }, h('h2', { text: opts.title }),
      opts.note ? h('span', { class: 'muted small', text: opts.note }) : null),
    body);
  const hasData = x.length > 0 && series.some((s) => s.values.some((v) => v !== null && v !== undefined));
  if (!hasData) {
    body.append(emptyBox(opts.empty || 'No data in this range.'));
    return { el };
  }
  const fmt = (v) => fmtValue(v, unit, digits);
  el.append(dataTable(`${opts.title} (${unit})`, [dayOnly ? 'Date (UTC)' : 'Time (UTC)', ...series.map((s) => s.label)],
    x.map((t, i) => [utcLabel(t, dayOnly), ...series.map((s) => fmt(s.values[i]))])));
  if (typeof window.uPlot !== 'function') {
    body.append(emptyBox('The chart library did not load; the data is in the table below.'));
    return { el };
  }
  const U = window.uPlot;
  // Stacked: each series is drawn as the running sum of those below it,
  // the tallest first, so each band shows its own share; hover values are
  // the series' own.
  const stacked = opts.stacked && opts.kind !== 'line';
  const order = series.map((_, i) => i);
  let drawn = series.map((s) => s.values);
  if (stacked) {
    const acc = [];
    let run = x.map(() => 0);
    for (const s of series) {
      run = run.map((r, j) => r + (Number.isFinite(s.values[j]) ? s.values[j] : 0));
      acc.push(run);
    }
    drawn = acc;
    order.reverse();
  }
  const barPaths = opts.kind === 'bars' && U.paths && U.paths.bars ? U.paths.bars({ size: [0.7, 64] }) : null;
  const uSeries = [{ value: (u, t) => (t == null ? '—' : utcLabel(t, dayOnly)) }];
  const data = [x];
  for (const i of order) {
    const color = PALETTE[i % PALETTE.length];
    const raw = series[i].values;
    uSeries.push({
      label: series[i].label,
      stroke: color,
      width: opts.kind === 'line' ? 2 : 1,
      fill: opts.kind === 'line' ? null : `${color}${opts.kind === 'bars' ? 'dd' : '99'}`,
      paths: barPaths || undefined,
      points: { show: opts.kind === 'line' && x.length < 60 },
      spanGaps: false,
      value: (u, v, si, di) => (di == null ? '—' : fmt(raw[di])),
    });
    data.push(drawn[i]);
  }
  const box = h('div', { class: 'chart-canvas' });
  body.append(box);
  const uopts = {
    width: 600,
    height: opts.height || 260,
    tzDate: (ts) => U.tzDate(new Date(ts * 1000), 'Etc/UTC'),
    series: uSeries,
    scales: { x: { time: true }, y: { range: (u, min, max) => [0, opts.max || (max > 0 ? max * 1.08 : 1)] } },
    axes: [
      { stroke: '#64748b', grid: { stroke: '#eef2f7' } },
      { stroke: '#64748b', grid: { stroke: '#eef2f7' }, label: unit, labelSize: 18, size: 56,
        values: (u, vals) => vals.map((v) => fmtValue(v, '', v >= 100 ? 0 : 1)) },
    ],
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
  };
  const plot = new U(uopts, data, box);
  const fit = () => {
    const w = Math.max(240, Math.floor(body.clientWidth));
    if (w && Math.abs(w - plot.width) > 1) plot.setSize({ width: w, height: uopts.height });
  };
  if (typeof ResizeObserver === 'function') new ResizeObserver(fit).observe(body);
  requestAnimationFrame(fit);
  return { el, plot };
}

const DAYS = ['Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat', 'Sun'];

/**
 * An hour-of-week heatmap: rows Monday..Sunday, columns 00..23 (UTC).
 * opts: title, testid, unit ('%'), cells: [{dow: 0 (Monday)..6, hour: 0..23,
 * value: number|null, hours: GPU-hours behind it}], max (colour scale top),
 * empty, note. Returns {el}.
 */
export function heatmap(opts) {
  const cells = new Map((opts.cells || []).map((c) => [`${c.dow}:${c.hour}`, c]));
  const body = h('div', { class: 'chart-body' });
  const el = h('figure', { class: 'panel chart', 'data-testid': opts.testid || null },
    h('figcaption', { class: 'panel-head' }, h('h2', { text: opts.title }),
      opts.note ? h('span', { class: 'muted small', text: opts.note }) : null),
    body);
  const values = [...cells.values()].map((c) => c.value).filter((v) => Number.isFinite(v));
  if (!values.length) {
    body.append(emptyBox(opts.empty || 'No data in this range.'));
    return { el };
  }
  const top = opts.max || Math.max(...values, 1);
  const unit = opts.unit || '';
  const grid = h('div', { class: 'heatmap', role: 'img', 'aria-label': `${opts.title}: the table below has every value` });
  grid.append(h('span', { class: 'hm-corner', 'aria-hidden': 'true' }));
  for (let hr = 0; hr < 24; hr++) {
    grid.append(h('span', { class: 'hm-col', 'aria-hidden': 'true', text: hr % 3 === 0 ? String(hr).padStart(2, '0') : '' }));
  }
  for (let d = 0; d < 7; d++) {
    grid.append(h('span', { class: 'hm-row', 'aria-hidden': 'true', text: DAYS[d] }));
    for (let hr = 0; hr < 24; hr++) {
      const c = cells.get(`${d}:${hr}`);
      const v = c && Number.isFinite(c.value) ? c.value : null;
      const cell = h('span', { class: `hm-cell${v === null ? ' hm-none' : ''}`, dataset: { dow: d, hour: hr },
        title: `${DAYS[d]} ${String(hr).padStart(2, '0')}:00 UTC: ${fmtValue(v, unit)}`
          + `${c && Number.isFinite(c.hours) ? ` over ${fmtValue(c.hours, 'GPU-hours')}` : ''}` });
      if (v !== null) {
        const a = Math.max(0.06, Math.min(1, v / top));
        cell.style.background = `rgba(37, 99, 235, ${a.toFixed(3)})`;
      }
      grid.append(cell);
    }
  }
  const legend = h('div', { class: 'hm-legend', 'aria-hidden': 'true' },
    h('span', { text: fmtValue(0, unit) }), h('span', { class: 'hm-scale' }), h('span', { text: fmtValue(top, unit) }),
    h('span', { class: 'muted', text: 'hover a cell for its value' }));
  replace(body, h('div', { class: 'heatmap-scroll' }, grid), legend);
  el.append(dataTable(`${opts.title} (${unit}, UTC)`, ['Day', ...Array.from({ length: 24 }, (_, i) => String(i).padStart(2, '0'))],
    DAYS.map((name, d) => [name, ...Array.from({ length: 24 }, (_, hr) => {
      const c = cells.get(`${d}:${hr}`);
      return fmtValue(c ? c.value : null);
    })])));
  return { el };
}

/** A panel standing in for a chart whose data route is not there. */
export function unavailable(title, text, testid) {
  return h('figure', { class: 'panel chart', 'data-testid': testid || null },
    h('figcaption', { class: 'panel-head' }, h('h2', { text: title })),
    h('div', { class: 'chart-body' }, h('div', { class: 'chart-empty', 'data-testid': 'not-available', text })));
}
