// A data center's resources of one kind: filters, sortable paged table
// (a row opens the resource's page), add/edit forms built from the kind's
// fields and checked against them before sending, allocate/release, delete
// (a held resource only after a warning naming its tenant), CSV export.
import { h, replace, icon, num, badge, stateLabel, toast, debounce, slug, today } from './dom.js';
import { api, withQuery, canWrite, csvLink } from './api.js';
import { field, formDialog, fieldError, fieldErrors, value, para } from './dialog.js';
import { dataTable, pager } from './table.js';
import { importDialog } from './import.js';

const PAGE = 25;
const HELD = ['in_use', 'reserved'];
/** Kind-specific attributes shown as table columns. */
const EXTRA_COLUMNS = {
  server: ['hostname', 'rack'],
  vm: ['host_id', 'vcpu'],
  storage: ['storage_type', 'capacity_tb'],
  switch: ['model', 'ports'],
  infiniband: ['device_type', 'generation'],
};
const SINGULAR = {
  server: 'server', vm: 'virtual machine', storage: 'storage system', switch: 'network switch',
  infiniband: 'InfiniBand device',
};

const COMMON_FIELDS = [
  { name: 'name', type: 'string', label: 'Name', maxlen: 128, required: true },
  { name: 'state', type: 'state', label: 'State' },
  { name: 'tenant', type: 'string', label: 'Tenant', maxlen: 128, tenancy: true },
  { name: 'project', type: 'string', label: 'Project', maxlen: 128, tenancy: true },
  { name: 'gpu_model', type: 'string', label: 'GPU model', maxlen: 64 },
  { name: 'gpu_count', type: 'integer', label: 'GPU count', min: 0, max: 1024 },
];

export function singular(kind) {
  return SINGULAR[kind.kind] || kind.kind;
}

function capital(s) {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** The text shown for an attribute value in the table. */
export function show(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'number') return num(v);
  return String(v);
}

/** A cell value cut to the column's width, whole in its tooltip. */
function clip(v) {
  const text = show(v);
  return h('span', { class: 'clip', title: text === '—' ? null : text, text });
}

/** A form control for one field description from /kinds. */
function controlFor(f, v, ctx) {
  const base = { name: f.name, label: f.label, required: f.required, value: v ?? '' };
  switch (f.type) {
  case 'state':
    return field({ ...base, type: 'select', value: v || 'available',
      choices: ctx.states.map((s) => ({ value: s, label: stateLabel(s) })) });
  case 'enum':
    return field({ ...base, type: 'select', blank: '—', choices: f.choices || [] });
  case 'integer':
    if (f.name === 'host_id' && ctx.hosts) {
      return field({ ...base, label: 'Host server', type: 'select', blank: '— none —', value: v == null ? '' : String(v),
        choices: [...ctx.hosts].map(([id, name]) => ({ value: String(id), label: name })) });
    }
    return field({ ...base, type: 'number', attrs: { step: 1, min: f.min, max: f.max, inputmode: 'numeric' } });
  case 'number':
    return field({ ...base, type: 'number', attrs: { step: 'any', min: f.min, max: f.max, inputmode: 'decimal' } });
  case 'boolean':
    return field({ ...base, type: 'select', blank: '—', value: v == null ? '' : String(v),
      choices: [{ value: 'true', label: 'Yes' }, { value: 'false', label: 'No' }] });
  default:
    return field({ ...base, attrs: f.maxlen ? { maxlength: f.maxlen } : {} });
  }
}

/**
 * Reads one field's typed value from the form: undefined when empty;
 * throws a field error when it cannot be read as its type.
 */
function readField(form, f) {
  const el = form.elements.namedItem(f.name);
  if (!el) return undefined;
  const raw = String(el.value).trim();
  if (raw === '') {
    if (el.validity && el.validity.badInput) {
      throw fieldError(f.name, f.type === 'integer' ? `${f.label} must be a whole number` : `${f.label} must be a number`);
    }
    return undefined;
  }
  if (f.type === 'integer') {
    const n = Number(raw);
    if (!Number.isInteger(n)) throw fieldError(f.name, `${f.label} must be a whole number`);
    return n;
  }
  if (f.type === 'number') {
    const n = Number(raw);
    if (!Number.isFinite(n)) throw fieldError(f.name, `${f.label} must be a number`);
    return n;
  }
  if (f.type === 'boolean') return raw === 'true';
  return raw;
}

