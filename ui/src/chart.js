// A line or bar chart (uPlot) of series over x values (times in seconds, or indexes).
import uPlot from 'uplot';
import { html } from 'htm/preact';
import { useEffect, useRef } from 'preact/hooks';

const colors = ['#2563eb', '#dc2626', '#16a34a', '#9333ea', '#ea580c', '#0891b2', '#ca8a04'];

export function Chart({ title, x, series, bars = false, time = true, height = 220, testid }) {
  const el = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const width = Math.max(300, el.current.clientWidth || 600);
    const opts = {
      title,
      width,
      height,
      scales: { x: { time } },
      series: [{}, ...series.map((s, i) => ({
        label: s.label,
        stroke: colors[i % colors.length],
        fill: bars ? colors[i % colors.length] + '88' : undefined,
        width: 2,
        paths: bars ? uPlot.paths.bars({ size: [0.6, 60] }) : undefined,
        points: { show: bars ? false : x.length < 40 },
      }))],
      axes: [{}, { size: 70 }],
    };
    const data = [x, ...series.map((s) => s.values)];
    if (plot.current) plot.current.destroy();
    plot.current = new uPlot(opts, data, el.current);
    return () => {
      if (plot.current) plot.current.destroy();
      plot.current = null;
    };
  }, [title, bars, time, series.length, JSON.stringify(series.map((s) => s.label))]);
  useEffect(() => {
    if (plot.current) plot.current.setData([x, ...series.map((s) => s.values)]);
  });
  return html`<div class="chart" data-testid=${testid} data-points=${x.length} ref=${el}></div>`;
}
