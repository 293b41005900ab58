// Data sources: push sources (agents) and csv sources (GPU imports) with
// their freshness, and pull sources (Prometheus, dcgm-exporter, Kubernetes,
// and the asset managers NetBox and Snipe-IT, whose secret is `token` and
// whose filters are shown for their kind only) that admins add, edit and delete and editors run on demand. A push or csv
// source is never run and has no connection: its form edits only its name,
// whether it is enabled, and the defaults for what it reports. Secrets are
// write-only: the form never shows a stored token, and a blank token field
// keeps it. Each source shows its precedence (the highest owns a host both
// report), how many GPUs it owns, and the fields it had to drop (its warning
// count and the newest warning). A save whose reply carries warnings (a
// stored secret cleared because the URL changed) shows them until the next
// action. The list refreshes itself while the tab is visible.
import { h, replace, icon, num, toast } from './dom.js';
import { api } from './api.js';
import { field, formDialog, fieldError, value, para } from './dialog.js';
import { dataTable } from './table.js';
import { timeAgo, flag, ago, autoRefresh, isNum, span } from './fmt.js';

const REFRESH_S = 20;

const PULL_KINDS = [
  { value: 'dcgm-exporter', label: 'dcgm-exporter' },
  { value: 'habanalabs-exporter', label: 'Intel Gaudi exporter' },
  { value: 'prometheus', label: 'Prometheus' },
  { value: 'kubernetes', label: 'Kubernetes' },
  { value: 'netbox', label: 'NetBox' },
  { value: 'snipeit', label: 'Snipe-IT' },
];
const KIND_LABELS = { push: 'Push (agents)', csv: 'CSV import', 'dcgm-exporter': 'dcgm-exporter',
  'habanalabs-exporter': 'Intel Gaudi exporter', prometheus: 'Prometheus',
  kubernetes: 'Kubernetes', netbox: 'NetBox', snipeit: 'Snipe-IT' };
/** The asset managers: their secret is `token`, sent as that system expects. */
const ASSET_KINDS = ['netbox', 'snipeit'];
const FILTERS = {
  netbox: [['site', 'Site (slug)'], ['role', 'Device role (slug)']],
  snipeit: [['category', 'Category (id)'], ['status', 'Status (e.g. Deployed)']],
};

/** True for a source the server pulls (and so can run now). */
export function isPull(kind) {
  return PULL_KINDS.some((k) => k.value === kind);
}
const URL_HINTS = {
  'dcgm-exporter': 'The exporter’s metrics page, e.g. http://gpu-node:9400/metrics',
  'habanalabs-exporter': 'The Gaudi metric exporter’s page, e.g. http://gaudi-node:41611/metrics (one scrape per 5 s)',
  prometheus: 'The Prometheus server, e.g. https://prometheus.example:9090',
  kubernetes: 'The API server, e.g. https://kubernetes.default.svc',
  netbox: 'NetBox, e.g. https://netbox.example.com (token: view rights on devices, modules, inventory items)',
  snipeit: 'Snipe-IT, e.g. https://snipe.example.com (token: view rights on assets)',
};

/** "every 5 min" for an interval in seconds. */
function every(s) {
  if (typeof s !== 'number') return '—';
  if (s % 3600 === 0) return `every ${s / 3600} h`;
  if (s % 60 === 0) return `every ${s / 60} min`;
  return `every ${s} s`;
}

/** The status badge of a source: disabled, error, stale, never run or OK. */
function sourceFlag(s) {
  if (!s.enabled) return flag('off', 'Disabled');
  if (s.last_error) return flag('error', 'Error', s.last_error);
  if (!s.last_success_at) return flag('stale', isPull(s.kind) ? 'Never succeeded' : 'No data yet');
  if (s.stale) return flag('stale', 'Stale', `Last success ${ago(s.last_success_at)}`);
  return flag('ok', 'OK');
}

/** A checkbox laid out as a form field, errors shown like any other field. */
function checkField(name, label, checked, hint, wide = false) {
  const id = `chk-${name.replace(/\W/g, '-')}`;
  return h('div', { class: `field field-check${wide ? ' field-wide' : ''}`, dataset: { field: name } },
    h('label', { for: id, class: 'check-label' },
      h('input', { type: 'checkbox', id, name, checked, 'aria-describedby': `${id}-err` }), label),
    hint ? h('p', { class: 'field-hint', text: hint }) : null,
    h('p', { class: 'field-error', id: `${id}-err`, hidden: true }));
}

