// A stand-in for NetBox and Snipe-IT that keeps its objects in memory, so
// that writes change what the next read answers: NetBox devices (list,
// filtered by ?serial=, one device, PATCH) and Snipe-IT hardware (list,
// byserial, one asset, PATCH, checkin, checkout). Every request is recorded with its parsed body.
// `fail` makes the next requests answer an auth failure or a rate limit.
// With `tls` ({cert, key}, PEM text) it speaks HTTPS instead.
import http from 'node:http';
import https from 'node:https';

export const NB_TOKEN = 'nb-writer-0123456789abcdef';
export const SN_TOKEN = 'snipe-writer-eyJ0eXAiOiJKV1Qi';

const statusLabel = (v) => ({ value: v, label: v[0].toUpperCase() + v.slice(1) });

export async function startAssetStandin({ tls } = {}) {
  const sites = { 1: { id: 1, name: 'fra1', slug: 'fra1' }, 2: { id: 2, name: 'ams1', slug: 'ams1' } };
  const locations = { 7: { id: 7, name: 'fra1' }, 8: { id: 8, name: 'ams1' } };
  const statuses = {
    2: { id: 2, name: 'Ready to Deploy', status_meta: 'deployable' },
    4: { id: 4, name: 'Spare', status_meta: 'deployable' },
    5: { id: 5, name: 'Out for Repair', status_meta: 'undeployable' },
  };
  const st = {
    devices: {},
    hardware: {},
    requests: [],
    // {code, times, retryAfter, system}: the next `times` requests to that system fail
    fail: null,
  };
  let rackSeq = 100;
  const racks = {};
  const rackRef = (name) => {
    if (!racks[name]) racks[name] = { id: ++rackSeq, name };
    return racks[name];
  };
  st.addDevice = (id, { serial, tag, site = 1, rack, position, status = 'active' }) => {
    st.devices[id] = {
      id, name: `node-${id}`, serial, asset_tag: tag,
      device_type: { id: 3, model: 'DGX H100', manufacturer: { id: 1, name: 'NVIDIA' } },
      role: { id: 1, name: 'GPU server' }, site: sites[site],
      rack: rack ? rackRef(rack) : null, position: position ?? null,
      face: position ? { value: 'front', label: 'Front' } : null, status: statusLabel(status),
    };
  };
  st.addHardware = (id, { serial, tag, location = 7, status = 2 }) => {
    st.hardware[id] = {
      id, asset_tag: tag, serial, name: `gpu-${id}`,
      model: { id: 1, name: 'H100 SXM5' }, manufacturer: { id: 1, name: 'NVIDIA' },
      category: { id: 2, name: 'GPU' }, status_label: statuses[status],
      location: locations[location], rtd_location: locations[7], assigned_to: null,
    };
  };
  st.writes = (system) => st.requests.filter((r) => r.system === system && r.method !== 'GET');

  const handler = (req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url, 'http://x');
      const raw = Buffer.concat(chunks).toString('utf8');
      const body = raw ? JSON.parse(raw) : null;
      const system = u.pathname.startsWith('/api/dcim/') ? 'netbox' : 'snipeit';
      st.requests.push({ system, method: req.method, path: u.pathname, query: u.search, body, headers: req.headers });
      const send = (code, doc, headers = {}) =>
        res.writeHead(code, { 'Content-Type': 'application/json', ...headers }).end(JSON.stringify(doc));
      if (st.fail && st.fail.system === system && st.fail.times > 0) {
        st.fail.times--;
        if (st.fail.code === 429) return send(429, { message: 'Too Many Attempts.' }, { 'Retry-After': String(st.fail.retryAfter ?? 1) });
        return send(st.fail.code, system === 'netbox' ? { detail: 'Invalid token' } : { message: 'Unauthenticated.' });
      }
      if (system === 'netbox') {
        if (req.headers.authorization !== 'Token ' + NB_TOKEN) return send(403, { detail: 'Invalid token' });
        if (u.pathname === '/api/dcim/devices/') {
          // ?serial= matches ignoring case, as NetBox's filter does
          const want = u.searchParams.get('serial');
          const results = Object.values(st.devices)
            .filter((d) => want === null || String(d.serial || '').toLowerCase() === want.toLowerCase());
          return send(200, { count: results.length, next: null, previous: null, results });
        }
        if (u.pathname === '/api/dcim/modules/' || u.pathname === '/api/dcim/inventory-items/') {
          return send(200, { count: 0, next: null, previous: null, results: [] });
        }
        const m = u.pathname.match(/^\/api\/dcim\/devices\/(\d+)\/$/);
        const d = m && st.devices[m[1]];
        if (!d) return send(404, { detail: 'Not found.' });
        if (req.method === 'GET') return send(200, d);
        if (req.method !== 'PATCH') return send(405, { detail: 'Method not allowed' });
        if ('site' in body) d.site = typeof body.site === 'number' ? sites[body.site] : Object.values(sites).find((x) => x.name === body.site.name);
        if ('rack' in body) d.rack = typeof body.rack === 'number' ? Object.values(racks).find((x) => x.id === body.rack) : rackRef(body.rack.name);
        if ('position' in body) {
          if (!body.face && !d.face) return send(400, { position: ['Must specify rack face when defining rack position.'] });
          d.position = body.position;
        }
        if ('face' in body) d.face = statusLabel(body.face);
        if ('status' in body) d.status = statusLabel(body.status);
        return send(200, d);
      }
      if (req.headers.authorization !== 'Bearer ' + SN_TOKEN) return send(401, { message: 'Unauthenticated.' });
      if (u.pathname === '/api/v1/hardware') {
        const rows = Object.values(st.hardware);
        return send(200, { total: rows.length, rows: rows.slice(Number(u.searchParams.get('offset') || 0)) });
      }
      const bySerial = u.pathname.match(/^\/api\/v1\/hardware\/byserial\/(.+)$/);
      if (bySerial && req.method === 'GET') {
        // {total, rows}; none is Snipe-IT's error answer with HTTP 200
        const want = decodeURIComponent(bySerial[1]).toLowerCase();
        const rows = Object.values(st.hardware).filter((x) => String(x.serial || '').toLowerCase() === want);
        if (!rows.length) return send(200, { status: 'error', messages: 'Asset does not exist.', payload: null });
        return send(200, { total: rows.length, rows });
      }
      const m = u.pathname.match(/^\/api\/v1\/hardware\/(\d+)(\/checkin|\/checkout)?$/);
      const h = m && st.hardware[m[1]];
      if (!h) return send(200, { status: 'error', messages: 'Asset does not exist.', payload: null });
      if (req.method === 'GET' && !m[2]) return send(200, h);
      if (m[2] === '/checkout' && req.method === 'POST') {
        if (h.assigned_to) return send(200, { status: 'error', messages: 'That asset is already checked out.', payload: null });
        const loc = locations[body.assigned_location];
        if (body.checkout_to_type !== 'location' || !loc) return send(200, { status: 'error', messages: { assigned_location: ['The assigned location field is required.'] }, payload: null });
        h.assigned_to = { id: loc.id, name: loc.name, type: 'location' };
        h.location = loc;
        return send(200, { status: 'success', messages: 'Asset checked out successfully.', payload: { asset: h.asset_tag } });
      }
      if (m[2] === '/checkin' && req.method === 'POST') {
        h.assigned_to = null;
        if (body.location_id) h.location = locations[body.location_id];
        return send(200, { status: 'success', messages: 'Asset checked in successfully.', payload: { asset: h.asset_tag } });
      }
      if (req.method === 'PATCH' && !m[2]) {
        if ('status_id' in body) {
          if (!statuses[body.status_id]) return send(200, { status: 'error', messages: { status_id: ['The selected status id is invalid.'] }, payload: null });
          h.status_label = statuses[body.status_id];
        }
        if ('location_id' in body) h.location = locations[body.location_id];
        return send(200, { status: 'success', messages: 'Asset updated successfully.', payload: h });
      }
      return send(405, { message: 'Method not allowed' });
    });
  };
  const server = tls ? https.createServer({ cert: tls.cert, key: tls.key }, handler) : http.createServer(handler);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  st.base = `${tls ? 'https' : 'http'}://127.0.0.1:${server.address().port}`;
  st.close = () => new Promise((r) => server.close(r));
  return st;
}
