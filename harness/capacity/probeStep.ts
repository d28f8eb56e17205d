// One load probe of the search: plan it, run it open-loop (with the early-stop hook), then judge
// the archived timelines under the recipe's SLO and every baseline SLO, and write summary.json.
// The verdict is derived from the files on disk, exactly as `fluidcap analyze` would.
import { makeDirIn } from '../util/confinedFs.ts';
import { performance } from 'node:perf_hooks';
import { planProbe, type ProbePlan } from '../load/plan.ts';
import { runProbe, type ProbeProgress, type ProbeResult } from '../load/runProbe.ts';
import { runAgentProbe, type LoadSource } from '../agent/runAgents.ts';
import { readTimelines } from '../timeline/reader.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { summarizeRequests } from '../metrics/summary.ts';
import { evaluateSlo } from '../metrics/sloCheck.ts';
import { fluidityDeadlines, type Slo } from '../metrics/slo.ts';
import { judgeClientError, type ClientErrorEffect } from './clientError.ts';
export { loosenSlo, tightenSlo } from './clientError.ts';
import type { TimelineRecord, TokenArrivals } from '../timeline/record.ts';
import { makeProbeStop } from './earlyStop.ts';
import { DEFAULT_DECISION } from './decision.ts';
import { probeDecision, stopStatistics, withRates } from './sloDecision.ts';
import { burstQpsYielding } from './burstRate.ts';
import { kneeWarmupPlanOf, plannedRequests, probeLoad, probeSeed, warmupRequestsOf, type RunPlan } from './runPlan.ts';
import type { KneeWarmupRecord } from '../load/kneeWarmup.ts';
import type { EngineSession } from './engineSession.ts';
import { probePaths } from '../runDir/layout.ts';
import { writeJsonFile } from '../runDir/jsonFiles.ts';
import { summarizeServerMetrics } from '../runDir/read.ts';
import type { ProbeOutcome, ProbeSummary } from '../runDir/schema.ts';
import { arrivalQpsOf } from '../metrics/arrivalRate.ts';
import type { PromptSetup } from '../load/tokenizeCalibration.ts';
import { serverUrl } from '../load/serverUrl.ts';
import { httpRequest } from '../util/httpRequest.ts';

// Said once per session: every probe's agents start from the same image on the same hosts.
const warnedNoRealtime = new WeakSet<object>();

/** The fields of a summary that the journal and capacity.json keep for each finished probe. */
export function probeOutcome(s: ProbeSummary): ProbeOutcome {
  const { index, qps, dir, passed, valid, requests, durationS, earlyStop, sloValue, statistics, kneeWarmup } = s;
  return { index, qps, dir, passed, valid, requests, durationS, earlyStop, sloValue, ...(statistics ? { statistics } : {}), ...(kneeWarmup ? { kneeWarmup } : {}) };
}

export interface ProbeStepInput {
  index: number;
  qps: number;
  plan: RunPlan;
  fit: PrefillFit;
  session: EngineSession;
  runDir: string;
  signal?: AbortSignal;
  earlyStop: boolean;
  /** The SLO entries the early stop may fire for (default: the whole SLO); none: no early stop. */
  earlyStopSlo?: Slo;
  onProgress?: (p: ProbeProgress) => void;
  log: (line: string) => void;
  /** The engine's prompt format, sizing and cache-off fields, measured once per run (tokenizeCalibration.ts). */
  prompts?: PromptSetup;
  /** Most seconds of arrivals at the probe's rate before its measured requests, not judged (runPlan.ts kneeWarmupS, kneeWarmup.ts). */
  warmupS?: number;
  /** Least seconds of arrivals its measured requests span (runPlan.ts kneeMeasureS; default the recipe's minDuration). */
  measureS?: number;
  /** Probes at this rate this run has finished before (each draws its own sample: runPlan.ts probeSeed). */
  repeat?: number;
}

