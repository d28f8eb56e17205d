// Each report table as CSV (RFC 4180: comma-separated, CRLF-free, fields quoted when they hold a
// comma, quote or newline), so the numbers behind report.html load into a spreadsheet or pandas.
// Pure: blocks in, file names and text out.
import type { Block } from './doc.ts';
import { inlineText } from './doc.ts';
import { REPORT_CSV } from '../runDir/layout.ts';

type Cell = string | number | boolean | null | undefined;

function field(v: Cell): string {
  if (v === null || v === undefined || (typeof v === 'number' && Number.isNaN(v))) return '';
  const text = typeof v === 'number' && !Number.isFinite(v) ? (v > 0 ? 'inf' : '-inf') : String(v);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** CSV text of rows under a header. */
export function toCsv(columns: readonly string[], rows: readonly (readonly Cell[])[]): string {
  return [columns, ...rows].map((r) => r.map(field).join(',')).join('\n') + '\n';
}

/** Every table of the report that names a CSV file: its file name (relative to the run directory) and text. */
export function reportCsvFiles(blocks: readonly Block[]): { file: string; text: string }[] {
  const out: { file: string; text: string }[] = [];
  for (const b of blocks) {
    if (b.kind !== 'table' || !b.csv) continue;
    const columns = b.csv.columns ?? b.columns;
    const rows = b.csv.rows ?? b.rows.map((r) => r.map((c) => inlineText([c])));
    out.push({ file: REPORT_CSV[b.csv.name], text: toCsv(columns, rows) });
  }
  return out;
}
