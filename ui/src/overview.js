// Overview: the broker (who is logged in, topics, groups), its listeners, and throughput
// and latency charts from /metrics polled every 2 s.
import { html } from 'htm/preact';
import { useEffect, useState } from 'preact/hooks';
import { call, rows, parseMetrics, sum } from './api.js';
import { Chart } from './chart.js';
import { Table, ErrorLine, useLoad, bytes } from './ui.js';

const KEEP = 150;

// A histogram's cumulative bucket counts by upper bound ("le"), summed over its series.
function buckets(metrics, name) {
  const buckets = new Map();
  for (const m of metrics) if (m.name === name + '_bucket') buckets.set(m.labels.le, (buckets.get(m.labels.le) || 0) + m.value);
  return buckets;
}

// The latency in ms below which the fraction q of the requests between two readings fell
// (the bucket's upper bound, as Prometheus' histogram_quantile approximates it).
function fromBuckets(now, before, q) {
  const les = [...now.keys()].sort((a, b) => parseFloat(a) - parseFloat(b));
  const d = les.map((le) => (now.get(le) || 0) - ((before && before.get(le)) || 0));
  const total = d[d.length - 1] || 0;
  if (!total) return null;
  for (let i = 0; i < les.length; i++) if (d[i] >= q * total) return les[i] === '+Inf' ? null : parseFloat(les[i]) * 1000;
  return null;
}

export function Overview({ me }) {
  const [info, infoError] = useLoad(async () => {
    const [t] = await rows('SELECT count(*) AS topics, coalesce(sum(partitions),0) AS partitions FROM system.topics');
    const [p] = await rows('SELECT coalesce(sum(bytes),0) AS bytes FROM system.partitions');
    const [g] = await rows('SELECT count(*) AS groups FROM system.groups');
    return { ...t, ...p, ...g };
  }, [], 5000);
  const [hist, setHist] = useState({ t: [], produced: [], fetched: [], records: [], p50: [], p99: [], listeners: [] });
  const [error, setError] = useState(null);
  useEffect(() => {
    let prev = null;
    const poll = async () => {
      try {
        const m = parseMetrics(await call('GET', '/metrics', undefined, 'text/plain'));
        const now = Date.now() / 1000;
        const cur = {
          t: now,
          produced: sum(m, 'sluice_topic_produced_bytes_total'),
          fetched: sum(m, 'sluice_topic_fetched_bytes_total'),
          records: sum(m, 'sluice_topic_produced_records_total'),
          lat: buckets(m, 'sluice_kafka_request_duration_seconds'),
        };
        const listeners = m.filter((x) => x.name === 'sluice_kafka_connections').map((x) => ({ ...x.labels, connections: x.value }));
        if (prev) {
          const dt = cur.t - prev.t;
          setHist((h) => {
            const add = (a, v) => [...a, v].slice(-KEEP);
            return {
              t: add(h.t, now),
              produced: add(h.produced, (cur.produced - prev.produced) / dt),
              fetched: add(h.fetched, (cur.fetched - prev.fetched) / dt),
              records: add(h.records, (cur.records - prev.records) / dt),
              p50: add(h.p50, fromBuckets(cur.lat, prev.lat, 0.5)),
              p99: add(h.p99, fromBuckets(cur.lat, prev.lat, 0.99)),
              listeners,
            };
          });
        } else {
          setHist((h) => ({ ...h, listeners }));
        }
        prev = cur;
        setError(null);
      } catch (e) {
        setError(e);
      }
    };
    poll();
    const timer = setInterval(poll, 2000);
    return () => clearInterval(timer);
  }, []);
  return html`<section>
    <h1>Overview</h1>
    <${ErrorLine} error=${infoError || error} />
    <div class="cards" data-testid="overview-cards">
      <div class="card"><b>User</b><span>${me.user}${me.security ? '' : ' (no login required)'}</span></div>
      <div class="card"><b>Topics</b><span data-testid="topic-count">${info?.topics ?? ''}</span></div>
      <div class="card"><b>Partitions</b><span>${info?.partitions ?? ''}</span></div>
      <div class="card"><b>On disk</b><span>${bytes(info?.bytes)}</span></div>
      <div class="card"><b>Groups</b><span>${info?.groups ?? ''}</span></div>
    </div>
    <h2>Kafka listeners</h2>
    <${Table} testid="listeners" columns=${[{ key: 'listener', label: 'listener' }, { key: 'protocol', label: 'protocol' }, { key: 'connections', label: 'open connections' }]} rows=${hist.listeners} />
    <div class="charts">
      <${Chart} testid="chart-throughput" title="Throughput (bytes/s)" x=${hist.t}
        series=${[{ label: 'produced', values: hist.produced }, { label: 'fetched', values: hist.fetched }]} />
      <${Chart} testid="chart-records" title="Records produced /s" x=${hist.t} series=${[{ label: 'records/s', values: hist.records }]} />
      <${Chart} testid="chart-latency" title="Kafka request latency (ms)" x=${hist.t}
        series=${[{ label: 'p50', values: hist.p50 }, { label: 'p99', values: hist.p99 }]} />
    </div>
  </section>`;
}
