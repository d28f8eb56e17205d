// `fluidcap run`: plan → provision → profile → search → archive → report. Every step is journalled
// in events.jsonl before and after it happens, so `--resume` reuses the profile and every finished
// probe, and a killed probe's partial data is kept (moved aside), never overwritten.
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadRecipe } from '../recipe/load.ts';
import type { Recipe } from '../recipe/parse.ts';
import { findModel } from '../catalog/models.ts';
import { loadGpuProfile } from '../catalog/gpus.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import type { Inventory } from '../provision/inventory.ts';
import type { ConnectOptions } from '../provision/sshConnection.ts';
import { UserError } from '../util/errors.ts';
import { Journal, type JournalLine, type ProbeOutcome } from './journal.ts';
import { planRun, type RunPlan } from './runPlan.ts';
import { startEngineSession, type EngineSession } from './engineSession.ts';
import { runProfile } from './profiler.ts';
import { plannedRequests, probeDirName, probeOutcome, runProbeStep, type ProbeSummary } from './probeStep.ts';
import { nextProbe, type ProbeVerdict, type SearchDecision } from './search.ts';
import { capacityCost, runCost } from './cost.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { writeReports } from '../report/write.ts';
import { toolInfo } from './toolInfo.ts';
import type { Progress } from './progress.ts';

export interface RunOptions {
  recipeFile: string;
  outDir: string;
  resumeDir?: string;
  inventory?: Inventory;
  connect?: ConnectOptions;
  /** Aborted by Ctrl-C: the probe in progress stops, what it received is kept. */
  signal?: AbortSignal;
  log: (line: string) => void;
  progress?: Progress;
  /** Overrides recipe.search.earlyStop (the early-stop comparison script runs both). */
  earlyStop?: boolean;
  /** `fluidcap profile`: stop after the prefill fit (no search, no capacity.json). */
  profileOnly?: boolean;
  /** Wall clock for run ids and stamps (tests pin it). */
  now?: () => Date;
}

export type RunStatus = 'completed' | 'failed' | 'interrupted';

export interface RunOutcome {
  runDir: string;
  status: RunStatus;
  reason: string;
  capacity: CapacityJson | null;
}

export interface CapacityJson {
  runId: string;
  capacityQps: number;
  outcome: string;
  reason: string;
  belowMin: boolean;
  atLeastMax: boolean;
  slo: RunPlan['slo'];
  bracket: { passQps: number | null; failQps: number | null };
  tolerance: number;
  probes: ProbeOutcome[];
  /** The baseline SLO definitions every probe was also judged under (Metron Fig. 6). */
  baselines: RunPlan['baselines'];
  /** Capacity under each baseline SLO: highest probed rate that passed it with every lower probed rate passing too. */
  baselineCapacityQps: Record<string, number | null>;
  fluidTokenRateAtCapacity: unknown;
  warmupFraction: number;
  probeTimeS: number;
  gpuSeconds: number;
  costUsd?: number;
  cost: ReturnType<typeof capacityCost> | null;
  gpuProfile: string | null;
  gpuCount: number;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

function newRunId(recipe: Recipe, now: Date, outDir: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const base = `${recipe.name}-${stamp}`;
  let id = base;
  for (let n = 2; existsSync(join(outDir, id)); n++) id = `${base}-${n}`;
  return id;
}

function writeJson(path: string, value: unknown): void {
  writeFileSync(path, JSON.stringify(value, null, 2) + '\n');
}

/** Resolves the recipe's plan without launching anything (what --dry-run prints). */
export async function dryRun(recipeFile: string, now = new Date()): Promise<RunPlan> {
  const recipe = await loadRecipe(recipeFile);
  return planRun(recipe, { runId: newRunId(recipe, now, '/nonexistent'), modelContext: (m) => findModel(m)?.maxContextTokens ?? null });
}

/** Runs (or resumes) the whole capacity pipeline. Harness faults throw; Ctrl-C returns 'interrupted'. */
export async function runCapacity(opts: RunOptions): Promise<RunOutcome> {
  const now = opts.now ?? (() => new Date());
  const log = opts.log;
  let runDir: string;
  let recipe: Recipe;
  let manifest: Record<string, unknown>;
  if (opts.resumeDir) {
    runDir = resolve(opts.resumeDir);
    const manifestPath = join(runDir, 'manifest.json');
    if (!existsSync(manifestPath)) throw new UserError(`${opts.resumeDir}: not a run directory (no manifest.json)`);
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
    const recipePath = String(manifest.recipeFile);
    if (!existsSync(recipePath)) throw new UserError(`${manifestPath}: the run's recipe ${recipePath} no longer exists`);
    if (sha256(readFileSync(recipePath, 'utf8')) !== manifest.recipeSha256) {
      throw new UserError(`${recipePath} changed since run ${manifest.runId} started; resuming would mix two recipes (start a new run instead)`);
    }
    recipe = await loadRecipe(recipePath, { env: process.env });
  } else {
    recipe = await loadRecipe(opts.recipeFile, { env: process.env });
    const runId = newRunId(recipe, now(), opts.outDir);
    // What only the catalog or the trace file can refuse is refused before the run directory exists.
    planRun(recipe, { runId, modelContext: (m) => findModel(m)?.maxContextTokens ?? null });
    loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file);
    mkdirSync(opts.outDir, { recursive: true });
    runDir = resolve(opts.outDir, runId);
    mkdirSync(runDir, { recursive: true });
    const recipeText = readFileSync(opts.recipeFile, 'utf8');
    copyFileSync(opts.recipeFile, join(runDir, 'recipe.yaml'));
    manifest = {
      runId,
      recipeFile: resolve(opts.recipeFile),
      recipeSha256: sha256(recipeText),
      ...(await toolInfo()),
      seed: recipe.workload.seed,
      startedAt: now().toISOString(),
      endedAt: null,
      status: 'running',
      exitReason: null,
    };
  }
  const runId = String(manifest.runId);
  const journal = new Journal(join(runDir, 'events.jsonl'));
  const history = journal.read();
  const resumed = history.length > 0;
  const plan = planRun(recipe, { runId, modelContext: (m) => findModel(m)?.maxContextTokens ?? null });
  manifest.recipe = recipe;
  manifest.plan = { engine: plan.engine, profile: { promptLengths: plan.profile.promptLengths, repeats: plan.profile.repeats }, search: plan.search, probe: plan.probe };
  const saveManifest = () => writeJson(join(runDir, 'manifest.json'), manifest);
  saveManifest();
  journal.append({ type: 'run-started', runId, recipeFile: String(manifest.recipeFile), resumed });
  log(`${resumed ? 'resuming' : 'run'} ${runId} → ${runDir}`);

