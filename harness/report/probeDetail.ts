// What the report plots from a probe's own timelines, beyond its summary: the TBT distribution,
// TTFT against prompt length, and fluidity as the TBT deadline varies (Metron Fig. 5d). Pure: the
// records come in already parsed, and the output is small enough to embed (curves are thinned).
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { fluidityOfRange, type TieRule } from '../metrics/fluidity.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { sortedPercentileFromTop, type PercentileMethod } from '../metrics/percentile.ts';

type TimelineRecord = Parameters<typeof computeRequestMetrics>[0];

/** Figures of one probe computed from its timelines (warm-up requests excluded). */
export interface ProbeDetail {
  requests: number;
  succeeded: number;
  /** Empirical CDF of every TBT sample: [gap in s, fraction of samples ≤ it], at most ~200 points. */
  tbtCdf: [number, number][];
  tbtSamples: number;
  /** [prompt tokens, TTFT in s] of succeeded requests (at most `maxPoints`, evenly thinned). */
  ttftByPrompt: [number, number][];
  /** Fluidity at the SLO's percentile and the share of missed deadlines, per target TBT deadline. */
  fluidityByDeadline: { tbtDeadlineS: number; fluidity: number; missRate: number }[];
  /** How D_p was set for the fluidity figures (the report states it). */
  dpSource: 'fit' | 'slack only';
  /** Requests cancelled by an early stop and left out. */
  cancelledLeftOut: number;
}

/** Target TBT deadlines of the Fig. 5d curve, as multiples of the SLO's deadline (so a time-scaled run gets its own grid). */
export const DEADLINE_GRID_FACTORS: readonly number[] = [0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.25, 1.5, 2, 3, 4];

export interface ProbeDetailOptions {
  fit: Pick<PrefillFit, 'a' | 'b' | 'c'> | null;
  ttftSlackS: number;
  tbtDeadlineS: number;
  percentile: number;
  method?: PercentileMethod;
  maxPoints?: number;
  /** Leave out requests cancelled when the probe stopped early (they were never answered, not slow). */
  dropCancelled?: boolean;
  /** The run's tie rule (fluidity.ts); default met. */
  tieRule?: TieRule;
}

/**
 * Requests re-judged at another TBT deadline `ddS` (their D_p kept): the fluidity the percentile of
 * requests reaches (failed requests count as 0) and the share of the succeeded requests' deadlines
 * missed (NaN when none was due).
 */
export function atDeadline(metrics: readonly RequestMetrics[], ddS: number, percentile: number, method: PercentileMethod = 'nearest-rank', tie?: TieRule): { fluidity: number; missRate: number } {
  const values = new Float64Array(metrics.length);
  let total = 0;
  let missed = 0;
  metrics.forEach((m, i) => {
    if (!m.succeeded || m.ttftS === null) return; // fluidity 0: a failed request fails every deadline
    const f = fluidityOfRange(m.ttftS, m.tbtSamplesS, 0, m.tbtSamplesS.length, m.dpS, ddS, tie);
    values[i] = f.fluidity;
    total += f.total;
    missed += f.missed;
  });
  values.sort();
  return { fluidity: metrics.length ? sortedPercentileFromTop(values, percentile, method) : NaN, missRate: total > 0 ? missed / total : NaN };
}

/** A plausible timeline line (a report must not fail on one odd line: it is skipped). */
export function isTimelineRecord(v: Record<string, unknown>): v is Record<string, unknown> & TimelineRecord {
  return (
    typeof v.id === 'string' &&
    typeof v.scheduledS === 'number' &&
    typeof v.sentS === 'number' &&
    typeof v.promptTokens === 'number' &&
    typeof v.outputTokens === 'number' &&
    typeof v.status === 'string' &&
    Array.isArray(v.chunks) &&
    v.chunks.every((c) => Array.isArray(c) && typeof c[0] === 'number' && typeof c[1] === 'number')
  );
}

// Every k-th element so a chart keeps its shape without embedding thousands of marks.
function thin<T>(items: T[], max: number): T[] {
  if (items.length <= max) return items;
  const step = items.length / max;
  const out: T[] = [];
  for (let i = 0; i < max; i++) out.push(items[Math.floor(i * step)]);
  return out;
}

/** The probe's detail figures from its evaluated records. */
export function probeDetail(records: readonly TimelineRecord[], o: ProbeDetailOptions): ProbeDetail {
  const maxPoints = o.maxPoints ?? 400;
  const method = o.method ?? 'nearest-rank';
  const evaluated = records.filter((r) => r.warmup !== true && !(o.dropCancelled && r.status === 'cancelled'));
  const metrics = evaluated.map((r) => {
    const prefillS = o.fit ? predictPrefillS(o.fit, r.promptTokens) : undefined;
    return computeRequestMetrics(r, { dpS: (prefillS ?? 0) + o.ttftSlackS, tbtDeadlineS: o.tbtDeadlineS, prefillS, tieRule: o.tieRule });
  });
  const ok = metrics.filter((m) => m.succeeded);

  const gaps = ok.flatMap((m) => m.tbtSamplesS).sort((a, b) => a - b);
  const cdf: [number, number][] = [];
  if (gaps.length > 0) {
    // Quantile points: every 0.5% of samples, plus the extreme tail where the stalls are.
    const qs = new Set<number>();
    for (let i = 0; i <= 200; i++) qs.add(Math.min(gaps.length - 1, Math.floor((i / 200) * (gaps.length - 1))));
    for (const f of [0.995, 0.999, 0.9999]) qs.add(Math.floor(f * (gaps.length - 1)));
    qs.add(gaps.length - 1);
    for (const i of [...qs].sort((a, b) => a - b)) cdf.push([gaps[i], (i + 1) / gaps.length]);
  }

  const ttft = thin(
    ok.flatMap((m) => (m.ttftS === null ? [] : [[m.promptTokens, m.ttftS] as [number, number]])),
    maxPoints,
  );

  const fluidityByDeadline = DEADLINE_GRID_FACTORS.map((k) => +(k * o.tbtDeadlineS).toPrecision(6)).map((dd) => ({ tbtDeadlineS: dd, ...atDeadline(metrics, dd, o.percentile, method, o.tieRule) }));

  return {
    requests: metrics.length,
    succeeded: ok.length,
    tbtCdf: cdf,
    tbtSamples: gaps.length,
    ttftByPrompt: ttft,
    fluidityByDeadline,
    dpSource: o.fit ? 'fit' : 'slack only',
    cancelledLeftOut: o.dropCancelled ? records.filter((r) => r.warmup !== true && r.status === 'cancelled').length : 0,
  };
}
