// The readable report of `fluidcap analyze`: one row per probe (verdict, per-entry verdicts and
// statistical decision as columns), then a line only for a probe with more to say. Pure: returns lines.
import type { RequestSummary } from '../metrics/summary.ts';
import type { ProbeStatistics } from '../runDir/schema.ts';
import { briefValidity } from '../capacity/consoleLines.ts';
import { earlyStopBrief, nameSlos } from '../metrics/sloBrief.ts';
import type { SloDefinition } from '../capacity/perSloSearch.ts';

/** What the probe's own summary said about its verdict (absent for a loose file). */
export interface ProbeReportStatus {
  valid: boolean | null;
  validity: string | null;
  earlyStop: string | null;
  interrupted: boolean;
}

/** A probe's summary with its name and rate. */
export interface ProbeReport {
  probe: string;
  qps: number | null;
  file: string;
  summary: RequestSummary;
  status?: ProbeReportStatus;
  /** The statistical decision on the same requests under the same SLO. */
  statistics?: ProbeStatistics;
}

/** The verdict column: an invalid or interrupted probe's numbers are shown, but its verdict is not one. */
export function verdictWord(p: ProbeReport): string {
  if (p.status?.interrupted) return 'interrupted';
  if (p.status?.valid === false) return 'invalid';
  return p.summary.slo.passed ? 'pass' : 'FAIL';
}

/** Seconds the way people read latencies: 412ms, 1.25s, "-" when absent, "inf" for failures. */
export function fmtS(s: number | null | undefined): string {
  if (s === null || s === undefined || Number.isNaN(s)) return '-';
  if (s === Infinity) return 'inf';
  if (Math.abs(s) < 1) return `${+(s * 1000).toPrecision(3)}ms`;
  return `${+s.toPrecision(4)}s`;
}

const fmtN = (v: number | null, digits = 3) => (v === null || Number.isNaN(v) ? '-' : `${+v.toPrecision(digits)}`);


/** Renders rows padded into columns. */
function columns(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd());
}

/** The statistical decision in a table cell: `pass 99%`, `undecided (fail 64%)`. */
export function decisionCell(st: ProbeStatistics | undefined): string {
  if (!st) return '-';
  const pct = `${Math.round(st.confidence * 100)}%`;
  return st.decision === 'undecided' ? `undecided (${st.leaning} ${pct})` : `${st.decision} ${pct}`;
}

/** What a probe's own run said about it that the table cannot: interrupted, invalid and why, stopped early and why. */
function statusNote(status: ProbeReportStatus | undefined, defs: readonly SloDefinition[]): string | null {
  if (!status) return null;
  if (status.interrupted) return 'interrupted, so its verdict is not one';
  if (status.valid === false) return `invalid, so its verdict is not used: ${briefValidity(status.validity ?? 'its client check failed')}`;
  if (status.earlyStop) return `stopped early when it ran: ${earlyStopBrief(status.earlyStop, defs)}`;
  return null;
}

/**
 * The table, one row per probe, then a line for each probe with something the row cannot say. The
 * SLO is spelled out once in the header; rows and lines name its entries (`defs`) by their short
 * names. `evidence` adds the column `--capacity` judges each probe by, with its reason where it is
 * more than the verdict.
 */
export function formatTable(
  probes: ProbeReport[],
  header: string[],
  opts: { defs?: readonly SloDefinition[]; entries?: readonly string[]; evidence?: ReadonlyMap<string, { evidence: string; why: string }> } = {},
): string[] {
  const defs = opts.defs ?? [];
  const evidence = opts.evidence;
  // Each entry's own verdict gets a column when the SLO has several.
  const perEntry = (opts.entries ?? []).length > 1 ? [...opts.entries!] : [];
  const rows = [
    ['probe', 'qps', 'reqs', 'failed', 'ttft p50', 'ttft p99', 'tpot p50', 'tbt p99', 'e2e p99', 'fluidity p99', 'fluid tok/s', 'goodput', 'SLO', ...perEntry, 'decision', ...(evidence ? ['evidence'] : [])],
  ];
  for (const p of probes) {
    const s = p.summary;
    const byName = new Map(s.slo.results.map((r) => [r.name as string, r.passed]));
    rows.push([
      p.probe,
      p.qps === null ? '-' : `${p.qps}`,
      `${s.requests}`,
      `${s.failed}`,
      fmtS(s.ttftS.p50),
      fmtS(s.ttftS.p99),
      fmtS(s.tpotS.p50),
      fmtS(s.tbtS.p99),
      fmtS(s.e2eS.p99),
      fmtN(s.fluidity.p99, 4),
      s.fluidRate.tokensPerS === null ? '-' : fmtN(s.fluidRate.tokensPerS, 4),
      `${fmtN(s.goodputQps, 4)}/s`,
      verdictWord(p),
      ...perEntry.map((n) => (byName.has(n) ? (byName.get(n) ? 'pass' : 'FAIL') : '-')),
      decisionCell(p.statistics),
      ...(evidence ? [evidence.get(p.probe)?.evidence ?? '-'] : []),
    ]);
  }
  const out = [...header, '', ...columns(rows)];
  const notes: string[] = [];
  for (const { probe, summary: s, status } of probes) {
    const said: string[] = [];
    const note = statusNote(status, defs);
    if (note) said.push(note);
    const errors = s.byStatus.error + s.byStatus.timeout + (status?.earlyStop ? 0 : s.byStatus.cancelled) + s.okWithoutTokens;
    if (errors > 0) said.push(`${s.byStatus.error} error, ${s.byStatus.timeout} timeout, ${s.byStatus.cancelled} cancelled${s.okWithoutTokens ? `, ${s.okWithoutTokens} ok without tokens` : ''}`);
    const e = evidence?.get(probe);
    // Why a probe is no evidence under the SLO analysed, where its own status does not say it already.
    if (e && e.evidence === 'none' && status?.valid !== false && !status?.interrupted) said.push(`${e.evidence === 'none' ? 'not evidence' : `evidence: ${e.evidence}`}: ${nameSlos(e.why, defs)}`);
    if (said.length > 0) notes.push(`${probe}: ${said.join('; ')}`);
  }
  if (notes.length > 0) out.push('', ...notes);
  return out;
}
