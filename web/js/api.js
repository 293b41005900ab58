// The HTTP API client: same-origin fetches carrying the session cookie.

/** An error reply from the API: status, code, message, field, counts. */
export class ApiError extends Error {
  constructor(status, error) {
    super((error && error.message) || `request failed (${status})`);
    this.status = status;
    this.code = (error && error.code) || 'error';
    this.field = (error && error.field) || null;
    this.counts = (error && error.counts) || null;
    // Further members of the error object (a 409's tenant, for one).
    this.info = (error && typeof error === 'object') ? error : {};
  }
}

let onSignedOut = () => {};
let role = 'viewer';

/** Records the signed-in user's role (admin, editor, viewer). */
export function setRole(r) {
  role = r || 'viewer';
}

/** True when the signed-in user may change the inventory. */
export function canWrite() {
  return role === 'admin' || role === 'editor';
}

/** Registers what to do when a request finds the session gone (401). */
export function setSignedOutHandler(fn) {
  onSignedOut = fn;
}

/**
 * Sends one request. body (object) goes as JSON. Resolves to the parsed
 * JSON reply, or null for 204; rejects with ApiError. A 401 also calls the
 * signed-out handler unless opts.quiet401 is set.
 */
export async function api(method, path, body, opts = {}) {
  const init = { method, credentials: 'same-origin', headers: { Accept: 'application/json' } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, { code: 'network', message: 'the server could not be reached' });
  }
  if (res.status === 204) return null;
  let data = null;
  try {
    data = await res.json();
  } catch {
    data = null;
  }
  if (!res.ok) {
    const err = new ApiError(res.status, data && data.error);
    if (res.status === 401 && !opts.quiet401) onSignedOut();
    throw err;
  }
  return data;
}

/** Builds "path?k=v&..." leaving out empty values. */
export function withQuery(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

let kindsCache = null;

/** The resource kinds and states (GET /api/v1/kinds), fetched once. */
export async function kinds() {
  if (!kindsCache) {
    kindsCache = api('GET', '/api/v1/kinds').catch((e) => {
      kindsCache = null;
      throw e;
    });
  }
  return kindsCache;
}

/** Finds a kind by its plural URL segment ("servers") or its name ("server"). */
export async function kindBySegment(segment) {
  const k = await kinds();
  return k.kinds.find((x) => x.counts === segment || x.kind === segment) || null;
}

/**
 * Makes an export link download through fetch, so the file gets the name
 * in its download attribute (a server's Content-Disposition name would
 * otherwise win) and a failed export shows its error instead of a file.
 * onError(err) reports a failure.
 */
export function csvLink(a, onError) {
  a.addEventListener('click', async (ev) => {
    ev.preventDefault();
    let res;
    try {
      res = await fetch(a.href, { credentials: 'same-origin', headers: { Accept: 'text/csv' } });
    } catch {
      onError(new ApiError(0, { code: 'network', message: 'the server could not be reached' }));
      return;
    }
    if (!res.ok) {
      const data = await res.json().catch(() => null);
      onError(new ApiError(res.status, data && data.error));
      return;
    }
    const url = URL.createObjectURL(await res.blob());
    const tmp = document.createElement('a');
    tmp.href = url;
    tmp.download = a.getAttribute('download') || 'export.csv';
    document.body.append(tmp);
    tmp.click();
    tmp.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
  });
  return a;
}
