// The capacity search on the twin: the recipe's resolved run plan executed in virtual time —
// virtual prefill profile and D_p fit, then probes planned by load/plan.ts exactly as the real
// search plans them, run on the simulated engine core, cut short by the same early-stop hook
// (makeProbeStop: a certain fail for the sample, decided for the rate),
// judged like capacity/probeStep.ts and steered by the same nextProbe(). No I/O: the caller
// resolves the recipe (rehearse.ts does) and times the call.
import { arrivalQpsOf } from '../metrics/arrivalRate.ts';
import { arrivalOf, burstQps } from '../capacity/burstRate.ts';
import type { PlannedArrival } from '../metrics/virtualBacklog.ts';
import { planProbe } from '../load/plan.ts';
import type { TraceTable } from '../load/traceCsv.ts';
import type { WorkloadSpec } from '../load/workloadSpec.ts';
import { makeProbeStop } from '../capacity/earlyStop.ts';
import { nextProbe, type Bracket, type ProbeVerdict, type SearchDecision, type SearchOutcome } from '../capacity/search.ts';
import { capacityInterval, type CapacityInterval, type EntryEvidence, type ProbeEvidence } from '../capacity/interval.ts';
import { probeDecision, stopStatistics } from '../capacity/sloDecision.ts';
import { DEFAULT_DECISION } from '../capacity/decision.ts';
import { KNEE_WARMUP_S, kneeMeasureS, kneeWarmupPlanOf, kneeWarmupS, nearKnee, plannedRequests, probeLoad, probeSeed, warmupRequestsOf, type RunPlan } from '../capacity/runPlan.ts';
import type { KneeWarmupRecord, StationaryRule } from '../load/kneeWarmup.ts';
import type { FitBounds } from '../capacity/fit.ts';
import type { PrefillFitResult, ProbeStatistics } from '../runDir/schema.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import type { Distribution } from '../metrics/summary.ts';
import type { EngineConfig } from '../sim/engine.ts';
import { runVirtualProbe, type VirtualProbeOptions } from './virtualProbe.ts';
import { runVirtualProfile } from './virtualProfile.ts';
import { judgeProbe, metricsUnder } from './judge.ts';
import { percentile } from '../metrics/percentile.ts';
import { UserError, describeValue } from '../util/errors.ts';

/** The twin's account of one probe: what capacity.json keeps, plus the latencies it saw. */
export interface TwinProbe {
  index: number;
  qps: number;
  passed: boolean;
  valid: true;
  requests: number;
  planned: number;
  /** How its knee warm-up ended (null without one), by the rule a real probe's ends by. */
  kneeWarmup: KneeWarmupRecord | null;
  /** Virtual seconds: how long the probe would have run on the engine. */
  durationS: number;
  earlyStop: string | null;
  sloValue: number | null;
  ttftS: Distribution;
  tbtS: Distribution;
  iterations: number;
  /** Each SLO entry's counts on the evaluated requests (the interval's evidence, as summary.json's statistics.parts). */
  parts: EntryEvidence[];
  /** The statistical decision a run records beside the verdict (summary.json's statistics.decision). */
  decision: ProbeStatistics['decision'];
  /** The arrival rate its judged requests realized (metrics/arrivalRate.ts), where the interval reads it; null with fewer than two. */
  arrivalQps: number | null;
  /** The rate its judged requests' bursts put it at (capacity/burstRate.ts), where the interval reads it; null where there is none. */
  burstQps: number | null;
  /** Its judged requests as planned (with TwinSearchInput.keepArrivals): what metrics/virtualBacklog.ts reads. */
  arrivals?: PlannedArrival[];
}

/**
 * What makes a probe pass: the recipe's SLO (fluidcap's capacity), or Vidur's — the P99 of the
 * requests' scheduling delay (arrival to first scheduled) under a bound, 5 s in the paper: the
 * highest rate at which the queue does not grow, whatever the latencies.
 */
export type CapacityRule = { kind: 'slo' } | { kind: 'scheduling-delay'; percentile: number; maxS: number };

/** Vidur's capacity criterion (§6): P99 scheduling delay under 5 s. */
export const VIDUR_CAPACITY: CapacityRule = { kind: 'scheduling-delay', percentile: 99, maxS: 5 };

/** The rule a `--capacity` value names: slo or scheduling-delay; anything else is a UserError. */
export function capacityRuleOf(name: string): CapacityRule {
  if (name === 'slo') return { kind: 'slo' };
  if (name === 'scheduling-delay') return VIDUR_CAPACITY;
  throw new UserError(`--capacity must be slo or scheduling-delay, got ${describeValue(name)}`);
}

/** The rule in words, for rankings and figure notes. */
export function capacityRuleText(rule: CapacityRule, sloText: string): string {
  return rule.kind === 'slo' ? `the highest rate at which ${sloText} hold` : `the highest rate with P${rule.percentile} scheduling delay under ${rule.maxS} s (Vidur's criterion; the SLOs are only reported)`;
}

