// Ownership pages: teams, environments, pools and clusters (list, add,
// edit, delete), the ordered mapping rules (add, edit, disable, delete,
// dry run), the unowned GPUs, and the GPU page's owner panel with its
// "decided by" per field and the assignment form.
import { h, replace, icon, num, toast } from './dom.js';
import { api, withQuery, canWrite } from './api.js';
import { field, formDialog, fieldError, value, para } from './dialog.js';
import { dataTable, pager } from './table.js';

/** The four dimension pages: path segment, API path, kind, labels. */
export const DIMS = [
  { seg: 'teams', one: 'team', many: 'Teams' },
  { seg: 'environments', one: 'environment', many: 'Environments' },
  { seg: 'pools', one: 'pool', many: 'Pools' },
  { seg: 'clusters', one: 'cluster', many: 'Clusters' },
];
const TABS = [...DIMS.map((d) => [d.seg, d.many]), ['rules', 'Rules'], ['unowned', 'Unowned']];
const MATCH_KINDS = [
  ['host_pattern', 'Host name pattern'], ['node_label', 'Kubernetes node label'],
  ['cloud_tag', 'Cloud tag'], ['datacenter', 'Data center'], ['source', 'Source'],
  ['k8s_namespace', 'Kubernetes namespace (consumers)'], ['slurm_account', 'Slurm account (consumers)'],
];
const SET_FIELDS = ['team', 'env', 'pool', 'cluster', 'cloud'];
const OWNER_FIELDS = [['team', 'Team'], ['env', 'Environment'], ['pool', 'Pool'], ['cluster', 'Cluster'], ['cloud', 'Cloud']];

/** The unowned GPUs' count, for the header badge; null when unknown. */
export async function unownedCount() {
  try {
    return (await api('GET', '/api/v1/ownership/unowned?limit=1')).total;
  } catch {
    return null;
  }
}

/** "rule:3" → a link to the rule; "assignment:host:4" → words. */
export function byText(by) {
  if (!by) return h('span', { class: 'muted', text: 'nothing' });
  const [kind, a, b] = by.split(':');
  if (kind === 'rule') return h('a', { href: '#/ownership/rules', 'data-testid': 'by-rule', text: `rule ${a}` });
  if (kind === 'assignment') return h('span', { text: `assignment on the ${a === 'gpu' ? 'GPU' : a} (${b})` });
  if (kind === 'source') return h('span', { text: `the source's default (source ${a})` });
  return h('span', { text: by });
}

function tabs(active) {
  return h('nav', { class: 'tabs', 'aria-label': 'Ownership sections' },
    TABS.map(([seg, label]) => h('a', { href: `#/ownership/${seg}`, class: `tab${active === seg ? ' active' : ''}`,
      'aria-current': active === seg ? 'page' : null, dataset: { tab: seg } }, label)));
}

function head(title, sub, ...actions) {
  return h('div', { class: 'page-head' },
    h('div', {}, h('h1', { text: title }), sub),
    h('div', { class: 'page-actions' }, actions));
}

