// Data sources: push sources (agents) and csv sources (GPU imports) with
// their freshness, and pull sources that admins add, edit, test and delete
// and editors run on demand. The pull source form is built from the kinds
// and config keys the server lists (GET /api/v1/source-kinds): inputs by
// type, required marks and help texts; "Test connection" pulls once without
// storing anything and shows what it found or the error. A push or csv
// source is never run and has no connection: its form edits only its name,
// whether it is enabled, and the defaults for what it reports. Secrets are
// write-only: the form never shows a stored token, and a blank token field
// keeps it. Each source shows its precedence (the highest owns a host both
// report), how many hosts and GPUs it owns, and the fields it had to drop (its warning
// count and the newest warning). A save whose reply carries warnings (a
// stored secret cleared because the URL changed) shows them until the next
// action. The list refreshes itself while the tab is visible.
import { h, replace, icon, num, toast } from './dom.js';
import { api } from './api.js';
import { field, formDialog, fieldError, value, para, showError, clearErrors } from './dialog.js';
import { dataTable } from './table.js';
import { timeAgo, flag, ago, autoRefresh, isNum, span } from './fmt.js';

const REFRESH_S = 20;

const KIND_LABELS = { push: 'Push (agents)', csv: 'CSV import', 'dcgm-exporter': 'dcgm-exporter', prometheus: 'Prometheus',
  kubernetes: 'Kubernetes', slurm: 'Slurm', netbox: 'NetBox', snipeit: 'Snipe-IT',
  'prometheus-generic': 'Own exporter', 'habanalabs-exporter': 'Intel Gaudi exporter',
  aws: 'AWS EC2', gcp: 'GCP Compute Engine', azure: 'Azure VMs' };

/** True for a source the server pulls (and so can run now): every kind but push and csv. */
export function isPull(kind) {
  return kind !== 'push' && kind !== 'csv';
}

/** Form labels of config keys; other keys are labelled from their name. */
const KEY_LABELS = {
  url: 'URL', exporter_url: 'Exporter URL', slurmrestd_url: 'slurmrestd URL', query: 'Query (PromQL)',
  bearer_token: 'Bearer token', token: 'API token', ca_file: 'CA file', timeout_s: 'Timeout (seconds)',
  insecure_skip_verify: 'Skip TLS verification (insecure)', page_size: 'Page size', mapping: 'Mapping (JSON)',
  overlap_s: 'Overlap (seconds)', lookback_h: 'First look-back (hours)', api_version: 'API version',
};
/** A filled-in mapping to start from: edit the metric and label names. */
const MAPPING_EXAMPLE = {
  uuid_label: 'gpu_uuid', host_label: 'instance',
  utilization: { metric: 'vendor_gpu_busy_percent', unit: 'percent' },
  memory_used: { metric: 'vendor_gpu_memory_used_bytes', unit: 'bytes' },
  power: { metric: 'vendor_gpu_power_watts', unit: 'watts' },
};

function keyLabel(name) {
  if (KEY_LABELS[name]) return KEY_LABELS[name];
  const t = name.replace(/_/g, ' ');
  return t.charAt(0).toUpperCase() + t.slice(1);
}

let kindsCache = null;
/** The pull kinds and their config keys, as the server validates them (cached). */
async function sourceKinds() {
  if (!kindsCache) kindsCache = (await api('GET', '/api/v1/source-kinds')).items;
  return kindsCache;
}

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

