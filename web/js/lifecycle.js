// The lifecycle board (#/lifecycle): one column per stage with its count of
// assets (each opening the assets list of that stage), and the newest stage
// moves across assets, both narrowed by data center and kind (kept in the
// address's query).
import { h, replace, num, toast } from './dom.js';
import { api, withQuery } from './api.js';
import { timeAgo } from './fmt.js';
import { datacenterChoices } from './drift.js';
import { STAGES, ASSET_KINDS, stageBadge, assetHref } from './assets.js';

const MOVES = 25;

/** Renders the board into main. */
export async function renderLifecycle(main, ctx) {
  document.title = 'Lifecycle · gpuinv';
  const filter = {
    kind: ASSET_KINDS.some(([k]) => k === ctx.query.get('kind')) ? ctx.query.get('kind') : '',
    datacenter: /^\d+$/.test(ctx.query.get('datacenter') || '') ? ctx.query.get('datacenter') : '',
  };
  let seq = 0;
  const counts = {};
  const board = h('section', { class: 'lifecycle-board', 'aria-label': 'Assets per stage' },
    STAGES.map(([s, label]) => {
      counts[s] = h('a', { class: 'lifecycle-count', 'data-testid': `board-${s}`, href: '#/assets', text: '—' });
      return h('div', { class: `lifecycle-col stage-col-${s.replace(/_/g, '-')}`, dataset: { stage: s } },
        h('h2', { class: 'lifecycle-head', text: label }), counts[s]);
    }));
  const total = h('span', { 'data-testid': 'board-total', text: '—' });
  const moves = h('ol', { class: 'asset-timeline', 'data-testid': 'recent-moves' });

  const kindSel = h('select', { name: 'kind', class: 'filter-select', 'aria-label': 'Kind' },
    h('option', { value: '', text: 'Every kind' }),
    ASSET_KINDS.map(([k, l]) => h('option', { value: k, text: l, selected: k === filter.kind })));
  const dcSel = h('select', { name: 'datacenter', class: 'filter-select', 'aria-label': 'Data center' },
    h('option', { value: '', text: 'Every data center' }));

  async function load() {
    const my = ++seq;
    const p = { kind: filter.kind, datacenter: filter.datacenter };
    history.replaceState(null, '', withQuery('#/lifecycle', p));
    try {
      const [st, ev] = await Promise.all([
        api('GET', withQuery('/api/v1/asset-stages', p)),
        api('GET', withQuery('/api/v1/asset-events', { kind: 'stage', asset_kind: filter.kind,
          datacenter: filter.datacenter, sort: '-seq', limit: MOVES })),
      ]);
      if (my !== seq || !ctx.alive()) return;
      for (const [s] of STAGES) {
        counts[s].textContent = num(st.stages[s] || 0);
        counts[s].href = withQuery('#/assets', { ...p, stage: s });
      }
      total.textContent = num(st.total);
      replace(moves, ev.items.length ? ev.items.map((e) => {
        const d = e.detail && typeof e.detail === 'object' ? e.detail : {};
        return h('li', { class: 'asset-event event-stage', dataset: { seq: String(e.seq), tag: e.tag || '' } },
          e.tag ? h('a', { class: 'mono', href: assetHref(e.tag), text: e.tag }) : h('span', { class: 'muted', text: '—' }),
          h('span', { class: 'event-text' }, stageBadge(d.from), ' → ', stageBadge(d.to),
            d.reason ? h('span', { class: 'muted', text: ` ${d.reason}` }) : null),
          h('span', { class: 'muted small' }, timeAgo(e.at), ` · ${e.actor || ''}`));
      }) : h('li', { class: 'muted', 'data-testid': 'no-moves', text: 'No stage moves yet.' }));
    } catch (err) {
      if (my === seq && err.status !== 401) toast(err.message, 'error');
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
      h('div', {}, h('h1', { text: 'Lifecycle' }),
        h('p', { class: 'page-sub' }, 'Assets in each stage (', total, ' in all) and the newest moves')),
      h('div', { class: 'page-actions' },
        h('a', { class: 'btn btn-secondary', href: '#/assets', text: 'Assets' }),
        h('a', { class: 'btn btn-secondary', href: '#/lifecycle/rules', 'data-testid': 'rules-link', text: 'Rules' }),
        h('a', { class: 'btn btn-secondary', href: '#/warranty', text: 'Warranty calendar' }))),
    h('section', { class: 'panel' }, h('div', { class: 'toolbar' }, kindSel, dcSel), board),
    h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', { text: 'Recent moves' })), moves));
  load();
  const dcs = await datacenterChoices();
  if (!ctx.alive()) return;
  for (const d of dcs) dcSel.append(h('option', { value: String(d.id), text: d.name, selected: String(d.id) === filter.datacenter }));
}

