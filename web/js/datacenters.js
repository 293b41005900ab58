// The data-center list: search, sort, add, edit, delete, CSV export.
import { h, replace, icon, num, toast, debounce, today } from './dom.js';
import { api, withQuery, canWrite, csvLink } from './api.js';
import { field, formDialog, fieldError, value, para } from './dialog.js';
import { dataTable, pager } from './table.js';
import { importDialog } from './import.js';

const PAGE = 50;
const COUNT_LABELS = [
  ['servers', 'server', 'servers'], ['vms', 'virtual machine', 'virtual machines'],
  ['storages', 'storage system', 'storage systems'], ['switches', 'network switch', 'network switches'],
  ['infiniband', 'InfiniBand device', 'InfiniBand devices'],
];

/** "20 servers, 6 virtual machines" for the non-zero counts. */
function countsText(counts) {
  return COUNT_LABELS.filter(([k]) => counts[k] > 0)
    .map(([k, one, many]) => `${num(counts[k])} ${counts[k] === 1 ? one : many}`).join(', ');
}

/**
 * Opens the add (dc absent) or edit form. Resolves to the saved data
 * center, or null when cancelled.
 */
export async function editDatacenter(dc) {
  let saved = null;
  const fields = [
    field({ name: 'name', label: 'Name', required: true, value: dc ? dc.name : '', attrs: { maxlength: 128 },
      wide: true }),
    field({ name: 'location', label: 'Location', value: dc ? dc.location || '' : '', attrs: { maxlength: 128 },
      hint: 'Region, city or address' }),
    field({ name: 'rows', label: 'Rows', type: 'number', value: dc && dc.rows != null ? dc.rows : '',
      attrs: { min: 0, max: 100000, step: 1, inputmode: 'numeric' }, hint: 'Rack rows on the floor' }),
  ];
  await formDialog({
    title: dc ? `Edit ${dc.name}` : 'Add data center',
    fields,
    submitLabel: dc ? 'Save changes' : 'Add data center',
    async submit(form) {
      const body = { name: value(form, 'name') };
      if (!body.name) throw fieldError('name', 'Enter a name');
      const loc = value(form, 'location');
      const rows = value(form, 'rows');
      if (loc || dc) body.location = loc;
      if (rows !== '') {
        const n = Number(rows);
        if (!Number.isInteger(n)) throw fieldError('rows', 'Rows must be a whole number');
        body.rows = n;
      } else if (form.elements.namedItem('rows').validity.badInput) {
        throw fieldError('rows', 'Rows must be a whole number');
      }
      saved = dc ? await api('PATCH', `/api/v1/datacenters/${dc.id}`, body)
        : await api('POST', '/api/v1/datacenters', body);
    },
  });
  if (saved) toast(dc ? `Saved ${saved.name}` : `Added ${saved.name}`);
  return saved;
}

/**
 * Asks before deleting a data center; when it holds resources the dialog
 * lists them and the delete is forced. Resolves to true once deleted.
 */
export async function deleteDatacenter(dc) {
  const counts = {};
  for (const [k] of COUNT_LABELS) counts[k] = dc[k] || (dc.counts && dc.counts[k]) || 0;
  let force = Object.values(counts).some((n) => n > 0);
  const holds = h('div', { class: 'danger-note', 'data-testid': 'delete-counts', hidden: !force });
  const showCounts = (c) => {
    replace(holds, h('strong', { text: 'This data center still holds resources: ' }), countsText(c),
      '. Deleting it deletes them too.');
    holds.hidden = false;
  };
  if (force) showCounts(counts);
  const ok = await formDialog({
    title: 'Delete data center',
    intro: [para('Delete ', h('strong', { text: dc.name }), '? This cannot be undone.'), holds],
    submitLabel: force ? 'Delete with its resources' : 'Delete',
    danger: true,
    async submit(form, ctl) {
      try {
        await api('DELETE', withQuery(`/api/v1/datacenters/${dc.id}`, { force: force ? 'true' : '' }));
      } catch (err) {
        if (err.status === 409 && err.counts && !force) {
          force = true;
          showCounts(err.counts);
          ctl.setSubmit('Delete with its resources', true);
          err.message = 'The data center is not empty. Confirm again to delete it with its resources.';
        }
        throw err;
      }
    },
  });
  if (ok) toast(`Deleted ${dc.name}`);
  return ok;
}

