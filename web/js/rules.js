// The lifecycle rules page (#/lifecycle/rules): every rule with its
// condition, actions and last run; a form that creates or edits one (the
// condition as a list of tests joined by "all" or "any", the actions as
// the rules API takes them); enable and disable, delete, and a dry run that
// lists the matching assets with what each action would do. A condition
// the form cannot show as a flat list (nested all/any) is edited as JSON.
import { h, replace, num, toast } from './dom.js';
import { api, canWrite } from './api.js';
import { timeAgo } from './fmt.js';
import { STAGES, stageBadge, assetHref } from './assets.js';
import { field, showError, clearErrors, fieldError } from './dialog.js';

/** The metrics and attributes of the rule language (docs/LIFECYCLE.md). */
const METRICS = [
  ['xid_days', 'Days with XID errors'], ['xid_events', 'XID events'],
  ['ecc_uncorrected', 'Uncorrectable ECC errors'], ['ecc_corrected', 'Correctable ECC errors'],
  ['temp_p95', 'Temperature p95 (°C)'], ['temp_max', 'Temperature max (°C)'],
  ['util_avg', 'Average utilization (%)'], ['remap_failures', 'Row-remap failures'],
];
const ATTRS = [
  ['kind', 'Kind'], ['stage', 'Stage'], ['model', 'Model'], ['datacenter', 'Data center'],
  ['tag', 'Tag'], ['serial', 'Serial'], ['warranty_days_left', 'Warranty days left'],
];
const NUM_OPS = ['>', '>=', '<', '<=', '=', '!='];
const TEXT_OPS = ['=', '!=', 'in'];
const OPS = ['=', '!=', '<', '<=', '>', '>=', 'in'];
const ACTIONS = [['stage', 'Change stage'], ['ticket', 'Open a ticket'], ['webhook', 'Call the webhooks'],
  ['reserve_spare', 'Reserve a spare']];

const label = (list, k) => (list.find(([x]) => x === k) || [k, k])[1];
const opOf = (leaf) => OPS.find((o) => Object.prototype.hasOwnProperty.call(leaf, o));

/** A condition in words, for the list. */
export function conditionText(c) {
  if (!c || typeof c !== 'object') return '';
  if (Array.isArray(c.all)) return c.all.map(conditionText).join(' and ');
  if (Array.isArray(c.any)) return `(${c.any.map(conditionText).join(' or ')})`;
  const op = opOf(c);
  const v = Array.isArray(c[op]) ? c[op].join(', ') : c[op];
  if (c.metric) {
    const days = c.days ? ` on ${c.days} days` : '';
    return `${label(METRICS, c.metric)} ${op} ${v}${days} in ${c.window_days} d`;
  }
  return `${label(ATTRS, c.attr)} ${op === 'in' ? 'in' : op} ${v}`;
}

/** Actions in words. */
export function actionsText(list) {
  return (list || []).map((a) => {
    if (a.type === 'stage') return `→ ${label(STAGES, a.to)}`;
    if (a.type === 'ticket') return `ticket${a.title ? ` “${a.title}”` : ''}`;
    return label(ACTIONS, a.type).toLowerCase();
  }).join(', ');
}

/** The flat tests of a condition, or null when it nests. */
function flatTests(cond) {
  const join = Array.isArray(cond && cond.any) ? 'any' : 'all';
  const list = cond && Array.isArray(cond[join]) ? cond[join] : cond ? [cond] : [];
  if (list.some((c) => c.all || c.any)) return null;
  return { join, list };
}

