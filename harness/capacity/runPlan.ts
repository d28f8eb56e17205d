// Declaration apart from execution: a validated recipe resolves to this plain-data plan (engine
// launch, profile requests, workload, search bounds, SLO, probe settings), which holds everything
// the run needs, so nothing downstream goes back to the recipe. `--dry-run` prints it; the runner
// executes it. Pure: the caller supplies the run id, the catalog lookups and the loaded trace.
import type { Recipe } from '../recipe/parse.ts';
import { DEFAULT_FLUIDITY, type Slo } from '../metrics/slo.ts';
import type { WorkloadSpec } from '../load/workloadSpec.ts';
import type { TraceTable } from '../load/traceCsv.ts';
import type { TargetSpec } from '../provision/targetSpec.ts';
import type { FitBounds } from './fit.ts';
import { renderContainerSpec } from '../provision/containerSpec.ts';
import { renderProcessSpec } from '../provision/processSpec.ts';
import { planProfile, type ProfilePlan } from './profilePlan.ts';
import type { SearchBounds } from './search.ts';
import { UserError } from '../util/errors.ts';
import { sizeProblem } from '../util/sizeBounds.ts';
import { listModels } from '../catalog/models.ts';
import { simModelProblem } from '../recipe/lookups.ts';
import { contextCutProblem, runContext } from '../recipe/workloadFit.ts';
import { deriveSeed } from '../util/rng.ts';
import type { EngineLaunch, LoadPlan, ProbeSettings, RunPrompts } from '../runDir/schema.ts';
import { stationaryRule, type KneeWarmupPlan, type StationaryRule } from '../load/kneeWarmup.ts';

export interface RunPlan {
  runId: string;
  recipeName: string;
  recipeFile: string;
  engine: EngineLaunch;
  /** The name requests carry in `model` (vLLM serves the HF id; the sim its catalog name). */
  servedModel: string;
  maxContextTokens: number;
  gpuProfile: string | null;
  gpuCount: number;
  /** How the engine session is held: readiness, access path, idle-GPU check, the model asked for. */
  session: {
    /** target.model as written; null lets an endpoint's first listed model be used. */
    requestedModel: string | null;
    readyTimeoutS: number;
    access: TargetSpec['access'];
    gpuIdle: TargetSpec['gpuIdle'];
  };
  workload: WorkloadSpec;
  /** The workload's trace file, loaded once (null unless lengths come from a trace). */
  trace: TraceTable | null;
  profile: ProfilePlan & {
    api: WorkloadSpec['api'];
    format: 'token-ids' | 'text';
    requestTimeoutS: number;
    fitBounds: Partial<FitBounds>;
    /** Slack added to D_p in fit.json (the fluidity SLO's, else Metron's default). */
    ttftSlackS: number;
  };
  search: SearchBounds;
  probe: ProbeSettings;
  slo: Slo;
  /** Baseline SLOs every probe is also judged under (Metron Fig. 6), each with its own name. */
  baselines: Record<string, Slo>;
  seed: number;
  /** How each probe's workload sample is seeded: 'per-rate' derives it from `seed` and the probe's
   *  rate (probeSeed), so probes do not all replay one sample; 'workload' replays `seed` at every
   *  rate, as runs written before did (a resumed older run keeps it). */
  probeSeeds: 'per-rate' | 'workload';
  /** How prompts are written: the cache policy (off: the engine's cache-off switches are used) and the run's nonce. */
  prompts: RunPrompts;
  /** Where each probe's load is sent from. */
  load: LoadPlan;
}

export interface PlanContext {
  runId: string;
  /** Context length of a catalog model, or null when the catalog does not know it. */
  modelContext: (model: string) => number | null;
  /** The run's prompt nonce (new runs draw one; a resumed run reads it from its manifest). */
  promptNonce?: string;
  /** The workload's trace table, when its lengths come from a trace file. */
  trace: TraceTable | null;
}

/** SLO entries carry the user's own text when the recipe file has it. */
export function sloWithSources(slo: Slo, sloText: Record<string, string>): Slo {
  const out: Record<string, unknown> = {};
  for (const [name, entry] of Object.entries(slo)) {
    if (entry === undefined) continue;
    out[name] = { ...entry, source: sloText[name] ?? entry.source };
  }
  return out as Slo;
}