/**
 * Checks one typed value against its field description from /kinds
 * (required, length, range, choices); returns the problem's text or null.
 */
function fieldProblem(f, v) {
  if (v === undefined) return f.required ? `Enter the ${f.label.toLowerCase()}` : null;
  if (typeof v === 'string' && f.maxlen && [...v].length > f.maxlen) return `${f.label} must be at most ${f.maxlen} characters`;
  if (typeof v === 'number') {
    if (typeof f.min === 'number' && v < f.min) return `${f.label} must be at least ${num(f.min)}`;
    if (typeof f.max === 'number' && v > f.max) return `${f.label} must be at most ${num(f.max)}`;
  }
  if (f.type === 'enum' && f.choices && !f.choices.includes(v)) return `${f.label} must be one of ${f.choices.join(', ')}`;
  return null;
}

/**
 * Reads and checks every field of a resource form at once. Resolves the
 * body to send, or throws every problem found (each naming its field by
 * label) so the form shows them all together.
 */
function readResourceForm(form, specs, controls, row) {
  const body = {};
  const problems = [];
  for (const f of specs) {
    if (f.tenancy && controls.get(f.name).hidden) {
      if (row) body[f.name] = null;
      continue;
    }
    let v;
    try {
      v = readField(form, f);
    } catch (err) {
      problems.push({ field: f.name, message: err.message });
      continue;
    }
    const why = fieldProblem(f, v);
    if (why) problems.push({ field: f.name, message: why });
    if (v !== undefined) body[f.name] = v;
    else if (row) body[f.name] = null;
  }
  const label = (n) => specs.find((f) => f.name === n).label;
  if (body.gpu_count > 0 && !body.gpu_model && !problems.some((p) => p.field === 'gpu_model')) {
    problems.push({ field: 'gpu_model', message: `${label('gpu_model')} is required when ${label('gpu_count')} is above zero` });
  }
  if (body.state === 'in_use' && !body.tenant) {
    problems.push({ field: 'tenant', message: `${label('tenant')} is required for a resource in use` });
  }
  const mtext = value(form, 'metadata');
  if (mtext) {
    let m = null;
    try {
      m = JSON.parse(mtext);
    } catch {
      problems.push({ field: 'metadata', message: 'Metadata must be valid JSON' });
    }
    if (m !== null && (typeof m !== 'object' || Array.isArray(m))) {
      problems.push({ field: 'metadata', message: 'Metadata must be a JSON object' });
    } else if (m) {
      body.metadata = m;
    }
  } else {
    // An empty object rather than null: the server stores metadata as
    // NOT NULL and answers a null with a misleading 409.
    body.metadata = {};
  }
  if (problems.length === 1) throw fieldError(problems[0].field, problems[0].message);
  if (problems.length) throw fieldErrors(problems);
  return body;
}

/**
 * Opens the add (row absent) or edit form for a resource of this kind.
 * Resolves to the saved resource or null.
 */
export async function editResource(kind, ctx, row) {
  let saved = null;
  let current = row;
  if (row) current = await api('GET', `/api/v1/resources/${row.id}`);
  const specs = [...COMMON_FIELDS, ...kind.fields];
  const controls = new Map();
  const make = (f) => {
    const c = controlFor(f, current ? current[f.name] : undefined, ctx);
    controls.set(f.name, c);
    return c;
  };
  const meta = current && current.metadata && Object.keys(current.metadata).length
    ? JSON.stringify(current.metadata, null, 2) : '';
  const fields = [
    h('h3', { class: 'form-section', text: 'General' }),
    COMMON_FIELDS.map(make),
    kind.fields.length ? h('h3', { class: 'form-section', text: `${capital(singular(kind))} details` }) : null,
    kind.fields.map(make),
    h('h3', { class: 'form-section', text: 'Metadata' }),
    field({ name: 'metadata', label: 'Metadata (JSON object)', type: 'textarea', value: meta, wide: true,
      hint: 'For example {"cost_center": "ml-42"}', attrs: { spellcheck: 'false' } }),
  ];
  const stateSel = controls.get('state').querySelector('select');
  const syncTenancy = () => {
    const held = HELD.includes(stateSel.value);
    for (const n of ['tenant', 'project']) controls.get(n).hidden = !held;
  };
  stateSel.addEventListener('change', syncTenancy);
  syncTenancy();

  await formDialog({
    title: row ? `Edit ${row.name}` : `Add ${singular(kind)}`,
    fields,
    wide: true,
    submitLabel: row ? 'Save changes' : `Add ${singular(kind)}`,
    async submit(form) {
      const body = readResourceForm(form, specs, controls, row);
      if (row) {
        body.version = current.version;
        saved = await api('PATCH', `/api/v1/resources/${row.id}`, body);
      } else {
        saved = await api('POST', '/api/v1/resources', { datacenter_id: ctx.dcId, kind: kind.kind, ...body });
      }
    },
  });
  if (saved) toast(row ? `Saved ${saved.name}` : `Added ${saved.name}`);
  return saved;
}

