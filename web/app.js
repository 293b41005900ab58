// Dashboard entry point: session check, page frame and hash routing.
//   #/                           home: the fleet's usage, cost and waste (global filters in the query)
//   #/team/{name}                the same for one team
//   #/leadership                 per team: owned GPUs, utilization, cost, waste, trend
//   #/login                      sign-in page
//   #/datacenters                data-center list
//   #/datacenters/{id}           one data center's overview
//   #/datacenters/{id}/{kinds}   its resources of one kind (servers, vms, ...)
//   #/gpus                       discovered GPUs (filters in the query)
//   #/gpus/{uuid}                one GPU: telemetry, provenance, processes, events
//   #/sources                    push and pull data sources
//   #/resources/{id}             one resource: attributes, allocations, audit, discovered GPUs
//   #/tokens                     API tokens (admins): create, show once, revoke
//   #/drift                      inventory vs discovery drift (filters in the query)
//   #/drift/hosts                discovered hosts and their inventory links
//   #/ownership/{dims}           teams, environments, pools, clusters
//   #/ownership/rules            ordered ownership mapping rules
//   #/ownership/unowned          GPUs without a team
//   #/scan/{tag}                 an asset's scan page (a label's /scan/{tag} redirects here)
//   #/assets                     hardware assets (filters in the query)
//   #/assets/{tag}               one asset: fields, stage change, tickets, timeline
//   #/lifecycle                  assets per lifecycle stage and the recent moves
//   #/lifecycle/rules            the lifecycle rules: edit, enable, dry run
//   #/warranty                   warranties and leases ending per month
import { h, replace, icon } from './js/dom.js';
import { api, setSignedOutHandler, setRole } from './js/api.js';
import { renderLogin } from './js/login.js';
import { renderDatacenters } from './js/datacenters.js';
import { renderOverview, renderResourceTab } from './js/datacenter.js';
import { renderGpus } from './js/gpus.js';
import { renderGpu } from './js/gpu.js';
import { renderSources } from './js/sources.js';
import { renderResource } from './js/resource.js';
import { renderTokens } from './js/tokens.js';
import { renderDrift } from './js/drift.js';
import { renderHosts } from './js/hosts.js';
import { renderHome } from './js/home.js';
import { renderDims, renderRules, renderUnowned, unownedCount, DIMS } from './js/ownership.js';
import { renderScan } from './js/scan.js';
import { renderAssets } from './js/assets.js';
import { renderAsset } from './js/asset.js';
import { renderLifecycle } from './js/lifecycle.js';
import { renderRules as renderLifecycleRules } from './js/rules.js';
import { renderWarranty } from './js/warranty.js';

const root = document.getElementById('app');
let user = null;
let returnTo = null;
let generation = 0;

/** Splits the hash into path segments and query parameters. */
function currentRoute() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?');
  return { parts: path.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(qs || '') };
}

function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

async function signOut() {
  try {
    await api('DELETE', '/api/v1/session', undefined, { quiet401: true });
  } catch {
    /* the session is gone either way */
  }
  user = null;
  returnTo = null;
  go('#/login');
}

function frame(active) {
  const unownedBadge = h('span', { class: 'tab-count', 'data-testid': 'unowned-count', hidden: true,
    'aria-label': 'unowned GPUs' });
  const initial = (user.user || '?').charAt(0).toUpperCase();
  const header = h('header', { class: 'topbar' },
    h('div', { class: 'topbar-inner' },
      h('a', { class: 'brand', href: '#/' },
        h('img', { src: 'logo.svg', alt: '', width: 28, height: 28 }),
        h('span', { class: 'brand-name', text: 'gpuinv' }),
        h('span', { class: 'brand-sub', text: 'GPU inventory' })),
      h('nav', { class: 'topnav', 'aria-label': 'Main' },
        [['home', 'home', 'Home'], ['datacenters', 'datacenter', 'Data centers'], ['gpus', 'gpu', 'GPUs'],
          ['assets', 'server', 'Assets'], ['sources', 'infiniband', 'Sources'], ['drift', 'search', 'Drift'],
          ['ownership', 'users', 'Ownership'],
          user.role === 'admin' ? ['tokens', 'key', 'Tokens'] : null].filter(Boolean)
          .map(([key, ic, label]) => h('a', { href: key === 'home' ? '#/' : `#/${key}`, class: active === key ? 'active' : null,
            'aria-current': active === key ? 'page' : null, dataset: { nav: key } }, icon(ic), label,
          key === 'ownership' ? unownedBadge : null))),
      h('div', { class: 'userbox' },
        h('span', { class: 'avatar', 'aria-hidden': 'true', text: initial }),
        h('span', { class: 'user-meta' },
          h('span', { class: 'user-name', 'data-testid': 'user-name', text: user.user }),
          h('span', { class: 'user-role', text: user.role })),
        h('button', { type: 'button', class: 'btn btn-ghost btn-sm', 'data-testid': 'sign-out',
          'aria-label': 'Sign out', on: { click: signOut } }, icon('logout'),
        h('span', { class: 'signout-label', text: 'Sign out' })))));
  const main = h('main', { id: 'main', class: 'main' });
  replace(root, header, main);
  // The unowned GPUs' count, so that someone fixes them.
  unownedCount().then((n) => {
    if (n == null || !unownedBadge.isConnected) return;
    unownedBadge.textContent = String(n);
    unownedBadge.title = `${n} GPU${n === 1 ? '' : 's'} without a team`;
    unownedBadge.hidden = n === 0;
  });
  return main;
}

