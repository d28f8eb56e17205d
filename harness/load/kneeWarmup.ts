// The warm-up of a probe near the knee: arrivals at the probe's rate go before its measured
// requests until the engine's queue is stationary, or until a bound. A probe starts on an idle
// engine, and an empty queue passes rates that fail in the long run (docs/verdicts.md); a fixed
// warm-up long enough for the slowest engine wastes seconds on engines that settle in one.
//
// What the client sees of the queue is its backlog: requests whose arrival time has come and that
// have not ended (waiting to be sent, in flight, queued in the engine). It is sampled as each
// request ends and averaged over consecutive windows. Near the knee the backlog rises from zero to a
// level and stays there (the SLO's knee lies below the engine's saturation); past saturation it
// keeps growing, so the warm-up runs to its bound. The rule
// is pure: the load runner and the twin feed it their own clock (real or virtual).
//
// Arrivals stay open-loop: the plan holds the bound's arrivals and the measured ones after them;
// when the warm-up ends early, the requests scheduled after that instant become the measured ones
// and the plan's unsent tail is dropped, so the measured count stays as planned.

/** When the backlog counts as stationary. */
export interface StationaryRule {
  /** The rule is checked every windowS seconds from the probe's start. */
  windowS: number;
  /** Checks before the first that may end the warm-up: its shortest length is minWindows · windowS. */
  minWindows: number;
  /**
   * Standard errors added to the later third's excess over the middle one: the backlog is flat when
   * that upper bound is within the tolerance. Positive, it asks for evidence that the backlog is
   * flat (an equivalence test); negative, only for no evidence of a rise, which few samples give.
   */
  z: number;
  /** The excess the later third may have over the middle one, as a share of the middle one's level… */
  tolerance: number;
  /** …or in requests, whichever is larger (a level of a few requests moves by one or two). */
  minTolerance: number;
  /** Fewest samples (request ends) in each compared window; fewer is no evidence of anything. */
  minSamples: number;
}

/** One look at the backlog: when a request ended, how many had arrived and not ended. */
export interface BacklogSample {
  tS: number;
  backlog: number;
}

/**
 * The rule for a probe: checked every 0.25 s, from 0.75 s on. The thirds it compares grow with the
 * warm-up, so a slow rate is judged once each third holds eight request ends, not on a fixed window
 * that a slow rate would leave empty. The backlog is flat when the later third exceeds the middle
 * one by at most 2% of its level or one request, with 1.64 standard errors to spare. A test of
 * difference (no more than one standard error above) ends a slowly rising backlog seen through few
 * request ends at one of its first looks (tests/load/kneeWarmup.test.ts). The constants were
 * chosen on the quickstart's twin and checked on Sarathi's (docs/verdicts.md).
 */
export function stationaryRule(): StationaryRule {
  return { windowS: 0.25, minWindows: 3, z: 1.64, tolerance: 0.02, minTolerance: 1, minSamples: 8 };
}

/** A window's backlog level and the standard error of that level. */
function windowLevel(samples: readonly number[]): { level: number; se: number } {
  const n = samples.length;
  const level = samples.reduce((s, x) => s + x, 0) / n;
  // The spread from successive differences: a trend inside the window does not inflate it, so a
  // growing backlog is not mistaken for a noisy flat one.
  let sq = 0;
  for (let i = 1; i < n; i++) sq += (samples[i] - samples[i - 1]) ** 2;
  const variance = n > 1 ? sq / (2 * (n - 1)) : 0;
  return { level, se: Math.sqrt(variance / n) };
}

/**
 * Whether the backlog is stationary at `nowS`. At the last check instant c (a multiple of
 * windowS), the warm-up so far is cut in thirds; the first holds the rise from an empty engine, and
 * the backlog is stationary when the last third's excess over the middle one, plus `z` standard
 * errors of their difference, is within the tolerance. Windows that grow with the warm-up see a slow rise that short ones would lose
 * in the noise: a backlog growing at g a second is g·c/3 higher in the last third, while its noise
 * shrinks as the thirds fill. Samples must be in time order. Returns c when stationary, else null.
 */
