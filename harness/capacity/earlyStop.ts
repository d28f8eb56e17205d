// Ends a load probe as soon as its verdict is settled, so the search spends its time near the
// capacity instead of watching an overloaded server fail for minutes. The probe runner calls the
// returned `shouldStop(progress)` as requests end; a non-null string ends the probe and is stored
// as the probe's early-stop reason. Pure: all it sees is the progress it is handed (its clock is
// progress.elapsedS), so tests drive it with synthetic timelines.
//
// Two hooks. makeDecisionStop (below) serves verdicts that are statistical decisions
// (sloDecision.ts): it stops when the sequential test decides, pass or fail. makeEarlyStop serves
// verdicts that are a nearest-rank percentile of the probe's own sample: it stops only when that
// sample can no longer pass, which is certain about the sample, not about the rate.
//
// Rules, and why each is safe:
// (a) Failure budget exceeded — exact. A percentile SLO over N requests tolerates a fixed number
//     of failing requests (fluidity p99 ≥ 0.9 over 300: floor(300 · 0.01) = 3 below 0.9). The
//     budget is computed once with the metrics module's own percentile code on the best case (all
//     other requests perfect, every failing one only just failing), over the largest number of
//     requests the probe can evaluate, so it matches the final verdict's method. A request counts
//     as failing as soon as that is certain: finished with status error/timeout/cancelled or a
//     metric past the threshold, or known to have no token yet after waiting longer than the SLO
//     tolerates (TTFT, E2E and scheduling delay only grow while it waits; for fluidity the
//     deadlines its first token already missed cap its final fluidity at (O−1)/(O−1+m), O ≤
//     max_tokens). "Known to have no token": not yet sent (scheduled − sent; the runner gives only
//     counts, so they are taken to be the most recently scheduled, the smallest waits), or listed
//     in-flight without a first token by a runner that reports per-request detail. TBT
//     percentiles pool token gaps; their budget uses an upper bound on the sample count
//     (Σ max(max_tokens − 1, 1), servers honouring max_tokens), which can only make the budget
//     larger, so stopping stays exact. TPOT of a running request cannot be known, so TPOT only
//     counts finished requests.
// (b) Queueing diverges — a projection with conservative guards. An open-loop probe above
//     capacity builds a queue that only grows. Over `windows` consecutive windows of `windowS`
//     the backlog (scheduled − finished) and the median TTFT of the requests finishing in the
//     window both rose in every window, the backlog grew by at least `minGrowthFraction` of the
//     arrivals, and at least `minObservationS` passed. Assuming the FCFS queue keeps growing,
//     every evaluated request not yet finished waits at least as long as the latest finishers did;
//     the rule fires only when the requests that this wait already fails, plus the failures already
//     certain, exceed an SLO's budget. Disable it with `divergence: false` for a strictly exact stop.
// (c) Nothing else stops a probe: a probe that can still pass under rule (a) runs to its end unless
//     rule (b)'s projection says its remaining requests fail. tests/capacity/earlyStop.test.ts
//     checks this against the full-run verdicts of simulated probes around capacity.
import { arrivalChunks, type TimelineRecord, type TokenArrivals } from '../timeline/record.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { floorDivide } from '../metrics/floorDivide.ts';
import { percentileAt, sortedPercentileFromTop, type PercentileMethod } from '../metrics/percentile.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import type { Slo } from '../metrics/slo.ts';
import type { DecisionParams } from './decision.ts';
import { decideSlo, describeSloDecision, type RequestOutcome, type SloDecision } from './sloDecision.ts';

/** A request the runner has sent and not finished; firstTokenS once its first token arrived. */
export interface InFlightRequest {
  id: string;
  firstTokenS?: number | null;
}

/**
 * What the probe runner knows when a request ends (times in seconds from the probe's start).
 * load/runProbe.ts's ProbeProgress fits this shape (it passes `inFlight` as a count).
 */
