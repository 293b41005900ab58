// One inventory resource (#/resources/{id}): its attributes, the GPUs it
// declares beside the GPUs discovery found on its host, its allocation
// history and its audit trail; editors edit, allocate, release and delete
// it from here as from its data center's tab.
import { h, replace, num, badge, stateLabel } from './dom.js';
import { api, withQuery, kinds, canWrite } from './api.js';
import { timeAgo, when, utilBar, memUsed, gpuFlags, isNum } from './fmt.js';
import { gpuHref } from './gpus.js';
import { editResource, allocate, release, remove, singular, show } from './resources.js';

const HELD = ['in_use', 'reserved'];
/** Fields the audit trail leaves out of its change lists. */
const NOISE = new Set(['updated_at', 'version', 'created_at']);
const ACTIONS = { create: 'Created', update: 'Updated', delete: 'Deleted', allocate: 'Allocated', release: 'Released',
  import: 'Imported' };
const RULES = { serial: 'by serial number', machine_id: 'by machine id', hostname: 'by host name', fqdn: 'by host name',
  manual: 'linked by hand' };

function panel(title, testid, ...body) {
  return h('section', { class: 'panel', 'data-testid': testid },
    h('div', { class: 'panel-head' }, h('h2', {}, title)), body);
}

function kvRow(label, value, key) {
  return h('div', { class: 'kv-row', dataset: { field: key || null } },
    h('dt', { text: label }), h('dd', {}, h('span', { class: 'kv-value' }, value)));
}

/** "8 × NVIDIA H100 80GB HBM3", or a dash. */
function gpuLine(count, model) {
  if (!isNum(count) || count <= 0) return model ? `0 × ${model}` : 'none';
  return `${num(count)} × ${model || 'unknown model'}`;
}

/** The value of a metadata or attribute entry as text. */
function valueText(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'boolean') return v ? 'Yes' : 'No';
  if (typeof v === 'object') return JSON.stringify(v);
  return show(v);
}

/** The declared GPUs beside those discovered on the linked host(s). */
function gpuPanel(r, kind) {
  // A server with no discovered host linked (no member, or one without hosts)
  // says so; nothing is made up.
  const d = r.discovered && typeof r.discovered === 'object' && Array.isArray(r.discovered.hosts) &&
    r.discovered.hosts.length ? r.discovered : null;
  const declared = h('div', { class: 'gpu-stat', 'data-testid': 'gpus-declared' },
    h('span', { class: 'gpu-stat-label', text: 'Declared in the inventory' }),
    h('span', { class: 'gpu-stat-value res-gpu-line', text: gpuLine(r.gpu_count, r.gpu_model) }),
    h('span', { class: 'gpu-stat-note', text: 'gpu_model / gpu_count of this record' }));
  if (!d) {
    return panel('GPUs', 'gpus', h('div', { class: 'gpu-stats res-gpu-stats' }, declared,
      h('div', { class: 'gpu-stat gpu-stat-none', 'data-testid': 'gpus-discovered' },
        h('span', { class: 'gpu-stat-label', text: 'Discovered' }),
        h('span', { class: 'gpu-stat-note', 'data-testid': 'no-discovered',
          text: `No discovered host is linked to this ${singular(kind)}.` }))));
  }
  const models = Array.isArray(d.models) ? d.models : [];
  const mismatch = (isNum(r.gpu_count) && isNum(d.count) && r.gpu_count !== d.count) ||
    (r.gpu_model && models.length > 0 && !models.includes(r.gpu_model));
  const discovered = h('div', { class: `gpu-stat${mismatch ? ' gpu-stat-drift' : ''}`, 'data-testid': 'gpus-discovered' },
    h('span', { class: 'gpu-stat-label', text: 'Discovered on its host' }),
    h('span', { class: 'gpu-stat-value res-gpu-line', text: gpuLine(d.count, models.join(', ')) }),
    h('span', { class: 'gpu-stat-note', text: [
      isNum(d.in_use) ? `${num(d.in_use)} in use` : null,
      isNum(d.util_avg) ? `${num(Math.round(d.util_avg))}% average utilization` : null,
      mismatch ? 'differs from the inventory' : null].filter(Boolean).join(' · ') || '—' }));
  const hosts = Array.isArray(d.hosts) ? d.hosts : [];
  const gpus = Array.isArray(d.gpus) ? d.gpus : [];
  const hostList = hosts.length ? h('ul', { class: 'link-list', 'data-testid': 'discovered-hosts' }, hosts.map((x) => h('li', {},
    h('a', { class: 'mono', href: withQuery('#/gpus', { host: x.hostname }), text: x.hostname || `host #${x.host_id}` }),
    h('span', { class: 'muted small' }, x.manual ? 'linked by hand' : RULES[x.rule] || (x.rule ? `matched by ${x.rule}` : ''),
      x.last_seen_at ? [' · seen ', timeAgo(x.last_seen_at)] : null)))) : null;
  const table = gpus.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'data-table compact', 'aria-label': 'Discovered GPUs' },
    h('thead', {}, h('tr', {}, ['GPU', 'Status', 'Utilization', 'Memory used', 'Sampled'].map((t, i) =>
      h('th', { scope: 'col', class: i === 3 ? 'n' : null, text: t })))),
    h('tbody', {}, gpus.map((g) => h('tr', { dataset: { uuid: g.uuid } },
      h('td', {}, h('div', { class: 'stack' },
        h('a', { class: 'row-link clip clip-wide', href: gpuHref(g.uuid), title: `${g.model || ''}\n${g.uuid}`, text: g.model || g.uuid }),
        h('span', { class: 'sub mono', text: g.uuid }))),
      h('td', {}, gpuFlags(g).length ? h('span', { class: 'flag-list' }, gpuFlags(g))
        : h('span', { class: 'muted', text: stateLabel(g.state) })),
      h('td', { class: 'util-cell' }, utilBar(g.util_pct)),
      h('td', { class: 'n', text: memUsed(g.mem_used_mib, g.memory_total_mib) }),
      h('td', {}, timeAgo(g.observed_at || g.sample_at))))))) : h('p', { class: 'muted pad', text: 'Its host reported no GPUs.' });
  return panel('GPUs', 'gpus', h('div', { class: 'gpu-stats res-gpu-stats' }, declared, discovered), hostList, table);
}

