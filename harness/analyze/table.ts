// The readable report of `fluidcap analyze`: one row per probe, then each probe's SLO verdicts
// quoting the SLO text the user wrote. Pure: returns lines.
import type { RequestSummary } from '../metrics/summary.ts';
import type { SloResult } from '../metrics/sloCheck.ts';
import type { ProbeStatistics } from '../runDir/schema.ts';

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

function verdict(r: SloResult): string {
  const value = r.name === 'fluidity' ? fmtN(r.value, 4) : fmtS(r.value);
  return `${r.passed ? 'pass' : 'FAIL'}  ${r.source}: ${value}${r.note ? ` (${r.note})` : ''}`;
}

/** Renders rows padded into columns. */
function columns(rows: string[][]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ').trimEnd());
}

/** The table and verdict lines for every probe. */
export function formatTable(probes: ProbeReport[], header: string[]): string[] {
  const rows = [
    ['probe', 'qps', 'reqs', 'failed', 'ttft p50', 'ttft p99', 'tpot p50', 'tbt p99', 'e2e p99', 'fluidity p99', 'fluid tok/s', 'goodput', 'SLO'],
  ];
  for (const { probe, qps, summary: s } of probes) {
    rows.push([
      probe,
      qps === null ? '-' : `${qps}`,
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
      verdictWord(probes.find((p) => p.summary === s)!),
    ]);
  }
  const out = [...header, '', ...columns(rows), ''];
  for (const { probe, summary: s, status, statistics } of probes) {
    if (status?.interrupted) out.push(`${probe}: interrupted, so its verdict is not one`);
    if (status?.valid === false) out.push(`${probe}: invalid, so its verdict is not used: ${status.validity ?? 'its client check failed'}`);
    if (status?.earlyStop) out.push(`${probe}: stopped early when it ran: ${status.earlyStop}`);
    out.push(`${probe}: ${s.succeeded}/${s.requests} ok (${s.byStatus.error} error, ${s.byStatus.timeout} timeout, ${s.byStatus.cancelled} cancelled${s.okWithoutTokens ? `, ${s.okWithoutTokens} ok without tokens` : ''}) over ${fmtS(s.durationS)}; ${fmtN(s.requestThroughputQps, 4)} req/s, ${fmtN(s.outputTokensPerS, 5)} output tok/s`);
    for (const r of s.slo.results) out.push(`  ${verdict(r)}`);
    if (statistics) out.push(`  statistical decision: ${statistics.evidence}`);
    const fr = s.fluidRate;
    out.push(
      fr.tokensPerS === null
        ? `  fluid token rate: - (${fr.note})`
        : `  fluid token rate: ${fmtN(fr.tokensPerS, 4)} tok/s (smallest TBT deadline ${fmtS(fr.tbtDeadlineS)} at which p${fr.percentile} of requests reach fluidity >= ${fr.minFluidity})`,
    );
  }
  return out;
}
