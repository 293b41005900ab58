// One hardware asset (#/assets/{tag}): its fields, location with parent and
// children, warranty, book value, energy, health with its reasons when
// known, the label, its tickets, its sync conflicts with NetBox or
// Snipe-IT and the event timeline (stage changes,
// scans, drift, tickets, rules); editors move it to an allowed next stage
// (a refused move shows the stages the server allows) and edit its fields.
import { h, replace, num, toast } from './dom.js';
import { api, withQuery, canWrite, ApiError } from './api.js';
import { timeAgo, when } from './fmt.js';
import { gpuHref, gpuApiPath } from './gpus.js';
import { timeChart } from './chart.js';
import { iso } from './filters.js';
import { field, formDialog, showError, clearErrors, value } from './dialog.js';
import { STAGES, NEXT_STAGES, stageLabel, stageBadge, warrantyBadge, kindLabel, assetHref } from './assets.js';

/** The fields the edit form changes: [name, label, type]. */
const EDITABLE = [
  ['serial', 'Serial', 'text'], ['epc', 'EPC (RFID)', 'text'], ['vendor', 'Vendor', 'text'], ['model', 'Model', 'text'],
  ['datacenter', 'Data center', 'text'], ['room', 'Room', 'text'], ['rack', 'Rack', 'text'], ['rack_u', 'U position', 'number'],
  ['storage', 'Storage', 'text'], ['purchase_date', 'Purchase date', 'date'], ['supplier', 'Supplier', 'text'],
  ['order_number', 'Order number', 'text'], ['warranty_end', 'Warranty end', 'date'], ['lease_end', 'Lease end', 'date'],
  ['depreciation_years', 'Depreciation (years)', 'number'],
];

/** The telemetry ranges of a GPU asset: [value, label, seconds, bucket]. */
const TELEMETRY_RANGES = [['7d', 'Last 7 days', 7 * 86400, 'hour'], ['30d', 'Last 30 days', 30 * 86400, 'day']];

/** A number, or null. */
const numOr = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/**
 * The hours of a GPU timeline as chart points, per hour or folded into UTC
 * days: utilization and power averaged over the hours that have them,
 * temperature the highest; hours (days) without any reading are left out.
 */
export function telemetryPoints(hours, bucket) {
  const rows = (hours || []).map((p) => ({ t: Date.parse(p.start) / 1000, util: numOr(p.util_avg),
    power: numOr(p.power_avg_w), temp: numOr(p.temp_max_c) }))
    .filter((p) => Number.isFinite(p.t) && (p.util !== null || p.power !== null || p.temp !== null))
    .sort((a, b) => a.t - b.t);
  if (bucket !== 'day') return rows;
  const days = new Map();
  for (const p of rows) {
    const d = p.t - (p.t % 86400);
    const acc = days.get(d) || { t: d, u: [], w: [], temp: null };
    if (p.util !== null) acc.u.push(p.util);
    if (p.power !== null) acc.w.push(p.power);
    if (p.temp !== null) acc.temp = acc.temp === null ? p.temp : Math.max(acc.temp, p.temp);
    days.set(d, acc);
  }
  const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : null);
  return [...days.values()].map((d) => ({ t: d.t, util: mean(d.u), power: mean(d.w), temp: d.temp }))
    .filter((p) => p.util !== null || p.power !== null || p.temp !== null);
}

/**
 * The telemetry of a GPU asset's discovered GPU: utilization, temperature
 * and power over the last 7 days (per hour) or 30 days (per day), from
 * GET /api/v1/gpus/{uuid}/timeline; each chart carries its data as a table,
 * which is what shows when the chart library is missing.
 */