  const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file);
  let session: EngineSession | null = null;
  let status: RunStatus = 'failed';
  let reason = 'unknown';
  let capacity: CapacityJson | null = null;
  const engineUp = { sinceMs: 0, totalS: Number((manifest as { engineUpS?: number }).engineUpS ?? 0) };
  try {
    opts.progress?.phase('provision', `starting ${recipe.target.engine}`);
    session = await startEngineSession(plan, { runDir, target: recipe.target, inventory: opts.inventory, connect: opts.connect, log, signal: opts.signal });
    engineUp.sinceMs = performance.now();
    journal.append({ type: 'engine-ready', baseUrl: session.baseUrl, timeToReadyS: session.timeToReadyS, engine: recipe.target.engine });
    manifest.host = session.facts;
    saveManifest();
    log(`engine ready at ${session.baseUrl}${session.timeToReadyS !== null ? ` after ${session.timeToReadyS.toFixed(1)} s` : ''}`);

    const ctx: RunContext = { history, plan, recipe, session, runDir, journal, opts };
    const fit = await profileOrReuse(ctx);
    if (opts.profileOnly) {
      status = 'completed';
      reason = `prefill profile only: D_p(P) = ${fit.a} + ${fit.b}·P + ${fit.c}·P² s, R² ${fit.r2}`;
      return { runDir, status, reason, capacity: null };
    }
    const result = await search(ctx, fit, trace);
    if (result.interrupted !== null) {
      status = 'interrupted';
      reason = result.interrupted;
    } else {
      const decision = result.decision;
      capacity = buildCapacity(plan, decision, result.summaries, runId, engineUp.totalS + (performance.now() - engineUp.sinceMs) / 1000);
      writeJson(join(runDir, 'capacity.json'), capacity);
      journal.append({ type: 'search-finished', capacityQps: capacity.capacityQps, reason: capacity.reason });
      status = 'completed';
      reason = capacity.reason;
    }
  } catch (err) {
    // Ctrl-C ends the run as interrupted (resumable); any other failure is recorded, then thrown.
    status = opts.signal?.aborted ? 'interrupted' : 'failed';
    reason = opts.signal?.aborted ? 'interrupted by signal' : (err as Error).message;
    if (status === 'failed') throw err;
  } finally {
    if (session) {
      opts.progress?.phase('teardown', 'releasing the engine');
      const stop = await session.stop();
      engineUp.totalS += (performance.now() - engineUp.sinceMs) / 1000;
      journal.append({ type: 'engine-stopped', verified: stop.verified });
      for (const p of stop.problems) log(p);
    }
    manifest.engineUpS = engineUp.totalS;
    manifest.status = status;
    manifest.exitReason = reason;
    manifest.endedAt = now().toISOString();
    saveManifest();
    journal.append({ type: 'run-finished', status, reason });
    opts.progress?.done();
  }
  if (status === 'completed' && capacity) writeReports(runDir);
  return { runDir, status, reason, capacity };
}