/** The attributes: common fields, the kind's fields by label, metadata. */
function attributePanel(r, kind, hostName) {
  const rows = [
    kvRow('Kind', kind.label.replace(/s$/, ''), 'kind'),
    kvRow('Data center', h('a', { href: `#/datacenters/${r.datacenter_id}`, text: r.datacenter || `#${r.datacenter_id}` }), 'datacenter'),
    kvRow('State', badge(r.state), 'state'),
    HELD.includes(r.state) ? kvRow('Tenant', r.tenant || '—', 'tenant') : null,
    HELD.includes(r.state) ? kvRow('Project', r.project || '—', 'project') : null,
    kvRow('GPU model', r.gpu_model || '—', 'gpu_model'),
    kvRow('GPU count', show(r.gpu_count), 'gpu_count'),
  ];
  for (const f of kind.fields) {
    const v = r[f.name];
    if (f.name === 'host_id' && v != null) {
      rows.push(kvRow(f.label, h('a', { href: `#/resources/${v}`, text: hostName || `#${v}` }), f.name));
    } else {
      rows.push(kvRow(f.label, valueText(v), f.name));
    }
  }
  const md = r.metadata && typeof r.metadata === 'object' ? Object.entries(r.metadata) : [];
  for (const [k, v] of md) rows.push(kvRow(k, valueText(v), `metadata.${k}`));
  rows.push(kvRow('Created', h('span', {}, timeAgo(r.created_at), h('span', { class: 'muted small', text: ` · ${when(r.created_at)}` }))));
  rows.push(kvRow('Updated', h('span', {}, timeAgo(r.updated_at), h('span', { class: 'muted small', text: ` · ${when(r.updated_at)}` }))));
  return panel('Attributes', 'attributes', h('dl', { class: 'kv' }, rows.filter(Boolean)),
    md.length ? null : h('p', { class: 'muted small pad', text: 'No metadata.' }));
}

/** Allocation intervals, newest first. */
function allocationPanel(list) {
  return panel(`Allocation history (${list.length})`, 'allocations', list.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'data-table compact', 'aria-label': 'Allocation history' },
      h('thead', {}, h('tr', {}, ['Tenant', 'Project', 'From', 'Until', 'By'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, list.map((a) => h('tr', { dataset: { id: a.id } },
        h('td', {}, h('span', { class: 'clip', title: a.tenant || '', text: a.tenant || '—' })),
        h('td', {}, h('span', { class: 'clip', title: a.project || '', text: a.project || '—' })),
        h('td', { title: when(a.started_at), text: when(a.started_at) || '—' }),
        h('td', {}, a.ended_at ? h('span', { title: when(a.ended_at), text: when(a.ended_at) })
          : h('span', { class: 'badge badge-in-use', text: 'Current' })),
        h('td', {}, h('span', { class: 'clip', title: a.actor || '', text: a.actor || '—' })))))))
    : h('p', { class: 'muted pad', text: 'Never allocated.' }));
}

/** "state: available → in_use" for each field an audit entry changed. */
function changes(before, after) {
  const b = before && typeof before === 'object' ? before : {};
  const a = after && typeof after === 'object' ? after : {};
  const keys = [...new Set([...Object.keys(b), ...Object.keys(a)])].filter((k) => !NOISE.has(k));
  return keys.filter((k) => JSON.stringify(b[k]) !== JSON.stringify(a[k]))
    .map((k) => `${k}: ${valueText(b[k])} → ${valueText(a[k])}`);
}

