// Capacity per configuration across nights, from the results index: an SVG chart (one line per
// configuration, days on the x axis) and a markdown table. Runs whose search did not converge are
// listed with their outcome but left off the chart, as the gate leaves them out. Pure.
import type { Chart, ChartSeries } from '../report/doc.ts';
import { renderChart } from '../report/charts/render.ts';
import { PALETTE } from '../report/charts/style.ts';
import type { IndexEntry } from '../runDir/resultsIndex.ts';

// A search stopped by its load budget or probe count still drew its capacity with an interval.
const MEASURED = new Set(['converged', 'below-min', 'at-least-max', 'budget', 'max-probes']);
const DAY_MS = 86_400_000;

/** Whether an index entry's capacity is a measurement the history may draw. */
export const drawable = (e: IndexEntry) => (e.status === null || e.status === 'completed') && (e.outcome === null || MEASURED.has(e.outcome));

/** Entries grouped by configuration, each group in start order (entries without a start time last). */
export function byConfig(entries: IndexEntry[]): Map<string, IndexEntry[]> {
  const groups = new Map<string, IndexEntry[]>();
  const sorted = [...entries].sort((a, b) => (a.startedAt ?? '\uffff').localeCompare(b.startedAt ?? '\uffff'));
  for (const e of sorted) groups.set(e.config, [...(groups.get(e.config) ?? []), e]);
  return groups;
}

/** The chart: capacity (QPS) against days since the first run. */
export function historyChart(entries: IndexEntry[]): Chart {
  const times = entries.map((e) => (e.startedAt ? Date.parse(e.startedAt) : NaN)).filter(Number.isFinite);
  const t0 = times.length ? Math.min(...times) : 0;
  const series: ChartSeries[] = [];
  let i = 0;
  for (const [config, group] of byConfig(entries)) {
    const points = group
      .filter(drawable)
      .map((e) => [e.startedAt ? (Date.parse(e.startedAt) - t0) / DAY_MS : NaN, e.capacityQps] as [number, number])
      .filter(([x]) => Number.isFinite(x));
    if (points.length) series.push({ name: config, kind: 'line', dots: true, color: PALETTE[i++ % PALETTE.length], points });
  }
  return {
    title: 'Capacity per configuration across nights',
    xLabel: 'days since the first run',
    yLabel: 'capacity (QPS)',
    xScale: 'linear',
    series,
    hLines: [],
    vLines: [],
    description: `Capacity of ${series.length} configuration(s) over ${entries.length} run(s) of the results index.`,
    howToRead: 'One line per configuration, one point per night whose search converged (runs that did not are listed in the table, not drawn); a step down is a candidate regression that the gate judges with the runs\u2019 intervals.',
  };
}

/** The chart as a standalone SVG file (it carries its own background, fonts and colours). */
export async function historySvg(entries: IndexEntry[]): Promise<string> {
  return (await renderChart(historyChart(entries), { fluid: false })).svg;
}

const qps = (x: number | null) => (x === null ? '—' : `${+x.toPrecision(4)}`);
const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The markdown table: one section per configuration, one row per run, with its change on the previous measured night. */
export function historyMarkdown(entries: IndexEntry[], svgFile: string | null): string {
  const lines = ['# Capacity history', ''];
  if (svgFile) lines.push(`![capacity per configuration across nights](${svgFile})`, '');
  if (entries.length === 0) lines.push('The results index lists no run.');
  for (const [config, group] of byConfig(entries)) {
    lines.push(`## ${config}`, '', '| started | run | capacity QPS | bracket QPS | change | outcome | image |', '|---|---|--:|--:|--:|---|---|');
    let prev: number | null = null;
    for (const e of group) {
      const ok = drawable(e);
      const change = ok && prev !== null && prev > 0 ? `${e.capacityQps >= prev ? '+' : '−'}${+(Math.abs(e.capacityQps / prev - 1) * 100).toPrecision(3)}%` : '';
      lines.push(
        `| ${e.startedAt ?? '—'} | ${cell(e.runId)} | ${ok ? qps(e.capacityQps) : '—'} | [${qps(e.bracket.passQps)}, ${e.bracket.failQps === null ? '∞' : qps(e.bracket.failQps)}) | ${change} | ${e.outcome ?? '—'}${e.status && e.status !== 'completed' ? ` (${e.status})` : ''} | ${cell(e.imageDigest ?? e.image ?? '—')} |`,
      );
      if (ok) prev = e.capacityQps;
    }
    lines.push('');
  }
  return lines.join('\n');
}