/**
 * The papers' baseline definitions, judged on the same probes: each latency SLO the recipe names
 * on its own, and defaults tied to the fluidity SLO for those it does not (TBT P99 and TPOT P99 at
 * the TBT deadline; scheduling delay P99 within the TTFT slack; TTFT P99 within 2 s, Vidur's bound).
 */
export function baselineSlos(slo: Slo): Record<string, Slo> {
  const f = slo.fluidity;
  const out: Record<string, Slo> = {};
  const ttft = slo.ttft ?? { percentile: 99, maxS: 2, source: 'ttft p99 <= 2s (default baseline)' };
  const tbt =
    slo.tbt ?? (f ? { percentile: 99, maxS: f.tbtDeadlineS, source: `tbt p99 <= ${f.tbtDeadlineS * 1000}ms (default baseline)` } : undefined);
  const tpot =
    slo.tpot ?? (f ? { percentile: 99, maxS: f.tbtDeadlineS, source: `tpot p99 <= ${f.tbtDeadlineS * 1000}ms (default baseline)` } : undefined);
  const sched =
    slo.schedulingDelay ??
    (f ? { percentile: 99, maxS: f.ttftSlackS, source: `schedulingDelay p99 <= ${f.ttftSlackS}s (default baseline)` } : undefined);
  if (f) out['fluidity'] = { fluidity: f };
  out['ttft+tbt'] = tbt ? { ttft, tbt } : { ttft };
  if (tpot) out['tpot'] = { tpot };
  if (sched) out['schedulingDelay'] = { schedulingDelay: sched };
  if (slo.e2e) out['e2e'] = { e2e: slo.e2e };
  return out;
}

/** The context a run's requests must fit: maxModelLen, else the catalog's, else 4096. */
const contextOf = (recipe: Recipe, ctx: Pick<PlanContext, 'modelContext'>): number => runContext(recipe.target, ctx.modelContext).tokens;

/**
 * Everything the plan refuses of a parsed recipe, at once: a model the simulated engine lacks, sizes
 * past their bounds (refused before any is allocated), profiled lengths beyond the context, and a
 * workload the context would cut without the recipe asking for it.
 */
export function planProblems(recipe: Recipe, ctx: Pick<PlanContext, 'modelContext'>): string[] {
  const t = recipe.target;
  const file = recipe.source.file;
  if (t.engine === 'sim' && (t.model === undefined || ctx.modelContext(t.model) === null)) {
    // The rest is measured against the model's context, which is unknown.
    return [simModelProblem(file, t.model ?? '', listModels())];
  }
  const problems: string[] = [];
  const sp = recipe.search.probe;
  const qpsMax = recipe.search.qps.maxQps;
  problems.push(
    ...[
      sizeProblem('gpus', t.tensorParallel, `${file}: target.tensorParallel (${t.tensorParallel})`),
      sizeProblem('probeRequests', Math.max(sp.requests, Math.ceil(qpsMax * sp.minDurationS)), `${file}: search.probe.requests (${sp.requests}), or search.qps.max (${qpsMax}) × search.probe.minDuration (${sp.minDurationS} s),`),
    ].filter((p): p is string => p !== null),
  );
  const profile = planProfile(recipe.profile, { maxContextTokens: contextOf(recipe, ctx) });
  for (const p of profile.problems) problems.push(p.startsWith('profile.') ? `${file}: ${p}` : `${file}: profile cannot run: ${p}`);
  const cut = contextCutProblem(recipe, ctx.modelContext);
  if (cut !== null) problems.push(cut);
  const load = loadPlan(recipe);
  if (load.agents > 1 && load.from === 'client') {
    const why = t.engine === 'endpoint' ? 'is an endpoint' : t.runtime === 'process' ? 'runs as a process (target.runtime: process), with no container to stand beside' : 'runs inside this process (no target.image)';
    problems.push(`${file}: load.agents (${load.agents}): more than 1 needs load agents, and this engine ${why}`);
  }
  return problems;
}

