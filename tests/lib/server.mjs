// Test harness: starts the real gpuinv binary on an ephemeral loopback port
// with a temporary database, and talks to it over HTTP.
import { spawn } from 'node:child_process';
import { mkdtempSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import os from 'node:os';
import { checkReply } from './contract.mjs';

export const BIN = process.env.GPUINV_BIN || path.resolve('build/gpuinv');

/** A fresh temporary directory under the build tree (or the OS temp dir). */
export function tempDir(prefix = 'gpuinv-') {
  const base = process.env.GPUINV_TMP || os.tmpdir();
  mkdirSync(base, { recursive: true });
  return mkdtempSync(path.join(base, prefix));
}

/**
 * Starts `gpuinv serve`. Options: db (path; default a new temp file), demo,
 * args (extra flags), env (extra environment). Resolves to a handle with
 * url, token (admin bearer token), password (admin dashboard password),
 * api(), stop() and the child process.
 */
export async function startServer(opts = {}) {
  const dir = opts.dir || tempDir();
  const db = opts.db || path.join(dir, 'gpuinv.db');
  const token = opts.token || 'test-admin-' + randomBytes(16).toString('hex');
  const password = opts.password || 'pw-' + randomBytes(8).toString('hex');
  const args = ['serve', '--listen', '127.0.0.1:0', '--db', db, ...(opts.demo ? ['--demo'] : []),
    ...(opts.args || [])];
  const child = spawn(opts.bin || BIN, args, {
    env: { ...process.env, GPUINV_ADMIN_TOKEN: token, GPUINV_ADMIN_PASSWORD: password,
      ...(opts.env || {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start:\n' + stderr)), 30000);
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/[^\s]+?)\/?\s/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    exited.then(({ code }) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${stderr}`)); });
  });
  const handle = {
    url, token, password, db, dir, child,
    get stderr() { return stderr; },
    /**
     * HTTP call; body objects are sent as JSON, strings as-is. Every reply
     * is checked against the API description (tests/lib/contract.mjs): one
     * that does not match it throws.
     */
    async api(method, p, { body, auth = token, headers = {}, contentType } = {}) {
      const h = { ...headers };
      if (auth) h.Authorization = 'Bearer ' + auth;
      let payload;
      if (body !== undefined) {
        payload = typeof body === 'string' ? body : JSON.stringify(body);
        h['Content-Type'] = contentType || (typeof body === 'string' ? 'text/plain' : 'application/json');
      }
      const res = await fetch(url + p, { method, headers: h, body: payload });
      const text = await res.text();
      let json = null;
      try { json = JSON.parse(text); } catch { /* not JSON */ }
      const reply = { status: res.status, headers: res.headers, text, json };
      let sent;
      if (body !== undefined && typeof body !== 'string') sent = body;
      else if (typeof body === 'string' && /^application\/json/.test(contentType || '')) {
        try { sent = JSON.parse(body); } catch { /* not JSON: nothing to compare */ }
      }
      checkReply(method, p, reply, sent);
      return reply;
    },
    /** Sends SIGTERM and resolves to the exit status ({code, signal}). */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
  return handle;
}
