// A figure's claims file (claims.csv), its README section and the one table `fluidcap figure
// --check` prints: for each printed value and claim, the paper's, ours, and whether it holds here.
// Pure: judged rows in, text out.
import { toCsv } from '../report/csv.ts';
import type { ClaimRow } from './paperNumbers.ts';

export const CLAIMS_FILE = 'claims.csv';
export const CLAIMS_COLUMNS = ['id', 'kind', 'key', 'quantity', 'paper', 'source', 'ours', 'oursText', 'verdict', 'reason'] as const;

/** The claims as CSV, one row per entry of paperNumbers.json, in its order. */
export function claimsCsv(rows: readonly ClaimRow[]): string {
  return toCsv([...CLAIMS_COLUMNS], rows.map((r) => CLAIMS_COLUMNS.map((c) => r[c])));
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** The claims as a Markdown table: setup facts after the judged entries. */
export function claimsMarkdown(rows: readonly ClaimRow[]): string {
  const judged = rows.filter((r) => r.kind !== 'setup');
  const setup = rows.filter((r) => r.kind === 'setup');
  const lines = ['| row | kind | what | paper | ours | verdict | why | source |', '|---|---|---|---|---|---|---|---|'];
  for (const r of judged) lines.push(`| ${r.id} | ${r.kind} | ${cell(r.quantity)} | ${cell(r.paper)} | ${cell(r.oursText)} | **${r.verdict}** | ${cell(r.reason)} | ${cell(r.source)} |`);
  if (setup.length) {
    lines.push('', 'The paper\u2019s setup beside ours:', '', '| row | what | paper | ours | | source |', '|---|---|---|---|---|---|');
    for (const r of setup) lines.push(`| ${r.id} | ${cell(r.quantity)} | ${cell(r.paper)} | ${cell(r.oursText)} | ${cell(r.reason)} | ${cell(r.source)} |`);
  }
  return lines.join('\n') + '\n';
}

/** Counts by verdict, in a fixed order: "3 hold, 1 does not hold, 5 not comparable here". */
export function verdictCounts(rows: readonly ClaimRow[]): string {
  const n = (v: ClaimRow['verdict']) => rows.filter((r) => r.verdict === v).length;
  return `${n('holds')} hold, ${n('does not hold')} do not hold, ${n('not comparable here')} not comparable here`;
}

/** One plain-text table over several figures' claims (setup facts left out), columns padded. */
export function checkTable(figures: readonly { figure: string; rows: readonly ClaimRow[] }[]): string {
  const head = ['figure', 'row', 'kind', 'paper', 'ours', 'verdict', 'why'];
  const body = figures.flatMap((f) => f.rows.filter((r) => r.kind !== 'setup').map((r) => [f.figure, r.id, r.kind, r.paper, r.oursText, r.verdict, r.reason]));
  const clip = (s: string, n: number) => (s.length > n ? `${s.slice(0, n - 1)}…` : s);
  const limits = [20, 6, 8, 44, 26, 19, 70];
  const cells = [head, ...body].map((row) => row.map((c, i) => clip(c, limits[i])));
  const widths = head.map((_, i) => Math.max(...cells.map((r) => r[i].length)));
  return cells.map((r) => r.map((c, i) => c.padEnd(widths[i])).join('  ').trimEnd()).join('\n') + '\n';
}