/** Runs and judges one probe; never throws for request failures (they count against the SLO). */
export async function runProbeStep(input: ProbeStepInput): Promise<ProbeSummary> {
  const { plan, index, qps, fit } = input;
  const paths = probePaths(input.runDir, index, qps);
  makeDirIn(input.runDir, paths.dir);
  const warmupS = input.warmupS ?? 0;
  const measureS = input.measureS ?? plan.probe.minDurationS;
  const load = probeLoad(plan.probe, qps, warmupS, measureS);
  const probePlan: ProbePlan = planProbe({
    workload: plan.workload,
    rateQps: qps,
    requests: load.requests,
    durationS: load.durationS,
    seed: probeSeed(plan, qps, input.repeat ?? 0),
    maxContextTokens: plan.maxContextTokens,
    trace: plan.trace ?? undefined,
    idPrefix: String(index).padStart(2, '0'),
    promptNonce: plan.prompts.nonce ?? undefined,
    promptFormat: input.prompts?.format,
  });
  writeJsonFile(input.runDir, paths.plan, probePlan, { compact: true });
  const knee = kneeWarmupPlanOf(load, probePlan.requests.length, warmupS, plan.probe.warmupFraction);
  let warmupRequests = warmupRequestsOf(probePlan.requests.length, load.kneeRequests, plan.probe.warmupFraction);
  const { tbtDeadlineS } = fluidityDeadlines(plan.slo);
  const minRequests = plannedRequests(plan.probe, qps, measureS) - warmupRequestsOf(plannedRequests(plan.probe, qps, measureS), 0, plan.probe.warmupFraction);
  const stopSlo = input.earlyStopSlo ?? plan.slo;
  const stopping = input.earlyStop && Object.keys(stopSlo).length > 0;
  const stopFor = (requests: typeof probePlan.requests, skipped: number) =>
    makeProbeStop(stopSlo, { requests, warmupRequests: skipped, rateQps: qps, fit, minRequests, arrivals: plan.probe.tokenArrivals }, DEFAULT_DECISION);
  // With a knee warm-up the early stop is made when it ends, for the requests measured after it.
  let early = stopping && knee === null ? stopFor(probePlan.requests, warmupRequests) : undefined;
  const onKneeWarmupEnd = (k: KneeWarmupRecord) => {
    if (stopping) early = stopFor(probePlan.requests.slice(0, k.planned), k.warmupRequests);
  };
  let engineDied: string | null = null;
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort();
  input.signal?.addEventListener('abort', onOuterAbort);
  input.session.onExit((msg) => {
    engineDied = msg;
    abort.abort();
  });
  const stopTelemetry = input.session.startGpuTelemetry(paths.gpu);
  let result: ProbeResult & { agentLost?: string | null; load?: LoadSource };
  const shouldStop = (p: ProbeProgress) => {
    input.onProgress?.(p);
    return early ? early(p) : null;
  };
  const agents = input.session.agents;
  try {
    if (agents) {
      // The user's interrupt, not the probe's own abort: an engine that dies while agents start is
      // found by the probe they then run, as when it dies later.
      const started = await agents.start(index, input.signal);
      try {
        result = await runAgentProbe({
          plan: probePlan,
          options: {
            model: input.session.servedModel,
            apiKey: input.session.apiKey,
            requestTimeoutS: plan.probe.requestTimeoutS,
            stallTimeoutS: plan.probe.stallTimeoutS,
            concurrency: plan.probe.concurrency === null ? undefined : Math.max(1, Math.floor(plan.probe.concurrency / agents.count)),
            workers: plan.probe.workers ?? undefined,
            tbtDeadlineS,
            clientToleranceS: plan.probe.clientToleranceS ?? undefined,
            continuousUsage: plan.probe.continuousUsage,
            keepCoresAwake: plan.probe.keepCoresAwake,
            realtimeReceivers: plan.probe.realtimeReceivers,
            content: input.prompts?.content as Record<string, unknown> | undefined,
            extraBody: input.prompts?.extraBody,
          },
          agents: started.agents,
          version: agents.version,
          timelinesFile: paths.timelines,
          serverMetricsFile: paths.serverMetrics,
          warmupRequests,
          ...(knee ? { kneeWarmup: knee, onKneeWarmupEnd } : {}),
          signal: abort.signal,
          shouldStop,
          log: input.log,
        });
        if (plan.probe.realtimeReceivers && result.workers > 0 && result.clientHealth.realtimeReceivers === 0 && !warnedNoRealtime.has(agents)) {
          warnedNoRealtime.add(agents);
          input.log(
            `load agents: the receivers run at normal priority: Docker refused them real-time scheduling in the agent's container ` +
              `(on a cgroup v1 host containers get no real-time budget unless dockerd runs with --cpu-rt-runtime); what that costs is in each probe's client health`,
          );
        }
      } finally {
        const left = await started.remove();
        if (left.length > 0) input.log(`probe ${index}: load agents not removed: ${left.join('; ')}`);
      }
    } else {
      result = await runProbe(probePlan, {
        outDir: paths.dir,
        baseUrl: input.session.baseUrl,
        model: input.session.servedModel,
        apiKey: input.session.apiKey,
        requestTimeoutS: plan.probe.requestTimeoutS,
        stallTimeoutS: plan.probe.stallTimeoutS,
        concurrency: plan.probe.concurrency ?? undefined,
        workers: plan.probe.workers ?? undefined,
        warmupRequests,
        ...(knee ? { kneeWarmup: knee, onKneeWarmupEnd } : {}),
        signal: abort.signal,
        tbtDeadlineS,
        clientToleranceS: plan.probe.clientToleranceS ?? undefined,
        continuousUsage: plan.probe.continuousUsage,
        keepCoresAwake: plan.probe.keepCoresAwake,
        realtimeReceivers: plan.probe.realtimeReceivers,
        content: input.prompts?.content,
        extraBody: input.prompts?.extraBody,
        logRelayCost: input.session.logRelayCost,
        tunnelRelayCost: input.session.tunnelRelayCost,
        shouldStop,
      });
    }
  } finally {
    input.signal?.removeEventListener('abort', onOuterAbort);
    await stopTelemetry();
  }
  // Failed requests or an early stop may be the engine dying: its exit can be noticed after the
  // resets that ended the probe, and a verdict on a dead engine is no verdict.
  if (engineDied === null && !result.cancelled && (result.earlyStop !== null || result.byStatus.error > 0 || result.byStatus.timeout > 0)) {
    engineDied = await engineGone(input.session, () => engineDied);
  }

  warmupRequests = result.warmupRequests;
  const judgedBelow = result.kneeWarmup?.planned ?? probePlan.requests.length;
  const indexById = new Map(probePlan.requests.map((r) => [r.id, r.index]));
  const records: TimelineRecord[] = [];
  for await (const line of readTimelines(paths.timelines)) {
    if (!line.record) continue;
    const i = indexById.get(line.record.id);
    // A request past the cut that went out before the cut reached its sender is not of the probe.
    if (i === undefined || (i >= warmupRequests && i < judgedBelow)) records.push(line.record);
  }
  const arrivals = plan.probe.tokenArrivals ?? 'engine';
  const metrics = metricsUnder(records, plan.slo, fit, arrivals);
  const summary = summarizeRequests(metrics, { slo: plan.slo });
  // A verdict that is the same with every deadline moved against it by the client's own error is
  // one that error could not have produced; only a verdict the error could flip is untrusted.
  const clientErrorS = result.clientHealth.clientErrorS;
  let valid = result.clientHealth.verdict === 'valid';
  let validity = result.clientHealth.reason;
  let clientTrustedFails: string[] | undefined;
  let clientTrustedPasses: string[] | undefined;
  let clientErrorEffect: ClientErrorEffect | undefined;
  if (!valid) {
    // An early stop is a fail whatever the partial sample shows.
    const strict = result.earlyStop === null ? summary.slo : { ...summary.slo, passed: false };
    clientErrorEffect = judgeClientError(plan.slo, clientErrorS, strict, (s) => evaluateSlo(metricsUnder(records, s, fit, arrivals), s));
    // Per SLO entry, for the capacity of each definition: only its own verdict that holds counts.
    clientTrustedFails = clientErrorEffect.failsHolding;
    clientTrustedPasses = clientErrorEffect.passesHolding;
    if (clientErrorEffect.holds) {
      valid = true;
      validity = `${result.clientHealth.reason}; ${clientErrorEffect.note}, so it stands`;
    } else validity = `${result.clientHealth.reason}; ${clientErrorEffect.note}`;
  }
  // Lengths or counts other than planned mean the SLO was judged on a different workload.
  if (result.tokenDrift.verdict === 'drift') {
    valid = false;
    validity = `token counts drift: ${result.tokenDrift.note}; ${validity}`;
  }
  const baselines: ProbeSummary['baselines'] = {};
  for (const [name, slo] of Object.entries(plan.baselines)) {
    const ev = evaluateSlo(metrics, slo);
    // The baselines are decided by the same sequential test as the recipe's SLO.
    baselines[name] = { passed: ev.passed, results: ev.results, statistics: probeDecision(metrics, slo, DEFAULT_DECISION, minRequests) };
  }
  const agentLost = result.agentLost ?? null;
  const interrupted = result.cancelled || engineDied !== null || agentLost !== null;
  // Whatever the requests showed, they measured an engine that was going away: no verdict.
  if (engineDied !== null) {
    valid = false;
    validity = `the engine died: ${engineDied}`;
  } else if (agentLost !== null) {
    valid = false;
    validity = `a load agent was lost: ${agentLost}`;
  }
  // Beside the nearest-rank verdict, what the same requests establish about the rate: a short probe
  // near the knee passes or fails by chance, and this says how much chance (docs/verdicts.md).
  const stoppedOn = result.earlyStop !== null ? early?.decided() : null;
  const statistics = withRates(stoppedOn ? stopStatistics(stoppedOn) : probeDecision(metrics, plan.slo, DEFAULT_DECISION, minRequests), arrivalQpsOf(metrics), await burstQpsYielding(records, qps, plan.workload, plan.trace ?? undefined, plan.maxContextTokens));
  const headline = summary.slo.results.find((r) => r.name === 'fluidity') ?? summary.slo.results[0];
  const { slo: sloEval, ...metricSummary } = summary;
  const out: ProbeSummary = {
    index,
    qps,
    dir: paths.rel,
    // An early stop fires only once the verdict is a fail, whatever the partial data shows.
    passed: !interrupted && result.earlyStop === null && sloEval.passed,
    valid,
    validity,
    interrupted,
    requests: metrics.length,
    planned: result.planned,
    sent: result.sent,
    warmupRequests,
    kneeWarmup: result.kneeWarmup,
    durationS: result.durationS,
    earlyStop: result.earlyStop,
    statistics,
    sloValue: headline?.value ?? null,
    slo: sloEval,
    baselines,
    metrics: metricSummary,
    client: result.clientHealth,
    tokenDrift: result.tokenDrift,
    byStatus: result.byStatus,
    retried: result.retried,
    serverMetrics: summarizeServerMetrics(paths.serverMetrics),
    seed: probePlan.seed,
    engineDied,
    ...(agentLost !== null ? { agentLost } : {}),
    load: result.load ?? { from: 'client', agents: [] },
    earlyStopFor: early ? Object.keys(stopSlo) : [],
    ...(clientTrustedFails ? { clientTrustedFails } : {}),
    ...(clientTrustedPasses ? { clientTrustedPasses } : {}),
    ...(clientErrorEffect ? { clientErrorEffect } : {}),
  };
  writeJsonFile(input.runDir, paths.summary, out);
  return out;
}