export interface TwinSearchInput {
  plan: RunPlan;
  workload: WorkloadSpec;
  trace?: TraceTable;
  engine: EngineConfig;
  /** Fit bounds of the recipe's profile section (the twin's fit is noise-free, so only R² can fail). */
  fitBounds?: Partial<FitBounds>;
  /** Use this D_p fit instead of profiling the twin (e.g. the real engine's measured fit). */
  fit?: PrefillFit;
  /** Overrides the recipe's search.earlyStop. */
  earlyStop?: boolean;
  /** Modelled client delays (see VirtualProbeOptions); default 0. */
  delays?: Pick<VirtualProbeOptions, 'sendDelayS' | 'receiveDelayS'>;
  /** Called after each probe (the CLI prints a line). */
  onProbe?: (p: TwinProbe) => void;
  /** The rule that ends a knee warm-up; default the one runs use (load/kneeWarmup.ts stationaryRule). The proofs vary it. */
  kneeRule?: StationaryRule;
  /** What makes a probe pass (default: the recipe's SLO). */
  capacity?: CapacityRule;
  /**
   * A cool-down after each probe's measured requests, as a share of them (VirtualProbeOptions
   * coolDownRequests): the proofs measure what the engine's drain at a probe's end does to its
   * evidence (docs/verdicts.md); runs have none (default 0).
   */
  coolDownShare?: number;
  /** Each probe also returns its judged requests' planned arrivals (TwinProbe.arrivals), for the proofs. */
  keepArrivals?: boolean;
}

export interface TwinSearchResult {
  capacityQps: number;
  bracket: Bracket;
  outcome: SearchOutcome;
  reason: string;
  /** The capacity's 95% interval from the twin's probes, as a run computes it (null: none carried evidence). */
  interval: CapacityInterval | null;
  probes: TwinProbe[];
  fit: PrefillFit;
  /** The twin's own profile fit (null when a fit was supplied). */
  profileFit: PrefillFitResult | null;
  /** Virtual seconds of load (probes) and of profiling: what a real run would spend on the engine. */
  probeTimeS: number;
  profileTimeS: number;
}

/** Profiles (unless a fit is given) and searches in virtual time; deterministic for a recipe. */
export function runTwinSearch(input: TwinSearchInput): TwinSearchResult {
  const { plan, workload, trace, engine } = input;
  let fit: PrefillFit;
  let profileFit: PrefillFitResult | null = null;
  let profileTimeS = 0;
  if (input.fit) fit = input.fit;
  else {
    const profile = runVirtualProfile(plan.profile, engine, { fitBounds: input.fitBounds, sendDelayS: input.delays?.sendDelayS });
    profileFit = profile.fit;
    profileTimeS = profile.durationS;
    if (!profile.fit.ok) throw new Error(`twin: the virtual prefill profile was refused: ${profile.fit.problems.join('; ')}`);
    fit = profile.fit;
  }
  // The early stop judges the SLO; under Vidur's rule every probe runs to its end.
  const earlyStop = input.capacity?.kind === 'scheduling-delay' ? false : input.earlyStop ?? plan.probe.earlyStop;
  const probes: TwinProbe[] = [];
  let decision: SearchDecision;
  for (;;) {
    const verdicts: ProbeVerdict[] = probes.map((p) => ({ qps: p.qps, passed: p.passed, valid: true, evidence: evidenceOf(p) }));
    decision = nextProbe(plan.search, verdicts);
    if (decision.done) break;
    const qps = decision.qps;
    const measureS = kneeMeasureS(plan.probe, nearKnee(verdicts), plan.search.budgetS);
    const probe = runTwinProbe({ ...input, fit, earlyStop }, probes.length + 1, qps, kneeWarmupS(verdicts, plan.probe.kneeWarmupMaxS ?? KNEE_WARMUP_S), probes.filter((p) => p.qps === qps).length, measureS);
    probes.push(probe);
    input.onProbe?.(probe);
  }
  return {
    capacityQps: decision.capacityQps,
    bracket: decision.bracket,
    outcome: decision.outcome,
    reason: decision.reason,
    interval: probes.some((p) => p.parts.length > 0) ? capacityInterval(probes.map(evidenceOf)) : null,
    probes,
    fit,
    profileFit,
    probeTimeS: probes.reduce((t, p) => t + p.durationS, 0),
    profileTimeS,
  };
}

/** What a twin probe showed, as the search and the interval read it (its rates, load and counts). */
const evidenceOf = (p: TwinProbe): ProbeEvidence => ({ qps: p.qps, arrivalQps: p.arrivalQps, burstQps: p.burstQps, durationS: p.durationS, parts: p.parts });

