// Formatting for discovered hardware: relative times that stay current,
// memory sizes, telemetry values, utilization bars and status badges.
import { h, num } from './dom.js';

/** Milliseconds since the epoch for an RFC 3339 string; NaN when absent. */
function ms(iso) {
  return iso ? Date.parse(iso) : NaN;
}

/** "just now", "42 s ago", "3 min ago", "5 h ago", "2 d ago"; "—" when absent. */
export function ago(iso, now = Date.now()) {
  const t = ms(iso);
  if (!Number.isFinite(t)) return '—';
  const s = Math.round((now - t) / 1000);
  if (s < 5) return 'just now';
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

/** A local, readable date and time for tooltips. */
export function when(iso) {
  const t = ms(iso);
  return Number.isFinite(t) ? new Date(t).toLocaleString() : '';
}

/**
 * A <time> element showing ago(iso), its exact time as a tooltip. Every
 * such element on the page is rewritten twice a minute.
 */
export function timeAgo(iso, cls) {
  if (!Number.isFinite(ms(iso))) return h('span', { class: 'muted', text: '—' });
  return h('time', { class: cls || null, datetime: iso, title: when(iso), dataset: { ago: '' }, text: ago(iso) });
}

setInterval(() => {
  const now = Date.now();
  for (const el of document.querySelectorAll('time[data-ago]')) el.textContent = ago(el.getAttribute('datetime'), now);
}, 30000);

/** True for a finite number. */
export function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/** A memory size given in MiB: "512 MiB", "79.6 GiB"; "—" when absent. */
export function mib(v) {
  if (!isNum(v)) return '—';
  if (Math.abs(v) < 1024) return `${num(Math.round(v))} MiB`;
  return `${(v / 1024).toFixed(1)} GiB`;
}

/** "used / total" memory ("1.0 / 79.6 GiB"), either side possibly unknown. */
export function memUsed(used, total) {
  if (!isNum(used)) return '—';
  if (!isNum(total) || total <= 0) return mib(used);
  if (total < 1024) return `${num(Math.round(used))} / ${mib(total)}`;
  return `${(used / 1024).toFixed(1)} / ${mib(total)}`;
}

/** A number with a unit, rounded: "300 W"; "—" when absent. */
export function unit(v, u, digits = 0) {
  return isNum(v) ? `${digits ? v.toFixed(digits) : num(Math.round(v))} ${u}` : '—';
}

/** Level class of a utilization percentage (low, mid, high). */
function level(pct) {
  if (pct >= 80) return 'high';
  if (pct >= 30) return 'mid';
  return 'low';
}

/** A small utilization bar with its percentage; "—" when unknown. */
export function utilBar(pct, wide = false) {
  if (!isNum(pct)) return h('span', { class: 'muted', text: '—' });
  const p = Math.max(0, Math.min(100, pct));
  const fill = h('span', { class: `util-fill util-${level(p)}` });
  fill.style.width = `${p}%`;
  return h('span', { class: `util${wide ? ' util-wide' : ''}`, role: 'img', 'aria-label': `${Math.round(p)}% utilized` },
    h('span', { class: 'util-track', 'aria-hidden': 'true' }, fill),
    h('span', { class: 'util-pct', 'aria-hidden': 'true', text: `${Math.round(p)}%` }));
}

/** A status badge: kind is one of ok, stale, missing, error, off, info. */
export function flag(kind, text, title) {
  return h('span', { class: `badge badge-flag badge-${kind}`, title: title || null, dataset: { flag: kind }, text });
}

/**
 * The state badges of a GPU record: missing, stale, no telemetry (state
 * unknown: nothing was measured, which is not idle), or (fresh) idle.
 */
export function gpuFlags(g) {
  return [
    g.missing_since ? flag('missing', 'Missing', `Its host stopped reporting it ${ago(g.missing_since)}`) : null,
    g.stale ? flag('stale', 'Stale', `No fresh reading since ${when(g.sample_at || g.newest_at) || 'ever'}`) : null,
    g.state === 'unknown' ? flag('unknown', 'No telemetry', 'No utilization has been measured on this GPU') : null,
    g.state === 'idle' ? flag('info', 'Idle', 'Under 5% utilization in its newest sample') : null,
  ].filter(Boolean);
}

/** "1 h", "15 min", "90 s" for a number of seconds. */
export function span(s) {
  if (!isNum(s)) return '';
  if (s >= 3600 && s % 3600 === 0) return `${s / 3600} h`;
  if (s >= 60 && s % 60 === 0) return `${s / 60} min`;
  return `${s} s`;
}

/**
 * Calls load() every `seconds` while the page is alive and the tab is
 * visible (skipping a turn while a dialog is open or something is busy);
 * a tab coming back after its turn was missed loads at once.
 * Returns stop(). alive() false stops it too.
 */
export function autoRefresh(seconds, alive, load) {
  let last = Date.now();
  const tick = () => {
    if (!alive()) return stop();
    if (document.visibilityState !== 'visible') return undefined;
    // Nothing is redrawn under someone's hands: not while a dialog is
    // open or a load or submit is still running; the next turn catches up.
    if (document.querySelector('dialog[open], [aria-busy="true"]')) return undefined;
    last = Date.now();
    return load();
  };
  const timer = setInterval(tick, seconds * 1000);
  const onVisible = () => {
    if (!alive()) return stop();
    if (document.visibilityState === 'visible' && Date.now() - last >= seconds * 1000) tick();
    return undefined;
  };
  function stop() {
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVisible);
  }
  document.addEventListener('visibilitychange', onVisible);
  return stop;
}