/** Asks for tenant and project and allocates the resource. */
export async function allocate(row, tenants) {
  const list = h('datalist', { id: 'tenant-choices' }, [...tenants].sort().map((t) => h('option', { value: t })));
  const ok = await formDialog({
    title: `Allocate ${row.name}`,
    intro: [para('Hand this resource to a tenant. Its state becomes ', h('strong', { text: 'In use' }), '.'), list],
    fields: [
      field({ name: 'tenant', label: 'Tenant', required: true, attrs: { maxlength: 128, list: 'tenant-choices' } }),
      field({ name: 'project', label: 'Project', attrs: { maxlength: 128 } }),
    ],
    submitLabel: 'Allocate',
    async submit(form) {
      const tenant = value(form, 'tenant');
      const project = value(form, 'project');
      if (!tenant) throw fieldError('tenant', 'Enter the tenant');
      await api('POST', `/api/v1/resources/${row.id}/allocate`, project ? { tenant, project } : { tenant });
    },
  });
  if (ok) toast(`Allocated ${row.name}`);
  return ok;
}

/** Confirms and releases an allocated resource. */
export async function release(row) {
  const ok = await formDialog({
    title: `Release ${row.name}`,
    intro: para('Release ', h('strong', { text: row.name }), ' from tenant ', h('strong', { text: row.tenant || '—' }),
      row.project ? [' (project ', h('strong', { text: row.project }), ')'] : null, '? It becomes available again.'),
    submitLabel: 'Release',
    async submit() {
      await api('POST', `/api/v1/resources/${row.id}/release`);
    },
  });
  if (ok) toast(`Released ${row.name}`);
  return ok;
}

/**
 * Confirms and deletes a resource. A resource a tenant holds is named with
 * its tenant (and project) and deleted only by a forced delete; a 409 from
 * the server (allocated meanwhile) turns the dialog into that warning.
 */
export async function remove(row, kind) {
  const held = HELD.includes(row.state);
  const warn = h('div', { class: 'danger-note', 'data-testid': 'delete-held', hidden: true });
  const showHeld = (tenant, project, state) => {
    replace(warn, h('strong', { text: `${row.name} is ${state === 'reserved' ? 'reserved' : 'in use'} by tenant ${tenant || '—'}` }),
      project ? ` (project ${project})` : '', '. Deleting it ends that allocation.');
    warn.hidden = false;
  };
  let force = held;
  if (held) showHeld(row.tenant, row.project, row.state);
  const ok = await formDialog({
    title: `Delete ${singular(kind)}`,
    intro: [para('Delete ', h('strong', { text: row.name }), '? This cannot be undone.'), warn],
    submitLabel: held ? 'Delete allocated resource' : 'Delete',
    danger: true,
    async submit(form, ctl) {
      try {
        await api('DELETE', `/api/v1/resources/${row.id}${force ? '?force=true' : ''}`);
      } catch (err) {
        if (err.status === 409 && err.code === 'allocated' && !force) {
          force = true;
          showHeld(err.info.tenant, err.info.project, null);
          ctl.setSubmit('Delete allocated resource', true);
          throw new Error(err.message);
        }
        throw err;
      }
    },
  });
  if (ok) toast(`Deleted ${row.name}`);
  return ok;
}

/** The export's file name, after what it holds: "frankfurt-dc1-servers-in-use-2026-12-01.csv". */
export function resourceExportName(dcName, counts, filter = {}) {
  const bits = [slug(dcName), counts];
  if (filter.state) bits.push(slug(filter.state));
  if (filter.tenant) bits.push('tenant', slug(filter.tenant));
  if (filter.q) bits.push('matching', slug(filter.q));
  bits.push(today());
  return `${bits.join('-')}.csv`;
}