export interface ProbeProgress {
  elapsedS: number;
  /** Planned requests whose arrival time has come. */
  scheduled: number;
  sent: number;
  /** Per in-flight request detail when the runner has it, else just how many are in flight. */
  inFlight: number | readonly InFlightRequest[];
  /** Every finished request so far, append-only (the runner's live array). */
  records: readonly TimelineRecord[];
}

/** The planned requests of the probe and how they are judged. */
export interface EarlyStopPlan {
  /** The probe plan's requests, in plan order (load/plan.ts PlannedRequest is compatible). */
  requests: readonly { id: string; scheduledS: number; promptTokens: number; maxTokens: number }[];
  /** The first N planned requests are warm-up: excluded from evaluation, as in the probe summary. */
  warmupRequests: number;
  rateQps: number;
  /** Prefill fit for D_p(P); needed by the fluidity and scheduling-delay SLOs. */
  fit?: Pick<PrefillFit, 'a' | 'b' | 'c'> | null;
  /** A fixed first-token deadline instead of fit + slack (like analyze --ttft-deadline). */
  ttftDeadlineS?: number;
  /** Which arrival of a token is judged (timeline/record.ts); default engine. */
  arrivals?: TokenArrivals;
}

/** Tuning of rule (b); defaults in DEFAULT_DIVERGENCE. */
export interface DivergenceOptions {
  /** Window length; default max(0.5 s, 10 arrivals at the probe's rate). */
  windowS?: number;
  /** Consecutive windows of growth required (default 4). */
  windows: number;
  /** No divergence verdict before this much probe time (default 5 s). */
  minObservationS: number;
  /** Backlog growth over the windows must reach this fraction of the arrivals in them (0.1). */
  minGrowthFraction: number;
}

export const DEFAULT_DIVERGENCE: DivergenceOptions = { windows: 4, minObservationS: 5, minGrowthFraction: 0.1 };

export interface EarlyStopOptions {
  /** Percentile method of the final verdict (the probe summary's); default nearest-rank. */
  method?: PercentileMethod;
  /** Rule (b): false to disable, or overrides of DEFAULT_DIVERGENCE. */
  divergence?: false | Partial<DivergenceOptions>;
}

/** The hook the probe runner calls; returns why to stop, or null to go on. */
export type ShouldStop = (progress: ProbeProgress) => string | null;

type Checked = 'fluidity' | 'ttft' | 'tpot' | 'e2e' | 'schedulingDelay';

interface PlannedInfo {
  id: string;
  index: number;
  scheduledS: number;
  promptTokens: number;
  maxTokens: number;
  evaluated: boolean;
  /** Per SLO: the first-token wait beyond which this request surely fails (Infinity: never). */
  failWaitS: Partial<Record<Checked, number>>;
}

interface SloBudget {
  name: Checked | 'tbt';
  source: string;
  /** Largest number of failing requests (or TBT samples) with which the SLO can still pass. */
  allowed: number;
  /** Over how many requests (or samples, an upper bound for tbt). */
  over: number;
}