/** Renders the list page into main. */
export function renderDatacenters(main, ctx) {
  document.title = 'Data centers · gpuinv';
  let q = ctx.query.get('q') || '';
  let sort = ctx.query.get('sort') || 'name';
  let seq = 0;

  const total = h('p', { class: 'page-sub', 'data-testid': 'dc-total' });
  const csv = h('a', { class: 'btn btn-secondary', 'data-testid': 'export-csv', download: `datacenters-${today()}.csv` },
    icon('download'), 'Export CSV');
  csvLink(csv, (err) => toast(err.message, 'error'));
  const add = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'add-datacenter',
    on: { click: async () => { if (await editDatacenter(null)) load(); } } }, icon('plus'), 'Add data center');
  const search = h('input', { type: 'search', class: 'search-input', name: 'q', value: q,
    placeholder: 'Search name or location', 'aria-label': 'Search data centers' });
  const countCell = (key) => (dc) => h('span', { class: dc[key] ? 'num' : 'num zero', text: num(dc[key]) });

  const table = dataTable({
    label: 'Data centers',
    sort,
    empty: () => (q ? 'No data centers match.' : h('div', { class: 'empty-state' },
      h('strong', { text: 'No data centers yet.' }),
      canWrite() ? [h('span', { text: 'Add a data center or import a CSV.' }),
        h('div', { class: 'empty-actions' },
          h('button', { type: 'button', class: 'btn btn-primary btn-sm', text: 'Add data center',
            on: { click: async () => { if (await editDatacenter(null)) load(); } } }),
          h('button', { type: 'button', class: 'btn btn-secondary btn-sm', text: 'Import CSV',
            on: { click: async () => { if (await importDialog(null)) load(); } } }))]
        : h('span', { text: 'An editor or admin adds data centers or imports them from a CSV.' }))),
    onSort: (s) => { sort = s; pg.reset(); load(); },
    onRow: (dc) => ctx.go(`#/datacenters/${dc.id}`),
    columns: [
      { label: 'Name', sortKey: 'name', cell: (dc) => h('a', { class: 'row-link clip', href: `#/datacenters/${dc.id}`, title: dc.name, text: dc.name }) },
      { label: 'Location', sortKey: 'location', cell: (dc) => h('span', { class: 'clip', title: dc.location || null, text: dc.location || '—' }) },
      { label: 'Rows', sortKey: 'rows', cls: 'n', width: '80px', cell: (dc) => (dc.rows == null ? '—' : num(dc.rows)) },
      { label: 'Servers', cls: 'n', width: '88px', cell: countCell('servers') },
      { label: 'VMs', cls: 'n', width: '72px', cell: countCell('vms') },
      { label: 'Storage', cls: 'n', width: '88px', cell: countCell('storages') },
      { label: 'Switches', cls: 'n', width: '92px', cell: countCell('switches') },
      { label: 'InfiniBand', cls: 'n', width: '104px', cell: countCell('infiniband') },
      canWrite() && { label: 'Actions', key: 'actions', cls: 'actions', width: '150px', cell: (dc) => h('div', { class: 'row-actions' },
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Edit', 'aria-label': `Edit ${dc.name}`,
          on: { click: async () => { if (await editDatacenter(dc)) load(); } } }),
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Delete',
          'aria-label': `Delete ${dc.name}`,
          on: { click: async () => { if (await deleteDatacenter(dc)) load(); } } })) },
    ].filter(Boolean),
  });
  const pg = pager(() => load());

  async function load() {
    const my = ++seq;
    const params = { q, sort };
    history.replaceState(null, '', withQuery('#/datacenters', { q, sort: sort === 'name' ? '' : sort }));
    csv.href = withQuery('/api/v1/datacenters', { ...params, format: 'csv' });
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/datacenters', { ...params, limit: PAGE, cursor: pg.cursor() }));
      if (my !== seq || !ctx.alive()) return;
      table.setRows(res.items);
      pg.update(res.items.length, res.total, res.next);
      total.textContent = q ? `${num(res.total)} matching “${q}”`
        : `${num(res.total)} data center${res.total === 1 ? '' : 's'}`;
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }

  search.addEventListener('input', debounce(() => {
    if (search.value.trim() === q) return;
    q = search.value.trim();
    pg.reset();
    load();
  }, 250));

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Data centers' }), total),
      h('div', { class: 'page-actions' }, csv, canWrite() ? [h('button', { type: 'button', class: 'btn btn-secondary',
        'data-testid': 'import-csv', on: { click: async () => { if (await importDialog(null)) load(); } } }, 'Import CSV'), add] : null)),
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' },
        h('label', { class: 'search' }, icon('search'), search)),
      table.el,
      pg.el));
  load();
}