/** One test row of the condition builder. */
function testRow(leaf, onRemove) {
  const isMetric = !leaf.attr;
  const op = opOf(leaf) || '>';
  const kind = h('select', { name: 'test-kind', 'aria-label': 'Test on' },
    h('option', { value: 'metric', text: 'Telemetry', selected: isMetric }),
    h('option', { value: 'attr', text: 'Attribute', selected: !isMetric }));
  const what = h('select', { name: 'test-what', 'aria-label': 'Measure' });
  const opSel = h('select', { name: 'test-op', 'aria-label': 'Operator' });
  const val = h('input', { name: 'test-value', 'aria-label': 'Value', size: 10,
    value: Array.isArray(leaf[op]) ? leaf[op].join(', ') : String(leaf[op] ?? '') });
  const windowIn = h('input', { name: 'test-window', type: 'number', min: 1, max: 90, 'aria-label': 'Window (days)',
    placeholder: 'window d', value: leaf.window_days ?? 30 });
  const daysIn = h('input', { name: 'test-days', type: 'number', min: 1, max: 90, 'aria-label': 'On at least (days)',
    placeholder: 'every day', value: leaf.days ?? '' });
  const metricBits = h('span', { class: 'rule-window' }, ' over ', windowIn, ' days', ' · on ', daysIn, ' days');
  function fill() {
    const metric = kind.value === 'metric';
    replace(what, ...(metric ? METRICS : ATTRS).map(([k, l]) => h('option', { value: k, text: l })));
    const want = metric ? leaf.metric : leaf.attr;
    if (want && [...what.options].some((o) => o.value === want)) what.value = want;
    fillOps();
    metricBits.hidden = !metric;
  }
  function fillOps() {
    const text = kind.value === 'attr' && what.value !== 'warranty_days_left';
    const keep = opSel.value || op;
    replace(opSel, ...(text ? TEXT_OPS : NUM_OPS).map((o) => h('option', { value: o, text: o })));
    if ([...opSel.options].some((o) => o.value === keep)) opSel.value = keep;
  }
  kind.addEventListener('change', fill);
  what.addEventListener('change', fillOps);
  fill();
  const remove = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Remove', 'aria-label': 'Remove this test' });
  const row = h('li', { class: 'rule-test' }, kind, what, opSel, val, metricBits, remove);
  remove.addEventListener('click', () => onRemove(row));
  row.read = () => {
    const o = {};
    const v = val.value.trim();
    if (kind.value === 'metric') {
      o.metric = what.value;
      o.window_days = Number(windowIn.value);
      if (daysIn.value.trim()) o.days = Number(daysIn.value);
      if (v === '' || Number.isNaN(Number(v))) throw fieldError('condition', `${label(METRICS, o.metric)}: the value must be a number`);
      o[opSel.value] = Number(v);
    } else {
      o.attr = what.value;
      if (o.attr === 'warranty_days_left') {
        if (v === '' || Number.isNaN(Number(v))) throw fieldError('condition', 'Warranty days left: the value must be a number');
        o[opSel.value] = Number(v);
      } else if (opSel.value === 'in') {
        o.in = v.split(',').map((s) => s.trim()).filter(Boolean);
      } else {
        o[opSel.value] = v;
      }
    }
    return o;
  };
  return row;
}

/** One action row of the form. */
function actionRow(act, onRemove) {
  const type = h('select', { name: 'action-type', 'aria-label': 'Action' },
    ACTIONS.map(([k, l]) => h('option', { value: k, text: l, selected: k === act.type })));
  const to = h('select', { name: 'action-to', 'aria-label': 'To stage' },
    STAGES.map(([k, l]) => h('option', { value: k, text: l, selected: k === act.to })));
  const title = h('input', { name: 'action-title', 'aria-label': 'Ticket title', placeholder: 'ticket title', value: act.title || '' });
  const remove = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Remove', 'aria-label': 'Remove this action' });
  const sync = () => {
    to.hidden = type.value !== 'stage';
    title.hidden = type.value !== 'ticket';
  };
  type.addEventListener('change', sync);
  sync();
  const row = h('li', { class: 'rule-action' }, type, to, title, remove);
  remove.addEventListener('click', () => onRemove(row));
  row.read = () => {
    const o = { type: type.value };
    if (o.type === 'stage') o.to = to.value;
    if (o.type === 'ticket' && title.value.trim()) o.title = title.value.trim();
    return o;
  };
  return row;
}

/** The rows of a dry run or run report: asset, stage, why, what happens. */
function reportTable(rep) {
  const rows = (rep.matches || []).map((m) => h('tr', { dataset: { asset: m.asset } },
    h('td', {}, h('a', { class: 'mono', href: assetHref(m.asset), text: m.asset })),
    h('td', {}, stageBadge(m.stage)),
    h('td', { text: (m.why || []).join('; ') || '—' }),
    h('td', {}, h('ul', { class: 'rule-results' }, (m.actions || []).map((a) => h('li', {
      dataset: { result: a.result || '' },
      text: `${label(ACTIONS, a.type)}: ${(a.result || '').replace(/_/g, ' ')}${a.to ? ` (${a.from} → ${a.to})` : ''}${a.spare ? ` ${a.spare}` : ''}${a.error ? ` — ${a.error}` : ''}`,
    }))))));
  return h('div', { class: 'rule-report', 'data-testid': 'rule-report' },
    h('p', { class: 'muted', 'data-testid': 'rule-report-summary',
      text: `${rep.dry_run ? 'Dry run' : 'Run'}: ${num(rep.matched)} of ${num(rep.evaluated)} assets match${rep.truncated ? ' (the first 1,000 shown)' : ''}.` }),
    rows.length ? h('table', { class: 'table' },
      h('thead', {}, h('tr', {}, ['Asset', 'Stage', 'Why', rep.dry_run ? 'What would happen' : 'What happened'].map((t) => h('th', { text: t })))),
      h('tbody', {}, rows)) : h('p', { class: 'muted', text: 'No asset matches.' }));
}