/** Builds the early-stop hook for one probe from the SLO and the probe's plan. */
export function makeEarlyStop(slo: Slo, plan: EarlyStopPlan, options: EarlyStopOptions = {}): ShouldStop {
  const method = options.method ?? 'nearest-rank';
  const tbtDeadlineS = slo.fluidity?.tbtDeadlineS ?? 0.025;
  const { planned, dpS, prefillS } = planInfo(slo, plan);
  const evaluatedPlanned = plan.requests.filter((_, i) => i >= plan.warmupRequests);
  // Arrival order for the backlog scans (a plan is normally already in it; a trace may not be).
  const ordered = [...plan.requests].sort((x, y) => x.scheduledS - y.scheduledS);
  const nEval = evaluatedPlanned.length;

  // Which SLOs rule (a) can judge, with their failure budgets.
  const budgets: SloBudget[] = [];
  if (slo.fluidity && (plan.fit || plan.ttftDeadlineS !== undefined)) {
    budgets.push({ name: 'fluidity', source: slo.fluidity.source, allowed: fluidityBudget(nEval, slo.fluidity.percentile, slo.fluidity.minFluidity, method), over: nEval });
  }
  for (const name of ['ttft', 'tpot', 'e2e', 'schedulingDelay'] as const) {
    const s = slo[name];
    if (!s || (name === 'schedulingDelay' && !plan.fit)) continue;
    budgets.push({ name, source: s.source, allowed: latencyBudget(nEval, s.percentile, s.maxS, method), over: nEval });
  }
  if (slo.tbt) {
    const maxSamples = evaluatedPlanned.reduce((sum, r) => sum + Math.max(r.maxTokens - 1, 1), 0);
    budgets.push({ name: 'tbt', source: slo.tbt.source, allowed: latencyBudget(maxSamples, slo.tbt.percentile, slo.tbt.maxS, method), over: maxSamples });
  }

  // Running state, updated incrementally from new records.
  const finishedIds = new Set<string>();
  let processed = 0;
  const failingFinished: Record<string, number> = { fluidity: 0, ttft: 0, tpot: 0, e2e: 0, schedulingDelay: 0, tbt: 0 };
  const div = options.divergence === false ? null : { ...DEFAULT_DIVERGENCE, ...options.divergence };
  const windowS = div?.windowS ?? Math.max(0.5, 10 / plan.rateQps);
  const windows = new Map<number, WindowSample>();
  let decided: string | null = null;
  // Index of the earliest planned request not yet finished: the backlog scans start there.
  let head = 0;

  const judgeFinished = (record: TimelineRecord, info: PlannedInfo) => {
    if (!info.evaluated || record.warmup === true) return;
    const pre = prefillS(record.promptTokens);
    const m: RequestMetrics = computeRequestMetrics(record, {
      dpS: dpS(record.promptTokens) ?? Infinity,
      tbtDeadlineS,
      arrivals: plan.arrivals,
      tieRule: slo.fluidity?.tieRule,
      ...(pre !== undefined ? { prefillS: pre } : {}),
    });
    const bad = !m.succeeded;
    if (slo.fluidity && (bad || !(m.fluidity >= slo.fluidity.minFluidity))) failingFinished.fluidity++;
    if (slo.ttft && (bad || !(m.ttftS! <= slo.ttft.maxS))) failingFinished.ttft++;
    if (slo.e2e && (bad || !(m.e2eS! <= slo.e2e.maxS))) failingFinished.e2e++;
    if (slo.tpot && (bad || (m.tpotS !== null && !(m.tpotS <= slo.tpot.maxS)))) failingFinished.tpot++;
    if (slo.schedulingDelay && (bad || (m.schedulingDelayS !== null && !(m.schedulingDelayS <= slo.schedulingDelay.maxS)))) {
      failingFinished.schedulingDelay++;
    }
    if (slo.tbt) {
      if (bad) failingFinished.tbt++;
      else for (const g of m.tbtSamplesS) if (g > slo.tbt.maxS) failingFinished.tbt++;
    }
  };

  const certainFailures = (info: PlannedInfo, firstTokenS: number | null, nowS: number) => certainFailuresOf(slo, dpS, info, firstTokenS, nowS);

  return (progress: ProbeProgress): string | null => {
    if (decided) return decided;
    const now = progress.elapsedS;
    const w = Math.floor(now / windowS);
    const window = windows.get(w) ?? { backlog: 0, scheduled: 0, ttftsS: [] };
    windows.set(w, window);
    const records = progress.records;
    for (let i = processed; i < records.length; i++) {
      const record = records[i];
      if (finishedIds.has(record.id)) continue;
      finishedIds.add(record.id);
      const info = planned.get(record.id);
      if (info) judgeFinished(record, info);
      const first = arrivalChunks(record, plan.arrivals ?? 'engine').find(([, k]) => k > 0);
      if (first && record.status === 'ok') window.ttftsS.push(first[0] - record.scheduledS);
    }
    processed = records.length;

    // Arrived, unfinished requests, oldest first; and what is known of their first token.
    const detail = Array.isArray(progress.inFlight) ? new Map(progress.inFlight.map((r) => [r.id, r.firstTokenS ?? null])) : null;
    while (head < ordered.length && finishedIds.has(ordered[head].id)) head++;
    const waiting: PlannedInfo[] = [];
    let end = head;
    for (; end < ordered.length && ordered[end].scheduledS <= now; end++) {
      if (!finishedIds.has(ordered[end].id)) waiting.push(planned.get(ordered[end].id)!);
    }
    const unsent = Math.max(0, progress.scheduled - progress.sent);
    const failingNow: Record<string, number> = { ...failingFinished };
    const certain = new Map<PlannedInfo, Checked[]>();
    waiting.forEach((info, k) => {
      if (!info.evaluated) return;
      let first: number | null | undefined;
      if (detail) first = detail.has(info.id) ? detail.get(info.id)! : null; // not in flight: not sent yet
      else if (k >= waiting.length - unsent) first = null; // counts only: the newest are the unsent
      if (first === undefined) return; // in flight, first token unknown: nothing certain
      const names = certainFailures(info, first, now);
      certain.set(info, names);
      for (const name of names) failingNow[name]++;
    });

    for (const b of budgets) {
      if (failingNow[b.name] > b.allowed) {
        const unit = b.name === 'tbt' ? 'token gaps' : 'requests';
        decided = `SLO "${b.source}" can no longer pass: ${failingNow[b.name]} failing ${unit} already exceed the ${b.allowed} allowed of ${b.over} (${method} percentile)`;
        return decided;
      }
    }

    if (!div) return null;
    window.backlog = progress.scheduled - records.length;
    window.scheduled = progress.scheduled;
    if (now < div.minObservationS) return null;
    const series: { backlog: number; scheduled: number; ttftS: number }[] = [];
    for (let k = w - div.windows; k <= w; k++) {
      const s = windows.get(k);
      // A window in which no request finished gives no steady evidence; rule (a) covers stalls.
      if (!s || s.ttftsS.length === 0) return null;
      series.push({ backlog: s.backlog, scheduled: s.scheduled, ttftS: median(s.ttftsS) });
    }
    for (let i = 1; i < series.length; i++) {
      if (!(series[i].backlog > series[i - 1].backlog && series[i].ttftS > series[i - 1].ttftS)) return null;
    }
    const first = series[0];
    const last = series[series.length - 1];
    if (last.backlog - first.backlog < Math.max(1, div.minGrowthFraction * (last.scheduled - first.scheduled))) return null;

    // Projection: every evaluated request not finished yet waits at least last.ttftS.
    const unfinished = [...waiting.filter((info) => info.evaluated), ...ordered.slice(end).map((r) => planned.get(r.id)!).filter((info) => info.evaluated)];
    for (const b of budgets) {
      if (b.name === 'tbt' || b.name === 'tpot') continue;
      const name = b.name;
      let projected = 0;
      for (const info of unfinished) {
        if (certain.get(info)?.includes(name)) continue; // already in failingNow
        if (last.ttftS > (info.failWaitS[name] ?? Infinity)) projected++;
      }
      if (failingNow[name] + projected > b.allowed) {
        decided =
          `queueing diverges: the backlog grew from ${first.backlog} to ${last.backlog} requests and the median TTFT ` +
          `from ${fmtS(first.ttftS)} to ${fmtS(last.ttftS)} s over the last ${div.windows} windows of ${fmtS(windowS)} s; ` +
          `if it keeps growing, ${projected} more requests wait longer than SLO "${b.source}" allows ` +
          `(${failingNow[name]} failing + ${projected} projected > ${b.allowed} allowed of ${b.over})`;
        return decided;
      }
    }
    return null;
  };
}