/** Parses the attributes text of the form: one "key=value" a line. */
function parseAttrs(text) {
  const attrs = {};
  for (const line of text.split('\n').map((l) => l.trim()).filter(Boolean)) {
    const i = line.indexOf('=');
    if (i <= 0) throw fieldError('attrs', `Write each attribute as key=value (“${line}”)`);
    attrs[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return attrs;
}

/** Add (d absent) or edit one dimension value; resolves to the saved one. */
async function editDim(dim, d) {
  let saved = null;
  const attrsText = d ? Object.entries(d.attrs || {}).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n') : '';
  const fields = [
    d ? null : field({ name: 'name', label: 'Name', required: true, attrs: { maxlength: 64 },
      hint: 'Letters, digits, - _ . : (used in rules and assignments)' }),
    field({ name: 'display', label: 'Display name', value: d ? d.display || '' : '', attrs: { maxlength: 128 } }),
    field({ name: 'description', label: 'Description', type: 'textarea', value: d ? d.description || '' : '', wide: true }),
    field({ name: 'attrs', label: 'Attributes', type: 'textarea', value: attrsText, wide: true,
      hint: dim.one === 'team' ? 'key=value lines: manager=…, contact=…, cost_center=…'
        : dim.one === 'cluster' ? 'key=value lines: cloud=aws, region=…' : 'key=value lines' }),
  ].filter(Boolean);
  await formDialog({
    title: d ? `Edit ${dim.one} ${d.name}` : `Add ${dim.one}`,
    fields,
    submitLabel: d ? 'Save changes' : `Add ${dim.one}`,
    async submit(form) {
      const body = { display: value(form, 'display') || null, description: value(form, 'description') || null,
        attrs: parseAttrs(value(form, 'attrs')) };
      if (!d) {
        body.name = value(form, 'name');
        if (!body.name) throw fieldError('name', 'Enter a name');
      }
      saved = d ? await api('PATCH', `/api/v1/${dim.seg}/${encodeURIComponent(d.name)}`, body)
        : await api('POST', `/api/v1/${dim.seg}`, body);
    },
  });
  if (saved) toast(d ? `Saved ${saved.name}` : `Added ${saved.name}`);
  return saved;
}

async function deleteDim(dim, d) {
  const ok = await formDialog({
    title: `Delete ${dim.one}`,
    intro: [para('Delete ', h('strong', { text: d.name }), '? Past ownership keeps its name.')],
    submitLabel: 'Delete',
    danger: true,
    async submit() {
      await api('DELETE', `/api/v1/${dim.seg}/${encodeURIComponent(d.name)}`);
    },
  });
  if (ok) toast(`Deleted ${d.name}`);
  return ok;
}

/** A dimension's list page. */
export function renderDims(main, ctx, seg) {
  const dim = DIMS.find((d) => d.seg === seg) || DIMS[0];
  document.title = `${dim.many} · gpuinv`;
  const total = h('p', { class: 'page-sub', 'data-testid': 'dim-total' });
  const add = canWrite() ? h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'add-dim',
    on: { click: async () => { if (await editDim(dim, null)) load(); } } }, icon('plus'), `Add ${dim.one}`) : null;
  const table = dataTable({
    label: dim.many,
    minWidth: 640,
    empty: () => `No ${dim.many.toLowerCase()} yet.`,
    onSort: () => {},
    columns: [
      { label: 'Name', cell: (d) => h('strong', { class: 'clip', text: d.name }) },
      { label: 'Display name', cell: (d) => d.display || '—' },
      { label: 'Description', cell: (d) => h('span', { class: 'clip', title: d.description || null, text: d.description || '—' }) },
      { label: 'Attributes', cell: (d) => h('span', { class: 'clip mono',
        text: Object.entries(d.attrs || {}).map(([k, v]) => `${k}=${v}`).join(', ') || '—' }) },
      { label: 'GPUs', cls: 'n', width: '80px', cell: (d) => (dim.one === 'team' || dim.one === 'environment'
        ? h('a', { href: `#/gpus?${dim.one === 'team' ? 'team' : 'env'}=${encodeURIComponent(d.name)}`, text: 'GPUs' }) : '—') },
      canWrite() && { label: 'Actions', key: 'actions', cls: 'actions', width: '150px', cell: (d) => h('div', { class: 'row-actions' },
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Edit', 'aria-label': `Edit ${d.name}`,
          on: { click: async () => { if (await editDim(dim, d)) load(); } } }),
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Delete', 'aria-label': `Delete ${d.name}`,
          on: { click: async () => { if (await deleteDim(dim, d)) load(); } } })) },
    ].filter(Boolean),
  });
  const pg = pager(() => load());
  async function load() {
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery(`/api/v1/${dim.seg}`, { limit: 100, cursor: pg.cursor() }));
      if (!ctx.alive()) return;
      table.setRows(res.items);
      pg.update(res.items.length, res.total, res.next);
      total.textContent = `${num(res.total)} ${res.total === 1 ? dim.one : dim.many.toLowerCase()}`;
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      table.setBusy(false);
    }
  }
  replace(main, head('Ownership', total, add), tabs(dim.seg), h('section', { class: 'panel' }, table.el, pg.el));
  load();
}

/** Names of one dimension kind, for the selects. */
async function names(seg) {
  try {
    return (await api('GET', `/api/v1/${seg}?limit=1000`)).items.map((d) => d.name);
  } catch {
    return [];
  }
}

/** The rule form's body from its fields. */
function ruleBody(form) {
  const kind = value(form, 'match.kind');
  const match = { kind, value: value(form, 'match.value') };
  const key = value(form, 'match.key');
  if (key) match.key = key;
  if (!match.value) throw fieldError('match.value', 'Enter a pattern');
  const set = {};
  for (const f of SET_FIELDS) {
    const v = value(form, `set.${f}`);
    if (v) set[f] = v;
  }
  const body = { match, set };
  const pos = value(form, 'position');
  if (pos !== '') body.position = Number(pos);
  const eff = value(form, 'effective_from');
  if (eff) body.effective_from = new Date(eff).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return body;
}