/** Renders the rules page into main. */
export async function renderRules(main, ctx) {
  document.title = 'Lifecycle rules · gpuinv';
  const writer = canWrite();
  const list = h('tbody', { 'data-testid': 'rules' });
  const editor = h('section', { class: 'panel', hidden: true, 'data-testid': 'rule-editor' });
  const report = h('section', { class: 'panel', hidden: true, 'data-testid': 'rule-report-panel' });

  async function load() {
    try {
      const r = await api('GET', '/api/v1/lifecycle-rules');
      if (!ctx.alive()) return;
      replace(list, r.items.length ? r.items.map(ruleRow) : h('tr', {}, h('td', { colspan: 6, class: 'muted', text: 'No rules yet.' })));
    } catch (err) {
      if (err.status !== 401) toast(err.message, 'error');
    }
  }

  function showReport(rep, name) {
    report.hidden = false;
    replace(report, h('div', { class: 'panel-head' }, h('h2', { text: name })), reportTable(rep));
    report.scrollIntoView({ block: 'nearest' });
  }

  function ruleRow(rule) {
    const toggle = h('input', { type: 'checkbox', checked: rule.enabled, disabled: !writer, 'aria-label': `Enabled: ${rule.name}`, name: 'enabled' });
    toggle.addEventListener('change', async () => {
      try {
        await api('PATCH', `/api/v1/lifecycle-rules/${rule.id}`, { enabled: toggle.checked });
        toast(`${rule.name}: ${toggle.checked ? 'enabled' : 'disabled'}`);
        load();
      } catch (err) {
        toggle.checked = !toggle.checked;
        toast(err.message, 'error');
      }
    });
    const dry = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Dry run', disabled: !writer });
    dry.addEventListener('click', async () => {
      try {
        showReport(await api('POST', `/api/v1/lifecycle-rules/${rule.id}/dry-run`), `Dry run: ${rule.name}`);
      } catch (err) { toast(err.message, 'error'); }
    });
    const edit = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Edit', disabled: !writer });
    edit.addEventListener('click', () => openEditor(rule));
    const del = h('button', { type: 'button', class: 'btn btn-small btn-danger', text: 'Delete', disabled: !writer });
    del.addEventListener('click', async () => {
      if (!window.confirm(`Delete the rule “${rule.name}”?`)) return;
      try {
        await api('DELETE', `/api/v1/lifecycle-rules/${rule.id}`);
        toast(`${rule.name}: deleted`);
        load();
      } catch (err) { toast(err.message, 'error'); }
    });
    const last = rule.last_run_at
      ? h('span', {}, timeAgo(rule.last_run_at), ` · ${num(rule.last_matched || 0)} matched`)
      : h('span', { class: 'muted', text: 'never run' });
    return h('tr', { dataset: { rule: String(rule.id), name: rule.name } },
      h('td', {}, toggle),
      h('td', { class: 'rule-name', text: rule.name }),
      h('td', { class: 'small', text: conditionText(rule.condition) }),
      h('td', { class: 'small', text: actionsText(rule.actions) }),
      h('td', { class: 'small', 'data-testid': 'last-run' }, last),
      h('td', { class: 'row-actions' }, dry, edit, del));
  }

  function openEditor(rule) {
    const flat = flatTests(rule ? rule.condition : { all: [{ attr: 'kind', '=': 'gpu' }] });
    const tests = h('ol', { class: 'rule-tests' });
    const acts = h('ol', { class: 'rule-actions' });
    const removeRow = (row) => row.remove();
    const join = h('select', { name: 'join', 'aria-label': 'Match' },
      h('option', { value: 'all', text: 'every test', selected: !flat || flat.join === 'all' }),
      h('option', { value: 'any', text: 'any test', selected: flat && flat.join === 'any' }));
    const json = h('textarea', { name: 'condition-json', rows: 6, class: 'mono', 'aria-label': 'Condition (JSON)' });
    if (flat) for (const leaf of flat.list) tests.append(testRow(leaf, removeRow));
    else json.value = JSON.stringify(rule.condition, null, 2);
    for (const a of rule ? rule.actions : [{ type: 'stage', to: 'diagnostic_repair' }]) acts.append(actionRow(a, removeRow));
    const addTest = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Add a test' });
    addTest.addEventListener('click', () => tests.append(testRow({ metric: 'xid_days', window_days: 30, '>': 3 }, removeRow)));
    const addAct = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Add an action' });
    addAct.addEventListener('click', () => acts.append(actionRow({ type: 'ticket' }, removeRow)));
    const name = field({ name: 'name', label: 'Name', required: true, value: rule ? rule.name : '', wide: true });
    const enabled = h('input', { type: 'checkbox', name: 'rule-enabled', id: 'rule-enabled', checked: rule ? rule.enabled : false });
    const alert = h('div', { class: 'form-alert', role: 'alert', hidden: true });
    const condField = h('div', { class: 'field field-wide', dataset: { field: 'condition' } },
      h('label', { text: 'Condition' }),
      flat ? h('p', {}, 'Match ', join, ':') : h('p', { class: 'muted', text: 'This condition nests; edit it as JSON.' }),
      flat ? tests : json, flat ? addTest : null,
      h('p', { class: 'field-error', hidden: true }));
    const actField = h('div', { class: 'field field-wide', dataset: { field: 'actions' } },
      h('label', { text: 'Actions' }), acts, addAct, h('p', { class: 'field-error', hidden: true }));
    const dryBtn = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Dry run' });
    const save = h('button', { type: 'submit', class: 'btn btn-primary', text: rule ? 'Save' : 'Create' });
    const cancel = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Cancel' });
    const form = h('form', { class: 'rule-form', novalidate: true }, alert,
      h('div', { class: 'form-grid' }, name,
        h('div', { class: 'field' }, h('label', { for: 'rule-enabled' }, enabled, ' Enabled (runs with the lifecycle:rules job)')),
        condField, actField),
      h('div', { class: 'form-buttons' }, cancel, dryBtn, save));

    function read() {
      let condition;
      if (flat) {
        const leaves = [...tests.children].map((r) => r.read());
        if (!leaves.length) throw fieldError('condition', 'Add at least one test');
        condition = leaves.length === 1 ? leaves[0] : { [join.value]: leaves };
      } else {
        try { condition = JSON.parse(json.value); } catch (e) { throw fieldError('condition', `The condition is not JSON: ${e.message}`); }
      }
      const actions = [...acts.children].map((r) => r.read());
      if (!actions.length) throw fieldError('actions', 'Add at least one action');
      return { name: form.elements.namedItem('name').value.trim(), enabled: enabled.checked, condition, actions };
    }
    dryBtn.addEventListener('click', async () => {
      clearErrors(form);
      try {
        const body = read();
        showReport(await api('POST', '/api/v1/lifecycle-rules/dry-run', { name: body.name || undefined, condition: body.condition, actions: body.actions }),
          `Dry run: ${body.name || 'unsaved rule'}`);
      } catch (err) { showError(form, err); }
    });
    cancel.addEventListener('click', () => { editor.hidden = true; replace(editor); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clearErrors(form);
      try {
        const body = read();
        if (!body.name) throw fieldError('name', 'Name is required');
        const saved = rule ? await api('PATCH', `/api/v1/lifecycle-rules/${rule.id}`, body)
          : await api('POST', '/api/v1/lifecycle-rules', body);
        toast(`${saved.name}: saved`);
        editor.hidden = true;
        replace(editor);
        load();
      } catch (err) { showError(form, err); }
    });
    editor.hidden = false;
    replace(editor, h('div', { class: 'panel-head' }, h('h2', { text: rule ? `Edit: ${rule.name}` : 'New rule' })), form);
    form.elements.namedItem('name').focus();
  }

  const newBtn = h('button', { type: 'button', class: 'btn btn-primary', text: 'New rule', disabled: !writer });
  newBtn.addEventListener('click', () => openEditor(null));
  const runAll = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Dry run the enabled rules', disabled: !writer });
  runAll.addEventListener('click', async () => {
    try {
      const r = await api('POST', '/api/v1/lifecycle-rules/evaluate', { dry_run: true });
      report.hidden = false;
      replace(report, h('div', { class: 'panel-head' }, h('h2', { text: `Dry run of ${r.rules.length} enabled rules` })),
        r.rules.length ? r.rules.map((one) => h('div', {}, h('h3', { text: one.rule.name }), reportTable(one)))
          : h('p', { class: 'muted', text: 'No rule is enabled.' }));
    } catch (err) { toast(err.message, 'error'); }
  });

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'Lifecycle rules' }),
        h('p', { class: 'page-sub', text: 'Conditions over telemetry and attributes, and the actions they take; enabled rules run with the lifecycle:rules job' })),
      h('div', { class: 'page-actions' },
        h('a', { class: 'btn btn-secondary', href: '#/lifecycle', text: 'Lifecycle board' }), runAll, newBtn)),
    editor,
    h('section', { class: 'panel' }, h('table', { class: 'table rules-table' },
      h('thead', {}, h('tr', {}, ['On', 'Rule', 'Condition', 'Actions', 'Last run', ''].map((t) => h('th', { text: t })))),
      list)),
    report);
  await load();
}
