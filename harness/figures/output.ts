// What a figure writes: each chart as a standalone SVG file beside the CSV of its points, and the
// paper's printed values and claims beside ours (claims.csv and the README). Pure: text in, file names and text out.
import type { Chart } from '../report/doc.ts';
import { renderSvg } from '../report/svg.ts';
import { toCsv } from '../report/csv.ts';
import type { ClaimRow } from './paperNumbers.ts';
import { CLAIMS_FILE, claimsCsv, claimsMarkdown, verdictCounts } from './claimsTable.ts';

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
  /** The paper's values and claims judged against ours (what claims.csv holds). */
  claims: ClaimRow[];
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

/** A figure's files: each chart as SVG beside its CSV, the extra tables, the paper beside ours, and a README that shows them. */
export function figureArtifacts(f: {
  name: string;
  title: string;
  charts: { base: string; alt: string; chart: Chart }[];
  tables: FigureFile[];
  claims: readonly ClaimRow[];
  notes: readonly string[];
  summary: string[];
}): FigureArtifacts {
  const md = [
    `# ${f.title}`,
    '',
    ...f.charts.map((c) => `![${c.alt}](${c.base}.svg)`),
    '',
    '## The paper\u2019s values and claims beside ours',
    '',
    `${verdictCounts(f.claims)} (${CLAIMS_FILE} has every row).`,
    '',
    claimsMarkdown(f.claims),
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
      { file: CLAIMS_FILE, text: claimsCsv(f.claims) },
      { file: 'README.md', text: md },
    ],
    summary: f.summary,
    claims: [...f.claims],
  };
}
