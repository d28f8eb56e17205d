// One probe's (or one file's) summary: counts, throughput, goodput, exact latency distributions,
// the SLO verdicts and the fluid token generation rate. Used by analyze, the probe summary.json and
// the capacity pipeline. Requests are added one at a time so a caller can stream them.
import type { RequestMetrics } from './request.ts';
import type { Slo } from './slo.ts';
import type { RequestStatus } from '../timeline/record.ts';
import { MetricColumnsBuilder } from './columns.ts';
import {
  evaluateSloColumns,
  meetsSlo,
  sortedSucceeded,
  type LatencyColumn,
  type SloEvaluation,
  type SortedCache,
} from './sloCheck.ts';
import { fluidTokenRate, type FluidRateResult } from './fluidRate.ts';
import { percentileAt, sortedCopy, sortedPercentileFromTop, type PercentileMethod } from './percentile.ts';

/** Exact distribution of one metric over the requests where it applies. */
export interface Distribution {
  count: number;
  mean: number | null;
  min: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
}


/** Everything a probe summary reports. Latency distributions cover succeeded requests only. */
export interface RequestSummary {
  requests: number;
  succeeded: number;
  failed: number;
  byStatus: Record<RequestStatus, number>;
  /** Requests that ended ok but streamed no token (counted as failed). */
  okWithoutTokens: number;
  durationS: number;
  requestThroughputQps: number;
  outputTokensPerS: number;
  totalTokensPerS: number;
  goodRequests: number;
  goodputQps: number;
  percentileMethod: PercentileMethod;
  ttftS: Distribution;
  ttftFromSentS: Distribution;
  dispatchLagS: Distribution;
  tpotS: Distribution;
  tbtS: Distribution;
  e2eS: Distribution;
  normalizedLatencyS: Distribution;
  schedulingDelayS: Distribution;
  /** Counted from the top: p99 = the fluidity that 99% of requests reach or exceed. */
  fluidity: Distribution;
  deadlinesTotal: number;
  deadlinesMissed: number;
  slo: SloEvaluation;
  fluidRate: FluidRateResult;
}

/** What the summary is judged against. durationS defaults to the last request's end time. */
export interface SummaryOptions {
  slo: Slo;
  method?: PercentileMethod;
  durationS?: number;
}


function distribution(sorted: Float64Array, method: PercentileMethod, fromTop = false): Distribution {
  const n = sorted.length;
  if (n === 0) return { count: 0, mean: null, min: null, p50: null, p90: null, p99: null, max: null };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i];
  const at = (i: number) => sorted[i];
  const pct = (p: number) => (fromTop ? sortedPercentileFromTop(sorted, p, method) : percentileAt(n, at, p, method));
  return { count: n, mean: sum / n, min: sorted[0], p50: pct(50), p90: pct(90), p99: pct(99), max: sorted[n - 1] };
}

// Accumulates requests of one probe; summarize() may be called once all are added.
export class SummaryAccumulator {
  private readonly cols = new MetricColumnsBuilder();
  private readonly ttftFromSent: number[] = [];
  private readonly byStatus: Record<RequestStatus, number> = { ok: 0, error: 0, timeout: 0, cancelled: 0 };
  private okWithoutTokens = 0;
  private succeeded = 0;
  private good = 0;
  private outputTokens = 0;
  private promptTokens = 0;
  private lastEndS = 0;
  private deadlinesTotal = 0;
  private deadlinesMissed = 0;

  constructor(private readonly opts: SummaryOptions) {}

  /** Adds one request; returns whether it met every configured SLO (for per-request output). */
  add(m: RequestMetrics): boolean {
    this.cols.add(m);
    this.byStatus[m.status] += 1;
    if (m.status === 'ok' && !m.succeeded) this.okWithoutTokens += 1;
    if (m.succeeded) {
      this.succeeded += 1;
      this.outputTokens += m.outputTokens;
      this.promptTokens += m.promptTokens;
      if (m.ttftFromSentS !== null) this.ttftFromSent.push(m.ttftFromSentS);
    }
    this.lastEndS = Math.max(this.lastEndS, m.endS);
    this.deadlinesTotal += m.deadlinesTotal;
    this.deadlinesMissed += m.deadlinesMissed;
    const meets = meetsSlo(m, this.opts.slo);
    if (meets) this.good += 1;
    return meets;
  }

  /** durationS here overrides the constructor's (known only once every request is in). */
  summarize(overrides: { durationS?: number } = {}): RequestSummary {
    const method = this.opts.method ?? 'nearest-rank';
    const cols = this.cols.build();
    const cache: SortedCache = {};
    const columns: LatencyColumn[] = [
      'ttftS',
      'dispatchLagS',
      'tpotS',
      'tbtSamplesS',
      'e2eS',
      'normalizedLatencyS',
      'schedulingDelayS',
    ];
    for (const c of columns) cache[c] = sortedSucceeded(cols, c);
    cache.fluidity = { sorted: sortedCopy(cols.fluidity), notApplicable: 0 };
    const dist = (c: LatencyColumn) => distribution((cache[c] as { sorted: Float64Array }).sorted, method);
    const durationS = overrides.durationS ?? this.opts.durationS ?? this.lastEndS;
    const perS = (x: number) => (durationS > 0 ? x / durationS : 0);
    const f = this.opts.slo.fluidity;
    return {
      requests: cols.count,
      succeeded: this.succeeded,
      failed: cols.count - this.succeeded,
      byStatus: { ...this.byStatus },
      okWithoutTokens: this.okWithoutTokens,
      durationS,
      requestThroughputQps: perS(this.succeeded),
      outputTokensPerS: perS(this.outputTokens),
      totalTokensPerS: perS(this.outputTokens + this.promptTokens),
      goodRequests: this.good,
      goodputQps: perS(this.good),
      percentileMethod: method,
      ttftS: dist('ttftS'),
      ttftFromSentS: distribution(sortedCopy(this.ttftFromSent), method),
      dispatchLagS: dist('dispatchLagS'),
      tpotS: dist('tpotS'),
      tbtS: dist('tbtSamplesS'),
      e2eS: dist('e2eS'),
      normalizedLatencyS: dist('normalizedLatencyS'),
      schedulingDelayS: dist('schedulingDelayS'),
      fluidity: distribution(cache.fluidity.sorted, method, true),
      deadlinesTotal: this.deadlinesTotal,
      deadlinesMissed: this.deadlinesMissed,
      slo: evaluateSloColumns(cols, this.opts.slo, method, cache),
      fluidRate: fluidTokenRate(cols, {
        percentile: f?.percentile,
        minFluidity: f?.minFluidity,
        tieRule: f?.tieRule,
        method,
      }),
    };
  }
}

/** Summary of in-memory request metrics (probe summary.json, capacity pipeline, tests). */
export function summarizeRequests(metrics: readonly RequestMetrics[], opts: SummaryOptions): RequestSummary {
  const acc = new SummaryAccumulator(opts);
  for (const m of metrics) acc.add(m);
  return acc.summarize();
}