/** What every step of a run shares: its plan, journal, engine and where it writes. */
interface RunContext {
  history: JournalLine[];
  plan: RunPlan;
  recipe: Recipe;
  session: EngineSession;
  runDir: string;
  journal: Journal;
  opts: RunOptions;
}

async function profileOrReuse({ history, plan, recipe, session, runDir, journal, opts }: RunContext): Promise<PrefillFit> {
  const fitPath = join(runDir, 'profile', 'fit.json');
  if (history.some((e) => e.type === 'profile-finished') && existsSync(fitPath)) {
    opts.log(`reusing the prefill profile in ${fitPath}`);
    return JSON.parse(readFileSync(fitPath, 'utf8')) as PrefillFit;
  }
  opts.progress?.phase('profile', `${plan.profile.requests.length} isolated prefills`);
  const { fit } = await runProfile(
    plan.profile,
    {
      baseUrl: session.baseUrl,
      model: session.servedModel,
      api: recipe.workload.api,
      format: recipe.workload.api === 'chat' ? 'text' : recipe.workload.prompts.format,
      apiKey: session.apiKey,
      seed: recipe.workload.seed,
      requestTimeoutS: recipe.profile.requestTimeoutS,
    },
    {
      runDir,
      ttftSlackS: plan.slo.fluidity?.ttftSlackS ?? 0.3,
      fitBounds: recipe.profile.fitBounds,
      log: opts.log,
      signal: opts.signal,
      onProgress: (done, total) => opts.progress?.update({ done, total }),
    },
  );
  journal.append({ type: 'profile-finished', points: fit.n, r2: fit.r2 });
  return fit;
}

async function search(
  { history, plan, recipe, session, runDir, journal, opts }: RunContext,
  fit: PrefillFit,
  trace: ReturnType<typeof loadWorkloadTrace>,
): Promise<
  { decision: Extract<SearchDecision, { done: true }>; summaries: ProbeSummary[]; interrupted: null } | { interrupted: string; decision?: never; summaries?: never }
