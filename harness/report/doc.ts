// The report as a small document tree: one builder decides the content, and the Markdown and HTML
// renderers only lay it out, so report.md and report.html can never say different things.
import type { ReportCsvName } from '../runDir/layout.ts';

/**
 * Inline text: plain, bold, code (SLO text as the user wrote it is shown verbatim as code), or a
 * link to a file beside the page (`href` relative, already URL-encoded: the builder decides what
 * may be linked).
 */
export type Inline = string | { strong: string } | { code: string } | { link: string; href: string };

/**
 * How a point's value should be read: `measured` (a filled mark), or a probe whose number is not a
 * measurement of the rate's behaviour: `early-stopped` (the probe was cancelled once its verdict was
 * sure, so its latencies count only the requests that survived, and its SLO value counts the
 * cancelled ones at their worst), `invalid` (the client's own timing error was too large to trust),
 * `undecided` (a verdict the statistics did not decide). Each has its own shape in every chart.
 */
export type PointStatus = 'measured' | 'early-stopped' | 'invalid' | 'undecided';

/** One series of a chart, in data units. */
export interface ChartSeries {
  name: string;
  /** `density`: the points are binned on both axes and drawn as a heat map (for thousands of points);
   *  `range`: each point draws a horizontal segment from x to `x2` at y (an interval). */
  kind: 'points' | 'line' | 'density' | 'range';
  color: string;
  /** A line that also marks each point (a measured value, not an interpolation). */
  dots?: boolean;
  /** A dashed line (a model or bound rather than a measurement). */
  dashed?: boolean;
  points: [x: number, y: number][];
  /** Per point: how its value should be read (default measured). */
  status?: PointStatus[];
  /** Per point: a short label drawn beside it ('' or absent: none). */
  labels?: string[];
  /** Per point of a `range` series: the segment's other end. */
  x2?: number[];
  /** The legend entry for the colour, when several series share one (default: the name). */
  legend?: string;
  /** A second grouping drawn by shape (for example tensor parallelism); `Chart.shapeTitle` names it. */
  shape?: string;
  /** Small multiples: the panel this series is drawn in (series without one appear in every panel). */
  panel?: string;
}

/** A shaded range of x (vertical band) or y (horizontal band), such as a capacity interval. */
export interface ChartBand {
  axis: 'x' | 'y';
  from: number;
  to: number;
  label: string;
  color?: string;
}

/** A chart described as data; the chart style (report/charts/) turns it into a Vega-Lite spec and a static SVG (report.md shows the tables instead). */
export interface Chart {
  title: string;
  xLabel: string;
  yLabel: string;
  xScale: 'linear' | 'log';
  /** Default linear. On a log axis, values ≤ 0 are drawn on the axis floor as hollow marks and the caption says so. */
  yScale?: 'linear' | 'log';
  /** When set, y values are indices into these names (a chart of categories such as SLO definitions). */
  yCategories?: string[];
  /** x values are whole numbers (probe numbers): ticks only at integers. */
  xWhole?: boolean;
  series: ChartSeries[];
  hLines: { y: number; label: string }[];
  vLines: { x: number; label: string }[];
  bands?: ChartBand[];
  /** What the chart shows in words (the SVG's accessible title and the first line of its caption). */
  description: string;
  /** How to read it: what a mark, a line, a band means and what to look for (the caption's second part). */
  howToRead?: string;
  /** Names the `shape` grouping in the legend. */
  shapeTitle?: string;
  /** Small multiples: the panels in order (series name their `panel`); at most this many per row. */
  panels?: { names: string[]; columns: number };
  /** The file stem of the chart's Vega-Lite spec beside the report (default: from the title). */
  file?: string;
}

/** A table's CSV twin: its file (a key of REPORT_CSV) and, where the shown cells are rounded or
 *  worded, the raw values (numbers in SI units: seconds, QPS, fractions) under their own columns. */
export interface TableCsv {
  name: ReportCsvName;
  columns?: string[];
  rows?: (string | number | boolean | null)[][];
}

/** A block of the report. */
export type Block =
  | { kind: 'heading'; level: 1 | 2 | 3; text: string }
  | { kind: 'paragraph'; parts: Inline[] }
  | { kind: 'list'; items: Inline[][] }
  | { kind: 'table'; columns: string[]; rows: Inline[][]; numeric: boolean[]; csv?: TableCsv; nowrap?: boolean[] }
  | { kind: 'chart'; chart: Chart };

/** Builds a table block; `numeric` columns are right-aligned. */
export function table(columns: string[], rows: Inline[][], numeric: boolean[] = columns.map((_, i) => i > 0), csv?: TableCsv): Block {
  return csv ? { kind: 'table', columns, rows, numeric, csv } : { kind: 'table', columns, rows, numeric };
}

/** A paragraph from inline parts. */
export function para(...parts: Inline[]): Block {
  return { kind: 'paragraph', parts };
}

/** A heading. */
export function heading(level: 1 | 2 | 3, text: string): Block {
  return { kind: 'heading', level, text };
}

/** Plain text of inline parts (for plain-text consumers and tests). */
export function inlineText(parts: Inline[]): string {
  return parts.map((p) => (typeof p === 'string' ? p : 'strong' in p ? p.strong : 'code' in p ? p.code : p.link)).join('');
}