/** The form control of one config key (spec from /api/v1/source-kinds). */
function keyField(key, cfg, src) {
  const name = `config.${key.name}`;
  const label = keyLabel(key.name);
  const have = cfg[key.name];
  const hint = [key.help, key.group ? `(${key.group})` : null].filter(Boolean).join(' ') || null;
  const wide = ['url', 'object'].includes(key.type);
  let f;
  if (key.type === 'bool') {
    f = checkField(name, label, Boolean(have), hint);
  } else if (key.type === 'secret') {
    // A secret is never filled back: the field says whether one is stored.
    const stored = Boolean(src && have);
    f = field({ name, label, type: 'password', value: '', autocomplete: 'new-password', required: key.required && !stored,
      hint: stored ? `A ${key.name.includes('token') ? 'token' : 'secret'} is stored. Leave blank to keep it.${hint ? ` ${hint}` : ''}` : hint });
    if (stored) f.append(checkField(`remove.${key.name}`, `Remove the stored ${label.toLowerCase()}`, false, null));
  } else if (key.type === 'int') {
    f = field({ name, label, type: 'number', value: have ?? '', required: key.required, hint,
      attrs: { min: key.min, max: key.max, step: 1, inputmode: 'numeric' } });
  } else if (key.type === 'object') {
    f = field({ name, label, type: 'textarea', rows: 10, required: key.required, hint, wide,
      value: have && typeof have === 'object' ? JSON.stringify(have, null, 2) : '',
      attrs: { spellcheck: 'false', class: 'mono', placeholder: key.name === 'mapping' ? JSON.stringify(MAPPING_EXAMPLE, null, 2) : '' } });
  } else if (key.type === 'list') {
    f = field({ name, label, value: Array.isArray(have) ? have.join(', ') : '', required: key.required,
      hint: [hint, 'Separate entries with commas'].filter(Boolean).join(' · '), attrs: { spellcheck: 'false' } });
  } else {
    f = field({ name, label, type: key.type === 'url' ? 'url' : 'text', value: have ?? '', required: key.required, hint, wide,
      attrs: { spellcheck: 'false', maxlength: key.type === 'url' ? 2000 : 4096, ...(key.type === 'url' ? { inputmode: 'url' } : {}) } });
  }
  f.dataset.key = key.name;
  return f;
}

/**
 * Reads the config of a kind from the form: on add, blank settings are left
 * out; on edit, a cleared setting is sent as null. A blank secret keeps the
 * stored one (or removes it when asked).
 */
function readConfig(form, keys, cfg, src) {
  const config = {};
  const had = (k) => src && cfg[k] !== undefined && cfg[k] !== null;
  for (const key of keys) {
    const name = `config.${key.name}`;
    const label = keyLabel(key.name);
    const el = form.elements.namedItem(name);
    if (!el) continue;
    let v = null;
    if (key.type === 'bool') {
      if (el.checked || had(key.name)) config[key.name] = el.checked;
      continue;
    }
    if (key.type === 'secret') {
      const remove = form.elements.namedItem(`remove.${key.name}`);
      if (el.value) config[key.name] = el.value;
      else if (remove && remove.checked) config[key.name] = null;
      else if (key.required && !had(key.name)) throw fieldError(name, `Enter the ${label.toLowerCase()}`);
      continue;
    }
    const raw = value(form, name);
    if (key.type === 'int') v = intField(form, name, label);
    else if (key.type === 'list') v = raw ? raw.split(',').map((x) => x.trim()).filter(Boolean) : null;
    else if (key.type === 'object' && raw) {
      try {
        v = JSON.parse(raw);
      } catch (e) {
        throw fieldError(name, `${label} must be JSON: ${e.message}`);
      }
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw fieldError(name, `${label} must be a JSON object`);
    } else v = raw;
    if (v !== null && v !== '') config[key.name] = v;
    else if (key.required) throw fieldError(name, `Enter the ${label.toLowerCase()}`);
    else if (had(key.name)) config[key.name] = null;
  }
  return config;
}

/**
 * A server error about a part of a config key (config.mapping.power.unit)
 * shown next to that key's field, with the server's words.
 */
function nearField(form, err) {
  const m = err && err.status > 0 && typeof err.field === 'string' && /^(config\.[^.]+)\./.exec(err.field);
  if (!m || !form.querySelector(`.field[data-field="${CSS.escape(m[1])}"]`)) return err;
  return fieldError(m[1], err.message);
}

