// The demo's hardware assets, for the simulated hosts of demo-fleet.mjs:
// a server asset per host and a GPU asset per GPU (matched to the
// discovered GPU by its UUID), with tags, serials, purchase dates and
// costs, depreciation and warranties (some ending within 30 days of the
// history's end), two spare GPUs in each data center, and one GPU whose
// XID errors rise over the last five days (xidAt, read by the history
// loader) so that the example rule "XID errors on more than 3 days in 30"
// moves it to Diagnostic & Repair once the rule is enabled and the
// lifecycle:rules job runs. Deterministic: the same records every run.
import { rand } from './demo-fleet.mjs';

const DAY = 86400;
const ymd = (t) => new Date(t * 1000).toISOString().slice(0, 10);
export const serverTag = (plan) => `SRV-${plan.name}`;
export const gpuTag = (plan, g) => `GPU-${plan.name}-${g}`;
/** The name of the example rule the demo enables. */
export const XID_RULE = 'XID errors on more than 3 days in 30: diagnostic and repair';

/** The GPU with rising XID errors: the first GPU of the first host. */
export function xidGpu(plans) {
  return plans.length && plans[0].gpus.length ? { plan: plans[0], g: 0 } : null;
}

/**
 * The XID code GPU g of plan reports at ts (0: none) when it is the
 * rising-XID GPU of plans: on each of the last five days before end, as
 * many distinct errors as the day is late (1, 1, 2, 3, 4), an hour apart
 * from 10:00 UTC, each reading alone (the next one reads 0 again).
 */
export function xidAt(plans, plan, g, ts, end) {
  const x = xidGpu(plans);
  if (!x || x.plan !== plan || x.g !== g) return 0;
  const back = Math.ceil((end - ts) / DAY); // 1 = the last day
  const perDay = { 5: 1, 4: 1, 3: 2, 2: 3, 1: 4 }[back] || 0;
  const sinceTen = (ts % DAY) - 10 * 3600;
  if (perDay === 0 || sinceTen < 0 || sinceTen % 3600 !== 0) return 0;
  return sinceTen / 3600 < perDay ? [79, 48, 94, 63][sinceTen / 3600] : 0;
}

/**
 * The asset records (POST /api/v1/assets bodies) of the hosts' servers and
 * GPUs and of two spare GPUs per data center, warranties reckoned from end
 * (unix seconds): about one in six ends 5 to 25 days after it.
 */
export function assetRecords(plans, end) {
  const out = [];
  const dcs = new Map();
  const warranty = (key, bought) => (rand(key, 'warranty') < 1 / 6
    ? ymd(end + (5 + Math.floor(rand(key, 'soon') * 21)) * DAY)
    : ymd(bought + 3 * 365 * DAY));
  for (const plan of plans) {
    const bought = end - (200 + Math.floor(rand(plan.name, 'bought') * 700)) * DAY;
    const rack = `R${1 + Math.floor(rand(plan.name, 'rack') * 12)}`;
    const loc = plan.datacenter ? { datacenter: plan.datacenter, room: 'hall-1', rack, u: 2 + (plan.h % 8) * 5 } : undefined;
    if (plan.datacenter && !dcs.has(plan.datacenter)) dcs.set(plan.datacenter, plan.model);
    out.push({
      tag: serverTag(plan), kind: 'server', serial: plan.serial || `SRV${String(plan.h).padStart(7, '0')}`,
      vendor: 'Supermicro', model: 'SYS-821GE-TNHR', location: loc, purchase_date: ymd(bought),
      purchase_cost: { amount: String(240000 + Math.floor(rand(plan.name, 'cost') * 80) * 1000), currency: 'USD' },
      supplier: 'Acme Systems', order_number: `PO-${2023000 + plan.h}`, warranty_end: warranty(plan.name, bought),
      depreciation_years: 5,
    });
    for (const gpu of plan.gpus) {
      out.push({
        tag: gpuTag(plan, gpu.index), kind: 'gpu', serial: gpu.serial, vendor: 'NVIDIA', model: plan.model,
        parent: serverTag(plan), gpu_uuid: gpu.uuid, location: loc, purchase_date: ymd(bought),
        purchase_cost: { amount: String(25000 + Math.floor(rand(gpu.uuid, 'cost') * 8) * 500), currency: 'USD' },
        supplier: 'Acme Systems', order_number: `PO-${2023000 + plan.h}`, warranty_end: warranty(gpu.uuid, bought),
        depreciation_years: 4,
      });
    }
  }
  let n = 0;
  for (const [dc, model] of dcs) {
    n++;
    for (let i = 1; i <= 2; i++) {
      const key = `${dc}-spare-${i}`;
      const bought = end - (60 + Math.floor(rand(key, 'bought') * 300)) * DAY;
      out.push({
        tag: `SPARE-${n}-${i}`, kind: 'gpu', stage: 'spare', serial: `SP${String(n * 100 + i).padStart(8, '0')}`,
        vendor: 'NVIDIA', model, location: { datacenter: dc, storage: 'spares cage' }, purchase_date: ymd(bought),
        purchase_cost: { amount: '27500', currency: 'USD' }, supplier: 'Acme Systems',
        warranty_end: warranty(key, bought), depreciation_years: 4,
      });
    }
  }
  return out;
}

/**
 * Creates the records that are not there yet (servers before their GPUs)
 * and enables the XID example rule. api: adminApi(). Resolves to a line
 * saying what it did.
 */
export async function setupAssets(api, plans, end) {
  const probe = await api('GET', '/api/v1/assets?limit=1');
  if (probe.status === 404 || probe.status === 405) return 'assets: this build has no assets API; skipped';
  let created = 0;
  let existing = 0;
  for (const rec of assetRecords(plans, end)) {
    const r = await api('POST', '/api/v1/assets', rec);
    if (r.status === 201) created++;
    else if (r.status === 409) existing++;
    else return `assets: POST /api/v1/assets ${rec.tag} refused: ${r.status} ${r.text.slice(0, 200)}`;
  }
  const rules = await api('GET', '/api/v1/lifecycle-rules');
  const rule = ((rules.json && rules.json.items) || []).find((x) => x.name === XID_RULE);
  let ruleLine = 'the XID example rule was not found';
  if (rule) {
    const r = rule.enabled ? { status: 200 } : await api('PATCH', `/api/v1/lifecycle-rules/${rule.id}`, { enabled: true });
    ruleLine = r.status === 200 ? `rule "${XID_RULE}" enabled` : `enabling the XID rule answered ${r.status}`;
  }
  const x = xidGpu(plans);
  return `assets: ${created} created, ${existing} there already; ${ruleLine}` +
    (x ? ` (${gpuTag(x.plan, x.g)} has rising XID errors)` : '');
}
