// API tokens (admins only): the list with last use, data centers and
// revocation, a form that creates a pusher, viewer or editor token (confined
// to data centers or not), the new token shown once with a copy button and,
// for a pusher, a copyable agent command that reads the token from a file
// (so it never shows in `ps`), changing a token's data centers, and
// revoking.
import { h, replace, icon, num, toast } from './dom.js';
import { api } from './api.js';
import { field, formDialog, fieldErrors, fieldError, value, para } from './dialog.js';
import { dataTable } from './table.js';
import { timeAgo } from './fmt.js';

const ROLES = [
  { value: 'pusher', label: 'Pusher: agents report GPUs as one source' },
  { value: 'viewer', label: 'Viewer: reads everything' },
  { value: 'editor', label: 'Editor: changes the inventory' },
];
const TOKEN_FILE = '~/.config/gpuinv/agent.token';

/**
 * Copies text to the clipboard: the Clipboard API where the page may use
 * it (HTTPS or localhost), else the selected text of `fallback` (an input).
 */
async function copy(text, fallback) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    /* fall back to selecting the text */
  }
  if (fallback) {
    fallback.focus();
    fallback.select();
    try {
      return document.execCommand('copy');
    } catch {
      return false;
    }
  }
  return false;
}

/** A read-only box holding text with a Copy button beside it. */
function copyBox(text, label, testid, multiline = false) {
  const box = multiline
    ? h('textarea', { readonly: true, rows: text.split('\n').length + 1, wrap: 'off', 'aria-label': label, 'data-testid': testid, spellcheck: 'false' })
    : h('input', { type: 'text', readonly: true, 'aria-label': label, 'data-testid': testid, spellcheck: 'false' });
  box.value = text;
  const btn = h('button', { type: 'button', class: 'btn btn-secondary btn-sm', 'data-testid': `${testid}-copy`,
    'aria-label': `Copy ${label.toLowerCase()}` }, icon('copy'), 'Copy');
  btn.addEventListener('click', async () => {
    const ok = await copy(text, box);
    toast(ok ? `${label} copied` : 'Select the text and copy it', ok ? 'ok' : 'error');
  });
  return h('div', { class: 'secret-box' }, box, btn);
}

/** The commands that install a pusher token on a GPU host and start the agent. */
export function agentCommand(server, token) {
  return [
    `mkdir -p ~/.config/gpuinv && (umask 077; printf '%s\\n' '${token}' > ${TOKEN_FILE})`,
    `gpuinv-agent --server ${server} --token-file ${TOKEN_FILE}`,
  ].join('\n');
}

/** Shows a new token once. Resolves when the dialog closes. */
function reveal(made, role) {
  const server = location.origin;
  return formDialog({
    title: `Token ${made.name} created`,
    intro: [
      para(h('strong', { text: 'Copy the token now: ' }), 'it is shown only this once. The server keeps only its hash.'),
      copyBox(made.token, 'Token', 'new-token'),
      role === 'pusher' ? [
        para('On the GPU host, store the token in a file only you can read, then start the agent with it. ',
          'The token stays out of the command line, where ', h('code', { text: 'ps' }), ' would show it:'),
        copyBox(agentCommand(server, made.token), 'Agent command', 'agent-command', true),
        para('Or export it as ', h('code', { text: 'GPUINV_TOKEN' }), ' in the agent’s environment (a systemd ',
          h('code', { text: 'EnvironmentFile=' }), ', for one).'),
      ] : para('Send it as ', h('code', { text: 'Authorization: Bearer <token>' }), ' to the API.'),
    ],
    wide: true,
    submitLabel: 'Done',
    async submit() {},
  });
}

/**
 * The data-center choice of a token: one checkbox per data center, the ids
 * in `checked` ticked; none ticked means every data center.
 */