/** The probe's plan for the decision hook: the planned requests include the extension. */
export interface DecisionStopPlan extends EarlyStopPlan {
  /** Evaluated requests a pass needs (the probe's planned minimum, warm-up excluded). */
  minRequests: number;
}

/** The decision hook: a ShouldStop that also tells the decision it stopped on. */
export type DecisionStop = ShouldStop & {
  /** The latest decision (null before any evaluated request is known); final once it stopped. */
  current(): SloDecision | null;
};

/**
 * Ends a probe once its statistical verdict (sloDecision.ts) is decided, in either direction: a
 * fail as soon as the evidence crosses the fail threshold, a pass once it crosses the pass
 * threshold and the probe's planned minimum of requests has been judged. Until then the probe
 * goes on through its extension; at the end of the plan it is undecided.
 *
 * The test reads requests in arrival order, and only the prefix whose outcome is known: a
 * request still running blocks the prefix, because the slow requests are the ones that finish
 * last, and judging whichever finished first would flatter the server. A request still waiting
 * for its first token is known once it surely misses every SLO judged (the waits of rule (a)),
 * which is what lets an overloaded probe fail early.
 */
/**
 * The stop runs use. The probe's verdict is the nearest-rank one, and a probe stops early only
 * once that verdict is a certain fail (makeEarlyStop) and the sequential test has decided fail
 * too (makeDecisionStop): a fail that was certain for the sample but not yet for the rate runs on
 * until it is, or to the probe's end, so every stopped probe carries a decided fail. `decided()`
 * is the sequential decision it stopped on (null when it did not stop).
 */
