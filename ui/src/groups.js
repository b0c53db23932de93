// Consumer groups: state, members, and each partition's committed offset and lag, with
// the lag charted over time while the page is open (polled every 2 s).
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, rows } from './api.js';
import { Chart } from './chart.js';
import { Table, ErrorLine, useLoad } from './ui.js';

export function Groups({ group }) {
  const [list, error] = useLoad(() => rows(
    `SELECT g.group_id, g.type, g.state, g.members, g.protocol, g.generation,
            (SELECT coalesce(sum(lag),0) FROM system.group_offsets o WHERE o.group_id = g.group_id) AS lag
       FROM system.groups g ORDER BY g.group_id`), [], 3000);
  return html`<section>
    <h1>Consumer groups</h1>
    <${ErrorLine} error=${error} />
    <${Table} testid="groups" rows=${list || []} onRow=${(r) => { location.hash = '#/groups/' + encodeURIComponent(r.group_id); }}
      columns=${['group_id', 'type', 'state', 'members', 'protocol', 'generation', 'lag']} />
    ${group && html`<${GroupDetail} group=${group} key=${group} />`}
  </section>`;
}

const KEEP = 300;

function GroupDetail({ group }) {
  const [offsets, setOffsets] = useState([]);
  const [members, setMembers] = useState([]);
  const [hist, setHist] = useState({ t: [], byPart: {} });
  const [error, setError] = useState(null);
  useEffect(() => {
    const poll = async () => {
      try {
        const r = await rows(
          `SELECT topic, partition, committed_offset, high_watermark, lag, commit_timestamp
             FROM system.group_offsets WHERE group_id = $1 ORDER BY topic, partition`, [group]);
        setOffsets(r);
        setMembers(await rows(
          `SELECT member_id, instance_id, client_id, client_host, epoch, assigned
             FROM system.group_members WHERE group_id = $1 ORDER BY member_id`, [group]));
        setError(null);
        setHist((h) => {
          const byPart = { ...h.byPart };
          const n = h.t.length;
          for (const o of r) {
            const k = `${o.topic}/${o.partition}`;
            byPart[k] = [...(byPart[k] || new Array(n).fill(null)), o.lag].slice(-KEEP);
          }
          for (const k of Object.keys(byPart)) if (byPart[k].length === n) byPart[k] = [...byPart[k], null].slice(-KEEP);
          return { t: [...h.t, Date.now() / 1000].slice(-KEEP), byPart };
        });
      } catch (e) {
        setError(e);
      }
    };
    poll();
    const timer = setInterval(poll, 2000);
    return () => clearInterval(timer);
  }, [group]);
  const total = offsets.reduce((a, o) => a + (o.lag || 0), 0);
  const [reset, setReset] = useState({ to: 'earliest', time: '', error: null, done: '' });
  // POST /v1/groups/GROUP/reset-offsets: the group must have no members.
  const doReset = async (e) => {
    e.preventDefault();
    const body = { to: reset.to };
    if (reset.to === 'timestamp') body.timestamp_ms = new Date(reset.time).getTime();
    try {
      const r = await call('POST', `/v1/groups/${encodeURIComponent(group)}/reset-offsets`, JSON.stringify(body));
      setReset({ ...reset, error: null, done: `${r.offsets.length} partition(s) reset` });
    } catch (err) {
      setReset({ ...reset, error: err, done: '' });
    }
  };
  return html`<div class="detail" data-testid="group-detail">
    <h2>${group}</h2>
    <${ErrorLine} error=${error} />
    <h3>Members</h3>
    <${Table} testid="group-members" rows=${members}
      columns=${['member_id', 'instance_id', 'client_id', 'client_host', 'epoch', 'assigned']} />
    <p>Total lag: <b data-testid="group-lag">${total}</b></p>
    <${Table} testid="group-offsets" rows=${offsets}
      columns=${['topic', 'partition', 'committed_offset', 'high_watermark', 'lag',
        { label: 'committed at', render: (r) => (r.commit_timestamp ? new Date(r.commit_timestamp).toISOString() : null) }]} />
    <form class="bar" onSubmit=${doReset} data-testid="reset-form">
      <b>Reset offsets to</b>
      <select name="to" value=${reset.to} onChange=${(e) => setReset({ ...reset, to: e.target.value })}>
        <option value="earliest">earliest</option><option value="latest">latest</option><option value="timestamp">a time</option></select>
      ${reset.to === 'timestamp' && html`<input name="time" type="datetime-local" step="1" required value=${reset.time}
        onInput=${(e) => setReset({ ...reset, time: e.target.value })} />`}
      <button type="submit">Reset</button>
      <span class="note">(the group must have no active members)</span>
    </form>
    <${ErrorLine} error=${reset.error} />
    ${reset.done && html`<div class="ok" data-testid="reset-done">${reset.done}</div>`}
    <${Chart} testid="chart-lag" title="Lag per partition" x=${hist.t}
      series=${Object.keys(hist.byPart).sort().map((k) => ({ label: k, values: hist.byPart[k] }))} />
  </div>`;
}