/** Reads a whole-number field: null when blank, a field error when not whole. */
function intField(form, name, label) {
  const el = form.elements.namedItem(name);
  const raw = value(form, name);
  if (raw === '') {
    if (el && el.validity && el.validity.badInput) throw fieldError(name, `${label} must be a whole number`);
    return null;
  }
  const n = Number(raw);
  if (!Number.isInteger(n)) throw fieldError(name, `${label} must be a whole number`);
  return n;
}

/**
 * Opens the add (src absent) or edit form of a pull source. Resolves to
 * the saved source or null.
 */
async function editSource(src) {
  let saved = null;
  const cfg = (src && src.config) || {};
  const secretKey = (k) => (ASSET_KINDS.includes(k) ? 'token' : 'bearer_token');
  const tokenSet = Boolean(cfg.bearer_token || cfg.token);
  const kindField = field({ name: 'kind', label: 'Kind', type: 'select', required: true,
    value: src ? src.kind : 'dcgm-exporter', choices: PULL_KINDS,
    attrs: src ? { disabled: true } : {}, hint: src ? 'The kind of a source cannot change' : null });
  const urlField = field({ name: 'config.url', label: 'URL', required: true, value: cfg.url || '', wide: true,
    type: 'url', attrs: { maxlength: 2000, spellcheck: 'false', inputmode: 'url' } });
  const queryField = field({ name: 'config.query', label: 'Query (PromQL)', value: cfg.query || '', wide: true,
    hint: 'Optional; the default selects the DCGM GPU metrics', attrs: { spellcheck: 'false' } });
  const pageField = field({ name: 'config.page_size', label: 'Page size', type: 'number', value: cfg.page_size ?? '',
    attrs: { min: 1, max: 1000, step: 1, inputmode: 'numeric' }, hint: 'Objects per list request (1–1000)' });
  const tokenField = field({ name: 'config.bearer_token', label: 'Bearer token', type: 'password', value: '',
    autocomplete: 'new-password',
    hint: src && tokenSet ? 'A token is stored. Leave blank to keep it.' : 'Optional; sent as Authorization: Bearer' });
  const removeToken = src && tokenSet ? checkField('remove_token', 'Remove the stored bearer token', false, null, true) : null;
  const filterFields = Object.entries(FILTERS).flatMap(([k, list]) => list.map(([key, label]) => {
    const f = field({ name: `config.${key}`, label, value: cfg[key] || '', attrs: { spellcheck: 'false' },
      hint: 'Optional' });
    f.dataset.kind = k;
    return f;
  }));
  const fields = [
    h('h3', { class: 'form-section', text: 'Source' }),
    field({ name: 'name', label: 'Name', required: true, value: src ? src.name : '', attrs: { maxlength: 63 } }),
    kindField,
    urlField,
    queryField,
    pageField,
    ...filterFields,
    h('h3', { class: 'form-section', text: 'Connection' }),
    tokenField,
    field({ name: 'config.ca_file', label: 'CA file', value: cfg.ca_file || '',
      hint: 'PEM bundle on the server to verify the peer', attrs: { spellcheck: 'false' } }),
    field({ name: 'config.timeout_s', label: 'Timeout (seconds)', type: 'number', value: cfg.timeout_s ?? '',
      attrs: { min: 1, max: 300, step: 1, inputmode: 'numeric' } }),
    checkField('config.insecure_skip_verify', 'Skip TLS verification (insecure)', Boolean(cfg.insecure_skip_verify)),
    field({ name: 'interval_s', label: 'Interval (seconds)', type: 'number', value: src ? src.interval_s : 300,
      attrs: { min: 10, max: 86400, step: 1, inputmode: 'numeric' }, hint: 'How often the server pulls (10–86400)' }),
    checkField('enabled', 'Enabled', src ? Boolean(src.enabled) : true, 'A disabled source is kept but not pulled'),
    removeToken,
    h('h3', { class: 'form-section', text: 'Defaults for what it reports' }),
    field({ name: 'team', label: 'Team', value: src ? src.team || '' : '', attrs: { maxlength: 128 } }),
    field({ name: 'env', label: 'Environment', value: src ? src.env || '' : '', attrs: { maxlength: 64 } }),
    field({ name: 'cluster', label: 'Cluster', value: src ? src.cluster || '' : '', attrs: { maxlength: 128 } }),
  ].filter(Boolean);

  const kindSel = kindField.querySelector('select');
  const syncKind = () => {
    const k = kindSel.value;
    queryField.hidden = k !== 'prometheus';
    pageField.hidden = k !== 'kubernetes' && !ASSET_KINDS.includes(k);
    for (const f of filterFields) f.hidden = f.dataset.kind !== k;
    tokenField.querySelector('label').textContent = ASSET_KINDS.includes(k) ? 'API token' : 'Bearer token';
    const tokenHint = tokenField.querySelector('.field-hint');
    if (tokenHint && !tokenSet) tokenHint.textContent = `Optional; sent as Authorization: ${k === 'netbox' ? 'Token' : 'Bearer'}`;
    urlField.querySelector('.field-hint')?.remove();
    urlField.querySelector('input').after(h('p', { class: 'field-hint', text: URL_HINTS[k] || '' }));
  };
  kindSel.addEventListener('change', syncKind);
  syncKind();

  await formDialog({
    title: src ? `Edit ${src.name}` : 'Add pull source',
    fields,
    wide: true,
    submitLabel: src ? 'Save changes' : 'Add source',
    async submit(form) {
      const kind = src ? src.kind : value(form, 'kind');
      const name = value(form, 'name');
      if (!name) throw fieldError('name', 'Enter a name');
      const url = value(form, 'config.url');
      if (!url) throw fieldError('config.url', 'Enter the URL to pull from');
      const config = { url };
      const opt = (key, v) => {
        // On edit a cleared setting is sent as null; on add it is left out.
        if (v !== null && v !== '') config[key] = v;
        else if (src && cfg[key] !== undefined && cfg[key] !== null) config[key] = null;
      };
      opt('ca_file', value(form, 'config.ca_file'));
      opt('timeout_s', intField(form, 'config.timeout_s', 'Timeout'));
      const insecure = form.elements.namedItem('config.insecure_skip_verify').checked;
      if (insecure || (src && cfg.insecure_skip_verify !== undefined)) config.insecure_skip_verify = insecure;
      if (kind === 'prometheus') opt('query', value(form, 'config.query'));
      if (kind === 'kubernetes' || ASSET_KINDS.includes(kind)) opt('page_size', intField(form, 'config.page_size', 'Page size'));
      for (const [key] of FILTERS[kind] || []) opt(key, value(form, `config.${key}`));
      const token = form.elements.namedItem('config.bearer_token').value;
      if (token) config[secretKey(kind)] = token;
      else if (removeToken && form.elements.namedItem('remove_token').checked) config[secretKey(kind)] = null;

      const body = { name, config, enabled: form.elements.namedItem('enabled').checked };
      const interval = intField(form, 'interval_s', 'Interval');
      if (interval !== null) body.interval_s = interval;
      for (const k of ['team', 'env', 'cluster']) {
        const v = value(form, k);
        if (v || (src && src[k])) body[k] = v;
      }
      if (src) {
        saved = await api('PATCH', `/api/v1/sources/${src.id}`, body);
      } else {
        body.kind = kind;
        saved = await api('POST', '/api/v1/sources', body);
      }
    },
  });
  if (saved) toast(src ? `Saved ${saved.name}` : `Added ${saved.name}`);
  return saved;
}

