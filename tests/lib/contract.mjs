// The API contract as the test suites hold the server to it: every reply the
// test harness receives (tests/lib/server.mjs, api()) is checked against
// src/api/openapi.json. A reply must have a status the operation documents,
// a documented content type, and a JSON body that validates against that
// response's schema (JSON Schema 2020-12, with formats such as date-time),
// and a JSON request body the server accepted must fit the request schema.
// A mismatch throws, naming the method, the path, the status and the schema
// error, so the test that made the call fails.
//
// Paths are matched as the server matches them: segment by segment, a
// literal path before a templated one, "{name}" taking one segment (digits
// only when the parameter is an integer). Outside /api/ an unmatched path is
// a dashboard asset and is not checked; under /api/ it must be an error.
import { readFileSync, appendFileSync } from 'node:fs';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

export const DOC_FILE = new URL('../../src/api/openapi.json', import.meta.url);
export const openapi = JSON.parse(readFileSync(DOC_FILE, 'utf8'));

const COMPONENTS_ID = 'https://gpuinv.invalid/openapi/components.json';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'options', 'head', 'trace'];

/**
 * Rewrites document references to schema components so ajv can resolve
 * them, and drops `discriminator` (a hint for client generators; `oneOf`
 * with a `const` kind already says the same to a validator).
 */
function rewrite(v, prefix) {
  if (Array.isArray(v)) return v.map((x) => rewrite(x, prefix));
  if (v === null || typeof v !== 'object') return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) {
    if (k === 'discriminator') continue;
    if (k === '$ref' && typeof x === 'string' && x.startsWith('#/components/schemas/')) {
      out[k] = prefix + '#/$defs/' + x.slice('#/components/schemas/'.length);
    } else {
      out[k] = rewrite(x, prefix);
    }
  }
  return out;
}

const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictRequired: false, allowUnionTypes: true, inlineRefs: false });
addFormats(ajv);
ajv.addSchema({ $id: COMPONENTS_ID, $defs: rewrite(openapi.components?.schemas || {}, '') });

/** Follows a local "#/components/…" reference of the document. */
function deref(v) {
  let guard = 0;
  while (v && typeof v.$ref === 'string' && guard++ < 16) {
    v = v.$ref.slice(2).split('/').reduce((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], openapi);
  }
  return v;
}

const compiled = new Map();
/** The compiled validator of a schema at a place in the document. */
function validatorFor(key, schema) {
  if (!compiled.has(key)) compiled.set(key, ajv.compile(rewrite(schema, COMPONENTS_ID)));
  return compiled.get(key);
}

// With GPUINV_CONTRACT_SEEN=FILE, the operations and statuses the suites
// exercised are appended to FILE at exit (to see what no test reaches).
const seen = new Set();
if (process.env.GPUINV_CONTRACT_SEEN) {
  process.on('exit', () => appendFileSync(process.env.GPUINV_CONTRACT_SEEN, [...seen].map((l) => l + '\n').join('')));
}

const errorSchema = { $ref: '#/components/schemas/Error' };

/** The path parameters (name → schema) an operation declares. */
function pathParams(item, op) {
  const out = {};
  for (const p of [...(item.parameters || []), ...(op?.parameters || [])].map(deref)) {
    if (p?.in === 'path') out[p.name] = deref(p.schema) || {};
  }
  return out;
}

/** True when a path item's parameter `name` is marked x-gpuinv-rest-of-path. */
function restOfPath(item, name) {
  return METHODS.filter((m) => item[m]).some((m) => [...(item.parameters || []), ...(item[m].parameters || [])]
    .map(deref).some((q) => q?.in === 'path' && q.name === name && q['x-gpuinv-rest-of-path'] === true));
}

/** True when one request path segment fits one document segment. */
function segmentFits(seg, tmpl, params) {
  const m = /^\{(.+)\}$/.exec(tmpl);
  if (!m) return seg === tmpl;
  if (seg === '' || seg.length >= 128) return false;
  if (params[m[1]]?.type === 'integer') return /^\+?0*[1-9][0-9]*$/.test(seg);
  return true;
}

/**
 * The document's match for a request: {path, item, op} where op is null when
 * the path is known but the method is not, or null when no path matches.
 */
export function findOperation(method, rawPath) {
  let p = rawPath.split('#')[0].split('?')[0];
  try { p = decodeURIComponent(p); } catch { /* keep it raw, as the server would not match it */ }
  const hits = [];
  for (const [path, item] of Object.entries(openapi.paths)) {
    const tmpl = path.split('/');
    let segs = p.split('/');
    // A final parameter marked x-gpuinv-rest-of-path takes the rest of the
    // path, slashes included (MIG names), as the route's {key*} does.
    const last = /^\{(.+)\}$/.exec(tmpl.at(-1));
    if (last && segs.length > tmpl.length && restOfPath(item, last[1])) {
      const rest = segs.slice(tmpl.length - 1);
      if (rest.some((x) => x === '')) continue;
      segs = [...segs.slice(0, tmpl.length - 1), rest.join('/')];
    }
    if (tmpl.length !== segs.length) continue;
    // A segment is an integer when any operation of the path says so.
    const params = Object.assign({}, ...METHODS.filter((m) => item[m]).map((m) => pathParams(item, item[m])));
    if (!tmpl.every((t, i) => segmentFits(segs[i], t, params))) continue;
    hits.push({ path, item, templated: tmpl.filter((t) => t.startsWith('{')).length, literal: tmpl.filter((t) => !t.startsWith('{')).length });
  }
  if (hits.length === 0) return null;
  // The fewest parameters first; among equals, the most literal segments
  // (/gpus/{uuid}/owner before the rest-of-path /gpus/{uuid}).
  hits.sort((a, b) => a.templated - b.templated || b.literal - a.literal);
  const m = method.toLowerCase();
  const withMethod = hits.find((h) => h.item[m]);
  if (withMethod) return { path: withMethod.path, item: withMethod.item, op: withMethod.item[m] };
  return { path: hits[0].path, item: hits[0].item, op: null };
}

