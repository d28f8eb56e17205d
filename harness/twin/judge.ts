// The verdict on a probe's timelines, computed exactly as the real pipeline's probe step does
// (capacity/probeStep.ts): warm-up records left out, D_p from the prefill fit plus the SLO's TTFT
// slack, the SLO evaluated with the metrics module, and a probe that stopped early is a fail. Pure.
import type { TimelineRecord } from '../timeline/record.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { summarizeRequests, type RequestSummary } from '../metrics/summary.ts';
import type { Slo } from '../metrics/slo.ts';

export interface ProbeJudgement {
  passed: boolean;
  /** The SLO's headline value (fluidity at its percentile, else the first SLO's value). */
  sloValue: number | null;
  /** Evaluated (non-warm-up) requests. */
  requests: number;
  summary: RequestSummary;
}

/** Per-request metrics under the SLO's deadlines, as probeStep.ts computes them. */
export function metricsUnder(records: readonly TimelineRecord[], slo: Slo, fit: Pick<PrefillFit, 'a' | 'b' | 'c'>): RequestMetrics[] {
  const tbtDeadlineS = slo.fluidity?.tbtDeadlineS ?? 0.025;
  const ttftSlackS = slo.fluidity?.ttftSlackS ?? 0.3;
  return records.map((r) => {
    const prefillS = predictPrefillS(fit, r.promptTokens);
    return computeRequestMetrics(r, { dpS: prefillS + ttftSlackS, tbtDeadlineS, prefillS, tieRule: slo.fluidity?.tieRule });
  });
}

/** Judges one probe's records (warm-up ones are skipped) under the SLO. */
export function judgeProbe(records: readonly TimelineRecord[], slo: Slo, fit: Pick<PrefillFit, 'a' | 'b' | 'c'>, earlyStop: string | null): ProbeJudgement {
  const evaluated = records.filter((r) => r.warmup !== true);
  const metrics = metricsUnder(evaluated, slo, fit);
  const summary = summarizeRequests(metrics, { slo });
  const headline = summary.slo.results.find((r) => r.name === 'fluidity') ?? summary.slo.results[0];
  return { passed: earlyStop === null && summary.slo.passed, sloValue: headline?.value ?? null, requests: metrics.length, summary };
}
