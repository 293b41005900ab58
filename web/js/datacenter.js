// One data center: its header and tabs, the overview page, and the
// resource tab of each kind.
import { h, replace, icon, num, toast } from './dom.js';
import { api, kinds, canWrite } from './api.js';
import { editDatacenter, deleteDatacenter } from './datacenters.js';
import { renderResources } from './resources.js';

const KIND_ICONS = { server: 'server', vm: 'vm', storage: 'storage', switch: 'switch', infiniband: 'infiniband' };

/**
 * Draws the data center's header and tab bar into main. active: 'overview'
 * or a kind's plural ("servers"). Resolves to {content, dc, overview,
 * kinds, refresh()} or null when the data center is missing or the route
 * changed meanwhile.
 */
async function dcFrame(main, ctx, id, active) {
  replace(main, h('div', { class: 'loading', text: 'Loading…' }));
  let dc, ov, k;
  try {
    [dc, ov, k] = await Promise.all([
      api('GET', `/api/v1/datacenters/${id}`),
      api('GET', `/api/v1/datacenters/${id}/overview`),
      kinds(),
    ]);
  } catch (err) {
    if (!ctx.alive()) return null;
    replace(main, h('section', { class: 'panel empty' },
      h('h1', { text: err.status === 404 ? 'Data center not found' : 'Could not load the data center' }),
      h('p', { class: 'muted', text: err.message }),
      h('p', {}, h('a', { href: '#/datacenters', text: '← Back to data centers' }))));
    return null;
  }
  if (!ctx.alive()) return null;

  const sub = h('p', { class: 'page-sub' });
  const title = h('h1', {});
  const tabs = h('nav', { class: 'tabs', 'aria-label': 'Data center sections' });
  const content = h('div', { class: 'tab-content' });
  const frame = { content, dc, overview: ov, kinds: k };

  function drawHead() {
    title.textContent = dc.name;
    const bits = [dc.location, dc.rows != null ? `${num(dc.rows)} rows` : null].filter(Boolean);
    sub.textContent = bits.length ? bits.join(' · ') : 'No location recorded';
    document.title = `${dc.name} · gpuinv`;
    const tab = (href, label, count, key) => h('a', { href, class: `tab${active === key ? ' active' : ''}`,
      'aria-current': active === key ? 'page' : null, dataset: { tab: key } },
    label, count != null ? h('span', { class: 'tab-count', text: num(count) }) : null);
    replace(tabs, tab(`#/datacenters/${id}`, 'Overview', null, 'overview'),
      k.kinds.map((x) => tab(`#/datacenters/${id}/${x.counts}`, x.label, ov.counts[x.counts], x.counts)));
  }

  frame.refresh = async () => {
    try {
      const [d2, o2] = await Promise.all([api('GET', `/api/v1/datacenters/${id}`),
        api('GET', `/api/v1/datacenters/${id}/overview`)]);
      dc = frame.dc = d2;
      ov = frame.overview = o2;
      if (ctx.alive()) drawHead();
    } catch {
      /* the next navigation shows the error */
    }
    return frame;
  };

  drawHead();
  replace(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '#/datacenters', text: 'Data centers' }), h('span', { 'aria-hidden': 'true', text: '/' }),
      h('span', { 'aria-current': 'page', text: dc.name })),
    h('div', { class: 'page-head' },
      h('div', {}, title, sub),
      canWrite() && h('div', { class: 'page-actions' },
        h('button', { type: 'button', class: 'btn btn-secondary', text: 'Edit',
          on: { click: async () => { if (await editDatacenter(dc)) frame.refresh(); } } }),
        h('button', { type: 'button', class: 'btn btn-secondary btn-danger-outline', text: 'Delete',
          on: { click: async () => {
            if (await deleteDatacenter({ ...dc, ...ov.counts })) ctx.go('#/datacenters');
          } } }))),
    tabs,
    content);
  return frame;
}

