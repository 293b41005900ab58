// Discovered hosts and the inventory server each is linked to, with the
// rule that linked it. An admin links a host by hand, marks it "not
// linked", or returns it to automatic matching; a manual choice wins over
// matching until then.
import { h, replace, num, toast, debounce } from './dom.js';
import { api, withQuery } from './api.js';
import { field, formDialog, fieldError, value, para } from './dialog.js';
import { dataTable, pager } from './table.js';
import { timeAgo, flag } from './fmt.js';
import { driftFrame, datacenterChoices } from './drift.js';

const PAGE = 50;
const RULES = { serial: 'by serial', machine_id: 'by machine id', hostname: 'by host name', manual: 'by an admin' };

/** How a host is linked, as a badge. */
function linkFlag(x) {
  if (x.rule === 'ambiguous') return flag('error', 'Ambiguous', x.match_detail || 'More than one server fits');
  if (x.resource_id === null || x.resource_id === undefined) {
    return x.manual ? flag('off', 'Not linked (manual)', 'An admin marked this host as not linked')
      : flag('stale', 'Unlinked', 'No inventory server fits this host');
  }
  return flag(x.manual ? 'info' : 'ok', x.manual ? 'Manual' : `Matched ${RULES[x.rule] || ''}`.trim(),
    x.linked_at ? `Since ${x.linked_at}${x.linked_by ? ` (${x.linked_by})` : ''}` : null);
}

/** Asks for a server and links the host to it by hand. */
async function linkDialog(host) {
  let servers = [];
  try {
    servers = (await api('GET', withQuery('/api/v1/resources', { kind: 'server', limit: 1000, sort: 'name',
      datacenter: host.datacenter_id || '' }))).items;
  } catch {
    servers = [];
  }
  const list = h('datalist', { id: 'link-server-list' },
    servers.map((s) => h('option', { value: s.name, label: `${s.name} · ${s.datacenter}` })));
  const input = field({ name: 'server', label: 'Inventory server', required: true, value: host.resource || '',
    hint: 'A server name (suggested from this host’s data center) or a resource id',
    attrs: { list: 'link-server-list', 'data-testid': 'link-server' } });
  return formDialog({
    title: `Link ${host.hostname}`,
    intro: [para('A manual link wins over automatic matching until the host is returned to automatic.'), list],
    fields: [input],
    submitLabel: 'Link',
    submit: async (form) => {
      const v = value(form, 'server');
      let id = /^\d+$/.test(v) ? Number(v) : null;
      if (id === null) {
        const hit = servers.find((s) => s.name === v)
          || (await api('GET', withQuery('/api/v1/resources', { kind: 'server', q: v, limit: 10 }))).items.find((s) => s.name === v);
        if (!hit) throw fieldError('server', `No server is named ${v}`);
        id = hit.id;
      }
      try {
        await api('PUT', `/api/v1/hosts/${host.id}/link`, { resource_id: id });
      } catch (err) {
        if (err.field === 'resource_id') throw fieldError('server', err.message);
        throw err;
      }
      toast(`${host.hostname} linked by hand`);
    },
  });
}

