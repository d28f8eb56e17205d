// An SLO's verdict on a probe as the statistical decision of decision.ts. Each percentile SLO
// becomes a sequence of miss indicators in arrival order (a request misses the fluidity SLO when
// its fluidity is below the minimum, a latency SLO when its value is above the maximum; TBT
// pools token gaps, request by request) plus near misses, whose clustering shows the queue's
// memory before misses do (a request that missed any token deadline, a latency or gap above half
// its limit), and is decided on that. Failed requests miss
// every SLO, as in sloCheck.ts. The fluidity SLO and every baseline use this one path, in the
// probe, in the early-stop hook and in `analyze`.
//
// Pure: metrics in, decisions out.
import type { RequestMetrics } from '../metrics/request.ts';
import type { Slo, SloName } from '../metrics/slo.ts';
import type { ProbeStatistics } from '../runDir/schema.ts';
import { allowedMissFraction, combineDecisions, decideFraction, describeDecision, type DecisionParams, type FractionDecision, type Verdict } from './decision.ts';

/** An evaluated request whose outcome is not in yet but is certain to miss every SLO judged. */
export interface CertainMiss {
  certainMiss: true;
  /** How long it has waited for its first token so far (a lower bound of its TTFT). */
  waitedS: number;
}

export type RequestOutcome = RequestMetrics | CertainMiss;

/** One SLO's series: what decision.ts judges. */
export interface SloSeries {
  name: SloName;
  source: string;
  unit: 'requests' | 'token gaps';
  allowedFraction: number;
  misses: number[];
  /** Observations within a margin of missing (decision.ts uses their clustering). */
  nearMisses: number[];
  /** For each request of the input, the series length after its observations. */
  endOf: number[];
}

export interface SloDecisionPart {
  name: SloName;
  source: string;
  unit: SloSeries['unit'];
  result: FractionDecision;
  /** One line for logs and reports. */
  text: string;
}

/** The verdict of a whole SLO (all its entries) on a probe. */
export interface SloDecision {
  decision: Verdict;
  confidence: number;
  parts: SloDecisionPart[];
  /** Requests (of the input) the decision rests on: up to the decisive point, else all. */
  requestsObserved: number;
}

export interface SloDecideOptions {
  /** A pass needs at least this many requests (the probe's planned minimum, warm-up excluded). */
  passFromRequests?: number;
  mode?: 'sequential' | 'whole';
  /**
   * The sequential test already ran on the first this-many requests without deciding (an early-stop
   * hook called again with more): it resumes after them instead of scanning from the start.
   */
  checkFromRequests?: number;
}

// Token gaps cluster by request (decision.ts clusterTime); a series of requests has one
// observation per request, where the clusters would be the observations themselves.
const clustersOf = (unit: SloSeries['unit'], endOf: number[]) => (unit === 'token gaps' ? { clusterEnds: endOf } : {});

const isCertain = (o: RequestOutcome): o is CertainMiss => (o as CertainMiss).certainMiss === true;