/** One probe at `qps`, planned and judged as the real search would plan and judge it. */
export function runTwinProbe(input: TwinSearchInput & { fit: PrefillFit; earlyStop: boolean }, index: number, qps: number, warmupS = 0, repeat = 0, measureS = input.plan.probe.minDurationS): TwinProbe {
  const { plan } = input;
  const load = probeLoad(plan.probe, qps, warmupS, measureS);
  // The cool-down's arrivals follow the measured ones, past the duration limit that cuts the plan
  // (three times their mean span, so Poisson gaps rarely leave the cool-down short).
  const coolDown = Math.ceil((input.coolDownShare ?? 0) * plannedRequests(plan.probe, qps, measureS));
  const drawn = planProbe({
    workload: input.workload,
    rateQps: qps,
    requests: load.requests + coolDown,
    durationS: load.durationS + (coolDown > 0 ? (3 * coolDown) / qps : 0),
    seed: probeSeed(plan, qps, repeat),
    maxContextTokens: plan.maxContextTokens,
    trace: input.trace,
    idPrefix: String(index).padStart(2, '0'),
  });
  const measured = coolDown > 0 ? drawn.requests.filter((r, i) => i < load.requests && r.scheduledS <= load.durationS).length : drawn.requests.length;
  const probePlan = { ...drawn, requests: drawn.requests.slice(0, measured) };
  const sentPlan = coolDown > 0 ? { ...drawn, requests: drawn.requests.slice(0, measured + coolDown) } : probePlan;
  const knee = kneeWarmupPlanOf(load, probePlan.requests.length, warmupS, plan.probe.warmupFraction, input.kneeRule);
  const warmupRequests = warmupRequestsOf(probePlan.requests.length, load.kneeRequests, plan.probe.warmupFraction);
  // As the probe step stops a probe: once its fail is certain for the sample and decided for the rate.
  const minRequests = plannedRequests(plan.probe, qps, measureS) - warmupRequestsOf(plannedRequests(plan.probe, qps, measureS), 0, plan.probe.warmupFraction);
  const stopFor = (requests: typeof probePlan.requests, skipped: number) =>
    makeProbeStop(plan.slo, { requests, warmupRequests: skipped, rateQps: qps, fit: input.fit, minRequests }, DEFAULT_DECISION);
  // With a knee warm-up the early stop is made when it ends, for the requests measured after it.
  let early = input.earlyStop && knee === null ? stopFor(probePlan.requests, warmupRequests) : undefined;
  const run = runVirtualProbe(sentPlan, input.engine, {
    warmupRequests,
    coolDownRequests: sentPlan.requests.length - probePlan.requests.length,
    ...(knee ? { kneeWarmup: knee, onKneeWarmupEnd: (k: KneeWarmupRecord) => void (early = input.earlyStop ? stopFor(probePlan.requests.slice(0, k.planned), k.warmupRequests) : undefined) } : {}),
    shouldStop: input.earlyStop ? (p) => (early ? early(p) : null) : undefined,
    ...input.delays,
  });
  const verdict = judgeProbe(run.records, plan.slo, input.fit, run.earlyStop);
  const judged = run.records.filter((r) => r.warmup !== true);
  const arrivalQps = arrivalQpsOf(judged);
  const bursts = burstQps(judged, qps, input.workload, input.trace, plan.maxContextTokens);
  const arrivals = input.keepArrivals ? { arrivals: judged.map(arrivalOf) } : {};
  const rule = input.capacity ?? { kind: 'slo' };
  if (rule.kind === 'scheduling-delay') {
    // Every request of a probe without early stop ends, so each evaluated one has its delay.
    const delays = judged.map((r) => run.schedulingDelayS[r.id] ?? run.durationS - r.sentS);
    const tail = delays.length ? percentile(delays, rule.percentile) : null;
    return {
      index, qps, passed: tail !== null && tail < rule.maxS, valid: true, requests: verdict.requests, planned: run.planned, kneeWarmup: run.kneeWarmup,
      durationS: run.durationS, earlyStop: run.earlyStop, sloValue: tail, ttftS: verdict.summary.ttftS, tbtS: verdict.summary.tbtS, iterations: run.iterations,
      // The capacity interval weighs SLO evidence; a scheduling-delay verdict carries none, and its
      // decision is the verdict itself (no sequential test stands behind it).
      parts: [],
      decision: tail !== null && tail < rule.maxS ? 'pass' : 'fail',
      arrivalQps,
      burstQps: bursts,
      ...arrivals,
    };
  }
  // The counts the interval reads, as the probe step keeps them: the decision a stop fired on, else the whole probe's.
  const stoppedOn = run.earlyStop !== null ? early?.decided() ?? null : null;
  const statistics = stoppedOn ? stopStatistics(stoppedOn) : probeDecision(metricsUnder(judged, plan.slo, input.fit), plan.slo, DEFAULT_DECISION, minRequests);
  return {
    index,
    qps,
    passed: verdict.passed,
    valid: true,
    requests: verdict.requests,
    planned: run.planned,
    kneeWarmup: run.kneeWarmup,
    durationS: run.durationS,
    earlyStop: run.earlyStop,
    sloValue: verdict.sloValue,
    ttftS: verdict.summary.ttftS,
    tbtS: verdict.summary.tbtS,
    iterations: run.iterations,
    parts: statistics.parts ?? [],
    decision: statistics.decision,
    arrivalQps,
    burstQps: bursts,
    ...arrivals,
  };
}