function dcPicker(dcs, checked = []) {
  return h('div', { class: 'field field-wide', dataset: { field: 'datacenters' }, 'data-testid': 'token-dcs',
    role: 'group', 'aria-label': 'Data centers' },
    h('label', { text: 'Data centers' }),
    dcs.length
      ? h('div', { class: 'dc-choices' }, dcs.map((d) => h('label', { class: 'check-filter' },
        h('input', { type: 'checkbox', name: 'datacenter', value: String(d.id), checked: checked.includes(d.id) }), d.name)))
      : h('p', { class: 'muted', text: 'There are no data centers yet.' }),
    h('p', { class: 'field-hint', text: 'The token reads, lists and changes only what is in the ticked data centers. None ticked: every data center.' }),
    h('p', { class: 'field-error', hidden: true }));
}

/** The ids ticked in a form's data-center choice. */
const pickedDcs = (form) => [...form.querySelectorAll('input[name=datacenter]:checked')].map((b) => Number(b.value));

/** A token's data centers as names ("All" when it is not confined). */
export function scopeText(t, dcName) {
  const ids = t.datacenters || [];
  return ids.length ? ids.map((id) => dcName.get(id) || `#${id}`).join(', ') : 'All';
}

/** Changes a token's data centers. Resolves to true once saved. */
async function editScope(t, dcs) {
  const ok = await formDialog({
    title: `Data centers of ${t.name}`,
    intro: [para('The change applies from the token’s next request.')],
    fields: [dcPicker(dcs, t.datacenters || [])],
    wide: true,
    submitLabel: 'Save',
    async submit(form) {
      await api('PATCH', `/api/v1/tokens/${t.id}`, { datacenters: pickedDcs(form) });
    },
  });
  if (ok) toast(`Saved the data centers of ${t.name}`);
  return ok;
}

/** The create form. Resolves to the created token (with its secret) or null. */
async function createToken(dcs) {
  let made = null;
  let role = 'pusher';
  const roleField = field({ name: 'role', label: 'Role', type: 'select', required: true, value: role, choices: ROLES, wide: true });
  const pushFields = [
    field({ name: 'source', label: 'Source name', required: true, attrs: { maxlength: 63, spellcheck: 'false' },
      hint: 'The push source its agents report as, e.g. lab-agents; created if new' }),
    field({ name: 'team', label: 'Team', attrs: { maxlength: 128 }, hint: 'Default for the GPUs it reports' }),
    field({ name: 'env', label: 'Environment', attrs: { maxlength: 64 }, hint: 'e.g. prod, dev' }),
    field({ name: 'cluster', label: 'Cluster', attrs: { maxlength: 128 } }),
  ];
  const sel = roleField.querySelector('select');
  const sync = () => { for (const f of pushFields) f.hidden = sel.value !== 'pusher'; };
  sel.addEventListener('change', sync);
  sync();
  await formDialog({
    title: 'Create API token',
    intro: [para('A token authenticates one program or person to the API. It is shown once, when it is created.')],
    fields: [
      field({ name: 'name', label: 'Name', required: true, attrs: { maxlength: 128 }, hint: 'What it is for, e.g. fra1 agents',
        wide: true }),
      roleField,
      pushFields,
      dcPicker(dcs),
    ],
    wide: true,
    submitLabel: 'Create token',
    async submit(form) {
      role = value(form, 'role');
      const body = { name: value(form, 'name'), role };
      const problems = [];
      if (!body.name) problems.push({ field: 'name', message: 'Enter a name' });
      if (role === 'pusher') {
        body.source = value(form, 'source');
        if (!body.source) problems.push({ field: 'source', message: 'Enter the source name its agents report as' });
        for (const k of ['team', 'env', 'cluster']) if (value(form, k)) body[k] = value(form, k);
      }
      if (problems.length === 1) throw fieldError(problems[0].field, problems[0].message);
      if (problems.length) throw fieldErrors(problems);
      const picked = pickedDcs(form);
      if (picked.length) body.datacenters = picked;
      made = await api('POST', '/api/v1/tokens', body);
    },
  });
  if (made) await reveal(made, role);
  return made;
}