/** The overview page: category cards and GPU totals. */
export async function renderOverview(main, ctx, id) {
  const frame = await dcFrame(main, ctx, id, 'overview');
  if (!frame) return;
  const { overview: ov, kinds: k } = frame;
  const g = ov.gpus || { total: 0, allocated: 0, available: 0, unavailable: 0 };
  const pct = (n) => (g.total > 0 ? (100 * n) / g.total : 0);

  const bar = h('div', { class: 'gpu-bar', role: 'img',
    'aria-label': `${num(g.allocated)} of ${num(g.total)} GPUs allocated` });
  for (const [key, n] of [['allocated', g.allocated], ['available', g.available], ['unavailable', g.unavailable]]) {
    if (n > 0) {
      const seg = h('span', { class: `gpu-seg gpu-seg-${key}` });
      seg.style.width = `${pct(n)}%`;
      bar.append(seg);
    }
  }
  const stat = (key, label, n, note) => h('div', { class: `gpu-stat gpu-stat-${key}` },
    h('span', { class: 'gpu-stat-label' }, key !== 'total' ? h('span', { class: `dot dot-${key}`, 'aria-hidden': 'true' }) : null, label),
    h('span', { class: 'gpu-stat-value', 'data-testid': `gpus-${key}`, text: num(n) }),
    h('span', { class: 'gpu-stat-note', text: note }));
  const utilization = g.total > 0 ? Math.round(pct(g.allocated)) : 0;

  const cards = k.kinds.map((x) => h('a', { class: 'card', href: `#/datacenters/${id}/${x.counts}`,
    'data-testid': `card-${x.counts}` },
  h('span', { class: `card-icon card-icon-${x.kind}` }, icon(KIND_ICONS[x.kind] || 'server')),
  h('span', { class: 'card-label', text: x.label }),
  h('span', { class: 'card-count', 'data-testid': `count-${x.counts}`, text: num(ov.counts[x.counts] || 0) }),
  h('span', { class: 'card-link', text: 'View all →' })));

  replace(frame.content,
    h('section', { class: 'cards', 'aria-label': 'Resources by category' }, cards),
    h('section', { class: 'panel gpu-panel', 'aria-labelledby': 'gpu-title' },
      h('div', { class: 'gpu-head' },
        h('div', { class: 'gpu-title' },
          h('span', { class: 'card-icon card-icon-gpu' }, icon('gpu')),
          h('div', {}, h('h2', { id: 'gpu-title', text: 'GPU capacity' }),
            h('p', { class: 'muted', 'data-testid': 'gpu-basis',
              text: 'Declared: the GPU counts of this data center’s inventory servers' }))),
        h('div', { class: 'gpu-util' },
          h('span', { class: 'gpu-util-value', text: `${utilization}%` }),
          h('span', { class: 'muted', text: 'allocated' }))),
      bar,
      h('div', { class: 'gpu-stats' },
        stat('total', 'Total GPUs', g.total, 'installed'),
        stat('allocated', 'Allocated', g.allocated, 'in use or reserved'),
        stat('available', 'Available', g.available, 'ready to allocate'),
        stat('unavailable', 'Unavailable', g.unavailable, 'maintenance or retired')),
      discoveredStats(g, id)));
  if (g.total === 0) frame.content.querySelector('.gpu-bar').classList.add('gpu-bar-empty');
  await breakdowns(frame, ctx, id, g.total);
}

/**
 * The overview card's second row: the GPUs discovery reports in this data
 * center, beside the declared figures above it, each saying what it counts.
 */
function discoveredStats(g, id) {
  const d = g.discovered;
  if (!d) return null;
  const fig = (key, label, n, note) => h('div', { class: `gpu-stat gpu-stat-disc-${key}` },
    h('span', { class: 'gpu-stat-label', text: label }),
    h('span', { class: 'gpu-stat-value', 'data-testid': `disc-${key}`, text: num(n) }),
    h('span', { class: 'gpu-stat-note', text: note }));
  const gap = d.total - g.total;
  return h('div', { class: 'gpu-discovered', 'data-testid': 'gpu-discovered' },
    h('p', { class: 'muted', title: (g.basis && g.basis.discovered) || null },
      'Discovered: physical GPUs reported by hosts in this data center ',
      `(${num(d.on_linked_hosts)} on hosts linked to ${num(d.servers_seen)} servers) · `,
      h('a', { href: `#/gpus?datacenter=${id}`, text: 'GPUs in this data center' }), ' · ',
      h('a', { href: `#/drift?datacenter=${id}`, text: 'drift' })),
    h('div', { class: 'gpu-stats' },
      fig('total', 'Discovered GPUs', d.total, gap === 0 ? 'as declared' : `${gap > 0 ? '+' : ''}${num(gap)} vs declared`),
      fig('in_use', 'In use', d.in_use, 'fresh, 5% or more'),
      fig('idle', 'Idle', d.idle, 'fresh, under 5%'),
      fig('stale', 'Stale', d.stale + d.unknown, `${num(d.unknown)} without telemetry`)));
}

