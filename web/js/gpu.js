// One GPU: latest telemetry, identity with where each field came from
// (provenance), its owner, the cloud instance it belongs to (with the
// placeholder it was merged from or into), MIG instances, the processes
// last seen on it, its identity events, and its timeline (timeline.js).
import { h, replace, num } from './dom.js';
import { api } from './api.js';
import { ago, when, timeAgo, utilBar, memUsed, mib, unit, gpuFlags, isNum, flag } from './fmt.js';
import { gpuHref, gpuApiPath } from './gpus.js';
import { timelineSection } from './timeline.js';
import { ownerPanel } from './ownership.js';

/** Identity rows: [label, field, how to show the value]. */
const IDENTITY = [
  ['Model', 'model'],
  ['Vendor', 'vendor'],
  ['UUID', 'uuid', 'mono'],
  ['Serial', 'serial', 'mono'],
  ['PCI bus ID', 'pci_bus_id', 'mono'],
  ['Index', 'index'],
  ['Memory', 'memory_total_mib', 'mib'],
  ['Driver', 'driver'],
  ['VBIOS', 'vbios'],
  ['MIG mode', 'mig_mode', 'bool'],
  ['MIG profile', 'mig_profile'],
  ['Parent GPU', 'parent_uuid', 'gpu'],
  ['Host', 'host', 'mono'],
  ['Data center', 'datacenter', 'dc'],
  ['Cluster', 'cluster'],
  ['Team', 'team'],
  ['Environment', 'env'],
  ['Reported by', 'source'],
  ['First seen', 'first_seen_at', 'time'],
  ['Last seen', 'last_seen_at', 'time'],
  ['Missing since', 'missing_since', 'time'],
];

const EVENT_LABELS = {
  discovered: 'Discovered',
  host_changed: 'Moved to another host',
  serial_conflict: 'Serial conflict',
  serial_changed: 'Serial changed',
  missing_from_host: 'Missing from its host',
  merged_into: 'Merged into the real GPU',
  merged_from: 'Merged from its cloud placeholder',
};

const PROVIDERS = { aws: 'AWS EC2', gcp: 'Google Compute Engine', azure: 'Azure Virtual Machines' };

/** The value of one identity field as a node. */
function showValue(g, key, how) {
  const v = g[key];
  if (v === null || v === undefined || v === '') return h('span', { class: 'muted', text: '—' });
  switch (how) {
  case 'mono': return h('span', { class: 'mono', text: String(v) });
  case 'mib': return mib(v);
  case 'gpu': return h('a', { class: 'mono', href: gpuHref(v), text: v });
  case 'dc': return g.datacenter_id ? h('a', { href: `#/datacenters/${g.datacenter_id}`, text: v }) : String(v);
  case 'bool': return v === 1 || v === true ? 'Enabled' : v === 0 || v === false ? 'Disabled' : String(v);
  case 'time': return h('span', {}, timeAgo(v), h('span', { class: 'muted small', text: ` · ${when(v)}` }));
  default: return String(v);
  }
}

/** "from lab-agents, 3 min ago" under a field, exact time and value as tooltip. */
function provLine(p) {
  const title = `Set to “${p.value ?? ''}” by ${p.source || 'a deleted source'} at ${when(p.set_at)}`;
  return h('span', { class: 'prov', title, dataset: { prov: p.field } },
    'from ', h('strong', { text: p.source || 'a deleted source' }), `, ${ago(p.set_at)}`);
}