/** Asks before revoking a token. Resolves to true once revoked. */
async function revoke(t) {
  const ok = await formDialog({
    title: 'Revoke token',
    intro: [para('Revoke ', h('strong', { text: t.name }), ` (${t.role})? Whatever uses it is refused from now on. `,
      'This cannot be undone.')],
    submitLabel: 'Revoke',
    danger: true,
    async submit() {
      await api('DELETE', `/api/v1/tokens/${t.id}`);
    },
  });
  if (ok) toast(`Revoked ${t.name}`);
  return ok;
}

/** Renders the token list into main. */
export function renderTokens(main, ctx) {
  document.title = 'Tokens · gpuinv';
  let seq = 0;
  const sub = h('p', { class: 'page-sub', 'data-testid': 'token-total' });
  const showRevoked = h('input', { type: 'checkbox', name: 'revoked' });
  let dcs = [];
  let dcName = new Map();
  const table = dataTable({
    label: 'Tokens',
    minWidth: 940,
    empty: () => h('div', { class: 'empty-state' }, h('strong', { text: 'No tokens.' }),
      h('span', { text: 'Create a pusher token to connect the agents on your GPU hosts.' })),
    columns: [
      { label: 'Name', cell: (t) => h('span', { class: 'row-link clip', title: t.name, text: t.name }) },
      { label: 'Role', width: '110px', cell: (t) => h('span', { class: `role-tag role-${t.role}`, text: t.role }) },
      { label: 'Data centers', key: 'datacenters', width: '180px', cell: (t) => h('span', { class: `clip${(t.datacenters || []).length ? '' : ' muted'}`,
        'data-testid': 'token-scope', title: scopeText(t, dcName), text: scopeText(t, dcName) }) },
      { label: 'Created', width: '130px', cell: (t) => timeAgo(t.created_at) },
      { label: 'Last used', width: '130px', cell: (t) => timeAgo(t.last_used_at) },
      { label: 'Status', key: 'status', cls: 'flags', width: '130px', cell: (t) => (t.revoked_at
        ? h('span', { class: 'badge badge-flag badge-off', title: `Revoked ${new Date(t.revoked_at).toLocaleString()}`, text: 'Revoked' })
        : h('span', { class: 'badge badge-flag badge-ok', text: 'Active' })) },
      { label: 'Actions', key: 'actions', cls: 'actions', width: '190px', cell: (t) => (t.revoked_at ? h('span', { class: 'muted', text: '—' })
        : h('span', {},
          t.role === 'admin' ? null : h('button', { type: 'button', class: 'btn btn-ghost btn-sm', text: 'Scope', 'aria-label': `Data centers of ${t.name}`,
            on: { click: async () => { if (await editScope(t, dcs)) load(); } } }),
          h('button', { type: 'button', class: 'btn btn-ghost btn-sm btn-ghost-danger', text: 'Revoke', 'aria-label': `Revoke ${t.name}`,
            on: { click: async () => { if (await revoke(t)) load(); } } }))) },
    ],
  });

  async function load() {
    const my = ++seq;
    table.setBusy(true);
    try {
      const [res, dcList] = await Promise.all([api('GET', '/api/v1/tokens'),
        api('GET', '/api/v1/datacenters?limit=500').then((r) => r.items).catch(() => [])]);
      if (my !== seq || !ctx.alive()) return;
      dcs = dcList;
      dcName = new Map(dcs.map((d) => [d.id, d.name]));
      const active = res.items.filter((t) => !t.revoked_at);
      table.setRows(showRevoked.checked ? res.items : active);
      sub.textContent = `${num(active.length)} active · ${num(res.items.length - active.length)} revoked`;
    } catch (err) {
      if (my !== seq) return;
      table.setRows([]);
      if (err.status !== 401) toast(err.message, 'error');
    } finally {
      if (my === seq) table.setBusy(false);
    }
  }
  showRevoked.addEventListener('change', load);

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {}, h('h1', { text: 'API tokens' }), sub),
      h('div', { class: 'page-actions' },
        h('button', { type: 'button', class: 'btn btn-primary', 'data-testid': 'create-token',
          on: { click: async () => { if (await createToken(dcs)) load(); } } }, icon('plus'), 'Create token'))),
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' }, h('label', { class: 'check-filter' }, showRevoked, 'Show revoked tokens')),
      table.el));
  load();
}