function telemetryPanel(a, ctx) {
  const body = h('div', { class: 'charts tl-charts', 'data-testid': 'asset-telemetry-body' });
  const sel = h('select', { class: 'filter-input', name: 'telemetry-range', 'aria-label': 'Telemetry range' },
    TELEMETRY_RANGES.map(([v, t]) => h('option', { value: v, text: t })));
  let seq = 0;
  async function load() {
    const my = ++seq;
    const [, , span, bucket] = TELEMETRY_RANGES.find(([v]) => v === sel.value) || TELEMETRY_RANGES[0];
    const nowS = Math.floor(Date.now() / 1000);
    const to = nowS - (nowS % 3600) + 3600;
    replace(body, h('p', { class: 'muted pad', text: 'Loading…' }));
    let data;
    try {
      data = await api('GET', withQuery(`${gpuApiPath(a.gpu_uuid)}/timeline`, { from: iso(to - span), to: iso(to) }));
    } catch (err) {
      if (my !== seq || !ctx.alive()) return;
      replace(body, h('p', { class: 'muted pad', 'data-testid': 'telemetry-error',
        text: err.status === 404 ? 'Discovery has no record of this GPU.' : `Could not load the telemetry: ${err.message}` }));
      return;
    }
    if (my !== seq || !ctx.alive()) return;
    const pts = telemetryPoints(data && data.hours, bucket);
    const x = pts.map((p) => p.t);
    const step = bucket === 'day' ? 'day' : 'hour';
    body.dataset.bucket = bucket;
    replace(body,
      timeChart({ title: 'Utilization', testid: 'asset-util', unit: '%', kind: 'line', max: 100, x, step,
        series: [{ label: 'Average', values: pts.map((p) => p.util) }], empty: 'No utilization was measured in this range.' }).el,
      timeChart({ title: 'Temperature', testid: 'asset-temp', unit: '°C', kind: 'line', x, step, digits: 0,
        series: [{ label: 'Highest', values: pts.map((p) => p.temp) }], empty: 'No temperature reading in this range.' }).el,
      timeChart({ title: 'Power', testid: 'asset-power', unit: 'W', kind: 'line', x, step, digits: 0,
        series: [{ label: 'Average', values: pts.map((p) => p.power) }], empty: 'No power reading in this range.' }).el);
  }
  sel.addEventListener('change', load);
  load();
  return h('section', { class: 'panel stack-gap', 'data-testid': 'asset-telemetry' },
    h('div', { class: 'panel-head panel-head-row' }, h('h2', { text: 'Telemetry' }),
      h('div', { class: 'tl-controls' }, sel, ' ', h('a', { class: 'small', href: gpuHref(a.gpu_uuid), text: 'GPU page' }))),
    body);
}

/** What each event kind is called on the timeline. */
const EVENT_LABELS = { created: 'Created', updated: 'Updated', stage: 'Stage change', scan: 'Scan', located: 'Moved',
  drift: 'Drift', ticket: 'Ticket', rule: 'Rule', sync: 'Sync', reserved: 'Reserved', reservation: 'Reservation' };

function panel(title, testid, ...body) {
  return h('section', { class: 'panel', 'data-testid': testid },
    h('div', { class: 'panel-head' }, h('h2', {}, title)), body);
}

function kvRow(label, v, key) {
  const shown = v === null || v === undefined || v === '' ? h('span', { class: 'muted', text: '—' }) : v;
  return h('div', { class: 'kv-row', dataset: { field: key || null } },
    h('dt', { text: label }), h('dd', {}, h('span', { class: 'kv-value' }, shown)));
}

/** "1,234.56 USD" of {amount, currency}, or null. */
function money(m) {
  if (!m || typeof m !== 'object' || m.amount === undefined || m.amount === null) return null;
  // Computed values (the book value) carry micro-units; cents are enough here.
  const amount = /^-?\d+\.\d{3,}$/.test(String(m.amount)) ? Number(m.amount).toFixed(2) : String(m.amount);
  return `${amount}${m.currency ? ` ${m.currency}` : ''}`;
}