/** The fields-dropped cell of a source: its warning count and the newest. */
function warningCell(s) {
  const n = isNum(s.warnings_total) ? s.warnings_total : 0;
  if (n === 0) return h('span', { class: 'muted', 'data-testid': 'source-warnings', text: '—' });
  const at = s.last_warning_at ? ` (${ago(s.last_warning_at)})` : '';
  const tip = `${num(n)} field${n === 1 ? '' : 's'} dropped from its reports so far; newest${at}: ${s.last_warning || 'not recorded'}`;
  return h('div', { class: 'stack', 'data-testid': 'source-warnings', title: tip },
    h('span', {}, flag('stale', `${num(n)} dropped`, tip)),
    s.last_warning ? h('span', { class: 'sub clip', text: s.last_warning }) : null,
    s.last_warning_at ? h('span', { class: 'sub' }, 'newest ', timeAgo(s.last_warning_at)) : null);
}

/** The tooltip of a source's GPU count. */
function gpusTip(s) {
  const last = isNum(s.gpus_last_report)
    ? `; its last report listed ${num(s.gpus_last_report)}` : '';
  return `GPUs this source owns${last}; open the list of them`;
}

/**
 * The edit form of a push or csv source: name, enabled, and the defaults
 * (team, environment, cluster) for what it reports. Resolves to the saved
 * source or null.
 */