export function makeProbeStop(slo: Slo, plan: DecisionStopPlan, params: DecisionParams, options: EarlyStopOptions = {}): ShouldStop & { decided(): SloDecision | null } {
  const early = makeEarlyStop(slo, plan, options);
  const statistical = makeDecisionStop(slo, plan, params);
  let reason: string | null = null;
  const hook = (progress: ProbeProgress): string | null => {
    if (reason) return reason;
    // The sequential test is asked only once the sample's fail is certain: it reads the runner's
    // append-only records from where it left off, so starting late loses nothing, and a probe
    // that passes never pays for it.
    const certain = early(progress);
    if (certain === null) return null;
    const decided = statistical(progress);
    if (decided !== null && statistical.current()?.decision === 'fail') reason = `${certain}; ${decided}`;
    return reason;
  };
  return Object.assign(hook, { decided: () => (reason ? statistical.current() : null) });
}

export function makeDecisionStop(slo: Slo, plan: DecisionStopPlan, params: DecisionParams): DecisionStop {
  const tbtDeadlineS = slo.fluidity?.tbtDeadlineS ?? 0.025;
  const { planned, dpS, prefillS } = planInfo(slo, plan);
  const ordered = plan.requests.map((r) => planned.get(r.id)!).filter((info) => info.evaluated).sort((x, y) => x.scheduledS - y.scheduledS);
  // SLOs a waiting request can be known to fail; TBT and TPOT need the request to end.
  const canBeCertain = !slo.tbt && !slo.tpot;
  const judged = (['fluidity', 'ttft', 'e2e', 'schedulingDelay'] as const).filter((name) => slo[name] !== undefined);
  const finished = new Map<string, RequestMetrics>();
  const outcomes: RequestOutcome[] = [];
  let processed = 0;
  let checked = 0;
  let latest: SloDecision | null = null;
  let decided: string | null = null;

  const fn = (progress: ProbeProgress): string | null => {
    if (decided) return decided;
    const now = progress.elapsedS;
    const records = progress.records;
    for (let i = processed; i < records.length; i++) {
      const record = records[i];
      const info = planned.get(record.id);
      if (!info || !info.evaluated || record.warmup === true || finished.has(record.id)) continue;
      const pre = prefillS(record.promptTokens);
      finished.set(record.id, computeRequestMetrics(record, { dpS: dpS(record.promptTokens) ?? Infinity, tbtDeadlineS, arrivals: plan.arrivals, tieRule: slo.fluidity?.tieRule, ...(pre !== undefined ? { prefillS: pre } : {}) }));
    }
    processed = records.length;

    const detail = Array.isArray(progress.inFlight) ? new Map(progress.inFlight.map((r) => [r.id, r.firstTokenS ?? null])) : null;
    // Counts only: the unsent are the most recently scheduled, and their wait is the smallest.
    const unsent = Math.max(0, progress.scheduled - progress.sent);
    const arrived = ordered.filter((info) => info.scheduledS <= now).length;
    while (outcomes.length < ordered.length) {
      const info = ordered[outcomes.length];
      const done = finished.get(info.id);
      if (done) {
        outcomes.push(done);
        continue;
      }
      if (!canBeCertain || info.scheduledS > now || judged.length === 0) break;
      let first: number | null | undefined;
      if (detail) first = detail.has(info.id) ? detail.get(info.id)! : null;
      else if (outcomes.length >= arrived - unsent) first = null;
      if (first === undefined) break;
      const fails = certainFailuresOf(slo, dpS, info, first, now);
      if (!judged.every((name) => fails.includes(name))) break;
      outcomes.push({ certainMiss: true, waitedS: (first ?? now) - info.scheduledS });
    }
    // Re-deciding rebuilds the series (O(token gaps) for TBT): done once the known prefix grew by
    // 2%. The scan resumes where the last one ended, so the decisive request is the same; only
    // noticing it can lag by that much.
    if (outcomes.length - checked < Math.max(1, Math.floor(checked * 0.02))) return null;
    latest = decideSlo(outcomes, slo, params, { passFromRequests: plan.minRequests, checkFromRequests: checked });
    checked = outcomes.length;
    if (latest.decision === 'undecided') return null;
    decided = `decided ${latest.decision} after ${latest.requestsObserved} requests: ${describeSloDecision(latest)}`;
    return decided;
  };
  return Object.assign(fn, { current: () => latest });
}

