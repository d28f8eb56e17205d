// What a figure writes: each chart as a standalone SVG file beside the CSV of its points and its
// Vega-Lite spec, the paper's printed values and claims beside ours (claims.csv and the README), and
// one HTML page that shows it all. Pure: text in, file names and text out (charts drawn by report/charts/).
import type { Block, Chart } from '../report/doc.ts';
import { heading, para } from '../report/doc.ts';
import { renderChart } from '../report/charts/render.ts';
import { renderPage } from '../report/html.ts';
import { toCsv } from '../report/csv.ts';
import type { ClaimRow } from './paperNumbers.ts';
import { CLAIMS_FILE, claimsCsv, claimsMarkdown, verdictCounts } from './claimsTable.ts';

/** One file of a figure's output, relative to the figure's directory. */
export interface FigureFile {
  file: string;
  text: string;
}

/** Everything one figure produced: its files and a few lines for the terminal. Until `drawFigure`
 *  has run, `files` holds the data files only and the charts are not yet drawn. */
export interface FigureArtifacts {
  name: string;
  title: string;
  files: FigureFile[];
  charts: { base: string; alt: string; chart: Chart }[];
  notes: readonly string[];
  summary: string[];
  /** The paper's values and claims judged against ours (what claims.csv holds). */
  claims: ClaimRow[];
}

/** The HTML page of a figure: its charts with their captions, the paper beside ours, and how the numbers were made. */
export const FIGURE_PAGE = 'index.html';

/**
 * Draws a figure's charts: each as `<base>.svg` (standalone, its own background and fonts) beside
 * `<base>.csv` and `<base>.vl.json` (the Vega-Lite spec to restyle it), and the figure's page.
 */
export async function drawFigure(a: FigureArtifacts): Promise<FigureArtifacts> {
  const charts = a.charts.map((c) => ({ ...c, chart: { ...c.chart, file: c.base } }));
  const drawn: FigureFile[] = [];
  for (const c of charts) {
    const r = await renderChart(c.chart, { fluid: false });
    drawn.push({ file: `${c.base}.svg`, text: r.svg }, { file: `${c.base}.vl.json`, text: JSON.stringify(r.spec, null, 1) + '\n' });
  }
  const blocks: Block[] = [
    heading(1, a.title),
    ...charts.map((c): Block => ({ kind: 'chart', chart: c.chart })),
    heading(2, 'The paper\u2019s values and claims beside ours'),
    para(`${verdictCounts(a.claims)} (${CLAIMS_FILE} has every row).`),
    {
      kind: 'table',
      columns: ['id', 'quantity', 'paper', 'ours', 'verdict', 'why'],
      rows: a.claims.map((r) => [r.id, r.quantity, r.paper, r.oursText, r.verdict, r.reason]),
      numeric: [false, false, false, false, false, false],
      // An id (M-11a) broken at its hyphen reads as two; it is short, so it keeps its line in a narrow window.
      nowrap: [true, false, false, false, false, false],
    },
    heading(2, 'How these numbers were made'),
    { kind: 'list', items: a.notes.map((n) => [n]) },
    para('Each chart\u2019s points are in its CSV file, and its Vega-Lite spec (data inline) beside it.'),
  ];
  const page = await renderPage(blocks, a.title, (slug) => `${slug}.vl.json`);
  return { ...a, charts, files: [...drawn, ...a.files, { file: FIGURE_PAGE, text: page.html }] };
}

/** The chart's points, one row per point: series (its colour's legend entry), x, y, and the shape grouping when the chart has one (the numbers the SVG draws). */
export function chartCsv(chart: Chart): string {
  const shaped = chart.series.some((s) => s.shape !== undefined);
  return toCsv(
    ['series', chart.xLabel, chart.yLabel, ...(shaped ? [chart.shapeTitle ?? 'shape'] : [])],
    chart.series.flatMap((s) => s.points.map(([x, y]) => [s.legend ?? s.name, x, y, ...(shaped ? [s.shape ?? null] : [])])),
  );
}

/** A figure's files: each chart's CSV (drawFigure adds the SVGs, specs and page), the extra tables, the paper beside ours, and a README that shows them. */
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
    `Open [${FIGURE_PAGE}](${FIGURE_PAGE}) for the charts with their captions.`,
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
    title: f.title,
    charts: f.charts,
    notes: f.notes,
    files: [
      ...f.charts.map((c) => ({ file: `${c.base}.csv`, text: chartCsv(c.chart) })),
      ...f.tables,
      { file: CLAIMS_FILE, text: claimsCsv(f.claims) },
      { file: 'README.md', text: md },
    ],
    summary: f.summary,
    claims: [...f.claims],
  };
}