async function editReporter(src) {
  let saved = null;
  const how = src.kind === 'push'
    ? 'Agents push to this source with its pusher token; there is no connection to set.'
    : 'GPU CSV imports report under this source; there is no connection to set.';
  await formDialog({
    title: `Edit ${src.name}`,
    intro: [para(how)],
    fields: [
      field({ name: 'name', label: 'Name', required: true, value: src.name, attrs: { maxlength: 63 } }),
      checkField('enabled', 'Enabled', Boolean(src.enabled), 'A disabled source’s reports are refused'),
      h('h3', { class: 'form-section', text: 'Defaults for what it reports' }),
      field({ name: 'team', label: 'Team', value: src.team || '', attrs: { maxlength: 128 } }),
      field({ name: 'env', label: 'Environment', value: src.env || '', attrs: { maxlength: 64 } }),
      field({ name: 'cluster', label: 'Cluster', value: src.cluster || '', attrs: { maxlength: 128 } }),
    ],
    wide: true,
    submitLabel: 'Save changes',
    async submit(form) {
      const name = value(form, 'name');
      if (!name) throw fieldError('name', 'Enter a name');
      const body = { name, enabled: form.elements.namedItem('enabled').checked };
      for (const k of ['team', 'env', 'cluster']) {
        const v = value(form, k);
        if (v || src[k]) body[k] = v;
      }
      saved = await api('PATCH', `/api/v1/sources/${src.id}`, body);
    },
  });
  if (saved) toast(`Saved ${saved.name}`);
  return saved;
}

/** Asks before deleting a source. Resolves to true once deleted. */
async function deleteSource(src) {
  const ok = await formDialog({
    title: 'Delete source',
    intro: [para('Delete the source ', h('strong', { text: src.name }), '? The server stops pulling from it. ',
      'GPUs it reported stay in the inventory. This cannot be undone.')],
    submitLabel: 'Delete',
    danger: true,
    async submit() {
      await api('DELETE', `/api/v1/sources/${src.id}`);
    },
  });
  if (ok) toast(`Deleted ${src.name}`);
  return ok;
}