/**
 * Whether the engine is gone after a probe with failures: null when it still answers HTTP (any
 * status), else the exit the session reported within a grace period, or the failed liveness check.
 */
export async function engineGone(
  session: Pick<EngineSession, 'baseUrl' | 'apiKey'>,
  reported: () => string | null,
  opts: { timeoutS?: number; graceS?: number } = {},
): Promise<string | null> {
  const timeoutS = opts.timeoutS ?? 5;
  const graceS = opts.graceS ?? 3;
  let failure: string | null = null;
  try {
    await httpRequest(serverUrl(session.baseUrl, '/v1/models'), { apiKey: session.apiKey, timeoutS });
  } catch (err) {
    const e = err as Error & { code?: string };
    failure = e.code ?? e.message;
  }
  if (failure === null) return reported();
  // The exit watcher's account (exit code, signal) is better evidence than a refused connection.
  const t0 = performance.now();
  while (reported() === null && performance.now() - t0 < graceS * 1000) await new Promise((r) => setTimeout(r, 50));
  return reported() ?? `the engine stopped answering at ${session.baseUrl} after the probe (${failure})`;
}

/** Per-request metrics of the records under an SLO's deadlines (D_p from the prefill fit). */
function metricsUnder(records: readonly TimelineRecord[], slo: Slo, fit: PrefillFit, arrivals: TokenArrivals): RequestMetrics[] {
  const { tbtDeadlineS, ttftSlackS, tieRule } = fluidityDeadlines(slo);
  return records.map((r) => {
    const prefillS = predictPrefillS(fit, r.promptTokens);
    return computeRequestMetrics(r, { dpS: prefillS + ttftSlackS, tbtDeadlineS, prefillS, arrivals, tieRule });
  });
}
