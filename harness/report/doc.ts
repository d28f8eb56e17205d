// The report as a small document tree: one builder decides the content, and the Markdown and HTML
// renderers only lay it out, so report.md and report.html can never say different things.
import type { ReportCsvName } from '../runDir/layout.ts';

/**
 * Inline text: plain, bold, code (SLO text as the user wrote it is shown verbatim as code), or a
 * link to a file beside the page (`href` relative, already URL-encoded: the builder decides what
 * may be linked).
 */
export type Inline = string | { strong: string } | { code: string } | { link: string; href: string };

/** One point series of a chart, in data units. */
export interface ChartSeries {
  name: string;
  kind: 'points' | 'line';
  color: string;
  /** A line that also marks each point (a measured value, not an interpolation). */
  dots?: boolean;
  points: [x: number, y: number][];
}

/** A chart described as data; html.ts turns it into inline SVG (report.md shows the tables instead). */
export interface Chart {
  title: string;
  xLabel: string;
  yLabel: string;
  xScale: 'linear' | 'log';
  series: ChartSeries[];
  hLines: { y: number; label: string }[];
  vLines: { x: number; label: string }[];
  /** What the chart shows in words (the SVG's accessible title). */
  description: string;
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