/**
 * Where probes are sent from: the recipe's choice, else an agent beside an engine fluidcap starts in
 * a container on another host (what lies between that host and this machine, network or SSH relay,
 * is then out of the measurement), else this process. Several agents imply agents wherever there
 * is a container to stand beside (planProblems refuses them elsewhere).
 */
export function loadPlan(recipe: Recipe): LoadPlan {
  const l = recipe.load;
  const t = recipe.target;
  // An agent is a container beside the engine: an engine run as a process may have no Docker on
  // its host, an endpoint and the in-process simulated engine have no container to stand beside,
  // and on this machine the client already is beside the engine.
  const inContainer = t.engine !== 'endpoint' && t.runtime !== 'process' && !(t.engine === 'sim' && t.image === undefined);
  const agents = l?.agents ?? 1;
  const from = l?.from ?? (inContainer && (t.host !== 'local' || agents > 1) ? 'agent' : 'client');
  return { from, chosenBy: l?.from ? 'recipe' : 'default', agents, hosts: l?.hosts ?? null };
}

/**
 * The recipe as it runs inside a Slurm allocation: a container takes the GPUs Slurm gave the job
 * (their indices on the node), not the recipe's ids, which only say how many to ask for; another
 * job may hold those. An engine run as a process is a step of the job, and srun hands it the job's
 * GPUs itself. Unchanged without an allocation, or when the counts differ.
 */
export function recipeInAllocation(recipe: Recipe, gpuIndices: readonly number[] | undefined): Recipe {
  const ids = gpuIndices ?? [];
  if (ids.length === 0 || recipe.target.runtime === 'process' || ids.length !== recipe.target.gpus.length) return recipe;
  return { ...recipe, target: { ...recipe.target, gpus: [...ids] } };
}

/** Resolves the recipe into the plan; throws UserError for what only the catalog can tell. */
export function planRun(recipe: Recipe, ctx: PlanContext): RunPlan {
  const problems = planProblems(recipe, ctx);
  if (problems.length > 0) throw new UserError(problems.join('\n'));
  const t = recipe.target;
  const model = t.model ?? 'endpoint-default';
  const maxContextTokens = contextOf(recipe, ctx);

  let engine: EngineLaunch;
  if (t.engine === 'endpoint') {
    engine = { kind: 'endpoint', url: t.endpoint!.url.replace(/\/$/, ''), apiKeyEnv: t.endpoint!.apiKeyEnv ?? null };
  } else {
    const renderOpts = { runId: ctx.runId, recipeFile: recipe.source.file, promptCache: recipe.workload.promptCache.mode };
    const spec = t.runtime === 'process' ? null : renderContainerSpec(t, renderOpts)!;
    if (spec === null) {
      engine = { kind: 'process', host: t.host, spec: renderProcessSpec(t, renderOpts) };
    } else if (t.engine === 'sim' && t.image === undefined) {
      // No image: the engine runs as a child process here, on a free loopback port.
      engine = { kind: 'local-process', argv: withListenAddress(spec.argv, '127.0.0.1', 0) };
    } else {
      engine = { kind: 'container', host: t.host, spec };
    }
  }

  const profile = planProfile(recipe.profile, { maxContextTokens });
  const slo = sloWithSources(recipe.slo as Slo, recipe.source.sloText);
  const p = recipe.search.probe;
  const w = recipe.workload;
  return {
    runId: ctx.runId,
    recipeName: recipe.name,
    recipeFile: recipe.source.file,
    engine,
    session: { requestedModel: t.model ?? null, readyTimeoutS: t.readyTimeoutS, access: t.access, gpuIdle: t.gpuIdle },
    servedModel: model,
    maxContextTokens,
    gpuProfile: t.gpuProfile ?? null,
    // llama.cpp's server runs on the CPU here: it holds no GPU to cost.
    gpuCount: t.engine === 'endpoint' || t.engine === 'llamacpp' ? 0 : t.tensorParallel,
    workload: w,
    trace: ctx.trace,
    profile: {
      ...profile,
      api: w.api,
      format: w.api === 'chat' ? 'text' : w.prompts.format,
      requestTimeoutS: recipe.profile.requestTimeoutS,
      fitBounds: recipe.profile.fitBounds,
      ttftSlackS: slo.fluidity?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS,
    },
    search: {
      qps: recipe.search.qps,
      tolerance: recipe.search.tolerance,
      maxProbes: recipe.search.maxProbes,
      budgetS: recipe.search.budget ?? null,
      probeLength: { requests: p.requests, minDurationS: p.minDurationS },
    },
    probe: {
      requests: p.requests,
      minDurationS: p.minDurationS,
      durationLimitS: p.durationLimitS,
      warmupFraction: p.warmupFraction,
      kneeWarmupMaxS: recipe.search.kneeWarmupMax,
      requestTimeoutS: p.requestTimeoutS,
      stallTimeoutS: p.stallTimeoutS,
      concurrency: p.concurrency ?? null,
      workers: p.workers ?? null,
      earlyStop: recipe.search.earlyStop,
      clientToleranceS: p.clientToleranceS ?? null,
      continuousUsage: p.continuousUsage ?? continuousUsageDefault(t.engine),
      tokenArrivals: p.tokenArrivals,
      keepCoresAwake: p.keepCoresAwake,
      realtimeReceivers: p.realtimeReceivers,
    },
    slo,
    baselines: baselineSlos(slo),
    seed: recipe.workload.seed,
    probeSeeds: 'per-rate',
    prompts: {
      cache: recipe.workload.promptCache,
      nonce: ctx.promptNonce ?? null,
      format: recipe.workload.api === 'chat' ? 'text' : recipe.workload.prompts.format,
      tokenIdRange: recipe.workload.prompts.tokenIdRange ?? null,
    },
    load: loadPlan(recipe),
  };
}

