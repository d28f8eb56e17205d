// Verdicts of a resolved Slo over a set of requests. A failed or timed-out request (or one that
// streamed no token) fails every SLO: its fluidity is 0 and its latencies count as +Infinity, so
// it is never silently dropped from a percentile.
import type { RequestMetrics } from './request.ts';
import type { LatencySloName, Slo } from './slo.ts';
import { LATENCY_SLO_NAMES } from './slo.ts';
import { columnsOf, GrowableF64, type MetricColumns } from './columns.ts';
import {
  nearestRankIndex,
  percentileAt,
  sortedCopy,
  sortedPercentileFromTop,
  type PercentileMethod,
} from './percentile.ts';

/** One SLO's verdict, quoting the SLO as the user wrote it. */
export interface SloResult {
  name: 'fluidity' | LatencySloName;
  source: string;
  percentile: number;
  comparison: '>=' | '<=';
  /** The measured percentile; null when nothing could be measured (see note). */
  value: number | null;
  threshold: number;
  passed: boolean;
  /** Requests (or TBT samples for tbt) the percentile was taken over. */
  samples: number;
  note?: string;
}

/** All verdicts; passed only when every configured SLO passed. */
export interface SloEvaluation {
  passed: boolean;
  method: PercentileMethod;
  results: SloResult[];
}

/** Request columns that latency SLOs and summaries take percentiles of. */
export type LatencyColumn = 'ttftS' | 'tpotS' | 'e2eS' | 'schedulingDelayS' | 'normalizedLatencyS' | 'dispatchLagS' | 'tbtSamplesS';
const COLUMN: Record<LatencySloName, LatencyColumn> = {
  ttft: 'ttftS',
  tbt: 'tbtSamplesS',
  tpot: 'tpotS',
  e2e: 'e2eS',
  schedulingDelay: 'schedulingDelayS',
};

/** Sorted values of succeeded requests (NaN = not applicable, left out), shared with summaries. */
export function sortedSucceeded(cols: MetricColumns, column: LatencyColumn): { sorted: Float64Array; notApplicable: number } {
  const out = new GrowableF64(column === 'tbtSamplesS' ? cols.tbtSamplesS.length + 1 : cols.count + 1);
  let notApplicable = 0;
  for (let i = 0; i < cols.count; i++) {
    if (!cols.succeeded[i]) continue;
    if (column === 'tbtSamplesS') {
      for (let j = cols.tbtStart[i]; j < cols.tbtStart[i + 1]; j++) out.push(cols.tbtSamplesS[j]);
    } else if (Number.isNaN(cols[column][i])) notApplicable += 1;
    else out.push(cols[column][i]);
  }
  const sorted = out.view();
  sorted.sort();
  return { sorted, notApplicable };
}

/** Number of requests that failed (not ok, or no token): each counts as +Infinity in an SLO. */
export function failedCount(cols: MetricColumns): number {
  let failed = 0;
  for (let i = 0; i < cols.count; i++) if (!cols.succeeded[i]) failed += 1;
  return failed;
}

/** Sorted columns computed once by a caller that also reports distributions. */
export type SortedCache = Partial<Record<LatencyColumn | 'fluidity', { sorted: Float64Array; notApplicable: number }>>;

/** Evaluates every configured SLO over request columns with the given percentile method. */
export function evaluateSloColumns(
  cols: MetricColumns,
  slo: Slo,
  method: PercentileMethod = 'nearest-rank',
  cache: SortedCache = {},
): SloEvaluation {
  const results: SloResult[] = [];
  if (slo.fluidity) {
    const f = slo.fluidity;
    // Failed requests are in the column with fluidity 0.
    const sorted = cache.fluidity?.sorted ?? sortedCopy(cols.fluidity);
    const value = sorted.length ? sortedPercentileFromTop(sorted, f.percentile, method) : null;
    results.push({
      name: 'fluidity',
      source: f.source,
      percentile: f.percentile,
      comparison: '>=',
      value,
      threshold: f.minFluidity,
      passed: value !== null && value >= f.minFluidity,
      samples: sorted.length,
      ...(value === null ? { note: 'no requests' } : {}),
    });
  }
  const failed = failedCount(cols);
  for (const name of LATENCY_SLO_NAMES) {
    const s = slo[name];
    if (!s) continue;
    const column = COLUMN[name];
    const { sorted, notApplicable } = cache[column] ?? sortedSucceeded(cols, column);
    // Failures sit after every measured value as virtual +Infinity entries (no copy).
    const n = sorted.length;
    const samples = n + failed;
    const at = (i: number) => (i < n ? sorted[i] : Infinity);
    let value: number | null = samples ? percentileAt(samples, at, s.percentile, method) : null;
    let note: string | undefined;
    if (name === 'schedulingDelay' && notApplicable > 0) {
      // Without a prefill fit there is no D_p(P) to subtract: say so instead of guessing.
      value = null;
      note = "needs a predicted prefill time (the run's prefill fit)";
    } else if (value === null) {
      note = name === 'tbt' || name === 'tpot' ? 'no request produced two tokens' : 'no requests';
    } else if (value === Infinity) {
      note = 'failed requests reach this percentile';
    }
    results.push({
      name,
      source: s.source,
      percentile: s.percentile,
      comparison: '<=',
      value,
      threshold: s.maxS,
      passed: value !== null && value <= s.maxS,
      samples,
      ...(note ? { note } : {}),
    });
  }
  return { passed: results.length > 0 && results.every((r) => r.passed), method, results };
}

/**
 * Whether one request meets every configured SLO (what goodput counts). A request's own TBT check
 * uses nearest rank over its samples: at most n − ceil(p/100 · n) samples may exceed the max.
 */
export function meetsSlo(m: RequestMetrics, slo: Slo): boolean {
  if (!m.succeeded) return false;
  if (slo.fluidity && !(m.fluidity >= slo.fluidity.minFluidity)) return false;
  if (slo.ttft && !(m.ttftS !== null && m.ttftS <= slo.ttft.maxS)) return false;
  if (slo.e2e && !(m.e2eS !== null && m.e2eS <= slo.e2e.maxS)) return false;
  if (slo.tpot && m.tpotS !== null && !(m.tpotS <= slo.tpot.maxS)) return false;
  if (slo.schedulingDelay && !(m.schedulingDelayS !== null && m.schedulingDelayS <= slo.schedulingDelay.maxS)) {
    return false;
  }
  if (slo.tbt && m.tbtSamplesS.length > 0) {
    const n = m.tbtSamplesS.length;
    const allowed = n - (nearestRankIndex(n, slo.tbt.percentile) + 1);
    let over = 0;
    for (const s of m.tbtSamplesS) if (s > slo.tbt.maxS) over += 1;
    if (over > allowed) return false;
  }
  return true;
}

/** evaluateSlo's answer: the verdicts plus, per request, whether it met every SLO. */
export interface SloReport extends SloEvaluation {
  meets: boolean[];
  goodRequests: number;
}

/** Evaluates a resolved Slo over in-memory request metrics (probe summary, early stop, tests). */
export function evaluateSlo(
  metrics: readonly RequestMetrics[],
  slo: Slo,
  opts: { method?: PercentileMethod } = {},
): SloReport {
  const evaluation = evaluateSloColumns(columnsOf(metrics), slo, opts.method ?? 'nearest-rank');
  const meets = metrics.map((m) => meetsSlo(m, slo));
  return { ...evaluation, meets, goodRequests: meets.filter(Boolean).length };
}
