// The warranty calendar (#/warranty): for each of the next 12 months, the
// assets whose warranty or lease ends in it, with the month's count and
// a list linking to each asset; narrowed by data center and kind.
import { h, replace, num, toast } from './dom.js';
import { api, withQuery } from './api.js';
import { datacenterChoices } from './drift.js';
import { ASSET_KINDS, kindLabel, stageBadge, assetHref } from './assets.js';

const MONTHS = 12;
const MAX = 1000; // assets read per page of the API; more pages are read until the range is done

/** The first days (YYYY-MM-DD) of this month and of the next `n` months. */
export function monthStarts(n, now = new Date()) {
  const out = [];
  for (let i = 0; i <= n; i++) {
    const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1));
    out.push(d.toISOString().slice(0, 10));
  }
  return out;
}

/** "March 2027" of a YYYY-MM-DD date. */
function monthName(day) {
  return new Date(`${day}T00:00:00Z`).toLocaleDateString('en-US', { month: 'long', year: 'numeric', timeZone: 'UTC' });
}

/** Renders the calendar into main. */
export async function renderWarranty(main, ctx) {
  document.title = 'Warranty calendar · gpuinv';
  const filter = {
    kind: ASSET_KINDS.some(([k]) => k === ctx.query.get('kind')) ? ctx.query.get('kind') : '',
    datacenter: /^\d+$/.test(ctx.query.get('datacenter') || '') ? ctx.query.get('datacenter') : '',
  };
  let seq = 0;
  const grid = h('section', { class: 'warranty-calendar', 'data-testid': 'warranty-calendar', 'aria-label': 'Ends per month' });
  const kindSel = h('select', { name: 'kind', class: 'filter-select', 'aria-label': 'Kind' },
    h('option', { value: '', text: 'Every kind' }),
    ASSET_KINDS.map(([k, l]) => h('option', { value: k, text: l, selected: k === filter.kind })));
  const dcSel = h('select', { name: 'datacenter', class: 'filter-select', 'aria-label': 'Data center' },
    h('option', { value: '', text: 'Every data center' }));

  /** Every asset whose warranty or lease ends in [from, to), all pages. */
  async function ending(from, to) {
    const all = [];
    let cursor = null;
    for (;;) {
      const res = await api('GET', withQuery('/api/v1/assets', { kind: filter.kind, datacenter: filter.datacenter,
        ends_after: from, ends_before: to, sort: 'warranty_end', limit: MAX, cursor }));
      all.push(...res.items);
      if (!res.next || !res.items.length) return all;
      cursor = res.next;
    }
  }

  async function load() {
    const my = ++seq;
    history.replaceState(null, '', withQuery('#/warranty', filter));
    const starts = monthStarts(MONTHS);
    const today = new Date().toISOString().slice(0, 10);
    grid.setAttribute('aria-busy', 'true');
    try {
      const items = await ending(today, starts[MONTHS]);
      if (my !== seq || !ctx.alive()) return;
      const months = starts.slice(0, MONTHS).map((s) => ({ start: s, rows: [] }));
      for (const a of items) {
        for (const [what, end] of [['Warranty', a.warranty_end], ['Lease', a.lease_end]]) {
          if (!end || end < today || end >= starts[MONTHS]) continue;
          const m = months.find((x, i) => end >= x.start && end < starts[i + 1]);
          if (m) m.rows.push({ a, what, end });
        }
      }
      replace(grid, months.map((m) => {
        m.rows.sort((x, y) => (x.end < y.end ? -1 : x.end > y.end ? 1 : x.a.tag < y.a.tag ? -1 : 1));
        return h('div', { class: `warranty-month${m.rows.length ? '' : ' warranty-month-empty'}`,
          dataset: { month: m.start.slice(0, 7) } },
        h('h2', { class: 'warranty-month-head' }, monthName(m.start),
          h('span', { class: 'tab-count', 'data-testid': 'month-count', text: num(m.rows.length) })),
        m.rows.length ? h('ul', { class: 'link-list' }, m.rows.map((r) => h('li', { dataset: { tag: r.a.tag } },
          h('a', { class: 'mono', href: assetHref(r.a.tag), text: r.a.tag }),
          h('span', { class: 'muted small', text: ` ${kindLabel(r.a.kind)}${r.a.model ? ` · ${r.a.model}` : ''} · ` }),
          h('span', { text: `${r.what} ends ${r.end}` }), ' ', stageBadge(r.a.stage))))
          : h('p', { class: 'muted small', text: 'Nothing ends.' }));
      }));
    } catch (err) {
      if (my === seq && err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) grid.setAttribute('aria-busy', 'false');
    }
  }

  function refilter() {
    filter.kind = kindSel.value;
    filter.datacenter = dcSel.value;
    load();
  }
  kindSel.addEventListener('change', refilter);
  dcSel.addEventListener('change', refilter);

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Warranty calendar' }),
        h('p', { class: 'page-sub', text: 'Warranties and leases ending in each of the next 12 months' })),
      h('div', { class: 'page-actions' },
        h('a', { class: 'btn btn-secondary', href: '#/assets', text: 'Assets' }),
        h('a', { class: 'btn btn-secondary', href: '#/lifecycle', text: 'Lifecycle board' }))),
    h('section', { class: 'panel' }, h('div', { class: 'toolbar' }, kindSel, dcSel), grid));
  load();
  const dcs = await datacenterChoices();
  if (!ctx.alive()) return;
  for (const d of dcs) dcSel.append(h('option', { value: String(d.id), text: d.name, selected: String(d.id) === filter.datacenter }));
}