/** Short text of a reply body for failure messages. */
function excerpt(text) {
  return text.length > 600 ? text.slice(0, 600) + '…' : text;
}

/**
 * Checks one reply ({status, headers, text, json}) to `method rawPath`
 * against the document; throws an Error describing the first mismatch.
 * `sent`, when given, is the JSON body of the request: a body the server
 * accepted (2xx) must also fit the operation's request schema, so that the
 * document never refuses what the server takes.
 */
export function checkReply(method, rawPath, res, sent) {
  const where = `${method.toUpperCase()} ${rawPath.split('?')[0]} → ${res.status}`;
  const fail = (why) => {
    throw new Error(`reply does not match src/api/openapi.json: ${where}: ${why}\nbody: ${excerpt(res.text)}`);
  };
  const ctype = (res.headers.get('content-type') || '').split(';')[0].trim().toLowerCase();
  const checkJson = (key, schema) => {
    if (ctype !== 'application/json') fail(`content type "${ctype}" where application/json is documented`);
    if (res.json === null) fail('the body is not JSON');
    const validate = validatorFor(key, schema);
    if (!validate(res.json)) {
      fail(validate.errors.slice(0, 8).map((e) => `${e.instancePath || '(body)'} ${e.message}` +
        (e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : '')).join('; '));
    }
  };

  const hit = findOperation(method, rawPath);
  seen.add(`${method.toUpperCase()} ${hit?.path ?? rawPath.split('?')[0]} ${res.status} ${ctype}`);
  if (hit === null) {
    if (!rawPath.startsWith('/api/')) return; // a dashboard asset
    if (res.status < 400) fail('no documented path matches, yet the reply is not an error');
    checkJson('Error', errorSchema);
    return;
  }
  if (hit.op === null) {
    if (res.status !== 405) fail(`${hit.path} documents no ${method.toUpperCase()}: expected 405`);
    if (!res.headers.get('allow')) fail('a 405 reply must carry Allow');
    checkJson('Error', errorSchema);
    return;
  }
  const reqSchema = deref(hit.op.requestBody)?.content?.['application/json']?.schema;
  // A push the server stored with warnings dropped what the schema refuses,
  // and the warnings say what: only a body taken whole must fit.
  const dropped = Array.isArray(res.json?.warnings) && res.json.warnings.length > 0;
  if (sent !== undefined && reqSchema && res.status >= 200 && res.status < 300 && !dropped) {
    const validate = validatorFor(`${method.toUpperCase()} ${hit.path} request`, reqSchema);
    if (!validate(sent)) {
      fail('the server accepted a request body the document refuses: ' + validate.errors.slice(0, 8)
        .map((e) => `${e.instancePath || '(body)'} ${e.message}`).join('; '));
    }
  }
  let resp = hit.op.responses?.[String(res.status)] ?? hit.op.responses?.[`${String(res.status)[0]}XX`] ??
    hit.op.responses?.default;
  if (resp === undefined) {
    // Any request may be refused for its size before its route runs.
    if (res.status === 413) { checkJson('Error', errorSchema); return; }
    fail(`status ${res.status} is not documented for ${method.toUpperCase()} ${hit.path}`);
  }
  resp = deref(resp);
  const content = resp.content || {};
  if (Object.keys(content).length === 0) {
    if (res.text.length !== 0) fail('the document says this reply has no body');
    return;
  }
  const media = content[ctype];
  if (media === undefined) fail(`content type "${ctype}" is not documented (${Object.keys(content).join(', ')})`);
  if (ctype === 'application/json') {
    checkJson(`${method.toUpperCase()} ${hit.path} ${res.status}`, media.schema || {});
  } else if (res.text.length === 0 && res.status !== 200) {
    fail(`empty ${ctype} body`);
  }
}

/** Compiles every response schema of the document; returns how many. */
export function compileAll() {
  let n = 0;
  for (const [path, item] of Object.entries(openapi.paths)) {
    for (const m of METHODS) {
      const op = item[m];
      if (!op) continue;
      for (const [status, r] of Object.entries(op.responses || {})) {
        const schema = deref(r).content?.['application/json']?.schema;
        if (schema) { validatorFor(`${m.toUpperCase()} ${path} ${status}`, schema); n += 1; }
      }
    }
  }
  return n;
}