/**
 * Adds "GPUs by model" and "Allocated GPUs by tenant" tables, summed from
 * the data center's servers, as the overview's GPU totals are.
 */
async function breakdowns(frame, ctx, id, total) {
  if (total === 0) return;
  let res;
  try {
    res = await api('GET', `/api/v1/resources?datacenter=${id}&kind=server&sort=-gpu_count&limit=1000`);
  } catch {
    return;
  }
  if (!ctx.alive()) return;
  const models = new Map();
  const tenants = new Map();
  for (const r of res.items) {
    if (!(r.gpu_count > 0)) continue;
    const m = models.get(r.gpu_model || 'Unknown') || { n: 0, gpus: 0, allocated: 0, available: 0 };
    m.n += 1;
    m.gpus += r.gpu_count;
    if (r.state === 'in_use' || r.state === 'reserved') m.allocated += r.gpu_count;
    if (r.state === 'available') m.available += r.gpu_count;
    models.set(r.gpu_model || 'Unknown', m);
    if (r.tenant && (r.state === 'in_use' || r.state === 'reserved')) {
      const t = tenants.get(r.tenant) || { gpus: 0, projects: new Set() };
      t.gpus += r.gpu_count;
      if (r.project) t.projects.add(r.project);
      tenants.set(r.tenant, t);
    }
  }
  const partial = res.next ? h('p', { class: 'muted small', text: `Summed over the first ${num(res.items.length)} resources.` }) : null;
  const table = (label, heads, rows) => h('table', { class: 'data-table compact', 'aria-label': label },
    h('thead', {}, h('tr', {}, heads.map(([t, cls]) => h('th', { scope: 'col', class: cls || null, text: t })))),
    h('tbody', {}, rows));
  const byModel = [...models.entries()].sort((a, b) => b[1].gpus - a[1].gpus).map(([name, m]) => h('tr', {},
    h('td', {}, h('span', { class: 'clip clip-wide', title: name, text: name })),
    h('td', { class: 'n', text: num(m.n) }), h('td', { class: 'n', text: num(m.gpus) }),
    h('td', { class: 'n', text: num(m.allocated) }), h('td', { class: 'n', text: num(m.available) })));
  const byTenant = [...tenants.entries()].sort((a, b) => b[1].gpus - a[1].gpus).slice(0, 8).map(([name, t]) => {
    const bar = h('span', { class: 'mini-bar-fill' });
    bar.style.width = `${Math.max(2, (100 * t.gpus) / total)}%`;
    return h('tr', {},
      h('td', {}, h('span', { class: 'clip', title: name, text: name })),
      h('td', {}, h('span', { class: 'clip muted', text: [...t.projects].sort().join(', ') || '—' })),
      h('td', { class: 'bar-cell' }, h('span', { class: 'mini-bar' }, bar)),
      h('td', { class: 'n', text: num(t.gpus) }));
  });
  frame.content.append(h('div', { class: 'split' },
    h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', { text: 'GPUs by model' })),
      h('div', { class: 'table-wrap' }, table('GPUs by model', [['Model'], ['Resources', 'n'], ['GPUs', 'n'],
        ['Allocated', 'n'], ['Available', 'n']], byModel)), partial),
    h('section', { class: 'panel' }, h('div', { class: 'panel-head' }, h('h2', { text: 'Allocated GPUs by tenant' })),
      h('div', { class: 'table-wrap' }, byTenant.length
        ? table('Allocated GPUs by tenant', [['Tenant'], ['Projects'], ['Share'], ['GPUs', 'n']], byTenant)
        : h('p', { class: 'muted pad', text: 'No GPUs are allocated.' })))));
}

/** A resource tab; segment is a kind's plural ("servers"). */
export async function renderResourceTab(main, ctx, id, segment) {
  const k = await kinds().catch(() => null);
  if (!ctx.alive()) return;
  const kind = k && k.kinds.find((x) => x.counts === segment);
  if (!kind) {
    replace(main, h('section', { class: 'panel empty' }, h('h1', { text: 'Unknown category' }),
      h('p', {}, h('a', { href: `#/datacenters/${id}`, text: '← Back to the overview' }))));
    return;
  }
  const frame = await dcFrame(main, ctx, id, segment);
  if (!frame) return;
  try {
    await renderResources(frame, ctx, kind, k.states);
  } catch (err) {
    if (err.status !== 401) toast(err.message, 'error');
  }
}
