// The lifecycle rules page (#/lifecycle/rules): every rule with its
// condition, actions and last run; a form that creates or edits one (the
// condition as a tree of groups, each "every" (all) or "any" of its tests
// and groups, nested; the actions with their parameters), with an
// advanced JSON view of both; enable and disable, delete, and a dry run
// that lists the matching assets with what each action would do. Opening
// a stored rule shows exactly its tree and saving writes the same JSON; a
// fault (here or from the API) names the path of the test it is in.
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

/** A field error naming the rule language's path (condition.all[1].window_days). */
function pathError(path, message) {
  const err = fieldError(path.startsWith('actions') ? 'actions' : 'condition', `${path}: ${message}`);
  err.path = path;
  return err;
}

/** A whole number from an input, or an error naming path. */
function intOf(input, path, min, max, what) {
  const v = input.value.trim();
  const n = Number(v);
  if (v === '' || !Number.isInteger(n) || n < min || n > max) throw pathError(path, `${what} must be a whole number ${min}..${max}`);
  return n;
}

/** One test of the condition tree (a metric or an attribute leaf). */
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
  const daysBits = h('span', { class: 'rule-window' }, ' · on ', daysIn, ' days');
  const metricBits = h('span', { class: 'rule-window' }, ' over ', windowIn, ' days', daysBits);
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
    // xid_days counts days already: it takes no "on N days"
    daysBits.hidden = kind.value === 'metric' && what.value === 'xid_days';
  }
  kind.addEventListener('change', fill);
  what.addEventListener('change', fillOps);
  fill();
  const remove = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Remove', 'aria-label': 'Remove this test' });
  const row = h('li', { class: 'rule-test' }, kind, what, opSel, val, metricBits, remove);
  remove.addEventListener('click', () => onRemove(row));
  /** The leaf as the API takes it; path names it in errors. */
  row.read = (path) => {
    row.dataset.path = path;
    const o = {};
    const v = val.value.trim();
    const number = (name) => {
      if (v === '' || !Number.isFinite(Number(v))) throw pathError(path, `${name}: the value must be a number`);
      return Number(v);
    };
    if (kind.value === 'metric') {
      o.metric = what.value;
      o.window_days = intOf(windowIn, `${path}.window_days`, 1, 90, 'the window');
      if (daysIn.value.trim() && !daysBits.hidden) o.days = intOf(daysIn, `${path}.days`, 1, o.window_days, 'the number of days');
      o[opSel.value] = number(label(METRICS, o.metric));
    } else {
      o.attr = what.value;
      if (o.attr === 'warranty_days_left') {
        o[opSel.value] = number('Warranty days left');
      } else if (opSel.value === 'in') {
        o.in = v.split(',').map((x) => x.trim()).filter(Boolean);
        if (!o.in.length) throw pathError(`${path}.in`, 'in takes one value or more, separated by commas');
      } else {
        o[opSel.value] = v;
      }
    }
    return o;
  };
  return row;
}

/**
 * A group of the condition tree: "every" (all) or "any" of its tests and
 * groups, nested as deep as the rule language allows. onRemove is null
 * for the root group.
 */
function groupBox(cond, onRemove, depth = 0) {
  const join = Array.isArray(cond.any) ? 'any' : 'all';
  const sel = h('select', { name: 'join', 'aria-label': 'Match' },
    h('option', { value: 'all', text: 'every test', selected: join === 'all' }),
    h('option', { value: 'any', text: 'any test', selected: join === 'any' }));
  const list = h('ol', { class: 'rule-tests' });
  const removeRow = (row) => row.remove();
  const addChild = (c) => list.append(c.all || c.any ? groupBox(c, removeRow, depth + 1) : testRow(c, removeRow));
  for (const c of cond[join] || []) addChild(c);
  const addTest = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Add a test' });
  addTest.addEventListener('click', () => addChild({ metric: 'xid_days', window_days: 30, '>': 3 }));
  const addGroup = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Add a group',
    disabled: depth >= MAX_DEPTH - 1 });
  addGroup.addEventListener('click', () => addChild({ any: [{ metric: 'ecc_uncorrected', window_days: 2, '>': 0 }] }));
  const remove = onRemove ? h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Remove group',
    'aria-label': 'Remove this group' }) : null;
  const box = h(onRemove ? 'li' : 'div', { class: 'rule-group', dataset: { depth: String(depth) } },
    h('p', { class: 'rule-group-head' }, 'Match ', sel, ':', remove ? ' ' : null, remove),
    list, h('p', { class: 'rule-group-add' }, addTest, ' ', addGroup));
  if (remove) remove.addEventListener('click', () => onRemove(box));
  box.joinSelect = sel;
  /** {all|any: [...]} as the API takes it; path names it in errors. */
  box.read = (path) => {
    box.dataset.path = path;
    const key = sel.value;
    const kids = [...list.children];
    if (!kids.length) throw pathError(`${path}.${key}`, 'a group needs at least one test');
    return { [key]: kids.map((k, i) => k.read(`${path}.${key}[${i}]`)) };
  };
  return box;
}

