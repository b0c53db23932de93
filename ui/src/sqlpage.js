// The SQL editor: runs statements through POST /v1/sql, shows the rows in a grid, charts
// a numeric column (line or bar, over another column or the row number) and exports CSV.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { sql } from './api.js';
import { Chart } from './chart.js';
import { Table, ErrorLine } from './ui.js';

const START = 'SELECT topic, partition, high_watermark, bytes FROM system.partitions ORDER BY topic, partition';

export function SqlEditor() {
  const [text, setText] = useState(sessionStorage.getItem('sluice.sql') || START);
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const [chart, setChart] = useState({ y: '', x: '', bars: false });
  const run = async () => {
    sessionStorage.setItem('sluice.sql', text);
    try {
      const r = await sql(text, [], { maxRows: 10000 });
      setResult(r);
      setError(null);
      const numeric = r.columns.map((c, i) => i).filter((i) => r.rows.some((row) => typeof row[i] === 'number'));
      const y = numeric.length ? r.columns[numeric[numeric.length - 1]].name : '';
      setChart({ ...chart, y, x: '' });
    } catch (e) {
      setError(e);
      setResult(null);
    }
  };
  const exportCsv = async () => {
    try {
      const csv = await sql(text, [], { format: 'csv', maxRows: 1000000 });
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([csv], { type: 'text/csv' }));
      a.download = 'result.csv';
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (e) {
      setError(e);
    }
  };
  const cols = result ? result.columns.map((c) => c.name) : [];
  const yi = cols.indexOf(chart.y);
  const xi = cols.indexOf(chart.x);
  const xs = result ? result.rows.map((r, i) => (xi >= 0 && typeof r[xi] === 'number' ? r[xi] : i)) : [];
  return html`<section>
    <h1>SQL</h1>
    <textarea class="sql" data-testid="sql-text" rows="6" spellcheck="false" value=${text}
      onInput=${(e) => setText(e.target.value)}
      onKeyDown=${(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); run(); } }}></textarea>
    <div class="bar">
      <button data-testid="sql-run" onClick=${run}>Run (Ctrl+Enter)</button>
      <button onClick=${exportCsv} disabled=${!result}>Export CSV</button>
      ${result && html`<span data-testid="sql-status">${result.command ? `${result.command}: ${result.changes} row(s) changed` : `${result.row_count} row(s)`} in ${result.elapsed_ms} ms</span>`}
    </div>
    <${ErrorLine} error=${error} />
    ${result && cols.length > 0 && html`
      <div class="bar">
        <label>Chart <select data-testid="chart-y" value=${chart.y} onChange=${(e) => setChart({ ...chart, y: e.target.value })}>
          <option value="">none</option>${cols.map((c) => html`<option value=${c}>${c}</option>`)}</select></label>
        <label>over <select value=${chart.x} onChange=${(e) => setChart({ ...chart, x: e.target.value })}>
          <option value="">row number</option>${cols.map((c) => html`<option value=${c}>${c}</option>`)}</select></label>
        <label><input type="checkbox" checked=${chart.bars} onChange=${(e) => setChart({ ...chart, bars: e.target.checked })} /> bars</label>
      </div>
      ${yi >= 0 && html`<${Chart} testid="sql-chart" title=${chart.y} time=${false} bars=${chart.bars} x=${xs}
        series=${[{ label: chart.y, values: result.rows.map((r) => (typeof r[yi] === 'number' ? r[yi] : null)) }]} />`}
      <div class="scroll"><${Table} testid="sql-grid" columns=${cols} rows=${result.rows.map((r) => Object.fromEntries(cols.map((c, i) => [c, r[i]])))} /></div>`}
  </section>`;
}
