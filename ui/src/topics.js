// Topics: every topic the user may describe, with its partitions (offsets, sizes) and
// the configs in force.
import { html } from 'htm/preact';
import { useState } from 'preact/hooks';
import { call, rows } from './api.js';
import { Table, ErrorLine, useLoad, bytes } from './ui.js';

export function Topics({ topic }) {
  const [list, error] = useLoad(() => rows(
    `SELECT t.topic, t.partitions, t.cleanup_policy, coalesce(sum(p.bytes),0) AS bytes,
            coalesce(sum(p.high_watermark - p.log_start_offset),0) AS records
       FROM system.topics t LEFT JOIN system.partitions p ON p.topic = t.topic
      GROUP BY t.topic, t.partitions, t.cleanup_policy ORDER BY t.topic`), [], 5000);
  return html`<section>
    <h1>Topics</h1>
    <${ErrorLine} error=${error} />
    <${Table} testid="topics" rows=${list || []} onRow=${(r) => { location.hash = '#/topics/' + encodeURIComponent(r.topic); }}
      columns=${['topic', 'partitions', 'cleanup_policy', { label: 'records', key: 'records' }, { label: 'size', render: (r) => bytes(r.bytes) }]} />
    ${topic && html`<${TopicDetail} topic=${topic} key=${topic} />`}
  </section>`;
}

function TopicDetail({ topic }) {
  const [parts, error] = useLoad(() => rows(
    'SELECT partition, log_start_offset, high_watermark, log_end_offset, bytes, segments FROM system.partitions WHERE topic = $1 ORDER BY partition',
    [topic]), [topic], 5000);
  const [configs, configError, reloadConfigs] = useLoad(() => rows(
    'SELECT name, value, source FROM system.configs WHERE topic = $1 ORDER BY name', [topic]), [topic]);
  const [change, setChange] = useState({ error: null, done: '' });
  // PUT /v1/topics/NAME/configs: needs KafkaAlterConfigs on the topic.
  const alter = async (body, what) => {
    try {
      await call('PUT', `/v1/topics/${encodeURIComponent(topic)}/configs`, JSON.stringify(body));
      setChange({ error: null, done: what });
      reloadConfigs();
    } catch (e) {
      setChange({ error: e, done: '' });
    }
  };
  const submit = (e) => {
    e.preventDefault();
    const f = Object.fromEntries(new FormData(e.target));
    alter({ set: { [f.name]: f.value } }, `${f.name} set to ${f.value}`);
  };
  return html`<div class="detail" data-testid="topic-detail">
    <h2>${topic}</h2>
    <p><a href=${'#/messages/' + encodeURIComponent(topic)}>Browse messages</a></p>
    <${ErrorLine} error=${error || configError} />
    <h3>Partitions</h3>
    <${Table} testid="partitions" rows=${parts || []}
      columns=${['partition', 'log_start_offset', 'high_watermark', 'log_end_offset', { label: 'size', render: (r) => bytes(r.bytes) }, 'segments']} />
    <h3>Configs</h3>
    <${Table} testid="configs" rows=${configs || []} columns=${['name', 'value', 'source',
      { label: '', render: (c) => (c.source === 'topic'
        ? html`<button class="small" onClick=${() => alter({ delete: [c.name] }, `${c.name} back to its default`)}>reset</button>` : '') }]} />
    <form class="bar" onSubmit=${submit} data-testid="config-form">
      <input name="name" placeholder="config" list="config-names" required />
      <datalist id="config-names">${(configs || []).map((c) => html`<option value=${c.name} />`)}</datalist>
      <input name="value" placeholder="value" required />
      <button type="submit">Set</button>
    </form>
    <${ErrorLine} error=${change.error} />
    ${change.done && html`<div class="ok" data-testid="config-done">${change.done}</div>`}
  </div>`;
}
