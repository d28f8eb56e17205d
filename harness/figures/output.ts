// What a figure writes: each chart as a standalone SVG file beside the CSV of its points and its
// Vega-Lite spec, the table of the paper's numbers beside ours (CSV and Markdown), and one HTML page
// that shows it all. Pure: text in, file names and text out (charts drawn by report/charts/).
import type { Block, Chart } from '../report/doc.ts';
import { heading, para, table } from '../report/doc.ts';
import { renderChart } from '../report/charts/render.ts';
import { renderPage } from '../report/html.ts';
import { toCsv } from '../report/csv.ts';
import type { ComparisonRow } from './paperNumbers.ts';

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
  rows: readonly ComparisonRow[];
  notes: readonly string[];
  summary: string[];
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
    heading(2, 'The paper beside ours'),
    table(
      ['quantity', 'unit', 'paper', 'source', 'ours', 'ours / paper', 'note'],
      a.rows.map((r) => [r.quantity, r.unit, r.paper === null ? 'not available' : cell(r.paper), r.paperSource, cell(r.ours), cell(r.ratio, 3), r.note]),
      [false, false, true, false, true, true, false],
    ),
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

/** A figure's files: each chart's CSV (drawFigure adds the SVGs, specs and page), the extra tables, the paper beside ours, and a README that shows them. */
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
    `Open [${FIGURE_PAGE}](${FIGURE_PAGE}) for the charts with their captions.`,
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
    title: f.title,
    charts: f.charts,
    rows: f.rows,
    notes: f.notes,
    files: [
      ...f.charts.map((c) => ({ file: `${c.base}.csv`, text: chartCsv(c.chart) })),
      ...f.tables,
      { file: 'paper-vs-ours.csv', text: comparisonCsv(f.rows) },
      { file: 'README.md', text: md },
    ],
    summary: f.summary,
  };
}