/** Add (r absent) or edit a rule; with a dry run of what it matches. */
async function editRule(r) {
  const [teams, envs, pools, clusters] = await Promise.all(DIMS.map((d) => names(d.seg)));
  const choices = { team: teams, env: envs, pool: pools, cluster: clusters, cloud: clusters };
  let saved = null;
  const preview = h('div', { class: 'muted small', 'data-testid': 'dry-run', 'aria-live': 'polite' });
  const fields = [
    field({ name: 'match.kind', label: 'Match', type: 'select', value: r ? r.match.kind : 'host_pattern',
      choices: MATCH_KINDS.map(([v, l]) => ({ value: v, label: l })) }),
    field({ name: 'match.key', label: 'Label or tag name', value: r ? r.match.key || '' : '',
      hint: 'For node labels and cloud tags only', attrs: { maxlength: 127 } }),
    field({ name: 'match.value', label: 'Pattern', required: true, value: r ? r.match.value : '',
      hint: '* matches any run, ? one character', attrs: { maxlength: 255 } }),
    ...SET_FIELDS.map((f) => field({ name: `set.${f}`, label: `Sets ${f}`, type: 'select', blank: '—',
      value: r ? r.set[f] || '' : '', choices: choices[f] })),
    field({ name: 'position', label: 'Position', type: 'number', value: r ? r.position : '',
      hint: 'Lower runs first; empty: last', attrs: { min: 0, step: 1 } }),
    field({ name: 'effective_from', label: 'Effective from', type: 'datetime-local',
      hint: r ? 'The version in force ends here; empty: now' : 'Empty: now' }),
  ];
  await formDialog({
    title: r ? `Edit rule ${r.id}` : 'Add rule',
    wide: true,
    intro: [h('div', { class: 'row-actions' },
      h('button', { type: 'button', class: 'btn btn-secondary btn-sm', 'data-testid': 'dry-run-btn', text: 'Dry run',
        on: { click: async (ev) => {
          const form = ev.target.closest('form');
          try {
            const body = ruleBody(form);
            delete body.effective_from;
            const res = await api('POST', '/api/v1/ownership-rules/dry-run', body);
            replace(preview, `Matches ${num(res.total)} GPU${res.total === 1 ? '' : 's'} now`,
              res.items.length ? `: ${res.items.slice(0, 10).map((x) => `${x.host || '?'} ${x.uuid}`).join(', ')}` : '');
          } catch (err) {
            preview.textContent = err.message;
          }
        } } }), preview)],
    fields,
    submitLabel: r ? 'Save as a new version' : 'Add rule',
    async submit(form) {
      const body = ruleBody(form);
      saved = r ? await api('PATCH', `/api/v1/ownership-rules/${r.id}`, body)
        : await api('POST', '/api/v1/ownership-rules', body);
    },
  });
  if (saved) toast(r ? `Saved rule ${saved.id}` : `Added rule ${saved.id}`);
  return saved;
}

function matchText(m) {
  const label = (MATCH_KINDS.find(([k]) => k === m.kind) || [m.kind, m.kind])[1];
  return `${label}${m.key ? ` ${m.key}` : ''} ~ ${m.value}`;
}

/** The ordered rule list. */
export function renderRules(main, ctx) {
  document.title = 'Ownership rules · gpuinv';
  const total = h('p', { class: 'page-sub', 'data-testid': 'rule-total' });
  const add = canWrite() ? h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'add-rule',
    on: { click: async () => { if (await editRule(null)) load(); } } }, icon('plus'), 'Add rule') : null;
  const table = dataTable({
    label: 'Ownership rules',
    minWidth: 760,
    empty: () => 'No rules yet: owners come from assignments and the sources\' defaults.',
    onSort: () => {},
    rowClass: (r) => (r.enabled ? null : 'muted'),
    columns: [
      { label: '#', cls: 'n', width: '56px', cell: (r) => String(r.position) },
      { label: 'Id', cls: 'n', width: '56px', cell: (r) => String(r.id) },
      { label: 'Match', cell: (r) => h('span', { class: 'clip mono', text: matchText(r.match) }) },
      { label: 'Sets', cell: (r) => Object.entries(r.set).map(([k, v]) => `${k}=${v}`).join(', ') },
      { label: 'Since', width: '180px', cell: (r) => r.effective_from },
      { label: 'State', width: '90px', cell: (r) => (r.enabled ? 'enabled' : 'disabled') },
      canWrite() && { label: 'Actions', key: 'actions', cls: 'actions', width: '230px', cell: (r) => h('div', { class: 'row-actions' },
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Edit', 'aria-label': `Edit rule ${r.id}`,
          on: { click: async () => { if (await editRule(r)) load(); } } }),
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: r.enabled ? 'Disable' : 'Enable',
          'aria-label': `${r.enabled ? 'Disable' : 'Enable'} rule ${r.id}`,
          on: { click: async () => {
            try {
              await api('PATCH', `/api/v1/ownership-rules/${r.id}`, { enabled: !r.enabled });
              load();
            } catch (err) { toast(err.message, 'error'); }
          } } }),
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Delete', 'aria-label': `Delete rule ${r.id}`,
          on: { click: async () => {
            try {
              await api('DELETE', `/api/v1/ownership-rules/${r.id}`);
              toast(`Ended rule ${r.id}`);
              load();
            } catch (err) { toast(err.message, 'error'); }
          } } })) },
    ].filter(Boolean),
  });
  async function load() {
    table.setBusy(true);
    try {
      const res = await api('GET', '/api/v1/ownership-rules');
      if (!ctx.alive()) return;
      table.setRows(res.items);
      total.textContent = `${num(res.total)} rule${res.total === 1 ? '' : 's'}, first match per field wins`;
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      table.setBusy(false);
    }
  }
  replace(main, head('Ownership', total, add), tabs('rules'), h('section', { class: 'panel' }, table.el));
  load();
}

