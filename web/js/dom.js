// DOM helpers. Every piece of data reaches the page through textContent or
// attribute setters, never through HTML parsing.

/**
 * Creates an element. attrs: `class`, `text`, `dataset` (object), `on`
 * (event name -> handler), boolean/other attributes (false/null skipped).
 * Children: nodes, strings (as text), arrays, null/undefined/false skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'dataset') {
      for (const [k, v] of Object.entries(value)) if (v !== null && v !== undefined) el.dataset[k] = v;
    }
    else if (key === 'on') for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key === 'value') el.value = value;
    else if (key === 'checked' || key === 'selected' || key === 'disabled') el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children (see h) to a parent node. */
export function append(parent, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    parent.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return parent;
}

/** Replaces every child of el. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

const SVG = 'http://www.w3.org/2000/svg';

// Outline icons on a 24x24 grid, drawn as stroked paths.
const ICONS = {
  server: ['M4 4h16v6H4z', 'M4 14h16v6H4z', 'M7.5 7h.01', 'M7.5 17h.01', 'M11 7h6', 'M11 17h6'],
  vm: ['M3 5h18v11H3z', 'M8 20h8', 'M12 16v4', 'M8 9l2 2-2 2', 'M12 13h4'],
  storage: ['M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3z', 'M4 6v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6',
    'M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3'],
  switch: ['M3 8h18v8H3z', 'M6.5 12h.01', 'M9.5 12h.01', 'M12.5 12h.01', 'M15.5 12h.01', 'M18 12h.01'],
  infiniband: ['M5 12a3 3 0 1 0 0 .01', 'M19 5a2 2 0 1 0 0 .01', 'M19 19a2 2 0 1 0 0 .01',
    'M8 11l9-5', 'M8 13l9 5', 'M19 7v10'],
  gpu: ['M3 7h15v10H3z', 'M18 10h3', 'M18 14h3', 'M6 17v3', 'M10 17v3', 'M14 17v3',
    'M10.5 12a2 2 0 1 0 0 .01'],
  datacenter: ['M3 21h18', 'M5 21V7l7-4 7 4v14', 'M9 10h6', 'M9 14h6', 'M9 18h6'],
  download: ['M12 3v12', 'M7 10l5 5 5-5', 'M5 21h14'],
  plus: ['M12 5v14', 'M5 12h14'],
  search: ['M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14z', 'M21 21l-5-5'],
  logout: ['M15 4h4v16h-4', 'M10 8l-4 4 4 4', 'M6 12h10'],
  back: ['M15 6l-6 6 6 6'],
  users: ['M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8z', 'M2 21v-1a6 6 0 0 1 12 0v1', 'M16 3.5a4 4 0 0 1 0 7',
    'M18 14.5a6 6 0 0 1 4 5.5v1'],
  key: ['M8 15a4 4 0 1 0 0-8 4 4 0 0 0 0 8z', 'M12 11h9', 'M18 11v3', 'M21 11v2'],
  copy: ['M9 9h11v11H9z', 'M5 15H4V4h11v1'],
  home: ['M3 11l9-7 9 7', 'M5 10v10h14V10', 'M10 20v-6h4v6'],
};

/** An outline SVG icon by name (see ICONS), decorative. */
export function icon(name, cls = 'icon') {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', cls);
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  for (const d of ICONS[name] || []) {
    const p = document.createElementNS(SVG, 'path');
    p.setAttribute('d', d);
    svg.append(p);
  }
  return svg;
}

/** Formats an integer with thousands separators. */
export function num(n) {
  return typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: 2 }) : '—';
}

/** A file-name-safe slug: "Frankfurt DC1" -> "frankfurt-dc1". */
export function slug(s) {
  return String(s).toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '') || 'export';
}

/** Today's date as YYYY-MM-DD (UTC), for export file names. */
export function today() {
  return new Date().toISOString().slice(0, 10);
}

/** A readable label for a resource state ("in_use" -> "In use"). */
export function stateLabel(state) {
  if (!state) return '—';
  const s = String(state).replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A status badge coloured by state. */
export function badge(state) {
  const known = ['available', 'in_use', 'reserved', 'maintenance', 'retired'];
  const cls = known.includes(state) ? state.replace('_', '-') : 'unknown';
  return h('span', { class: `badge badge-${cls}`, text: stateLabel(state) });
}

let toastTimer = null;

/** Shows a short message in the page's live region. kind: 'ok' | 'error'. */
export function toast(message, kind = 'ok') {
  let box = document.getElementById('toast');
  if (!box) {
    box = h('div', { id: 'toast', class: 'toast', role: 'status', 'aria-live': 'polite' });
    document.body.append(box);
  }
  box.className = `toast toast-${kind} toast-show`;
  box.textContent = message;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { box.className = `toast toast-${kind}`; }, 3500);
}

/** Calls fn at most once per `ms` of quiet after the last call. */
export function debounce(fn, ms) {
  let t = null;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}