/** Sentence describing one event from its kind and detail. */
function eventText(e) {
  const d = e.detail && typeof e.detail === 'object' ? e.detail : {};
  switch (e.kind) {
  case 'discovered': return [`First reported on host `, h('span', { class: 'mono', text: d.host || '?' })];
  case 'host_changed': return ['Now on host ', h('span', { class: 'mono', text: d.to_host || '?' }),
    d.from_host ? ` (previously ${d.from_host})` : ''];
  case 'serial_conflict': return [`Serial ${d.serial || '?'} is also reported by `,
    d.other_uuid ? h('a', { class: 'mono', href: gpuHref(d.other_uuid), text: d.other_uuid }) : 'another GPU'];
  case 'serial_changed': return [`Serial changed from ${d.from || '?'} to ${d.to || '?'}`];
  case 'missing_from_host': return [`Its host reported without it${d.batch_id ? ` (batch ${d.batch_id})` : ''}`];
  case 'merged_into': return ['Its history now belongs to ', d.uuid ? h('a', { class: 'mono', href: gpuHref(d.uuid), text: d.uuid }) : '?'];
  case 'merged_from': return ['Took over the history of ', d.uuid ? h('a', { class: 'mono', href: gpuHref(d.uuid), text: d.uuid }) : '?'];
  default: return [Object.keys(d).length ? JSON.stringify(d) : ''];
  }
}

function panel(title, testid, ...body) {
  return h('section', { class: 'panel', 'data-testid': testid },
    h('div', { class: 'panel-head' }, h('h2', {}, title)), body);
}

/** One telemetry figure. */
function figure(label, value, note, testid) {
  return h('div', { class: 'gpu-stat', 'data-testid': testid },
    h('span', { class: 'gpu-stat-label', text: label }),
    h('span', { class: 'gpu-stat-value' }, value),
    h('span', { class: 'gpu-stat-note' }, note || ''));
}

const MATCH_RULES = { serial: 'matched by serial', machine_id: 'matched by machine id', hostname: 'matched by host name',
  manual: 'linked by an admin' };

/** "In server X (data center Y), matched by serial", or why there is none. */
function serverLine(g) {
  const r = g.resource;
  if (!r) {
    return h('p', { class: 'page-sub', 'data-testid': 'gpu-server' }, 'Not matched to an inventory server · ',
      h('a', { href: `#/drift/hosts?q=${encodeURIComponent(g.host || '')}`, text: 'discovered hosts' }));
  }
  return h('p', { class: 'page-sub', 'data-testid': 'gpu-server' }, 'In server ',
    h('a', { href: `#/resources/${r.id}`, text: r.name }), ' (data center ',
    h('a', { href: `#/datacenters/${r.datacenter_id}`, text: r.datacenter }), `), ${MATCH_RULES[r.rule] || r.rule}`);
}

/** The cloud instance the GPU belongs to, or null when none. */
function cloudPanel(g) {
  const c = g.cloud;
  if (!c) return null;
  const row = (label, field, value) => h('div', { class: 'kv-row', dataset: { cloud: field } },
    h('dt', { text: label }), h('dd', {}, value === null || value === undefined || value === ''
      ? h('span', { class: 'muted', text: '—' }) : value));
  const gpuLink = (u) => h('a', { class: 'mono', href: gpuHref(u), text: u });
  const place = [c.region, c.zone].filter(Boolean).join(' / ');
  return panel('Cloud instance', 'cloud', h('dl', { class: 'kv' },
    row('Provider', 'provider', PROVIDERS[c.provider] || c.provider),
    row('Instance', 'instance_id', h('span', {}, h('span', { class: 'mono', text: c.instance_id }),
      c.instance_name && c.instance_name !== c.instance_id ? h('span', { class: 'muted', text: ` · ${c.instance_name}` }) : null)),
    row('Type', 'machine_type', c.machine_type),
    row('Account', 'account', c.account),
    row('Region / zone', 'region', place),
    row('State', 'state', c.gone_at ? `${c.state} (gone from the listing)` : c.state),
    row('Launched', 'launched_at', c.launched_at ? h('span', {}, timeAgo(c.launched_at), h('span', { class: 'muted small', text: ` · ${when(c.launched_at)}` })) : null),
    c.placeholder_index !== null && c.placeholder_index !== undefined
      ? row('Record', 'placeholder', `Placeholder for GPU ${c.placeholder_index} of the instance, until an agent on it reports the real GPU`) : null,
    c.merged_into ? row('Merged into', 'merged_into', gpuLink(c.merged_into)) : null,
    c.superseded_at && !c.merged_into ? row('Superseded', 'superseded_at', when(c.superseded_at)) : null,
    (c.merged_from || []).length ? row('Merged from', 'merged_from', h('span', { class: 'stack' }, c.merged_from.map(gpuLink))) : null));
}