/** The conditions nest at most this deep (RULE_MAX_DEPTH in the rule engine). */
const MAX_DEPTH = 8;

/** Whether the tree editor can show a condition exactly (else it stays JSON). */
function editable(c, depth = 0) {
  if (!c || typeof c !== 'object' || Array.isArray(c) || depth > MAX_DEPTH) return false;
  const list = c.all || c.any;
  if (list) return Object.keys(c).length === 1 && Array.isArray(list) && list.length > 0 && list.every((x) => editable(x, depth + 1));
  const op = opOf(c);
  if (!op) return false;
  if (c.metric) {
    const keys = ['metric', 'window_days', 'days', op];
    return METRICS.some(([k]) => k === c.metric) && Object.keys(c).every((k) => keys.includes(k)) && typeof c[op] === 'number'
      && Number.isInteger(c.window_days) && (c.days === undefined || Number.isInteger(c.days));
  }
  if (!ATTRS.some(([k]) => k === c.attr) || Object.keys(c).length !== 2) return false;
  if (c.attr === 'warranty_days_left') return typeof c[op] === 'number';
  return op === 'in' ? Array.isArray(c.in) && c.in.length > 0 && c.in.every((x) => typeof x === 'string' && !x.includes(','))
    : typeof c[op] === 'string' && TEXT_OPS.includes(op);
}

/** Whether the action rows can show an action list exactly. */
function actionsEditable(list) {
  const keys = { stage: ['type', 'to', 'reason'], ticket: ['type', 'title'], webhook: ['type', 'title'], reserve_spare: ['type'] };
  return Array.isArray(list) && list.length > 0 && list.every((a) => a && keys[a.type]
    && Object.keys(a).every((k) => keys[a.type].includes(k) && (k === 'type' || typeof a[k] === 'string')));
}