/** Renders the Hosts tab into main. */
export async function renderHosts(main, ctx) {
  document.title = 'Discovered hosts · gpuinv';
  const admin = ctx.role === 'admin';
  const filter = {
    q: ctx.query.get('q') || '',
    linked: ['true', 'false'].includes(ctx.query.get('linked')) ? ctx.query.get('linked') : '',
    datacenter: /^\d+$/.test(ctx.query.get('datacenter') || '') ? ctx.query.get('datacenter') : '',
  };
  let seq = 0;
  const content = driftFrame(main, 'hosts', null);

  async function act(label, method, path) {
    try {
      await api(method, path);
      toast(label);
      load();
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    }
  }

  const columns = [
    { label: 'Host', cell: (x) => h('div', { class: 'stack' },
      h('span', { class: 'clip mono', title: x.hostname, text: x.hostname }),
      h('span', { class: 'sub mono', title: x.machine_id || '', text: x.serial ? `serial ${x.serial}` : (x.machine_id ? `id ${x.machine_id.slice(0, 12)}` : '—') })) },
    { label: 'GPUs', cls: 'n', cell: (x) => h('a', { href: withQuery('#/gpus', { host: x.hostname }), text: num(x.gpus) }) },
    { label: 'Data center', cell: (x) => (x.datacenter_id
      ? h('a', { class: 'clip', href: `#/datacenters/${x.datacenter_id}`, text: x.datacenter || `#${x.datacenter_id}` })
      : h('span', { class: 'muted', text: '—' })) },
    { label: 'Inventory server', cell: (x) => (x.resource_id
      ? h('a', { class: 'row-link clip', href: `#/resources/${x.resource_id}`, 'data-testid': 'linked-server', text: x.resource })
      : h('span', { class: 'muted', text: '—' })) },
    { label: 'Link', cell: (x) => linkFlag(x) },
    { label: 'Last seen', cell: (x) => timeAgo(x.last_seen_at) },
  ];
  if (admin) {
    columns.push({ label: 'Actions', cls: 'actions', cell: (x) => h('div', { class: 'row-actions' },
      h('button', { type: 'button', class: 'btn btn-secondary btn-sm', dataset: { action: 'link' }, text: 'Link…',
        on: { click: async () => { if (await linkDialog(x)) load(); } } }),
      (x.resource_id || !x.manual) && h('button', { type: 'button', class: 'btn btn-ghost btn-sm', dataset: { action: 'unlink' },
        text: 'Not linked', title: 'Unlink; automatic matching will not link it again',
        on: { click: () => act(`${x.hostname} marked as not linked`, 'DELETE', `/api/v1/hosts/${x.id}/link`) } }),
      x.manual && h('button', { type: 'button', class: 'btn btn-ghost btn-sm', dataset: { action: 'auto' }, text: 'Automatic',
        title: 'Return to automatic matching',
        on: { click: () => act(`${x.hostname} returned to automatic matching`, 'POST', `/api/v1/hosts/${x.id}/link/auto`) } })) });
  }
  const table = dataTable({ label: 'Discovered hosts', empty: 'No discovered hosts match. Connect a source or run an agent.', columns });
  const pg = pager(() => load());

  const search = h('input', { type: 'search', class: 'search-input', name: 'q', value: filter.q,
    placeholder: 'Search host, serial, server', 'aria-label': 'Search hosts' });
  const linkedSel = h('select', { name: 'linked', class: 'filter-select', 'aria-label': 'Link' },
    [['', 'Linked or not'], ['true', 'Linked'], ['false', 'Not linked']]
      .map(([v, t]) => h('option', { value: v, text: t, selected: v === filter.linked })));
  const dcSel = h('select', { name: 'datacenter', class: 'filter-select', 'aria-label': 'Data center' },
    h('option', { value: '', text: 'Every data center' }));

  async function load() {
    const my = ++seq;
    const p = { q: filter.q, linked: filter.linked, datacenter: filter.datacenter };
    history.replaceState(null, '', withQuery('#/drift/hosts', p));
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/hosts', { ...p, limit: PAGE, cursor: pg.cursor() }));
      if (my !== seq || !ctx.alive()) return;
      table.setRows(res.items);
      pg.update(res.items.length, res.total, res.next);
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      pg.update(0, 0, null);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }

  const refilter = () => {
    Object.assign(filter, { q: search.value.trim(), linked: linkedSel.value, datacenter: dcSel.value });
    pg.reset();
    load();
  };
  search.addEventListener('input', debounce(refilter, 250));
  linkedSel.addEventListener('change', refilter);
  dcSel.addEventListener('change', refilter);

  replace(content,
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' }, h('label', { class: 'search' }, search), linkedSel, dcSel),
      table.el, pg.el));
  load();
  const dcs = await datacenterChoices();
  if (!ctx.alive()) return;
  for (const d of dcs) dcSel.append(h('option', { value: String(d.id), text: d.name, selected: String(d.id) === filter.datacenter }));
}