// Each planned request with the first-token waits beyond which it surely fails each SLO.
function planInfo(slo: Slo, plan: EarlyStopPlan) {
  const prefillS = (p: number): number | undefined => (plan.fit ? predictPrefillS(plan.fit, p) : undefined);
  const dpS = (p: number): number | undefined =>
    plan.ttftDeadlineS ?? (plan.fit && slo.fluidity ? predictPrefillS(plan.fit, p) + slo.fluidity.ttftSlackS : undefined);
  const planned = new Map<string, PlannedInfo>();
  plan.requests.forEach((r, index) => {
    const info: PlannedInfo = { id: r.id, index, scheduledS: r.scheduledS, promptTokens: r.promptTokens, maxTokens: r.maxTokens, evaluated: index >= plan.warmupRequests, failWaitS: {} };
    if (slo.ttft) info.failWaitS.ttft = slo.ttft.maxS;
    if (slo.e2e) info.failWaitS.e2e = slo.e2e.maxS;
    const pre = prefillS(r.promptTokens);
    if (slo.schedulingDelay && pre !== undefined) info.failWaitS.schedulingDelay = slo.schedulingDelay.maxS + pre;
    const dp = dpS(r.promptTokens);
    if (slo.fluidity && dp !== undefined) info.failWaitS.fluidity = fluidityFailWaitS(dp, slo.fluidity.tbtDeadlineS, slo.fluidity.minFluidity, r.maxTokens);
    planned.set(r.id, info);
  });
  return { planned, dpS, prefillS };
}