> {
  const summaries: ProbeSummary[] = [];
  const finished = new Set<number>();
  for (const e of history) {
    if (e.type !== 'probe-finished') continue;
    const path = join(runDir, e.dir, 'summary.json');
    summaries.push(JSON.parse(readFileSync(path, 'utf8')) as ProbeSummary);
    finished.add(e.index);
  }
  // A probe that started and never finished (SIGKILL, power loss): keep its data, probe it again.
  let usedIndex = Math.max(0, ...history.filter((e) => e.type === 'probe-started').map((e) => (e as { index: number }).index));
  for (const e of history) {
    if (e.type !== 'probe-started' || finished.has(e.index)) continue;
    if (history.some((x) => x.type === 'probe-interrupted' && x.index === e.index)) continue;
    const from = join(runDir, e.dir);
    const movedTo = `${e.dir}.interrupted`;
    if (existsSync(from)) renameSync(from, join(runDir, movedTo));
    journal.append({ type: 'probe-interrupted', index: e.index, qps: e.qps, dir: e.dir, movedTo });
    opts.log(`probe ${e.index} at ${e.qps} QPS did not finish; its data is kept in ${movedTo} and the rate is probed again`);
  }
  if (summaries.length > 0) opts.log(`reusing ${summaries.length} finished probe(s): ${summaries.map((s) => `${s.qps} QPS ${s.passed ? 'pass' : 'fail'}`).join(', ')}`);

  const earlyStop = opts.earlyStop ?? plan.probe.earlyStop;
  for (;;) {
    const verdicts: ProbeVerdict[] = summaries.map((s) => ({ qps: s.qps, passed: s.passed, valid: s.valid, reason: s.valid ? undefined : s.validity ?? s.client.reason }));
    const decision = nextProbe(plan.search, verdicts);
    if (decision.done) return { decision, summaries, interrupted: null };
    if (opts.signal?.aborted) return { interrupted: 'interrupted by signal' };
    usedIndex += 1;
    const index = usedIndex;
    const qps = decision.qps;
    const dir = `probes/${probeDirName(index, qps)}`;
    journal.append({ type: 'probe-started', index, qps, dir });
    opts.progress?.phase('search', `probe ${index} (${decision.phase}) at ${qps} QPS`, { planned: plannedRequests(plan.probe, qps), qps });
    const summary = await runProbeStep({
      index,
      qps,
      plan,
      workload: recipe.workload,
      trace,
      fit,
      session,
      runDir,
      signal: opts.signal,
      earlyStop,
      log: opts.log,
      onProgress: (p) => opts.progress?.update({ done: p.ended, total: p.planned, elapsedS: p.elapsedS }),
    });
    if (summary.interrupted) {
      const movedTo = `${dir}.interrupted`;
      renameSync(join(runDir, dir), join(runDir, movedTo));
      journal.append({ type: 'probe-interrupted', index, qps, dir, movedTo });
      const why = summary.engineDied ?? 'interrupted by signal';
      if (summary.engineDied) throw new UserError(`the engine died during probe ${index} at ${qps} QPS: ${summary.engineDied} (received data kept in ${movedTo})`);
      return { interrupted: why };
    }
    journal.append({ type: 'probe-finished', ...probeOutcome(summary) });
    opts.log(
      `probe ${index}: ${qps} QPS ${summary.valid ? (summary.passed ? 'PASS' : 'FAIL') : 'INVALID'}` +
        ` (${summary.requests} requests, ${summary.durationS.toFixed(1)} s${summary.earlyStop ? `, stopped early: ${summary.earlyStop}` : ''})`,
    );
    summaries.push(summary);
  }
}

/** Highest probed rate passing under `passed`, with every lower probed rate passing too. */
function capacityUnder(summaries: ProbeSummary[], passed: (s: ProbeSummary) => boolean): number | null {
  const valid = summaries.filter((s) => s.valid).sort((a, b) => a.qps - b.qps);
  let best: number | null = null;
  for (const s of valid) {
    if (!passed(s)) break;
    best = s.qps;
  }
  return best;
}

function buildCapacity(
  plan: RunPlan,
  d: Extract<SearchDecision, { done: true }>,
  summaries: ProbeSummary[],
  runId: string,
  engineUpS: number,
): CapacityJson {
  const atCapacity = summaries.find((s) => s.qps === d.capacityQps && s.passed);
  const price = plan.gpuProfile ? loadGpuProfile(plan.gpuProfile).price?.usdPerGpuHour ?? null : null;
  const meanOutput = atCapacity?.metrics.outputTokensPerS && atCapacity.metrics.requestThroughputQps
    ? atCapacity.metrics.outputTokensPerS / atCapacity.metrics.requestThroughputQps
    : 0;
  const run = runCost({ engineUpS, gpuCount: plan.gpuCount, usdPerGpuHour: price });
  const baselineCapacityQps: Record<string, number | null> = {};
  for (const name of Object.keys(plan.baselines)) baselineCapacityQps[name] = capacityUnder(summaries, (s) => s.baselines[name]?.passed === true);
  return {
    runId,
    capacityQps: d.capacityQps,
    outcome: d.outcome,
    reason: d.reason,
    belowMin: d.belowMin,
    atLeastMax: d.atLeastMax,
    slo: plan.slo,
    bracket: d.bracket,
    tolerance: plan.search.tolerance,
    probes: summaries.map(probeOutcome),
    baselines: plan.baselines,
    baselineCapacityQps,
    fluidTokenRateAtCapacity: atCapacity?.metrics.fluidRate ?? null,
    warmupFraction: plan.probe.warmupFraction,
    probeTimeS: summaries.reduce((t, s) => t + s.durationS, 0),
    gpuSeconds: run.gpuSeconds,
    ...(run.costUsd !== null ? { costUsd: run.costUsd } : {}),
    cost: d.capacityQps > 0 ? capacityCost({ usdPerGpuHour: price, gpuCount: plan.gpuCount, capacityQps: d.capacityQps, meanOutputTokens: meanOutput }) : null,
    gpuProfile: plan.gpuProfile,
    gpuCount: plan.gpuCount,
  };
}