async function render() {
  const gen = ++generation;
  // A dialog belongs to the page it was opened on.
  for (const d of document.querySelectorAll('dialog[open]')) d.close();
  const { parts, query } = currentRoute();
  if (parts[0] === 'login') {
    if (user) return go(returnTo || '#/');
    document.title = 'Sign in · gpuinv';
    renderLogin(root, async (who) => {
      user = who;
      setRole(who.role);
      const target = returnTo || '#/';
      returnTo = null;
      go(target);
    });
    return;
  }
  if (!user) {
    try {
      user = await api('GET', '/api/v1/session', undefined, { quiet401: true });
      setRole(user.role);
    } catch {
      returnTo = location.hash && location.hash !== '#/login' ? location.hash : null;
      go('#/login');
      return;
    }
    if (gen !== generation) return;
  }
  const ctx = { alive: () => gen === generation, query, go, role: user.role };
  if (parts.length === 0) return renderHome(frame('home'), ctx, { kind: 'fleet' });
  if (parts[0] === 'leadership' && parts.length === 1) return renderHome(frame('home'), ctx, { kind: 'leadership' });
  if (parts[0] === 'team' && parts.length === 2 && parts[1]) {
    return renderHome(frame('home'), ctx, { kind: 'team', team: parts[1] });
  }
  if (parts[0] === 'datacenters') {
    const main = frame('datacenters');
    if (parts.length === 1) return renderDatacenters(main, ctx);
    const id = Number(parts[1]);
    if (Number.isInteger(id) && id > 0) {
      if (parts.length === 2) return renderOverview(main, ctx, id);
      if (parts.length === 3) return renderResourceTab(main, ctx, id, parts[2]);
    }
  }
  if (parts[0] === 'gpus' && parts.length <= 2) {
    const main = frame('gpus');
    return parts.length === 1 ? renderGpus(main, ctx) : renderGpu(main, ctx, parts[1]);
  }
  if (parts[0] === 'sources' && parts.length === 1) return renderSources(frame('sources'), ctx);
  if (parts[0] === 'resources' && parts.length === 2 && /^[1-9]\d*$/.test(parts[1])) {
    return renderResource(frame('datacenters'), ctx, Number(parts[1]));
  }
  if (parts[0] === 'scan' && parts.length === 2 && parts[1]) return renderScan(frame(''), ctx, parts[1]);
  if (parts[0] === 'tokens' && parts.length === 1 && user.role === 'admin') return renderTokens(frame('tokens'), ctx);
  if (parts[0] === 'drift' && parts.length === 1) return renderDrift(frame('drift'), ctx);
  if (parts[0] === 'drift' && parts.length === 2 && parts[1] === 'hosts') return renderHosts(frame('drift'), ctx);
  if (parts[0] === 'ownership' && parts.length <= 2) {
    const seg = parts[1] || 'teams';
    if (seg === 'rules') return renderRules(frame('ownership'), ctx);
    if (seg === 'unowned') return renderUnowned(frame('ownership'), ctx);
    if (DIMS.some((d) => d.seg === seg)) return renderDims(frame('ownership'), ctx, seg);
  }
  if (parts[0] === 'assets' && parts.length <= 2) {
    const main = frame('assets');
    return parts.length === 1 ? renderAssets(main, ctx) : renderAsset(main, ctx, parts[1]);
  }
  if (parts[0] === 'lifecycle' && parts.length === 1) return renderLifecycle(frame('assets'), ctx);
  if (parts[0] === 'lifecycle' && parts[1] === 'rules' && parts.length === 2) return renderLifecycleRules(frame('assets'), ctx);
  if (parts[0] === 'warranty' && parts.length === 1) return renderWarranty(frame('assets'), ctx);
  const main = frame('');
  document.title = 'Not found · gpuinv';
  replace(main, h('section', { class: 'panel empty' },
    h('h1', { text: 'Page not found' }),
    h('p', {}, h('a', { href: '#/datacenters', text: 'Back to data centers' }))));
}

setSignedOutHandler(() => {
  if (!user) return;
  user = null;
  returnTo = location.hash;
  go('#/login');
});
window.addEventListener('hashchange', render);
render();
