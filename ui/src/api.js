// Talks to the broker's HTTP API with the logged-in user's Basic credentials (kept in
// sessionStorage, so they end with the tab).
const KEY = 'sluice.auth';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

export function setCredentials(user, password) {
  if (user === null) sessionStorage.removeItem(KEY);
  else sessionStorage.setItem(KEY, btoa(unescape(encodeURIComponent(user + ':' + password))));
}

let onUnauthorized = () => {};
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

export async function call(method, path, body, accept = 'application/json') {
  const headers = { 'X-Requested-With': 'sluice-console', Accept: accept };
  const auth = sessionStorage.getItem(KEY);
  if (auth) headers.Authorization = 'Basic ' + auth;
  const resp = await fetch(path, { method, headers, body });
  const text = await resp.text();
  if (!resp.ok) {
    let message = `HTTP ${resp.status}`;
    try {
      message = JSON.parse(text).error.message || message;
    } catch (e) {
      if (text) message = text.trim();
    }
    if (resp.status === 401) onUnauthorized(message);
    throw new ApiError(resp.status, message);
  }
  if (accept !== 'application/json') return text;
  return text ? JSON.parse(text) : null;
}

// Runs SQL through POST /v1/sql; `params` bind $1, $2, ...
export async function sql(text, params = [], opts = {}) {
  const q = new URLSearchParams();
  for (const p of params) q.append('param', String(p));
  if (opts.maxRows) q.set('max_rows', String(opts.maxRows));
  if (opts.format) q.set('format', opts.format);
  const accept = opts.format === 'csv' ? 'text/csv' : 'application/json';
  return call('POST', '/v1/sql?' + q.toString(), text, accept);
}

// Rows as objects keyed by column name.
export async function rows(text, params = [], opts = {}) {
  const r = await sql(text, params, opts);
  return r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c.name, row[i]])));
}

// A topic name as a SQL identifier, quoted.
export function ident(name) {
  return '"' + name.replaceAll('"', '""') + '"';
}

// Prometheus text format -> [{name, labels, value}].
export function parseMetrics(text) {
  const out = [];
  for (const line of text.split('\n')) {
    if (!line || line[0] === '#') continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    if (m[3]) for (const l of m[3].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return out;
}

export function sum(metrics, name, filter = () => true) {
  return metrics.filter((m) => m.name === name && filter(m.labels)).reduce((a, m) => a + m.value, 0);
}