/** Renders one GPU's page into main. */
export async function renderGpu(main, ctx, uuid) {
  document.title = 'GPU · gpuinv';
  replace(main, h('div', { class: 'loading', text: 'Loading…' }));
  let g;
  try {
    g = await api('GET', gpuApiPath(uuid));
  } catch (err) {
    if (!ctx.alive()) return;
    replace(main, h('section', { class: 'panel empty' },
      h('h1', { text: err.status === 404 ? 'GPU not found' : 'Could not load the GPU' }),
      h('p', { class: 'muted', text: err.message }),
      h('p', {}, h('a', { href: '#/gpus', text: '← Back to GPUs' }))));
    return;
  }
  if (!ctx.alive()) return;
  document.title = `${g.model || g.uuid} on ${g.host || 'no host'} · gpuinv`;

  const prov = new Map((g.provenance || []).map((p) => [p.field, p]));
  const shown = new Set();
  const rows = [];
  for (const [label, key, how] of IDENTITY) {
    const hasValue = g[key] !== null && g[key] !== undefined && g[key] !== '';
    if (!hasValue && !prov.has(key) && ['mig_profile', 'parent_uuid', 'missing_since', 'vbios'].includes(key)) continue;
    shown.add(key);
    rows.push(h('div', { class: 'kv-row', dataset: { field: key } },
      h('dt', { text: label }),
      h('dd', {}, h('span', { class: 'kv-value' }, showValue(g, key, how)), prov.has(key) ? provLine(prov.get(key)) : null)));
  }
  // Provenance for fields the list above does not name.
  for (const p of g.provenance || []) {
    if (shown.has(p.field)) continue;
    rows.push(h('div', { class: 'kv-row', dataset: { field: p.field } },
      h('dt', { text: p.field.replace(/_/g, ' ') }),
      h('dd', {}, h('span', { class: 'kv-value', text: p.value ?? '—' }), provLine(p))));
  }

  const sampled = g.sample_at ? ['sampled ', timeAgo(g.sample_at)] : 'no samples yet';
  const memPct = isNum(g.mem_used_mib) && isNum(g.memory_total_mib) && g.memory_total_mib > 0
    ? (100 * g.mem_used_mib) / g.memory_total_mib : null;
  const telemetry = h('section', { class: 'panel gpu-panel', 'data-testid': 'telemetry' },
    h('div', { class: 'gpu-head' },
      h('h2', { text: 'Latest telemetry' }),
      h('span', { class: 'muted' }, sampled)),
    h('div', { class: 'gpu-stats tele-stats' },
      figure('Utilization', isNum(g.util_pct) ? `${Math.round(g.util_pct)}%` : '—', utilBar(g.util_pct, true), 'tele-util'),
      figure('Memory used', memUsed(g.mem_used_mib, g.memory_total_mib),
        memPct === null ? null : utilBar(memPct, true), 'tele-mem'),
      figure('Power', unit(g.power_w, 'W'), null, 'tele-power'),
      figure('Temperature', unit(g.temp_c, '°C'), null, 'tele-temp')),
    h('p', { class: 'tele-extra muted' },
      `ECC errors: ${isNum(g.ecc_corrected) ? num(g.ecc_corrected) : '—'} corrected, `,
      `${isNum(g.ecc_uncorrected) ? num(g.ecc_uncorrected) : '—'} uncorrected · `,
      `last XID: ${g.xid_last ?? 'none'}`));

  const migs = g.mig_instances || [];
  const migPanel = panel(`MIG instances (${migs.length})`, 'mig',
    migs.length
      ? h('ul', { class: 'link-list' }, migs.map((m) => h('li', {},
        h('a', { class: 'mono', href: gpuHref(m.uuid), text: m.uuid }),
        h('span', { class: 'muted', text: m.mig_profile || '' }))))
      : h('p', { class: 'muted pad', text: g.parent_uuid ? 'This is a MIG instance.' : 'No MIG instances.' }));

  const events = g.events || [];
  const eventPanel = panel('Events', 'events',
    events.length
      ? h('ol', { class: 'timeline' }, events.map((e) => h('li', { class: `tl-item tl-${e.kind}`, dataset: { kind: e.kind } },
        h('span', { class: 'tl-dot', 'aria-hidden': 'true' }),
        h('div', { class: 'tl-body' },
          h('div', { class: 'tl-head' },
            h('strong', { text: EVENT_LABELS[e.kind] || e.kind }), timeAgo(e.occurred_at, 'muted small')),
          h('p', { class: 'tl-text' }, eventText(e)),
          e.source ? h('p', { class: 'muted small', text: `via ${e.source}` }) : null))))
      : h('p', { class: 'muted pad', text: 'No events.' }));

  const procs = g.processes || [];
  const procHead = ['PID', 'Process', 'User', 'Container / pod', 'GPU memory', 'Seen'];
  const procPanel = panel(`Processes (${procs.length})`, 'processes',
    procs.length
      ? h('div', { class: 'table-wrap' }, h('table', { class: 'data-table compact', 'aria-label': 'Processes' },
        h('thead', {}, h('tr', {}, procHead.map((t, i) => h('th', { scope: 'col', class: i === 0 || i === 4 ? 'n' : null, text: t })))),
        h('tbody', {}, procs.map((p) => h('tr', { dataset: { pid: p.pid } },
          h('td', { class: 'n mono', text: String(p.pid) }),
          h('td', {}, h('span', { class: 'clip clip-wide', title: p.name || '', text: p.name || '—' })),
          h('td', { text: p.user ? `${p.user}${p.uid != null ? ` (${p.uid})` : ''}` : (p.uid != null ? `uid ${p.uid}` : '—') }),
          h('td', {}, p.pod
            ? h('div', { class: 'stack' }, h('span', { text: `${p.namespace ? `${p.namespace}/` : ''}${p.pod}` }),
              p.container ? h('span', { class: 'sub mono', text: p.container.slice(0, 12) }) : null)
            : h('span', { class: p.container ? 'mono' : 'muted', title: p.container || null,
              text: p.container ? p.container.slice(0, 12) : '—' })),
          h('td', { class: 'n', text: mib(p.used_mib) }),
          h('td', {}, timeAgo(p.seen_at)))))))
      : h('p', { class: 'muted pad', text: 'No processes were reported on this GPU.' }));

  replace(main,
    h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '#/gpus', text: 'GPUs' }), h('span', { 'aria-hidden': 'true', text: '/' }),
      h('span', { 'aria-current': 'page', class: 'mono', text: g.uuid })),
    h('div', { class: 'page-head' },
      h('div', {},
        h('h1', { class: 'title-flags' }, h('span', { text: g.model || 'Unknown GPU' }), gpuFlags(g),
          g.parent_uuid ? flag('info', 'MIG instance') : null),
        h('p', { class: 'page-sub' },
          [g.host ? `on ${g.host}` : 'no host', g.index != null ? `GPU ${g.index}` : null, g.datacenter]
            .filter(Boolean).join(' · ')),
        serverLine(g)),
      h('div', { class: 'page-actions' },
        h('a', { class: 'btn btn-secondary', href: g.host ? `#/gpus?host=${encodeURIComponent(g.host)}` : '#/gpus',
          text: g.host ? `All GPUs on ${g.host}` : 'All GPUs' }))),
    telemetry,
    h('div', { class: 'split' },
      panel('Identity', 'identity', h('dl', { class: 'kv' }, rows)),
      h('div', { class: 'col' }, ownerPanel(g, () => renderGpu(main, ctx, uuid)), cloudPanel(g), migPanel, eventPanel)),
    h('div', { class: 'stack-gap' }, procPanel));
  // The timeline's range stays in the address (#/gpus/{uuid}?range=30d).
  const onRange = (r) => {
    history.replaceState(null, '', `${gpuHref(g.uuid)}?range=${r}`);
    const next = timelineSection(gpuApiPath(g.uuid), r, onRange, ctx.alive);
    tl.replaceWith(next);
    tl = next;
  };
  let tl = timelineSection(gpuApiPath(g.uuid), ctx.query.get('range') || '7d', onRange, ctx.alive);
  main.append(tl);
}