/** Each SLO entry of `slo` as a miss series over the outcomes (arrival order). */
export function sloSeries(outcomes: readonly RequestOutcome[], slo: Slo): SloSeries[] {
  const out: SloSeries[] = [];
  const series = (name: SloName, source: string, percentile: number, unit: SloSeries['unit']): SloSeries => {
    const s: SloSeries = { name, source, unit, allowedFraction: allowedMissFraction(percentile), misses: [], nearMisses: [], endOf: [] };
    out.push(s);
    return s;
  };
  const push = (s: SloSeries, miss: boolean, near: boolean) => {
    s.misses.push(miss ? 1 : 0);
    s.nearMisses.push(miss || near ? 1 : 0);
  };
  if (slo.fluidity) {
    const f = slo.fluidity;
    const s = series('fluidity', f.source, f.percentile, 'requests');
    for (const o of outcomes) {
      if (isCertain(o) || !o.succeeded) push(s, true, true);
      else push(s, !(o.fluidity >= f.minFluidity), o.deadlinesMissed > 0);
      s.endOf.push(s.misses.length);
    }
  }
  const column = { ttft: 'ttftS', tpot: 'tpotS', e2e: 'e2eS', schedulingDelay: 'schedulingDelayS' } as const;
  for (const name of ['ttft', 'tpot', 'e2e', 'schedulingDelay'] as const) {
    const entry = slo[name];
    if (!entry) continue;
    const s = series(name, entry.source, entry.percentile, 'requests');
    for (const o of outcomes) {
      if (isCertain(o) || !o.succeeded) push(s, true, true);
      else {
        const v = o[column[name]];
        // Not applicable (TPOT of a one-token request, scheduling delay without a fit): no observation.
        if (v !== null && !Number.isNaN(v)) push(s, v > entry.maxS, v > entry.maxS / 2);
      }
      s.endOf.push(s.misses.length);
    }
  }
  if (slo.tbt) {
    const entry = slo.tbt;
    const s = series('tbt', entry.source, entry.percentile, 'token gaps');
    for (const o of outcomes) {
      if (isCertain(o) || !o.succeeded) push(s, true, true);
      else for (const g of o.tbtSamplesS) push(s, g > entry.maxS, g > entry.maxS / 2);
      s.endOf.push(s.misses.length);
    }
  }
  return out;
}

/** Decides every SLO entry on the outcomes (arrival order) and combines them. */
export function decideSlo(outcomes: readonly RequestOutcome[], slo: Slo, params: DecisionParams, options: SloDecideOptions = {}): SloDecision {
  const passFrom = options.passFromRequests ?? 0;
  const checkFrom = options.checkFromRequests ?? 0;
  const series = sloSeries(outcomes, slo);
  const parts: SloDecisionPart[] = series.map((s) => {
    // Thresholds in this series' own units: its length after the n-th request.
    const after = (n: number) => (n <= 0 ? 0 : n > s.endOf.length ? Infinity : s.endOf[n - 1]);
    const result = decideFraction(s.misses, s.allowedFraction, params, { passFrom: after(passFrom), startAt: after(checkFrom), mode: options.mode, nearMisses: s.nearMisses, ...clustersOf(s.unit, s.endOf) });
    return { name: s.name, source: s.source, unit: s.unit, result, text: `SLO "${s.source}": ${describeDecision(result, s.unit)}` };
  });
  const combined = combineDecisions(parts.map((p) => p.result));
  const requestsAt = (index: number, k: number) => {
    const i = series[index].endOf.findIndex((end) => end >= k);
    return i < 0 ? outcomes.length : i + 1;
  };
  let requestsObserved = outcomes.length;
  if (combined.decision === 'fail') {
    requestsObserved = Math.min(...parts.flatMap((p, i) => (p.result.decision === 'fail' ? [requestsAt(i, p.result.observed)] : [])));
  } else if (combined.decision === 'pass') {
    requestsObserved = Math.max(...parts.map((p, i) => requestsAt(i, p.result.observed)));
  }
  return { decision: combined.decision, confidence: combined.confidence, parts, requestsObserved };
}

/** One line naming the decisive SLO entries (all of them when undecided or passing). */
export function describeSloDecision(d: SloDecision): string {
  const shown = d.decision === 'fail' ? d.parts.filter((p) => p.result.decision === 'fail') : d.parts;
  return shown.map((p) => p.text).join('; ');
}

/**
 * The decision for requests met one at a time in any order (a timelines file is in end order),
 * keeping a few bytes per observation instead of the requests: `fluidcap analyze` streams.
 * Requests cancelled by an early stop are not outcomes: the series ends before the first of them
 * in arrival order, as the probe judged it.
 */
export class SloDecisionAccumulator {
  private readonly rows: { scheduledS: number; cancelled: boolean; misses: Uint8Array[]; near: Uint8Array[] }[] = [];

  constructor(private readonly slo: Slo) {}

  add(m: RequestMetrics): void {
    const series = sloSeries([m], this.slo);
    this.rows.push({
      scheduledS: m.scheduledS,
      cancelled: m.status === 'cancelled',
      misses: series.map((s) => Uint8Array.from(s.misses)),
      near: series.map((s) => Uint8Array.from(s.nearMisses)),
    });
  }