// SLOs a request surely fails; firstTokenS null = no token yet (the wait so far is a lower bound
// of its TTFT), else the wait is its TTFT.
function certainFailuresOf(slo: Slo, dpS: (p: number) => number | undefined, info: PlannedInfo, firstTokenS: number | null, nowS: number): Checked[] {
  const out: Checked[] = [];
  const waitedS = (firstTokenS ?? nowS) - info.scheduledS;
  for (const name of ['ttft', 'e2e', 'schedulingDelay', 'fluidity'] as const) {
    const limit = info.failWaitS[name];
    if (limit === undefined) continue;
    if (name === 'fluidity' && firstTokenS !== null) {
      if (fluidityCapped(waitedS, info.maxTokens, slo.fluidity!, dpS(info.promptTokens)!)) out.push(name);
    } else if (waitedS > limit) out.push(name);
  }
  return out;
}

interface WindowSample {
  /** scheduled − finished at the window's last call. */
  backlog: number;
  scheduled: number;
  /** TTFTs of the requests that finished ok during the window. */
  ttftsS: number[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * The largest number of requests failing a latency SLO ("p-th percentile ≤ max") with which it can
 * still pass, computed with the metrics module's percentile code on the best case: the others at
 * 0 s, the failing ones only just above max. -1 when even none failing cannot pass.
 */
export function latencyBudget(n: number, percentile: number, maxS: number, method: PercentileMethod = 'nearest-rank'): number {
  const justOver = maxS > 0 ? maxS * (1 + 1e-12) : Number.MIN_VALUE;
  const passes = (k: number) => n === 0 || percentileAt(n, (i) => (i < n - k ? 0 : justOver), percentile, method) <= maxS;
  return largestPassing(n, passes);
}

/** The same for "at least p% of requests reach fluidity ≥ min" (failing ones just below min). */
export function fluidityBudget(n: number, percentile: number, minFluidity: number, method: PercentileMethod = 'nearest-rank'): number {
  if (minFluidity <= 0) return n; // every fluidity is ≥ 0: nothing can fail
  const justUnder = minFluidity * (1 - 1e-12);
  const passes = (k: number) => {
    if (n === 0) return true;
    const sorted = new Float64Array(n);
    for (let i = 0; i < n; i++) sorted[i] = i < k ? justUnder : 1;
    return sortedPercentileFromTop(sorted, percentile, method) >= minFluidity;
  };
  return largestPassing(n, passes);
}

// Binary search for the largest k in [0, n] with passes(k), passes being true then false.
function largestPassing(n: number, passes: (k: number) => boolean): number {
  if (!passes(0)) return -1;
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = Math.ceil((lo + hi) / 2);
    if (passes(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * The first-token wait beyond which a request with at most maxTokens tokens surely ends below
 * minFluidity: with m deadlines missed by its first token, its fluidity is at most
 * (O − 1)/(O − 1 + m), and the first token misses floor((t − D_p)/D_d) + 1 deadlines.
 */
export function fluidityFailWaitS(dpS: number, ddS: number, minFluidity: number, maxTokens: number): number {
  if (minFluidity <= 0) return Infinity;
  const rest = Math.max(maxTokens - 1, 0);
  // Smallest m with rest / (rest + m) < minFluidity.
  let m = Math.max(1, Math.floor((rest * (1 - minFluidity)) / minFluidity) + 1);
  while (m > 1 && rest / (rest + m - 1) < minFluidity) m--;
  while (!(rest / (rest + m) < minFluidity)) m++;
  // m misses need t > D_p + (m − 1)·D_d (strict: conservative at the boundary).
  return dpS + (m - 1) * ddS;
}

// A request whose first token came at TTFT `ttftS` is capped below minFluidity.
function fluidityCapped(ttftS: number, maxTokens: number, f: NonNullable<Slo['fluidity']>, dpS: number): boolean {
  if (!(ttftS > dpS)) return false;
  const misses = floorDivide(ttftS - dpS, f.tbtDeadlineS) + 1;
  const rest = Math.max(maxTokens - 1, 0);
  return rest / (rest + misses) < f.minFluidity;
}

const fmtS = (s: number) => String(+s.toFixed(3));
