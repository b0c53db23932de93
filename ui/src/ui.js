// Small pieces every page uses: a table, an error line, polling.
import { html } from 'htm/preact';
import { useEffect, useState, useCallback } from 'preact/hooks';

export function Table({ columns, rows, testid, onRow }) {
  return html`<table class="grid" data-testid=${testid}>
    <thead><tr>${columns.map((c) => html`<th>${c.label ?? c}</th>`)}</tr></thead>
    <tbody>${rows.map((r, i) => html`<tr key=${i} class=${onRow ? 'link' : ''} onClick=${onRow ? () => onRow(r) : undefined}>
      ${columns.map((c) => html`<td>${cell(c.render ? c.render(r) : r[c.key ?? c])}</td>`)}</tr>`)}
    </tbody></table>`;
}

export function cell(v) {
  if (v === null || v === undefined) return html`<span class="null">NULL</span>`;
  if (typeof v === 'object' && !v.type && v.base64 !== undefined) return html`<span class="b64">base64:${v.base64}</span>`;
  return v;
}

export function ErrorLine({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">${String(error.message ?? error)}</div>`;
}

// Loads with `fn` now and every `ms` (0: once); returns [data, error, reload].
export function useLoad(fn, deps, ms = 0) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const load = useCallback(() => fn().then((d) => { setData(d); setError(null); }, setError), deps);
  useEffect(() => {
    load();
    if (!ms) return undefined;
    const t = setInterval(load, ms);
    return () => clearInterval(t);
  }, [load]);
  return [data, error, load];
}

export function bytes(n) {
  if (n === null || n === undefined) return '';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}