/**
 * Whether requests ask for the running token count on every chunk when the recipe does not say:
 * vLLM (and the simulated engine, which streams like it) honours stream_options.continuous_usage_stats
 * in 0.8.5 and newest; an endpoint asks too, since the dialect probe drops what a strict server
 * refuses; llama.cpp's equivalent (timings_per_token) stays opt-in.
 */
export function continuousUsageDefault(engine: Recipe['target']['engine']): boolean {
  return engine !== 'llamacpp';
}

/** Replaces the values of --host and --port in an argv (the container spec listens on 0.0.0.0). */
function withListenAddress(argv: readonly string[], host: string, port: number): string[] {
  const out = [...argv];
  const set = (flag: string, value: string) => {
    const i = out.indexOf(flag);
    if (i >= 0) out[i + 1] = value;
    else out.push(flag, value);
  };
  set('--host', host);
  set('--port', String(port));
  return out;
}

/**
 * The workload seed of a probe at `qps`. One sample replayed at every rate moves every verdict the
 * same way, and an interval fitted across the probes cannot see that (docs/verdicts.md); a seed per
 * rate makes the probes independent samples while a run, its resume and its twin stay reproducible.
 */
export function probeSeed(plan: Pick<RunPlan, 'seed' | 'probeSeeds'>, qps: number, repeat = 0): number {
  if (plan.probeSeeds !== 'per-rate') return plan.seed;
  // A rate probed again draws a new sample: a replay of the same arrivals and prompts would bring
  // no new evidence, yet the interval would count it as independent and narrow on it.
  return deriveSeed(plan.seed, repeat === 0 ? `probe at ${qps}` : `probe at ${qps} #${repeat + 1}`);
}

/** The most seconds of arrivals a probe near the knee sends before its measured requests, unless the recipe says (search.kneeWarmupMax). */
export const KNEE_WARMUP_S = 10;

/**
 * The bound on the warm-up a probe gets before its measured requests (load/kneeWarmup.ts ends
 * it earlier once the queue is stationary). A probe starts on an idle engine, and just above the
 * knee a queue takes longer to build than a short probe lasts, so an empty start passes rates that
 * fail in the long run (docs/verdicts.md: 7 wrong passes in 100 at 3% above the knee, 4 in 100
 * after 10 s of arrivals at the probe's rate). Once a probe has failed, the search brackets the
 * knee and every later probe lies near it; before that, probes are far from it and an idle start
 * changes nothing, so they go without.
 */