/** The audit trail, newest first. */
function auditPanel(items, total) {
  return panel(`Audit trail (${num(total)})`, 'audit', items.length
    ? h('ol', { class: 'timeline' }, items.map((e) => {
      const diff = e.action === 'create' || e.action === 'import' ? [] : changes(e.before, e.after);
      return h('li', { class: `tl-item tl-${e.action}`, dataset: { action: e.action } },
        h('span', { class: 'tl-dot', 'aria-hidden': 'true' }),
        h('div', { class: 'tl-body' },
          h('div', { class: 'tl-head' }, h('strong', { text: ACTIONS[e.action] || e.action }),
            h('span', { class: 'muted small', text: `by ${e.actor || '—'}` }), timeAgo(e.occurred_at, 'muted small')),
          diff.length ? h('ul', { class: 'tl-changes' }, diff.slice(0, 12).map((d) => h('li', { class: 'mono', text: d }))) : null));
    }))
    : h('p', { class: 'muted pad', text: 'No recorded changes.' }),
  total > items.length ? h('p', { class: 'muted small pad', text: `Showing the newest ${num(items.length)}.` }) : null);
}

/** Renders resource `id` into main. */
export async function renderResource(main, ctx, id) {
  document.title = 'Resource · gpuinv';
  replace(main, h('div', { class: 'loading', text: 'Loading…' }));
  let r, k;
  try {
    [r, k] = await Promise.all([api('GET', `/api/v1/resources/${id}`), kinds()]);
  } catch (err) {
    if (!ctx.alive()) return;
    replace(main, h('section', { class: 'panel empty' },
      h('h1', { text: err.status === 404 ? 'Resource not found' : 'Could not load the resource' }),
      h('p', { class: 'muted', text: err.message }),
      h('p', {}, h('a', { href: '#/datacenters', text: '← Back to data centers' }))));
    return;
  }
  if (!ctx.alive()) return;
  const kind = k.kinds.find((x) => x.kind === r.kind) || { kind: r.kind, counts: `${r.kind}s`, label: r.kind, fields: [] };
  document.title = `${r.name} · gpuinv`;
  const [audit, host] = await Promise.all([
    api('GET', withQuery('/api/v1/audit', { entity: 'resource', entity_id: id, limit: 50 })).catch(() => ({ items: [], total: 0 })),
    r.host_id != null ? api('GET', `/api/v1/resources/${r.host_id}`).catch(() => null) : null,
  ]);
  if (!ctx.alive()) return;

  const reload = () => renderResource(main, ctx, id);
  const tabHref = `#/datacenters/${r.datacenter_id}/${kind.counts}`;
  const actions = [];
  if (canWrite()) {
    const fctx = { states: k.states, dcId: r.datacenter_id, hosts: null };
    if (r.kind === 'vm') {
      const servers = await api('GET', withQuery('/api/v1/resources', { datacenter: r.datacenter_id, kind: 'server', sort: 'name', limit: 1000 }))
        .catch(() => null);
      if (!ctx.alive()) return;
      if (servers) fctx.hosts = new Map(servers.items.map((s) => [s.id, s.name]));
    }
    actions.push(h('button', { type: 'button', class: 'btn btn-secondary', text: 'Edit', 'data-testid': 'edit-resource',
      on: { click: async () => { if (await editResource(kind, fctx, r)) reload(); } } }));
    if (r.state === 'available') {
      actions.push(h('button', { type: 'button', class: 'btn btn-secondary', text: 'Allocate',
        on: { click: async () => { if (await allocate(r, new Set())) reload(); } } }));
    } else if (HELD.includes(r.state)) {
      actions.push(h('button', { type: 'button', class: 'btn btn-secondary', text: 'Release',
        on: { click: async () => { if (await release(r)) reload(); } } }));
    }
    actions.push(h('button', { type: 'button', class: 'btn btn-secondary btn-danger-outline', text: 'Delete', 'data-testid': 'delete-resource',
      on: { click: async () => { if (await remove(r, kind)) ctx.go(tabHref); } } }));
  }
  const allocations = Array.isArray(r.allocations) ? r.allocations : [];

  replace(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '#/datacenters', text: 'Data centers' }), h('span', { 'aria-hidden': 'true', text: '/' }),
      h('a', { href: `#/datacenters/${r.datacenter_id}`, text: r.datacenter || `#${r.datacenter_id}` }),
      h('span', { 'aria-hidden': 'true', text: '/' }),
      h('a', { href: tabHref, text: kind.label }), h('span', { 'aria-hidden': 'true', text: '/' }),
      h('span', { 'aria-current': 'page', text: r.name })),
    h('div', { class: 'page-head' },
      h('div', {},
        h('h1', { class: 'title-flags' }, h('span', { class: 'res-title', text: r.name }), badge(r.state)),
        h('p', { class: 'page-sub' }, [singular(kind), r.datacenter,
          HELD.includes(r.state) && r.tenant ? `${stateLabel(r.state).toLowerCase()} by ${r.tenant}${r.project ? ` / ${r.project}` : ''}` : null]
          .filter(Boolean).join(' · '))),
      actions.length ? h('div', { class: 'page-actions' }, actions) : null),
    gpuPanel(r, kind),
    h('div', { class: 'split' },
      attributePanel(r, kind, host && host.name),
      h('div', { class: 'col' }, allocationPanel(allocations), auditPanel(audit.items || [], audit.total || 0))));
}