  decide(params: DecisionParams, options: SloDecideOptions = {}): SloDecision {
    const rows = [...this.rows].sort((a, b) => a.scheduledS - b.scheduledS);
    const cut = rows.findIndex((r) => r.cancelled);
    const kept = cut >= 0 ? rows.slice(0, cut) : rows;
    const template = sloSeries([], this.slo);
    const parts: SloDecisionPart[] = template.map((s, i) => {
      const misses: number[] = [];
      const nearMisses: number[] = [];
      const endOf: number[] = [];
      for (const r of kept) {
        for (const x of r.misses[i]) misses.push(x);
        for (const x of r.near[i]) nearMisses.push(x);
        endOf.push(misses.length);
      }
      const passFrom = options.passFromRequests ?? 0;
      const after = passFrom <= 0 ? 0 : passFrom > endOf.length ? Infinity : endOf[passFrom - 1];
      const result = decideFraction(misses, s.allowedFraction, params, { passFrom: after, mode: options.mode, nearMisses, ...clustersOf(s.unit, endOf) });
      return { name: s.name, source: s.source, unit: s.unit, result, text: `SLO "${s.source}": ${describeDecision(result, s.unit)}` };
    });
    const combined = combineDecisions(parts.map((p) => p.result));
    return { decision: combined.decision, confidence: combined.confidence, parts, requestsObserved: kept.length };
  }
}

/**
 * The statistical decision on a finished probe's evaluated requests (any order), in the shape a
 * probe's summary keeps: pass, fail or undecided with its confidence, leaning and one line of
 * evidence. A pass needs at least `passFromRequests` requests (the probe's planned minimum).
 */
export function probeDecision(metrics: readonly RequestMetrics[], slo: Slo, params: DecisionParams, passFromRequests: number): ProbeStatistics {
  const acc = new SloDecisionAccumulator(slo);
  for (const m of metrics) acc.add(m);
  return statisticsOfDecision(acc.decide(params, { mode: 'whole', passFromRequests }));
}

/** A decision in the shape summaries and `analyze` keep. */
export function statisticsOfDecision(d: SloDecision): ProbeStatistics {
  const undecided = d.parts.filter((p) => p.result.decision !== 'pass');
  const leaning = d.decision !== 'undecided' ? d.decision : undecided.some((p) => p.result.leaning === 'fail') ? 'fail' : 'pass';
  const parts = d.parts.map((p) => ({ name: p.name, observed: p.result.observed, misses: p.result.misses, tau: +p.result.tau.toFixed(4), allowedFraction: p.result.allowedFraction }));
  return { decision: d.decision, confidence: d.confidence, leaning, evidence: describeSloDecision(d), parts };
}

/**
 * The decision an early stop fired on, in a summary's shape, keeping the counts only of the entries
 * it decided to fail. The others hold just the requests before the stop, the first of an overloaded
 * probe, served before its queue built: read as evidence they pass the rate the probe failed (a
 * probe stopped by fluidity after 7 requests at twice the capacity held 8 TTFT observations without
 * a miss, and the interval of a TTFT entry read that rate as passing and opened above it). Each
 * definition's own search already takes such a probe as evidence only for the one that stopped it.
 */
/**
 * The statistics with the arrival rate the judged requests realized (metrics/arrivalRate.ts) and the
 * rate their bursts put the probe at (capacity/burstRate.ts), each to six digits where there is one.
 */
export function withRates(s: ProbeStatistics, arrivalQps: number | null, burstQps: number | null = null): ProbeStatistics {
  return {
    ...s,
    ...(arrivalQps === null ? {} : { arrivalQps: +arrivalQps.toPrecision(6) }),
    ...(burstQps === null ? {} : { burstQps: +burstQps.toPrecision(6) }),
  };
}

export function stopStatistics(d: SloDecision): ProbeStatistics {
  const s = statisticsOfDecision(d);
  const failing = new Set<string>(d.parts.filter((p) => p.result.decision === 'fail').map((p) => p.name));
  return failing.size === 0 ? s : { ...s, parts: (s.parts ?? []).filter((p) => failing.has(p.name)) };
}