/** One action row of the form: the type and its parameters. */
function actionRow(act, onRemove) {
  const type = h('select', { name: 'action-type', 'aria-label': 'Action' },
    ACTIONS.map(([k, l]) => h('option', { value: k, text: l, selected: k === act.type })));
  const to = h('select', { name: 'action-to', 'aria-label': 'To stage' },
    STAGES.map(([k, l]) => h('option', { value: k, text: l, selected: k === act.to })));
  const reason = h('input', { name: 'action-reason', 'aria-label': 'Reason', placeholder: 'reason (optional)', value: act.reason || '' });
  const title = h('input', { name: 'action-title', 'aria-label': 'Title', placeholder: 'title (optional)', value: act.title || '' });
  const spare = h('span', { class: 'muted small', text: 'a spare of the same model in the same data center' });
  const remove = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Remove', 'aria-label': 'Remove this action' });
  const sync = () => {
    to.hidden = type.value !== 'stage';
    reason.hidden = type.value !== 'stage';
    title.hidden = type.value !== 'ticket' && type.value !== 'webhook';
    spare.hidden = type.value !== 'reserve_spare';
  };
  type.addEventListener('change', sync);
  sync();
  const row = h('li', { class: 'rule-action' }, type, to, reason, title, spare, remove);
  remove.addEventListener('click', () => onRemove(row));
  row.read = (path) => {
    row.dataset.path = path;
    const o = { type: type.value };
    if (o.type === 'stage') o.to = to.value;
    if (o.type === 'stage' && reason.value.trim()) o.reason = reason.value.trim();
    if ((o.type === 'ticket' || o.type === 'webhook') && title.value.trim()) o.title = title.value.trim();
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
    const start = rule ? rule.condition : { all: [{ attr: 'kind', '=': 'gpu' }] };
    // A condition that is one test is shown as a group of one, and saved
    // as one test again while the group holds only it.
    let bareLeaf = false;
    let tree = null;
    const treeSlot = h('div', { class: 'rule-tree', 'data-testid': 'rule-tree' });
    const acts = h('ol', { class: 'rule-actions' });
    const removeRow = (row) => row.remove();
    const condJson = h('textarea', { name: 'condition-json', rows: 8, class: 'mono', 'aria-label': 'Condition (JSON)' });
    const actJson = h('textarea', { name: 'actions-json', rows: 4, class: 'mono', 'aria-label': 'Actions (JSON)' });
    const advanced = h('input', { type: 'checkbox', name: 'advanced', id: 'rule-advanced' });
    const note = h('p', { class: 'muted small', hidden: true, 'data-testid': 'rule-json-note' });
    const addAct = h('button', { type: 'button', class: 'btn btn-small btn-secondary', text: 'Add an action' });
    addAct.addEventListener('click', () => acts.append(actionRow({ type: 'ticket' }, removeRow)));

    /** Shows a condition and actions in the tree editor. */
    function showTree(cond, actions) {
      bareLeaf = !(cond.all || cond.any);
      tree = groupBox(bareLeaf ? { all: [cond] } : cond, null);
      replace(treeSlot, tree);
      replace(acts, ...actions.map((a) => actionRow(a, removeRow)));
    }
    /** The condition and actions the tree editor holds, checked. */
    function readTree() {
      const root = tree.read('condition');
      const key = Object.keys(root)[0];
      const condition = bareLeaf && root[key].length === 1 && !(root[key][0].all || root[key][0].any) ? root[key][0] : root;
      const actions = [...acts.children].map((r, i) => r.read(`actions[${i}]`));
      if (!actions.length) throw fieldError('actions', 'actions: add at least one action');
      return { condition, actions };
    }
    /** The condition and actions the JSON view holds. */
    function readJson() {
      const parse = (el, what) => {
        try { return JSON.parse(el.value); } catch (e) { throw fieldError(what, `${what}: not JSON (${e.message})`); }
      };
      return { condition: parse(condJson, 'condition'), actions: parse(actJson, 'actions') };
    }
    function setMode(json) {
      advanced.checked = json;
      treeSlot.hidden = json;
      acts.hidden = json;
      addAct.hidden = json;
      condJson.hidden = !json;
      actJson.hidden = !json;
    }
    if (editable(start) && actionsEditable(rule ? rule.actions : [{ type: 'stage', to: 'diagnostic_repair' }])) {
      showTree(start, rule ? rule.actions : [{ type: 'stage', to: 'diagnostic_repair' }]);
      setMode(false);
    } else {
      condJson.value = JSON.stringify(start, null, 2);
      actJson.value = JSON.stringify(rule.actions, null, 2);
      note.textContent = 'The editor cannot show this rule exactly; it is edited as JSON.';
      note.hidden = false;
      setMode(true);
    }

    const name = field({ name: 'name', label: 'Name', required: true, value: rule ? rule.name : '', wide: true });
    const enabled = h('input', { type: 'checkbox', name: 'rule-enabled', id: 'rule-enabled', checked: rule ? rule.enabled : false });
    const alert = h('div', { class: 'form-alert', role: 'alert', hidden: true });
    const condField = h('div', { class: 'field field-wide', dataset: { field: 'condition' } },
      h('label', { text: 'Condition' }), treeSlot, condJson, h('p', { class: 'field-error', hidden: true }));
    const actField = h('div', { class: 'field field-wide', dataset: { field: 'actions' } },
      h('label', { text: 'Actions' }), acts, addAct, actJson, h('p', { class: 'field-error', hidden: true }));
    const dryBtn = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Dry run' });
    const save = h('button', { type: 'submit', class: 'btn btn-primary', text: rule ? 'Save' : 'Create' });
    const cancel = h('button', { type: 'button', class: 'btn btn-secondary', text: 'Cancel' });
    const form = h('form', { class: 'rule-form', novalidate: true }, alert,
      h('div', { class: 'form-grid' }, name,
        h('div', { class: 'field' }, h('label', { for: 'rule-enabled' }, enabled, ' Enabled (runs with the lifecycle:rules job)')),
        h('div', { class: 'field' }, h('label', { for: 'rule-advanced' }, advanced, ' Advanced: edit as JSON'), note),
        condField, actField),
      h('div', { class: 'form-buttons' }, cancel, dryBtn, save));

    /** Shows err in the form, marking the test, group or action its path names. */
    function fail(err) {
      const path = err.path || (err.field && /^(condition|actions)[.[]/.test(err.field) ? err.field : null);
      if (path && !err.path) {
        // the server's answer: its field is the path into the rule
        showError(form, fieldError(path.startsWith('actions') ? 'actions' : 'condition', `${path}: ${err.message}`));
      } else {
        showError(form, err);
      }
      if (!path) return;
      // the element of the path, else of its nearest enclosing one
      let el = null;
      for (let p = path; p && !el;) {
        el = form.querySelector(`[data-path="${CSS.escape(p)}"]`);
        const up = p.replace(/(\.[a-z_]+|\[\d+\])$/, '');
        if (up === p) break;
        p = up;
      }
      if (el) {
        el.classList.add('rule-invalid');
        el.setAttribute('aria-invalid', 'true');
        // the control the path names gets the focus, not the field's first
        const names = { window_days: 'test-window', days: 'test-days', in: 'test-value', to: 'action-to' };
        const last = path.match(/\.([a-z_]+)$/);
        const control = (last && names[last[1]] && el.querySelector(`[name=${names[last[1]]}]`)) || el.querySelector('input, select');
        for (const x of form.querySelectorAll('.field [aria-invalid]')) if (x !== el && x !== control) x.removeAttribute('aria-invalid');
        if (control) {
          control.setAttribute('aria-invalid', 'true');
          control.focus();
        }
      }
    }
    function clear() {
      clearErrors(form);
      for (const el of form.querySelectorAll('.rule-invalid')) el.classList.remove('rule-invalid');
    }
    advanced.addEventListener('change', () => {
      clear();
      try {
        if (advanced.checked) {
          const body = readTree();
          condJson.value = JSON.stringify(body.condition, null, 2);
          actJson.value = JSON.stringify(body.actions, null, 2);
          note.hidden = true;
          setMode(true);
        } else {
          const body = readJson();
          if (!editable(body.condition)) throw fieldError('condition', 'condition: the editor cannot show this condition; keep editing it as JSON');
          if (!actionsEditable(body.actions)) throw fieldError('actions', 'actions: the editor cannot show these actions; keep editing them as JSON');
          showTree(body.condition, body.actions);
          note.hidden = true;
          setMode(false);
        }
      } catch (err) {
        advanced.checked = !advanced.checked;
        fail(err);
      }
    });

    function read() {
      const body = advanced.checked ? readJson() : readTree();
      return { name: form.elements.namedItem('name').value.trim(), enabled: enabled.checked, ...body };
    }
    dryBtn.addEventListener('click', async () => {
      clear();
      try {
        const body = read();
        showReport(await api('POST', '/api/v1/lifecycle-rules/dry-run', { name: body.name || undefined, condition: body.condition, actions: body.actions }),
          `Dry run: ${body.name || 'unsaved rule'}`);
      } catch (err) { fail(err); }
    });
    cancel.addEventListener('click', () => { editor.hidden = true; replace(editor); });
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear();
      try {
        const body = read();
        if (!body.name) throw fieldError('name', 'Name is required');
        const saved = rule ? await api('PATCH', `/api/v1/lifecycle-rules/${rule.id}`, body)
          : await api('POST', '/api/v1/lifecycle-rules', body);
        toast(`${saved.name}: saved`);
        editor.hidden = true;
        replace(editor);
        load();
      } catch (err) { fail(err); }
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