export function stationaryAt(samples: readonly BacklogSample[], nowS: number, rule: StationaryRule): number | null {
  const k = Math.floor(nowS / rule.windowS + 1e-9);
  if (k < rule.minWindows) return null;
  const endS = k * rule.windowS;
  const fromS = endS / 3;
  const midS = (2 * endS) / 3;
  const earlier: number[] = [];
  const later: number[] = [];
  for (let i = samples.length - 1; i >= 0 && samples[i].tS >= fromS; i--) {
    const s = samples[i];
    if (s.tS >= endS) continue;
    (s.tS >= midS ? later : earlier).push(s.backlog);
  }
  if (earlier.length < rule.minSamples || later.length < rule.minSamples) return null;
  earlier.reverse();
  later.reverse();
  const a = windowLevel(earlier);
  const b = windowLevel(later);
  const tolerance = Math.max(rule.tolerance * a.level, rule.minTolerance);
  return b.level - a.level + rule.z * Math.hypot(a.se, b.se) <= tolerance ? endS : null;
}

/** A probe's knee warm-up as planned: at most `maxRequests` arrivals, then `measured` ones. */
export interface KneeWarmupPlan {
  /** The bound in seconds of arrivals (recipe search.kneeWarmupMax). */
  maxS: number;
  /** Arrivals the bound holds: the plan's first maxRequests requests. */
  maxRequests: number;
  /** Requests after the warm-up, the recipe's count for the probe. */
  measured: number;
  /** Share of the measured requests also left out of the judgement (recipe search.probe.warmup). */
  warmupFraction: number;
  rule: StationaryRule;
}

/** How a probe's knee warm-up ended: what its summary and the journal record. */
export interface KneeWarmupRecord {
  /** stationary: the engine's backlog stopped growing; max: the bound came first. */
  reason: 'stationary' | 'max';
  /** Seconds from the probe's start to the end of the warm-up. */
  endS: number;
  /** The bound (recipe search.kneeWarmupMax). */
  maxS: number;
  /** Requests of the warm-up: the first this many of the plan. */
  requests: number;
  /** Requests the probe sends in all: the warm-up's, then the measured ones. */
  planned: number;
  /** Requests left out of the judgement: the warm-up's, then the recipe's share of the measured. */
  warmupRequests: number;
}

/** The record of a warm-up that ended after its first `requests` arrivals, at `endS`. */
export function kneeWarmupRecord(plan: KneeWarmupPlan, reason: KneeWarmupRecord['reason'], requests: number, endS: number): KneeWarmupRecord {
  return {
    reason,
    endS: Math.round(endS * 1e6) / 1e6,
    maxS: plan.maxS,
    requests,
    planned: requests + plan.measured,
    warmupRequests: requests + Math.floor(plan.warmupFraction * plan.measured),
  };
}

/**
 * Follows one probe's warm-up as requests end. `scheduledS` are the plan's arrival times in plan
 * order (ascending). observe() returns the record once, when the warm-up ends.
 */
export class KneeWarmupWatch {
  private readonly samples: BacklogSample[] = [];
  private readonly maxAtS: number;
  private ended: KneeWarmupRecord | null = null;

  constructor(
    private readonly plan: KneeWarmupPlan,
    private readonly scheduledS: readonly number[],
  ) {
    // The bound ends where the first request after it is due: everything ending later is measured.
    this.maxAtS = plan.maxRequests < scheduledS.length ? scheduledS[plan.maxRequests] : Infinity;
  }

  get record(): KneeWarmupRecord | null {
    return this.ended;
  }

  /** A request ended at `nowS`, when `scheduled` arrivals had come and `ended` requests had ended. */
  observe(nowS: number, scheduled: number, ended: number): KneeWarmupRecord | null {
    if (this.ended) return null;
    if (nowS >= this.maxAtS) return this.end('max', this.plan.maxRequests, this.maxAtS);
    this.samples.push({ tS: nowS, backlog: scheduled - ended });
    if (stationaryAt(this.samples, nowS, this.plan.rule) === null) return null;
    // The requests due after this instant are the measured ones.
    return this.end('stationary', Math.min(scheduled, this.plan.maxRequests), nowS);
  }

  /** The probe ended (or was stopped) before the warm-up did: it counts as having run to its bound. */
  finish(): KneeWarmupRecord {
    return this.ended ?? this.end('max', this.plan.maxRequests, Math.min(this.maxAtS, this.plan.maxS));
  }

  private end(reason: KneeWarmupRecord['reason'], requests: number, endS: number): KneeWarmupRecord {
    this.ended = kneeWarmupRecord(this.plan, reason, requests, endS);
    return this.ended;
  }
}