/** What a test pull found, in words. */
function foundText(found) {
  const f = found || {};
  const n = (x, one, many) => `${num(x)} ${x === 1 ? one : many}`;
  const parts = [`${n(f.gpus, 'GPU', 'GPUs')} on ${n(f.hosts, 'host', 'hosts')}`];
  if (isNum(f.instances)) parts.push(n(f.instances, 'instance', 'instances'));
  if (isNum(f.jobs)) parts.push(n(f.jobs, 'job', 'jobs'));
  if (isNum(f.pods)) parts.push(n(f.pods, 'GPU pod', 'GPU pods'));
  if (f.assets) parts.push(`assets: ${num(f.assets.created)} new, ${num(f.assets.updated)} changed, ${num(f.assets.unchanged)} unchanged`);
  return parts.join(' · ');
}

/**
 * Opens the add (src absent) or edit form of a pull source, built from the
 * kind's config keys as the server lists them. "Test connection" pulls once
 * without storing anything (a saved source is tested with its stored
 * secrets). Resolves to the saved source or null.
 */
async function editSource(src) {
  let saved = null;
  let kinds;
  try {
    kinds = await sourceKinds();
  } catch (err) {
    if (err.status !== 401) toast(err.message, 'error');
    return null;
  }
  const cfg = (src && src.config) || {};
  const schemaOf = (k) => (kinds.find((x) => x.kind === k) || { keys: [] }).keys;
  const kindField = field({ name: 'kind', label: 'Kind', type: 'select', required: true,
    value: src ? src.kind : 'dcgm-exporter', choices: kinds.map((k) => ({ value: k.kind, label: KIND_LABELS[k.kind] || k.kind })),
    attrs: src ? { disabled: true } : {}, hint: src ? 'The kind of a source cannot change' : null });
  const kindSel = kindField.querySelector('select');
  const cfgBox = h('div', { class: 'form-sub', 'data-testid': 'config-fields' });
  const testResult = h('div', { class: 'run-result', role: 'status', 'data-testid': 'test-result', hidden: true });
  const testBtn = h('button', { type: 'button', class: 'btn btn-secondary', 'data-testid': 'test-source', text: 'Test connection' });
  const fields = [
    h('h3', { class: 'form-section', text: 'Source' }),
    field({ name: 'name', label: 'Name', required: true, value: src ? src.name : '', attrs: { maxlength: 63 } }),
    kindField,
    h('h3', { class: 'form-section', text: 'Connection' }),
    cfgBox,
    h('div', { class: 'field field-wide test-row' }, testBtn, testResult),
    h('h3', { class: 'form-section', text: 'Schedule' }),
    field({ name: 'interval_s', label: 'Interval (seconds)', type: 'number', value: src ? src.interval_s : 300,
      attrs: { min: 10, max: 86400, step: 1, inputmode: 'numeric' }, hint: 'How often the server pulls (10–86400)' }),
    checkField('enabled', 'Enabled', src ? Boolean(src.enabled) : true, 'A disabled source is kept but not pulled'),
    h('h3', { class: 'form-section', text: 'Defaults for what it reports' }),
    field({ name: 'team', label: 'Team', value: src ? src.team || '' : '', attrs: { maxlength: 128 } }),
    field({ name: 'env', label: 'Environment', value: src ? src.env || '' : '', attrs: { maxlength: 64 } }),
    field({ name: 'cluster', label: 'Cluster', value: src ? src.cluster || '' : '', attrs: { maxlength: 128 } }),
  ];
  const syncKind = () => {
    replace(cfgBox, schemaOf(kindSel.value).map((key) => keyField(key, src && src.kind === kindSel.value ? cfg : {}, src)));
    testResult.hidden = true;
  };
  kindSel.addEventListener('change', syncKind);
  syncKind();

  /** The body a save (or a test) sends. */
  const bodyOf = (form, forTest) => {
    const kind = src ? src.kind : value(form, 'kind');
    const name = value(form, 'name');
    if (!name && !forTest) throw fieldError('name', 'Enter a name');
    const body = { config: readConfig(form, schemaOf(kind), src && src.kind === kind ? cfg : {}, src) };
    if (name) body.name = name;
    if (!forTest) {
      body.enabled = form.elements.namedItem('enabled').checked;
      const interval = intField(form, 'interval_s', 'Interval');
      if (interval !== null) body.interval_s = interval;
    }
    for (const k of ['team', 'env', 'cluster']) {
      const v = value(form, k);
      if (v || (src && src[k] && !forTest)) body[k] = v;
    }
    if (!src) body.kind = kind;
    return body;
  };

  testBtn.addEventListener('click', async () => {
    const form = testBtn.form;
    clearErrors(form);
    testBtn.disabled = true;
    testBtn.textContent = 'Testing…';
    testResult.hidden = true;
    try {
      const body = bodyOf(form, true);
      const r = src ? await api('POST', `/api/v1/sources/${src.id}/test`, body) : await api('POST', '/api/v1/sources/test', body);
      testResult.className = `run-result ${r.ok ? 'run-ok' : 'run-failed'}`;
      const warn = (r.warnings || []).map((w) => h('li', { text: w.message }));
      replace(testResult, r.ok
        ? [h('strong', { text: 'The connection works. ' }), h('span', { 'data-testid': 'test-found', text: `Found ${foundText(r.found)}.` })]
        : [h('strong', { text: 'The test failed. ' }), h('span', { 'data-testid': 'test-error', text: r.error || 'No reason was given.' })],
      warn.length ? h('ul', { 'data-testid': 'test-warnings' }, warn) : null);
      testResult.hidden = false;
    } catch (err) {
      if (err.status !== 401) showError(form, nearField(form, err));
    } finally {
      testBtn.disabled = false;
      testBtn.textContent = 'Test connection';
    }
  });
  await formDialog({
    title: src ? `Edit ${src.name}` : 'Add pull source',
    fields,
    wide: true,
    submitLabel: src ? 'Save changes' : 'Add source',
    async submit(form) {
      const body = bodyOf(form, false);
      try {
        saved = src ? await api('PATCH', `/api/v1/sources/${src.id}`, body) : await api('POST', '/api/v1/sources', body);
      } catch (err) {
        throw nearField(form, err);
      }
    },
  });

  if (saved) toast(src ? `Saved ${saved.name}` : `Added ${saved.name}`);
  return saved;
}