/** Renders the tab into frame.content. */
export async function renderResources(frame, ctx, kind, states) {
  const dcId = frame.dc.id;
  const filter = {
    q: ctx.query.get('q') || '',
    state: states.includes(ctx.query.get('state')) ? ctx.query.get('state') : '',
    tenant: ctx.query.get('tenant') || '',
    sort: ctx.query.get('sort') || 'name',
  };
  const tenants = new Set();
  const fctx = { states, dcId, hosts: null };
  if (kind.kind === 'vm') {
    fctx.hosts = new Map();
    try {
      const res = await api('GET', withQuery('/api/v1/resources', { datacenter: dcId, kind: 'server', sort: 'name', limit: 1000 }));
      for (const s of res.items) fctx.hosts.set(s.id, s.name);
    } catch {
      fctx.hosts = null;
    }
    if (!ctx.alive()) return;
  }
  let seq = 0;

  const fieldsByName = new Map(kind.fields.map((f) => [f.name, f]));
  const extra = (EXTRA_COLUMNS[kind.kind] || []).filter((n) => fieldsByName.has(n)).map((n) => ({
    label: n === 'host_id' ? 'Host' : fieldsByName.get(n).label,
    cls: n !== 'host_id' && ['integer', 'number'].includes(fieldsByName.get(n).type) ? 'n' : null,
    cell: (r) => clip(n === 'host_id' && fctx.hosts && r.host_id != null ? fctx.hosts.get(r.host_id) || `#${r.host_id}` : r[n]),
  }));

  const reload = async (refreshFrame) => {
    await load();
    if (refreshFrame) frame.refresh();
  };

  const actions = (r) => {
    const btns = [h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Edit', 'aria-label': `Edit ${r.name}`,
      on: { click: async () => { if (await editResource(kind, fctx, r)) reload(false); } } })];
    if (r.state === 'available') {
      btns.push(h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-primary btn-act', text: 'Allocate',
        'aria-label': `Allocate ${r.name}`, on: { click: async () => { if (await allocate(r, tenants)) reload(false); } } }));
    } else if (HELD.includes(r.state)) {
      btns.push(h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-act', text: 'Release',
        'aria-label': `Release ${r.name}`, on: { click: async () => { if (await release(r)) reload(false); } } }));
    } else {
      btns.push(h('span', { class: 'btn-act', 'aria-hidden': 'true' }));
    }
    btns.push(h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Delete',
      'aria-label': `Delete ${r.name}`, on: { click: async () => { if (await remove(r, kind)) reload(true); } } }));
    return h('div', { class: 'row-actions' }, btns);
  };

  const filtered = () => Boolean(filter.q || filter.state || filter.tenant);
  const table = dataTable({
    label: kind.label,
    sort: filter.sort,
    minWidth: canWrite() ? 1000 : 800,
    empty: () => (filtered() ? `No ${kind.label.toLowerCase()} match these filters.`
      : h('div', { class: 'empty-state' },
        h('strong', { text: `No ${kind.label.toLowerCase()} in ${frame.dc.name} yet.` }),
        canWrite() ? [h('span', { text: `Add a ${singular(kind)} or import a CSV.` }),
          h('div', { class: 'empty-actions' },
            h('button', { type: 'button', class: 'btn btn-primary btn-sm', text: `Add ${singular(kind)}`,
              on: { click: async () => { if (await editResource(kind, fctx, null)) reload(true); } } }),
            h('button', { type: 'button', class: 'btn btn-secondary btn-sm', text: 'Import CSV',
              on: { click: async () => { if (await importDialog(frame.dc)) reload(true); } } }))]
          : h('span', { text: 'An editor can add them or import a CSV.' }))),
    onSort: (s) => { filter.sort = s; pg.reset(); load(); },
    onRow: (r) => ctx.go(`#/resources/${r.id}`),
    columns: [
      { label: 'Name', sortKey: 'name', cls: 'name', cell: (r) => h('a', { class: 'res-name row-link clip', href: `#/resources/${r.id}`,
        title: r.name, text: r.name }) },
      { label: 'State', key: 'status', sortKey: 'state', width: '128px', cell: (r) => badge(r.state) },
      { label: 'Tenant / project', sortKey: 'tenant', cell: (r) => (r.tenant
        ? h('div', { class: 'stack' }, clip(r.tenant), r.project ? h('span', { class: 'clip sub', title: r.project, text: r.project }) : null)
        : h('span', { class: 'muted', text: '—' })) },
      { label: 'GPU model', sortKey: 'gpu_model', cell: (r) => clip(r.gpu_model) },
      { label: 'GPUs', sortKey: 'gpu_count', cls: 'n', width: '84px', cell: (r) => show(r.gpu_count) },
      ...extra,
      canWrite() && { label: 'Actions', key: 'actions', cls: 'actions', width: '232px', cell: actions },
    ].filter(Boolean),
  });
  const pg = pager(() => load());

  const csv = h('a', { class: 'btn btn-secondary', 'data-testid': 'export-csv' }, icon('download'), 'Export CSV');
  csvLink(csv, (err) => toast(err.message, 'error'));
  const add = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'add-resource',
    on: { click: async () => { if (await editResource(kind, fctx, null)) reload(true); } } },
  icon('plus'), `Add ${singular(kind)}`);
  const importBtn = h('button', { type: 'button', class: 'btn btn-secondary', 'data-testid': 'import-csv',
    on: { click: async () => { if (await importDialog(frame.dc)) reload(true); } } }, 'Import CSV');
  const search = h('input', { type: 'search', class: 'search-input', name: 'q', value: filter.q,
    placeholder: 'Search name, tenant, attributes', 'aria-label': `Search ${kind.label.toLowerCase()}` });
  const stateSel = h('select', { name: 'state', 'aria-label': 'State', class: 'filter-select' },
    h('option', { value: '', text: 'All states' }), states.map((s) => h('option', { value: s, text: stateLabel(s) })));
  stateSel.value = filter.state;
  const tenantList = h('datalist', { id: `tenants-${kind.kind}` });
  const tenantIn = h('input', { type: 'text', name: 'tenant', value: filter.tenant, placeholder: 'Tenant',
    'aria-label': 'Tenant', class: 'filter-input', list: `tenants-${kind.kind}`, autocomplete: 'off' });
  const clear = h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Clear filters',
    on: { click: () => {
      search.value = ''; stateSel.value = ''; tenantIn.value = '';
      Object.assign(filter, { q: '', state: '', tenant: '' });
      pg.reset();
      load();
    } } });
  const summary = h('span', { class: 'toolbar-summary', 'data-testid': 'result-total' });

  function params() {
    return { datacenter: dcId, kind: kind.kind, state: filter.state, tenant: filter.tenant, q: filter.q, sort: filter.sort };
  }

  async function load() {
    const my = ++seq;
    const p = params();
    history.replaceState(null, '', withQuery(`#/datacenters/${dcId}/${kind.counts}`,
      { state: filter.state, tenant: filter.tenant, q: filter.q, sort: filter.sort === 'name' ? '' : filter.sort }));
    csv.href = withQuery('/api/v1/resources', { ...p, format: 'csv' });
    csv.setAttribute('download', resourceExportName(frame.dc.name, kind.counts, filter));
    clear.hidden = !(filter.q || filter.state || filter.tenant);
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/resources', { ...p, limit: PAGE, cursor: pg.cursor() }));
      if (my !== seq || !ctx.alive()) return;
      for (const r of res.items) if (r.tenant) tenants.add(r.tenant);
      replace(tenantList, [...tenants].sort().map((t) => h('option', { value: t })));
      table.setRows(res.items);
      pg.update(res.items.length, res.total, res.next);
      summary.textContent = `${num(res.total)} ${res.total === 1 ? singular(kind) : kind.label.toLowerCase()}`;
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
    const next = { q: search.value.trim(), state: stateSel.value, tenant: tenantIn.value.trim() };
    if (next.q === filter.q && next.state === filter.state && next.tenant === filter.tenant) return;
    Object.assign(filter, next);
    pg.reset();
    load();
  };
  search.addEventListener('input', debounce(refilter, 250));
  tenantIn.addEventListener('input', debounce(refilter, 250));
  stateSel.addEventListener('change', refilter);

  replace(frame.content,
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' },
        h('label', { class: 'search' }, icon('search'), search),
        stateSel, tenantIn, tenantList, clear,
        h('div', { class: 'toolbar-right' }, summary, csv, canWrite() ? [importBtn, add] : null)),
      table.el,
      pg.el));
  await load();
}
