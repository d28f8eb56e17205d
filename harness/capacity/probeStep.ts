// One load probe of the search: plan it, run it open-loop (with the early-stop hook), then judge
// the archived timelines under the recipe's SLO and every baseline SLO, and write summary.json.
// The verdict is derived from the files on disk, exactly as `fluidcap analyze` would.
import { existsSync, readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { planProbe, type ProbePlan } from '../load/plan.ts';
import { runProbe, type ProbeProgress, type ProbeResult } from '../load/runProbe.ts';
import type { TraceTable } from '../load/traceCsv.ts';
import type { WorkloadSpec } from '../load/workloadSpec.ts';
import { readTimelines } from '../timeline/reader.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { summarizeRequests, type RequestSummary } from '../metrics/summary.ts';
import { evaluateSlo, type SloEvaluation } from '../metrics/sloCheck.ts';
import { makeEarlyStop } from './earlyStop.ts';
import type { RunPlan } from './runPlan.ts';
import type { EngineSession } from './engineSession.ts';

export interface ProbeSummary {
  index: number;
  qps: number;
  dir: string;
  passed: boolean;
  /** false when the client's own timing error was beyond tolerance: the verdict is not trusted. */
  valid: boolean;
  /** true when Ctrl-C (or an engine death) ended it: no verdict. */
  interrupted: boolean;
  /** Evaluated requests (warm-up excluded). */
  requests: number;
  planned: number;
  sent: number;
  warmupRequests: number;
  durationS: number;
  earlyStop: string | null;
  /** The recipe SLO's headline value (fluidity at its percentile, else the first SLO's value). */
  sloValue: number | null;
  slo: SloEvaluation;
  baselines: Record<string, { passed: boolean; results: SloEvaluation['results'] }>;
  metrics: Omit<RequestSummary, 'slo'>;
  client: ProbeResult['clientHealth'];
  tokenDrift: ProbeResult['tokenDrift'];
  byStatus: ProbeResult['byStatus'];
  serverMetrics: ServerMetricsSummary | null;
  seed: number;
  engineDied: string | null;
}

export interface ServerMetricsSummary {
  scrapes: number;
  maxRunning: number | null;
  maxWaiting: number | null;
  maxKvUsage: number | null;
  preemptions: number | null;
}

export function probeDirName(index: number, qps: number): string {
  return `${String(index).padStart(2, '0')}-qps-${+qps.toPrecision(6)}`;
}

export interface ProbeStepInput {
  index: number;
  qps: number;
  plan: RunPlan;
  workload: WorkloadSpec;
  trace?: TraceTable;
  fit: PrefillFit;
  session: EngineSession;
  runDir: string;
  signal?: AbortSignal;
  earlyStop: boolean;
  onProgress?: (p: ProbeProgress) => void;
  log: (line: string) => void;
}

/** Runs and judges one probe; never throws for request failures (they count against the SLO). */
export async function runProbeStep(input: ProbeStepInput): Promise<ProbeSummary> {
  const { plan, index, qps, fit } = input;
  const dirName = probeDirName(index, qps);
  const dir = join(input.runDir, 'probes', dirName);
  mkdirSync(dir, { recursive: true });
  const probePlan: ProbePlan = planProbe({
    workload: input.workload,
    rateQps: qps,
    requests: plan.probe.requests,
    durationS: plan.probe.durationLimitS,
    maxContextTokens: plan.maxContextTokens,
    trace: input.trace,
    idPrefix: String(index).padStart(2, '0'),
  });
  writeFileSync(join(dir, 'plan.json'), JSON.stringify(probePlan) + '\n');
  const warmupRequests = Math.floor(plan.probe.warmupFraction * probePlan.requests.length);
  const tbtDeadlineS = plan.slo.fluidity?.tbtDeadlineS ?? 0.025;
  const early = input.earlyStop
    ? makeEarlyStop(plan.slo, { requests: probePlan.requests, warmupRequests, rateQps: qps, fit })
    : undefined;
  let engineDied: string | null = null;
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort();
  input.signal?.addEventListener('abort', onOuterAbort);
  input.session.onExit((msg) => {
    engineDied = msg;
    abort.abort();
  });
  const stopTelemetry = input.session.startGpuTelemetry(join(dir, 'gpu.jsonl'));
  let result: ProbeResult;
  try {
    result = await runProbe(probePlan, {
      outDir: dir,
      baseUrl: input.session.baseUrl,
      model: input.session.servedModel,
      apiKey: input.session.apiKey,
      requestTimeoutS: plan.probe.requestTimeoutS,
      stallTimeoutS: plan.probe.stallTimeoutS,
      concurrency: plan.probe.concurrency ?? undefined,
      workers: plan.probe.workers ?? undefined,
      warmupFraction: plan.probe.warmupFraction,
      signal: abort.signal,
      tbtDeadlineS,
      clientToleranceS: plan.probe.clientToleranceS ?? undefined,
      shouldStop: (p) => {
        input.onProgress?.(p);
        return early ? early(p) : null;
      },
    });
  } finally {
    input.signal?.removeEventListener('abort', onOuterAbort);
    await stopTelemetry();
  }

  const indexById = new Map(probePlan.requests.map((r) => [r.id, r.index]));
  const ttftSlackS = plan.slo.fluidity?.ttftSlackS ?? 0.3;
  const metrics: RequestMetrics[] = [];
  for await (const line of readTimelines(join(dir, 'timelines.jsonl'))) {
    if (!line.record) continue;
    const i = indexById.get(line.record.id);
    if (i !== undefined && i < warmupRequests) continue;
    const prefillS = predictPrefillS(fit, line.record.promptTokens);
    metrics.push(computeRequestMetrics(line.record, { dpS: prefillS + ttftSlackS, tbtDeadlineS, prefillS }));
  }
  const summary = summarizeRequests(metrics, { slo: plan.slo });
  const baselines: ProbeSummary['baselines'] = {};
  for (const [name, slo] of Object.entries(plan.baselines)) {
    const ev = evaluateSlo(metrics, slo);
    baselines[name] = { passed: ev.passed, results: ev.results };
  }
  const interrupted = result.cancelled || engineDied !== null;
  const headline = summary.slo.results.find((r) => r.name === 'fluidity') ?? summary.slo.results[0];
  const { slo: sloEval, ...metricSummary } = summary;
  const out: ProbeSummary = {
    index,
    qps,
    dir: `probes/${dirName}`,
    // An early stop fires only once the verdict is a fail, whatever the partial data shows.
    passed: !interrupted && result.earlyStop === null && sloEval.passed,
    valid: result.clientHealth.verdict === 'valid',
    interrupted,
    requests: metrics.length,
    planned: result.planned,
    sent: result.sent,
    warmupRequests,
    durationS: result.durationS,
    earlyStop: result.earlyStop,
    sloValue: headline?.value ?? null,
    slo: sloEval,
    baselines,
    metrics: metricSummary,
    client: result.clientHealth,
    tokenDrift: result.tokenDrift,
    byStatus: result.byStatus,
    serverMetrics: summarizeServerMetrics(join(dir, 'server-metrics.jsonl')),
    seed: probePlan.seed,
    engineDied,
  };
  writeFileSync(join(dir, 'summary.json'), JSON.stringify(out, null, 2) + '\n');
  return out;
}

/** Peaks of the engine's gauges over the probe, and preemptions during it. */
export function summarizeServerMetrics(file: string): ServerMetricsSummary | null {
  if (!existsSync(file)) return null;
  const rows: Record<string, unknown>[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      rows.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a torn last line
    }
  }
  if (rows.length === 0) return null;
  const series = (key: string) => rows.map((r) => r[key]).filter((v): v is number => typeof v === 'number');
  const max = (key: string) => {
    const v = series(key);
    return v.length ? Math.max(...v) : null;
  };
  const pre = series('preemptions');
  return {
    scrapes: rows.length,
    maxRunning: max('running'),
    maxWaiting: max('waiting'),
    maxKvUsage: max('kvUsage'),
    preemptions: pre.length ? pre[pre.length - 1] - pre[0] : null,
  };
}