export function kneeWarmupS(verdicts: readonly { passed: boolean; valid: boolean }[], maxS: number = KNEE_WARMUP_S): number {
  return nearKnee(verdicts) ? maxS : 0;
}

/** Whether the search's next probe lies near the knee: once a valid probe has failed, it brackets it. */
export function nearKnee(verdicts: readonly { passed: boolean; valid: boolean }[]): boolean {
  return verdicts.some((v) => v.valid && !v.passed);
}

/**
 * Share of the load budget (search.budget) a probe near the knee spans at least. Near the knee each
 * probe's sample holds few independent misses (the quickstart's 600 requests cluster into about 40
 * effective observations, half a miss at the allowance), and the interval gives every probed rate
 * the prior's half miss: many short probes weigh the prior as much as the data and pull the
 * estimate below the knee, while a budget that holds the same load in fewer, longer probes gives
 * each its own evidence. With Metron's load as the budget, a tenth took the quickstart's median
 * error from 3.95% to 2.6% and Sarathi's from 2.8% to 1.4%; the quickstart's own budget (120 s)
 * keeps its 15-s probes (docs/verdicts.md, "Longer probes near the knee").
 */
export const KNEE_PROBE_SHARE = 0.1;

/**
 * Least seconds of arrivals a probe's measured requests span: the recipe's search.probe.minDuration;
 * near the knee with a load budget, at least KNEE_PROBE_SHARE of the budget, within 80% of the
 * probe's duration limit (the rest holds the arrivals' scatter and the last requests' service).
 * `nearKnee`: see nearKnee (or the search started from a calibrated bracket).
 */
export function kneeMeasureS(probe: Pick<ProbeSettings, 'minDurationS' | 'durationLimitS'>, nearKnee: boolean, budgetS: number | null | undefined): number {
  if (!nearKnee || budgetS == null || !(budgetS > 0)) return probe.minDurationS;
  return Math.max(probe.minDurationS, Math.min(KNEE_PROBE_SHARE * budgetS, 0.8 * probe.durationLimitS));
}

/** How many requests a probe at `qps` plans: enough for both the count and `measureS` of arrivals (default the recipe's minDuration). */
export function plannedRequests(probe: Pick<ProbeSettings, 'requests' | 'minDurationS'>, qps: number, measureS: number = probe.minDurationS): number {
  return Math.max(probe.requests, Math.ceil(qps * measureS));
}

/** How a probe at `qps` is loaded: its planned requests and duration limit, warm-up included. */
export interface ProbeLoad {
  requests: number;
  durationS: number;
  /** Requests the knee warm-up may send before the measured ones at the probe's rate (its bound). */
  kneeRequests: number;
}

/** The probe step's and the twin's plan of a probe: its planned requests (plannedRequests), after at most `warmupS` of arrivals. */
export function probeLoad(probe: Pick<ProbeSettings, 'requests' | 'minDurationS' | 'durationLimitS'>, qps: number, warmupS: number, measureS: number = probe.minDurationS): ProbeLoad {
  const kneeRequests = warmupS > 0 ? Math.ceil(qps * warmupS) : 0;
  return { requests: plannedRequests(probe, qps, measureS) + kneeRequests, durationS: probe.durationLimitS + warmupS, kneeRequests };
}

/**
 * The knee warm-up of a probe whose plan holds `plannedRequests` (its bound's arrivals, then the
 * measured ones), or null when it has none.
 */
export function kneeWarmupPlanOf(load: ProbeLoad, plannedRequests: number, warmupS: number, warmupFraction: number, rule: StationaryRule = stationaryRule()): KneeWarmupPlan | null {
  if (load.kneeRequests <= 0) return null;
  const maxRequests = Math.min(plannedRequests, load.kneeRequests);
  return { maxS: warmupS, maxRequests, measured: plannedRequests - maxRequests, warmupFraction, rule };
}

/** Requests a probe's judgement skips: the knee warm-up, then the recipe's warm-up share of the rest. */
export function warmupRequestsOf(planned: number, kneeRequests: number, warmupFraction: number): number {
  const knee = Math.min(planned, kneeRequests);
  return knee + Math.floor(warmupFraction * (planned - knee));
}
