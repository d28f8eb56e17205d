// What a figure writes: each chart as a standalone SVG file beside the CSV of its points, and the
// table of the paper's numbers beside ours (CSV and Markdown). Pure: text in, file names and text out.
import type { Chart } from '../report/doc.ts';
import { renderSvg } from '../report/svg.ts';
import { toCsv } from '../report/csv.ts';
import type { ComparisonRow } from './paperNumbers.ts';

/** One file of a figure's output, relative to the figure's directory. */
export interface FigureFile {
  file: string;
  text: string;
}

/** Everything one figure produced: its files and a few lines for the terminal. */
export interface FigureArtifacts {
  name: string;
  files: FigureFile[];
  summary: string[];
}

// The report styles its charts from the page's CSS; a standalone SVG must carry its own.
const SVG_STYLE = `<style>
text { font: 12px system-ui, sans-serif; fill: #24292f; }
.chart-title { font-size: 14px; font-weight: 600; }
.tick { fill: #57606a; }
.axis { font-size: 13px; }
.grid { stroke: #eaeef2; }
.frame { fill: none; stroke: #8c959f; }
.threshold { stroke: #bc4c00; stroke-dasharray: 6 4; stroke-width: 1.5; }
.capacity { stroke: #8250df; stroke-dasharray: 2 3; stroke-width: 1.5; }
.mark { fill: #57606a; font-size: 11px; }
</style>`;

/** A chart as a standalone SVG document (white background, its own styles). */
export function svgFile(chart: Chart): string {
  const svg = renderSvg(chart).replace('width="100%"', 'width="640"');
  const open = svg.indexOf('>') + 1;
  return `<?xml version="1.0" encoding="UTF-8"?>\n${svg.slice(0, open)}\n${SVG_STYLE}\n<rect width="100%" height="100%" fill="#ffffff"/>${svg.slice(open)}\n`;
}

/** The chart's points, one row per point: series, x, y (the numbers the SVG draws). */
export function chartCsv(chart: Chart): string {
  return toCsv(
    ['series', chart.xLabel, chart.yLabel],
    chart.series.flatMap((s) => s.points.map(([x, y]) => [s.name, x, y])),
  );
}

/** The paper-versus-ours table as CSV. */
export function comparisonCsv(rows: readonly ComparisonRow[]): string {
  return toCsv(
    ['key', 'quantity', 'unit', 'paper', 'paperSource', 'ours', 'oursOverPaper', 'note'],
    rows.map((r) => [r.key, r.quantity, r.unit, r.paper, r.paperSource, r.ours, r.ratio, r.note]),
  );
}

const cell = (v: number | null, digits = 4) => (v === null ? '—' : String(+v.toPrecision(digits)));

/** The paper-versus-ours table as Markdown, with what is absent said in its row. */
export function comparisonMarkdown(rows: readonly ComparisonRow[]): string {
  const lines = ['| quantity | unit | paper | source | ours | ours / paper | note |', '|---|---|---:|---|---:|---:|---|'];
  for (const r of rows) {
    lines.push(`| ${r.quantity} | ${r.unit} | ${r.paper === null ? 'not available' : cell(r.paper)} | ${r.paperSource} | ${cell(r.ours)} | ${cell(r.ratio, 3)} | ${r.note.replace(/\|/g, '\\|')} |`);
  }
  return lines.join('\n') + '\n';
}

/** A figure's files: each chart as SVG beside its CSV, the extra tables, the paper beside ours, and a README that shows them. */
export function figureArtifacts(f: {
  name: string;
  title: string;
  charts: { base: string; alt: string; chart: Chart }[];
  tables: FigureFile[];
  rows: readonly ComparisonRow[];
  notes: readonly string[];
  summary: string[];
}): FigureArtifacts {
  const md = [
    `# ${f.title}`,
    '',
    ...f.charts.map((c) => `![${c.alt}](${c.base}.svg)`),
    '',
    '## The paper beside ours',
    '',
    comparisonMarkdown(f.rows),
    '## How these numbers were made',
    '',
    ...f.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
  return {
    name: f.name,
    files: [
      ...f.charts.flatMap((c) => [
        { file: `${c.base}.svg`, text: svgFile(c.chart) },
        { file: `${c.base}.csv`, text: chartCsv(c.chart) },
      ]),
      ...f.tables,
      { file: 'paper-vs-ours.csv', text: comparisonCsv(f.rows) },
      { file: 'README.md', text: md },
    ],
    summary: f.summary,
  };
}