/**
 * The warnings cell of a source: how many warnings its reports and pulls
 * gave (values dropped as unreadable, parts of a listing that did not
 * answer) and the newest.
 */
function warningCell(s) {
  const n = isNum(s.warnings_total) ? s.warnings_total : 0;
  if (n === 0) return h('span', { class: 'muted', 'data-testid': 'source-warnings', text: '—' });
  const at = s.last_warning_at ? ` (${ago(s.last_warning_at)})` : '';
  const tip = `${num(n)} warning${n === 1 ? '' : 's'} so far (unreadable values left out, parts of a listing that did not answer); newest${at}: ${s.last_warning || 'not recorded'}`;
  return h('div', { class: 'stack', 'data-testid': 'source-warnings', title: tip },
    h('span', {}, flag('stale', `${num(n)} warning${n === 1 ? '' : 's'}`, tip)),
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
      { label: 'Last pull', width: '104px', cell: (s) => (!isPull(s.kind) ? h('span', { class: 'muted', text: '—' }) : timeAgo(s.last_attempt_at)) },
      { label: 'Last error', cell: (s) => (s.last_error
        ? h('span', { class: 'clip error-text', title: s.last_error, text: s.last_error })
        : h('span', { class: 'muted', text: '—' })) },
      { label: 'Warnings', key: 'warnings', width: '136px', cell: warningCell },
      { label: 'GPUs', cls: 'n', width: '72px', cell: (s) => h('div', { class: 'stack' },
        h('a', { href: `#/gpus?source=${s.id}`, 'data-testid': 'source-gpus', title: gpusTip(s), text: num(s.gpus_reported) }),
        isNum(s.hosts_reported) ? h('span', { class: 'sub', title: 'Hosts of the GPUs this source owns' },
          h('span', { 'data-testid': 'source-hosts', text: num(s.hosts_reported) }), s.hosts_reported === 1 ? ' host' : ' hosts') : null) },
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
