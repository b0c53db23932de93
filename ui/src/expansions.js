// Expansions (docs/expansions.md): state, lag and counters, from GET /v1/expansions.
import { html } from 'htm/preact';
import { call } from './api.js';
import { Table, ErrorLine, useLoad } from './ui.js';

export function Expansions() {
  const [data, error] = useLoad(() => call('GET', '/v1/expansions'), [], 3000);
  const list = data?.expansions || [];
  return html`<section>
    <h1>Expansions</h1>
    <${ErrorLine} error=${error} />
    ${data && !list.length && html`<p>No expansions. <code>sluice expansion create</code> makes one (docs/expansions.md).</p>`}
    <${Table} testid="expansions" rows=${list} columns=${['target', 'topic', 'state', 'lag', 'rows', 'rows_written',
      { label: 'backfill', render: (e) => (e.backfill ? `${e.backfill.done} / ${e.backfill.total}` : '') },
      { label: 'error', render: (e) => e.error || '' }]} />
  </section>`;
}