/** The unowned GPUs: a data-quality list. */
export function renderUnowned(main, ctx) {
  document.title = 'Unowned GPUs · gpuinv';
  const total = h('p', { class: 'page-sub', 'data-testid': 'unowned-total' });
  const table = dataTable({
    label: 'Unowned GPUs',
    minWidth: 640,
    empty: () => 'Every GPU has a team.',
    onSort: () => {},
    onRow: (g) => ctx.go(`#/gpus/${encodeURIComponent(g.uuid)}`),
    columns: [
      { label: 'GPU', cell: (g) => h('a', { class: 'row-link mono clip', href: `#/gpus/${encodeURIComponent(g.uuid)}`, text: g.uuid }) },
      { label: 'Host', cell: (g) => g.host || '—' },
      { label: 'Model', cell: (g) => g.model || '—' },
      { label: 'Source', cell: (g) => g.source || '—' },
    ],
  });
  const pg = pager(() => load());
  async function load() {
    table.setBusy(true);
    try {
      const res = await api('GET', withQuery('/api/v1/ownership/unowned', { limit: 100, cursor: pg.cursor() }));
      if (!ctx.alive()) return;
      table.setRows(res.items);
      pg.update(res.items.length, res.total, res.next);
      total.textContent = `${num(res.total)} GPU${res.total === 1 ? '' : 's'} without a team: assign them or add a rule`;
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      table.setBusy(false);
    }
  }
  replace(main, head('Ownership', total), tabs('unowned'), h('section', { class: 'panel' }, table.el, pg.el));
  load();
}

/** Assigns a GPU's owner; resolves to true once saved. */
async function assignDialog(g) {
  const [teams, envs, pools] = await Promise.all(['teams', 'environments', 'pools'].map(names));
  const keep = '(keep)';
  const fields = [['team', teams], ['env', envs], ['pool', pools]].map(([f, list]) => field({
    name: f, label: f === 'env' ? 'Environment' : f[0].toUpperCase() + f.slice(1), type: 'select',
    value: keep, choices: [keep, { value: '', label: '(clear)' }, ...list] }));
  fields.push(field({ name: 'effective_from', label: 'Effective from', type: 'datetime-local', hint: 'Empty: now' }));
  const ok = await formDialog({
    title: 'Assign owner',
    intro: [para('Assign ', h('strong', { text: g.uuid }), '. Past hours keep the owner they had.')],
    fields,
    submitLabel: 'Assign',
    async submit(form) {
      const body = {};
      for (const f of ['team', 'env', 'pool']) {
        const v = value(form, f);
        if (v !== keep) body[f] = v || null;
      }
      const eff = value(form, 'effective_from');
      if (eff) body.effective_from = new Date(eff).toISOString().replace(/\.\d{3}Z$/, 'Z');
      await api('PUT', `/api/v1/gpus/${encodeURIComponent(g.uuid)}/owner`, body);
    },
  });
  if (ok) toast('Owner assigned');
  return ok;
}

/** The GPU page's owner panel; onChange runs after an assignment. */
export function ownerPanel(g, onChange) {
  const o = g.owner || {};
  return h('section', { class: 'panel', 'data-testid': 'owner' },
    h('div', { class: 'panel-head with-actions' }, h('h2', {}, 'Owner'),
      canWrite() ? h('button', { type: 'button', class: 'btn btn-secondary btn-sm', 'data-testid': 'assign-owner',
        text: 'Assign', on: { click: async () => { if (await assignDialog(g)) onChange(); } } }) : null),
    h('dl', { class: 'kv' }, OWNER_FIELDS.map(([f, label]) => {
      const v = o[f] || {};
      return h('div', { class: 'kv-row', dataset: { owner: f } },
        h('dt', { text: label }),
        h('dd', {}, h('span', { class: 'kv-value', text: v.value || '—' }),
          h('span', { class: 'muted small', 'data-testid': `owner-by-${f}` }, ' decided by ', byText(v.by))));
    })));
}