/** Renders the source list into main. ctx.role decides the controls. */
export function renderSources(main, ctx) {
  document.title = 'Sources · gpuinv';
  const admin = ctx.role === 'admin';
  const runner = admin || ctx.role === 'editor';
  let seq = 0;
  const sub = h('p', { class: 'page-sub', 'data-testid': 'source-total' });
  const result = h('div', { class: 'run-result', role: 'status', 'data-testid': 'run-result', hidden: true });

  async function runNow(src, btn) {
    btn.disabled = true;
    btn.textContent = 'Running…';
    try {
      const r = await api('POST', `/api/v1/sources/${src.id}/run`);
      const run = r.run || {};
      result.className = `run-result ${run.ok ? 'run-ok' : 'run-failed'}`;
      replace(result, run.ok
        ? [h('strong', { text: `${r.name}: the run succeeded. ` }),
          `${num(run.gpus)} GPU${run.gpus === 1 ? '' : 's'} on ${num(run.hosts)} host${run.hosts === 1 ? '' : 's'}.`]
        : [h('strong', { text: `${r.name}: the run failed. ` }),
          h('span', { 'data-testid': 'run-error', text: run.error || 'No reason was given.' })]);
      result.hidden = false;
      await load();
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      btn.disabled = false;
      btn.textContent = 'Run now';
    }
  }

  /** Shows what the server warned about a save (or hides the notice). */
  function showSaveWarnings(saved) {
    const list = (saved && Array.isArray(saved.warnings)) ? saved.warnings : [];
    if (list.length === 0) return;
    result.className = 'run-result run-failed';
    replace(result, h('strong', { text: `${saved.name} was saved, with ${list.length === 1 ? 'a warning' : 'warnings'}: ` }),
      h('ul', { 'data-testid': 'save-warnings' }, list.map((w) => h('li', { text: w.message || w.field || String(w) }))));
    result.hidden = false;
    toast(`${saved.name}: ${list.map((w) => w.message || w.field).join('; ')}`, 'error');
  }

  async function edit(s, pull) {
    const saved = await (pull ? editSource(s) : editReporter(s));
    if (!saved) return;
    result.hidden = true;
    replace(result);
    showSaveWarnings(saved);
    load();
  }

  const actions = (s) => {
    const pull = isPull(s.kind);
    const btns = [];
    if (!pull && !admin) return h('span', { class: 'muted small', text: s.kind === 'push' ? 'pushed by agents' : 'imported' });
    if (runner && pull) {
      const run = h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-primary btn-act', text: 'Run now',
        'aria-label': `Run ${s.name} now` });
      run.addEventListener('click', () => runNow(s, run));
      btns.push(run);
    }
    if (admin) {
      btns.push(h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Edit', 'aria-label': `Edit ${s.name}`,
        on: { click: () => edit(s, pull) } }));
      btns.push(h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Delete',
        'aria-label': `Delete ${s.name}`, on: { click: async () => {
          if (await deleteSource(s)) { result.hidden = true; load(); }
        } } }));
    }
    return h('div', { class: 'row-actions' }, btns);
  };

  const table = dataTable({
    label: 'Sources',
    minWidth: 1200,
    empty: () => h('div', { class: 'empty-state' },
      h('strong', { text: 'No sources yet.' }),
      h('span', { text: admin
        ? 'Connect a source: create a pusher token for the agents on your GPU hosts, or add a pull source.'
        : 'Connect a source: ask an admin for a pusher token for your GPU hosts, or for a pull source.' }),
      admin ? h('div', { class: 'empty-actions' },
        h('a', { class: 'btn btn-primary btn-sm', href: '#/tokens', text: 'Create a pusher token' }),
        h('button', { type: 'button', class: 'btn btn-secondary btn-sm', text: 'Add pull source',
          on: { click: async () => { if (await editSource(null)) load(); } } })) : null),
    columns: [
      { label: 'Name', cell: (s) => h('div', { class: 'stack' }, h('span', { class: 'row-link', title: s.name, text: s.name }),
        h('span', { class: 'sub', text: [s.cluster, s.team, s.env].filter(Boolean).join(' · ') || 'no defaults' })) },
      { label: 'Kind', width: '124px', cell: (s) => h('span', { class: `kind-tag kind-${s.kind}`, text: KIND_LABELS[s.kind] || s.kind }) },
      { label: 'Status', key: 'status', cls: 'flags', width: '112px', cell: sourceFlag },
      { label: 'Prec.', key: 'precedence', cls: 'n', width: '64px', cell: (s) => h('span', {
        'data-testid': 'source-precedence', title: 'Of sources reporting the same host, the highest precedence owns it',
        text: isNum(s.precedence) ? String(s.precedence) : '0' }) },
      { label: 'Last success', width: '104px', cell: (s) => timeAgo(s.last_success_at) },
      { label: 'Last attempt', width: '104px', cell: (s) => (!isPull(s.kind) ? h('span', { class: 'muted', text: '—' }) : timeAgo(s.last_attempt_at)) },
      { label: 'Last error', cell: (s) => (s.last_error
        ? h('span', { class: 'clip error-text', title: s.last_error, text: s.last_error })
        : h('span', { class: 'muted', text: '—' })) },
      { label: 'Fields dropped', key: 'warnings', width: '136px', cell: warningCell },
      { label: 'GPUs', cls: 'n', width: '64px', cell: (s) => h('a', { href: `#/gpus?source=${s.id}`,
        'data-testid': 'source-gpus', title: gpusTip(s), text: num(s.gpus_reported) }) },
      { label: 'Interval', width: '100px', cell: (s) => (!isPull(s.kind) ? h('span', { class: 'muted', text: '—' }) : every(s.interval_s)) },
      (runner || admin) && { label: 'Actions', key: 'actions', cls: 'actions', width: admin ? '232px' : '110px', cell: actions },
    ].filter(Boolean),
  });
  const fresh = h('p', { class: 'page-sub small', 'data-testid': 'source-freshness' });

  async function load() {
    const my = ++seq;
    table.setBusy(true);
    try {
      const res = await api('GET', '/api/v1/sources');
      if (my !== seq || !ctx.alive()) return;
      table.setRows(res.items);
      const pull = res.items.filter((s) => isPull(s.kind)).length;
      sub.textContent = `${num(res.items.length - pull)} push · ${num(pull)} pull`;
      const limit = isNum(res.freshness_s) ? ` · a source with no report in ${span(res.freshness_s)} is stale` : '';
      fresh.textContent = `Updates every ${REFRESH_S} s while this tab is open · updated ${new Date().toLocaleTimeString()}${limit}`;
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }

  const add = h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'add-source',
    on: { click: async () => { if (await editSource(null)) load(); } } }, icon('plus'), 'Add pull source');
  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Sources' }), sub, fresh),
      h('div', { class: 'page-actions' },
        h('button', { type: 'button', class: 'btn btn-secondary', text: 'Refresh', on: { click: () => load() } }),
        admin ? add : null)),
    result,
    h('section', { class: 'panel' }, table.el));
  load();
  autoRefresh(REFRESH_S, ctx.alive, () => load());
}