/** A JSON value as short text. */
function text(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** One line saying what an event was, from its kind and detail. */
export function eventSummary(e) {
  const d = e.detail && typeof e.detail === 'object' ? e.detail : {};
  switch (e.kind) {
    case 'stage':
      return `${stageLabel(d.from)} → ${stageLabel(d.to)}${d.reason ? `: ${d.reason}` : ''}${d.override ? ' (override)' : ''}`;
    case 'updated':
      return Object.entries(d).map(([k, v]) => (Array.isArray(v) && v.length === 2
        ? `${k}: ${text(v[0])} → ${text(v[1])}` : `${k}: ${text(v)}`)).join('; ');
    case 'scan':
      return [d.via ? `by ${d.via}` : null, d.location ? `at ${text(d.location)}` : null, d.note || null].filter(Boolean).join(' · ');
    case 'located':
      return `${text(d.from)} → ${text(d.to)}`;
    case 'ticket':
      return `ticket #${text(d.ticket_id)}${d.rule ? ` (rule ${text(d.rule)})` : ''}`;
    case 'rule':
      return `rule ${text(d.rule_id)}: ${text(d.action)}`;
    case 'drift':
      return `${text(d.what)}`;
    case 'reserved':
      return d.role === 'spare' ? `spare for ${text(d.for)}` : `spare ${text(d.spare)} reserved`;
    case 'reservation':
      return `spare ${text(d.spare)} for ${text(d.for)}: ${text(d.state)}${d.reason ? ` (${d.reason})` : ''}`;
    default:
      return Object.keys(d).length ? JSON.stringify(d) : '';
  }
}

/** The event timeline, newest first. */
function timelinePanel(events, total) {
  if (!events.length) return panel('Timeline', 'timeline', h('p', { class: 'muted pad', text: 'No events yet.' }));
  return panel(`Timeline (${num(total)})`, 'timeline',
    h('ol', { class: 'asset-timeline' }, events.map((e) => h('li', { class: `asset-event event-${e.kind}`,
      dataset: { kind: e.kind, seq: String(e.seq) } },
    h('span', { class: 'badge badge-event', text: EVENT_LABELS[e.kind] || e.kind }),
    h('span', { class: 'event-text', text: eventSummary(e) }),
    h('span', { class: 'muted small' }, timeAgo(e.at), ` · ${e.actor || ''}`)))),
    total > events.length ? h('p', { class: 'muted small pad', text: `The newest ${events.length} of ${num(total)} events.` }) : null);
}

/** The asset's tickets. */
function ticketsPanel(list) {
  if (!list) return panel('Tickets', 'tickets', h('p', { class: 'muted pad', text: 'Tickets could not be read.' }));
  if (!list.length) return panel('Tickets', 'tickets', h('p', { class: 'muted pad', text: 'No tickets.' }));
  return panel(`Tickets (${list.length})`, 'tickets',
    h('ul', { class: 'link-list' }, list.map((t) => h('li', { dataset: { ticket: String(t.id) } },
      h('span', { class: `badge badge-ticket ticket-${t.state === 'open' ? 'open' : 'closed'}`, text: t.state }),
      ' ',
      t.external_url && /^https?:\/\//.test(t.external_url)
        ? h('a', { href: t.external_url, rel: 'noopener noreferrer', target: '_blank', text: t.external_key || t.title })
        : h('span', { text: t.external_key ? `${t.external_key}: ${t.title}` : t.title }),
      h('span', { class: 'muted small' }, ' · opened ', timeAgo(t.opened_at), t.opened_by ? ` by ${t.opened_by}` : '')))));
}

/**
 * Sync conflicts with NetBox or Snipe-IT: fields the other system changed
 * since gpuinv last synced them, which a push did not overwrite. Loads
 * itself and stays empty (hidden) when there are none; editors keep ours
 * (pushed again) or theirs.
 */
function syncConflictsPanel(tag) {
  const body = h('div', {});
  const box = h('section', { class: 'panel', 'data-testid': 'sync-conflicts', hidden: true },
    h('div', { class: 'panel-head' }, h('h2', {}, 'Sync conflicts')), body);
  const path = `/api/v1/assets/${encodeURIComponent(tag)}/conflicts`;
  const system = (k) => (k.system === 'snipeit' ? 'Snipe-IT' : k.system === 'netbox' ? 'NetBox' : k.source || 'remote');
  async function resolve(k, keep) {
    try {
      await api('POST', `/api/v1/sync-conflicts/${k.id}/resolve`, { keep });
      if (k.field === 'link') toast(keep === 'ours' ? `${k.asset} will be looked up in ${system(k)} again` : `${k.asset} is no longer looked up in ${system(k)}`);
      else toast(keep === 'ours' ? `gpuinv's ${k.field} will be sent to ${system(k)}` : `${system(k)}'s ${k.field} is kept`);
    } catch (err) {
      toast(err.message, 'error');
    }
    load();
  }
  async function load() {
    let list;
    try {
      list = (await api('GET', withQuery(path, { limit: 100 }))).items || [];
    } catch {
      list = null;
    }
    box.hidden = Array.isArray(list) && list.length === 0;
    replace(body, list === null ? h('p', { class: 'muted pad', text: 'Sync conflicts could not be read.' })
      : h('ul', { class: 'plain-list' }, list.map((k) => h('li', { dataset: { conflict: String(k.id) } },
        // a lookup by serial that linked nothing is a finding on "link"
        k.field === 'link' ? h('strong', { text: `${system(k)}: not linked` })
          : h('strong', { text: `${system(k)} ${k.field}` }),
        k.field === 'link' ? h('span', { text: `: ${text(k.theirs)} (serial ${text(k.ours)}); nothing was written` })
          : h('span', { text: `: gpuinv has ${text(k.ours)}, ${system(k)} has ${text(k.theirs)}` }),
        k.base != null ? h('span', { class: 'muted small', text: ` (was ${k.base} at the last sync)` }) : null,
        h('span', { class: 'muted small' }, ' · ', timeAgo(k.detected_at)),
        canWrite() ? h('span', { class: 'link-row' }, ' ',
          h('button', { type: 'button', class: 'btn btn-small', 'data-testid': 'keep-ours',
            on: { click: () => resolve(k, 'ours') }, text: k.field === 'link' ? 'Look it up again' : 'Keep ours' }), ' ',
          h('button', { type: 'button', class: 'btn btn-small btn-secondary', 'data-testid': 'keep-theirs',
            on: { click: () => resolve(k, 'theirs') }, text: k.field === 'link' ? 'Stop looking it up' : 'Keep theirs' })) : null))));
  }
  load();
  return box;
}

/**
 * Spare reservations of the asset, as the spare or as the asset it
 * replaces (GET /reservations?asset=). Loads itself and stays hidden when
 * there are none; editors release an open one.
 */
function reservationsPanel(tag) {
  const body = h('div', {});
  const box = h('section', { class: 'panel', 'data-testid': 'reservations', hidden: true },
    h('div', { class: 'panel-head' }, h('h2', {}, 'Spare reservations')), body);
  async function release(v) {
    const reason = window.prompt(`Release spare ${v.spare} (reserved for ${v.for_asset})? Reason:`, '');
    if (reason === null) return;
    try {
      await api('POST', `/api/v1/reservations/${v.id}/release`, reason.trim() ? { reason: reason.trim() } : {});
      toast(`${v.spare} is no longer reserved`);
    } catch (err) {
      toast(err.message, 'error');
    }
    load();
  }
  async function load() {
    let list;
    try {
      list = (await api('GET', withQuery('/api/v1/reservations', { asset: tag, limit: 100 }))).items || [];
    } catch {
      list = null;
    }
    box.hidden = Array.isArray(list) && list.length === 0;
    replace(body, list === null ? h('p', { class: 'muted pad', text: 'Reservations could not be read.' })
      : h('ul', { class: 'plain-list' }, list.map((v) => h('li', { dataset: { reservation: String(v.id), state: v.state } },
        h('span', { class: `badge badge-event reservation-${v.state}`, text: v.state }), ' ',
        v.spare === tag ? h('span', {}, 'spare for ', h('a', { class: 'mono', href: assetHref(v.for_asset), text: v.for_asset }))
          : h('span', {}, 'replaced by spare ', h('a', { class: 'mono', href: assetHref(v.spare), text: v.spare })),
        v.rule_id ? h('span', { class: 'muted small', text: ` · rule ${v.rule_id}` }) : null,
        h('span', { class: 'muted small' }, ' · reserved ', timeAgo(v.reserved_at),
          v.ended_at ? ` · ${v.state} ${timeAgo(v.ended_at)}${v.ended_by ? ` by ${v.ended_by}` : ''}` : ''),
        v.end_reason ? h('span', { class: 'muted small', text: ` (${v.end_reason})` }) : null,
        canWrite() && v.state === 'reserved' ? h('span', { class: 'link-row' }, ' ',
          h('button', { type: 'button', class: 'btn btn-small btn-secondary', 'data-testid': 'release-reservation',
            on: { click: () => release(v) }, text: 'Release' })) : null))));
  }
  load();
  return box;
}

/** Health with its reasons, when the document has it. */
function healthPanel(hl) {
  if (!hl || typeof hl !== 'object') return null;
  const reasons = Array.isArray(hl.reasons) ? hl.reasons : [];
  return panel('Health', 'health',
    h('div', { class: 'gpu-stat' }, h('span', { class: 'gpu-stat-label', text: 'Score (0–100)' }),
      h('span', { class: 'gpu-stat-value', 'data-testid': 'health-score', text: text(hl.score) })),
    reasons.length ? h('ul', { class: 'plain-list' }, reasons.map((r) => h('li', {
      text: typeof r === 'object' && r ? [r.what || r.reason || r.kind, r.detail || r.message, r.penalty !== undefined ? `−${r.penalty}` : null]
        .filter((x) => x !== undefined && x !== null).map(text).join(' · ') : text(r) })))
      : h('p', { class: 'muted small pad', text: 'No reasons lower the score.' }));
}

/**
 * POSTs a stage change; resolves to {ok, status, data} with the whole reply
 * (a 409 names the current stage and the allowed ones beside its error).
 */
async function postStage(tag, body) {
  let res;
  try {
    res = await fetch(`/api/v1/assets/${encodeURIComponent(tag)}/stage`, { method: 'POST', credentials: 'same-origin',
      headers: { Accept: 'application/json', 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch {
    throw new ApiError(0, { code: 'network', message: 'the server could not be reached' });
  }
  const data = await res.json().catch(() => null);
  if (res.status === 401) {
    // The session is gone: let the usual path take the user to sign in.
    await api('GET', '/api/v1/session').catch(() => {});
  }
  return { ok: res.ok, status: res.status, data };
}

/**
 * The stage-change form: only the stages allowed after the current one
 * (an admin may override a final stage with a reason); a 409 shows the
 * stages the server allows now and offers those.
 */
function stageForm(a, role, onMoved) {
  const alert = h('div', { class: 'form-alert', role: 'alert', 'data-testid': 'stage-error', hidden: true });
  const stageSel = h('select', { name: 'stage', class: 'filter-select', 'aria-label': 'Next stage', required: true });
  const reason = h('input', { type: 'text', name: 'reason', class: 'filter-input', placeholder: 'Reason',
    'aria-label': 'Reason', maxlength: 1024 });
  const override = h('input', { type: 'checkbox', name: 'override' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary', text: 'Change stage' });

  function offer(list, all) {
    replace(stageSel, (all ? STAGES.map(([s]) => s).filter((s) => s !== a.stage) : list)
      .map((s) => h('option', { value: s, text: stageLabel(s) })));
    submit.disabled = stageSel.options.length === 0;
  }
  offer(NEXT_STAGES[a.stage] || [], false);
  override.addEventListener('change', () => offer(NEXT_STAGES[a.stage] || [], override.checked));

  const form = h('form', { class: 'stage-form', 'data-testid': 'stage-form', novalidate: true },
    h('div', { class: 'toolbar' },
      h('label', { class: 'inline-label', text: `From ${stageLabel(a.stage)} to` }), stageSel, reason,
      role === 'admin' ? h('label', { class: 'check' }, override, ' Override') : null, submit),
    alert,
    (NEXT_STAGES[a.stage] || []).length ? null
      : h('p', { class: 'muted small', text: `${stageLabel(a.stage)} is final${role === 'admin' ? ': an admin may override it with a reason.' : '.'}` }));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    alert.hidden = true;
    alert.textContent = '';
    if (!stageSel.value) return;
    submit.disabled = true;
    try {
      const body = { stage: stageSel.value, reason: reason.value.trim() || undefined };
      if (override.checked) body.override = true;
      const res = await postStage(a.tag, body);
      if (res.ok) {
        toast(`${a.tag} is now ${stageLabel(body.stage)}`);
        onMoved();
        return;
      }
      const allowed = Array.isArray(res.data && res.data.allowed) ? res.data.allowed : null;
      if (res.status === 409 && allowed) {
        const now = res.data.stage || a.stage;
        alert.textContent = `Refused: the asset is ${stageLabel(now)} now; allowed next: ${
          allowed.length ? allowed.map(stageLabel).join(', ') : 'none'}.`;
        a.stage = now;
        offer(allowed, false);
      } else {
        alert.textContent = (res.data && res.data.error && res.data.error.message) || `the change failed (${res.status})`;
      }
      alert.hidden = false;
    } catch (err) {
      alert.textContent = err.message;
      alert.hidden = false;
    } finally {
      submit.disabled = stageSel.options.length === 0;
    }
  });
  return form;
}

/** The edit dialog: changed fields only go in the PATCH; an emptied one is cleared. */
async function editAsset(a) {
  const cur = (k) => (k === 'datacenter' ? (a.location && a.location.datacenter) : a[k]);
  // Dates are typed as text (YYYY-MM-DD) so that the server's check names a bad one.
  const fields = EDITABLE.map(([name, label, type]) => field({ name, label, type: type === 'date' ? 'text' : type,
    value: cur(name) === null || cur(name) === undefined ? '' : String(cur(name)),
    attrs: type === 'number' ? { step: name === 'rack_u' ? '1' : 'any' }
      : type === 'date' ? { placeholder: 'YYYY-MM-DD', inputmode: 'numeric' } : {} }));
  return formDialog({
    title: `Edit ${a.tag}`,
    wide: true,
    fields,
    submitLabel: 'Save',
    submit: async (form) => {
      const patch = {};
      for (const [name, , type] of EDITABLE) {
        const v = value(form, name);
        const was = cur(name) === null || cur(name) === undefined ? '' : String(cur(name));
        if (v === was) continue;
        patch[name] = v === '' ? null : type === 'number' ? Number(v) : v;
      }
      if (!Object.keys(patch).length) return true;
      clearErrors(form);
      try {
        await api('PATCH', `/api/v1/assets/${encodeURIComponent(a.tag)}`, patch);
      } catch (err) {
        showError(form, err);
        return false;
      }
      toast(`${a.tag} saved`);
      return true;
    },
  });
}

/** Renders asset `tag` into main. */
export async function renderAsset(main, ctx, tag) {
  document.title = `${tag} · Assets · gpuinv`;
  const path = `/api/v1/assets/${encodeURIComponent(tag)}`;
  replace(main, h('p', { class: 'muted pad', text: 'Loading…' }));
  let a;
  let events;
  let tickets = null;
  try {
    [a, events] = await Promise.all([api('GET', path), api('GET', withQuery(`${path}/events`, { limit: 100 }))]);
  } catch (err) {
    if (!ctx.alive()) return;
    replace(main, h('section', { class: 'panel empty', 'data-testid': 'asset-missing' },
      h('h1', { text: err.status === 404 ? 'No such asset' : 'The asset could not be read' }),
      h('p', { text: err.status === 404 ? `No asset has the tag ${tag}.` : err.message }),
      h('p', {}, h('a', { href: '#/assets', text: 'Back to assets' }))));
    return;
  }
  try {
    tickets = (await api('GET', withQuery('/api/v1/tickets', { asset: a.tag, limit: 100 }))).items;
  } catch {
    tickets = null;
  }
  if (!ctx.alive()) return;
  const reload = () => renderAsset(main, ctx, tag);
  const loc = a.location || {};
  const children = Array.isArray(a.children) ? a.children : [];
  const custom = a.custom && typeof a.custom === 'object' ? Object.entries(a.custom) : [];

  const fields = panel('Fields', 'fields', h('dl', { class: 'kv' },
    kvRow('Kind', kindLabel(a.kind), 'kind'),
    kvRow('Serial', a.serial ? h('span', { class: 'mono', text: a.serial }) : null, 'serial'),
    kvRow('EPC', a.epc ? h('span', { class: 'mono', text: a.epc }) : null, 'epc'),
    kvRow('Vendor', a.vendor, 'vendor'),
    kvRow('Model', a.model, 'model'),
    kvRow('Discovered GPU', a.gpu_uuid ? h('a', { class: 'mono', href: gpuHref(a.gpu_uuid), text: a.gpu_uuid }) : null, 'gpu_uuid'),
    kvRow('Purchase date', a.purchase_date, 'purchase_date'),
    kvRow('Purchase cost', money(a.purchase_cost), 'purchase_cost'),
    kvRow('Supplier', a.supplier, 'supplier'),
    kvRow('Order number', a.order_number, 'order_number'),
    kvRow('Depreciation', a.depreciation_years != null ? `${a.depreciation_years} years` : null, 'depreciation_years'),
    kvRow('Salvage value', money(a.salvage), 'salvage'),
    kvRow('Book value', money(a.book_value), 'book_value'),
    kvRow('Energy', typeof a.energy_wh === 'number' ? `${num(Math.round(a.energy_wh))} Wh` : null, 'energy_wh'),
    kvRow('Source', a.source, 'source'),
    custom.map(([k, v]) => kvRow(k, text(v), `custom.${k}`)),
    kvRow('Last seen by discovery', a.last_seen ? timeAgo(a.last_seen) : null, 'last_seen'),
    kvRow('Created', h('span', { title: when(a.created_at) }, timeAgo(a.created_at)), 'created_at'),
    kvRow('Updated', h('span', { title: when(a.updated_at) }, timeAgo(a.updated_at)), 'updated_at')));

  const location = panel('Location', 'location', h('dl', { class: 'kv' },
    kvRow('Data center', loc.datacenter, 'datacenter'),
    kvRow('Room', loc.room, 'room'),
    kvRow('Rack', loc.rack, 'rack'),
    kvRow('U position', loc.u != null ? String(loc.u) : null, 'u'),
    kvRow('Storage', loc.storage, 'storage'),
    kvRow('Inside', a.parent ? h('a', { href: assetHref(a.parent), text: a.parent }) : null, 'parent'),
    kvRow('Contains', children.length ? h('span', { class: 'link-row' }, children.map((c, i) => [i ? ', ' : '',
      h('a', { href: assetHref(c), text: c })])) : null, 'children')));

  const w = a.warranty || {};
  const warranty = panel('Warranty and lease', 'warranty', h('dl', { class: 'kv' },
    kvRow('Status', warrantyBadge(w), 'warranty_status'),
    kvRow('Warranty end', w.end || a.warranty_end, 'warranty_end'),
    kvRow('Days left', typeof w.days_left === 'number' ? String(w.days_left) : null, 'days_left'),
    kvRow('Lease end', a.lease_end, 'lease_end')));

  const labelUrl = `/api/v1/assets/${encodeURIComponent(a.tag)}/label.svg`;
  const label = panel('Label', 'label',
    h('p', { class: 'pad' }, h('img', { src: labelUrl, alt: `QR label of ${a.tag}`, class: 'asset-label-img',
      'data-testid': 'asset-label' })),
    h('p', { class: 'pad small' }, h('a', { href: labelUrl, target: '_blank', rel: 'noopener', text: 'Open the label' }),
      ' · ', h('a', { href: `/api/v1/assets/labels.svg?paper=a4&tags=${encodeURIComponent(a.tag)}`, target: '_blank',
        rel: 'noopener', text: 'Print on an A4 sheet' })));

  const stage = panel('Lifecycle', 'lifecycle',
    h('p', { class: 'pad' }, stageBadge(a.stage), h('span', { class: 'muted small' }, ' since ', timeAgo(a.stage_since))),
    canWrite() ? stageForm(a, ctx.role, reload) : null);

  const edit = canWrite() ? h('button', { type: 'button', class: 'btn btn-secondary', 'data-testid': 'edit-asset',
    on: { click: async () => { if (await editAsset(a)) reload(); } }, text: 'Edit' }) : null;

  replace(main,
    h('div', { class: 'page-head' },
      h('div', {},
        h('p', { class: 'crumbs' }, h('a', { href: '#/assets', text: 'Assets' }), ' / '),
        h('h1', { class: 'mono', 'data-testid': 'asset-tag', text: a.tag }),
        h('p', { class: 'page-sub' }, `${kindLabel(a.kind)}${a.model ? ` · ${a.model}` : ''} · `, stageBadge(a.stage))),
      h('div', { class: 'page-actions' }, edit)),
    h('div', { class: 'asset-grid' },
      h('div', { class: 'asset-col' }, stage, fields, healthPanel(a.health)),
      h('div', { class: 'asset-col' }, location, warranty, label, ticketsPanel(tickets), reservationsPanel(a.tag), syncConflictsPanel(a.tag))),
    a.kind === 'gpu' && a.gpu_uuid ? telemetryPanel(a, ctx) : null,
    timelinePanel(events.items || [], events.total || 0));
}
