// The message browser: a topic's records from a partition and offset, or from a time,
// with key, value (shown indented when they are JSON) and headers (SQL over
// kafka_topics); the records found download as JSON lines.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { rows, ident } from './api.js';
import { Table, ErrorLine, useLoad, cell } from './ui.js';

function localInput(ms) {
  const d = new Date(ms - new Date().getTimezoneOffset() * 60000);
  return d.toISOString().slice(0, 19);
}

export function Messages({ topic }) {
  const [topics] = useLoad(() => rows('SELECT topic, partitions FROM system.topics ORDER BY topic'), []);
  const [form, setForm] = useState({ topic: topic || '', partition: '', mode: 'offset', offset: '0', time: localInput(Date.now() - 3600000), limit: '50' });
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  const set = (k) => (e) => setForm({ ...form, [k]: e.target.value });
  const chosen = form.topic || (topics && topics[0]?.topic) || '';
  const search = async (e) => {
    e.preventDefault();
    const where = [];
    const params = [];
    if (form.partition !== '') { params.push(Number(form.partition)); where.push(`partition = $${params.length}`); }
    if (form.mode === 'offset') { params.push(Number(form.offset) || 0); where.push(`"offset" >= $${params.length}`); }
    else { params.push(new Date(form.time).getTime()); where.push(`timestamp_producer >= $${params.length}`); }
    params.push(Math.max(1, Math.min(1000, Number(form.limit) || 50)));
    const order = form.mode === 'offset' ? 'partition, "offset"' : 'timestamp_producer, partition, "offset"';
    try {
      setResult(await rows(
        `SELECT partition, "offset", timestamp_producer, key, value, headers FROM kafka_topics.${ident(chosen)}
          WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT $${params.length}`, params));
      setError(null);
    } catch (err) {
      setError(err);
    }
  };
  return html`<section>
    <h1>Messages</h1>
    <form class="bar" onSubmit=${search} data-testid="message-form">
      <label>Topic <select name="topic" value=${chosen} onChange=${set('topic')}>
        ${(topics || []).map((t) => html`<option value=${t.topic}>${t.topic}</option>`)}</select></label>
      <label>Partition <input name="partition" size="4" placeholder="all" value=${form.partition} onInput=${set('partition')} /></label>
      <label>From <select name="mode" value=${form.mode} onChange=${set('mode')}>
        <option value="offset">offset</option><option value="time">time</option></select></label>
      ${form.mode === 'offset'
        ? html`<input name="offset" size="8" value=${form.offset} onInput=${set('offset')} />`
        : html`<input name="time" type="datetime-local" step="1" value=${form.time} onInput=${set('time')} />`}
      <label>Limit <input name="limit" size="4" value=${form.limit} onInput=${set('limit')} /></label>
      <button type="submit">Search</button>
    </form>
    <${ErrorLine} error=${error} />
    ${result && html`<p class="bar">${result.length} record(s)
        <button data-testid="messages-download" onClick=${() => download(chosen, result)}>Download JSON lines</button></p>
      <${Table} testid="messages" rows=${result} columns=${['partition', 'offset',
        { label: 'timestamp', render: (r) => new Date(r.timestamp_producer).toISOString() },
        { label: 'key', render: (r) => asJson(r.key) }, { label: 'value', render: (r) => asJson(r.value) },
        { label: 'headers', render: (r) => headers(r.headers) }]} />`}
  </section>`;
}

function headers(json) {
  const list = JSON.parse(json || '[]');
  return list.map((h) => html`<div class="header">${h.key}: ${cell(h.value)}</div>`);
}

// A key or value that is a JSON object or array, indented; anything else as it is.
function asJson(v) {
  if (typeof v !== 'string' || !/^\s*[[{]/.test(v)) return v;
  try {
    return html`<pre class="json">${JSON.stringify(JSON.parse(v), null, 2)}</pre>`;
  } catch {
    return v;
  }
}

// One JSON object per record, as `sluice consume --format json` writes them.
function download(topic, records) {
  const lines = records.map((r) => JSON.stringify({
    topic, partition: r.partition, offset: r.offset, timestamp: r.timestamp_producer,
    key: r.key, value: r.value, headers: JSON.parse(r.headers || '[]'),
  }));
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([lines.join('\n') + '\n'], { type: 'application/x-ndjson' }));
  a.download = `${topic}.jsonl`;
  a.click();
  URL.revokeObjectURL(a.href);
}
