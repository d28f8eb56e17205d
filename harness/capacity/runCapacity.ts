// `fluidcap run`: plan → provision → profile → search → archive → report. Every step is journalled
// in events.jsonl before and after it happens, so `--resume` reuses the profile and every finished
// probe, and a killed probe's partial data is kept (moved aside), never overwritten.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { confinedPath, copyFileIn, renameIn } from '../util/confinedFs.ts';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadGpuProfile } from '../catalog/gpus.ts';
import type { Inventory } from '../provision/inventory.ts';
import type { ConnectOptions } from '../provision/sshConnection.ts';
import { InfraError, UserError } from '../util/errors.ts';
import { Journal } from '../runDir/journal.ts';
import { RUN_FILES, probePaths, runPaths, type RunPaths } from '../runDir/layout.ts';
import { readJsonFile, writeJsonFile } from '../runDir/jsonFiles.ts';
import { readManifest } from '../runDir/read.ts';
import { indexFinishedRun } from '../runDir/resultsIndex.ts';
import { acquireRunLock } from '../runDir/lock.ts';
import type { CapacityIntervalJson, CapacityJson, FitFile, JournalLine, Manifest, ManifestPlan, ProbeOutcome, ProbeStatistics, ProbeSummary, RehearsalJson } from '../runDir/schema.ts';
import { KNEE_WARMUP_S, kneeMeasureS, kneeWarmupS, nearKnee, plannedRequests, recipeInAllocation, type RunPlan } from './runPlan.ts';
import type { KneeWarmupRecord } from '../load/kneeWarmup.ts';
import { loadRunRecipe, newRunId, resolveRun } from './resolveRun.ts';
import { startEngineSession, type EngineSession, type ProcessLaunch } from './engineSession.ts';
import { runProfile } from './profiler.ts';
import { engineGone, probeOutcome, runProbeStep } from './probeStep.ts';
import { checkFinishedProbes, reclaimProbes } from './resume.ts';
import { bracketOf, nextProbe, type Bracket, type ProbeVerdict, type SearchDecision } from './search.ts';
import { capacityInterval, type ProbeEvidence } from './interval.ts';
import { nextPerSloProbe, probeEvidence, sloDefinitions, summaryFacts, type PerSloResult } from './perSloSearch.ts';
import { warmNextProbe } from './warmStart.ts';
import { briefValidity, probeLine, sloLegend } from './consoleLines.ts';
import { capacityCost, runCost } from './cost.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { writeReports } from '../report/write.ts';
import { toolInfo } from './toolInfo.ts';
import type { PromptSetup } from '../load/tokenizeCalibration.ts';
import { setUpPrompts } from './promptSetup.ts';
import { profileStream } from './profilePlan.ts';
import { fitReuseMismatch } from './fitReuse.ts';
import type { Progress } from './progress.ts';
import { makeDirs } from '../util/makeDirs.ts';
import type { LoadPlan, SlurmAllocationRecord } from '../runDir/schema.ts';
import { srunPrefix } from '../slurm/slurmCli.ts';

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
  /** How an engine with runtime process is started (a launcher prefix such as srun, where it listens); engineSession.ts. */
  processLaunch?: ProcessLaunch;
  /** `fluidcap profile`: stop after the prefill fit (no search, no capacity.json). */
  profileOnly?: boolean;
  /** A run directory whose prefill fit this run takes instead of profiling, when its engine and
   *  recipe match (capacity/fitReuse.ts); else the engine is profiled as usual, and the log says why. */
  reuseFitFrom?: string;
  /** A rehearsal's bracket (`run --rehearse`): the search's first probes go there instead of doubling up from qps.start. */
  warmStart?: Bracket;
  /** What the rehearsal proposed (capacity.json's `rehearsals`, the report's "Rehearsal"). */
  rehearsal?: RehearsalJson;
  /** Once a probe has been measured: the twin calibrated to this run and its new bracket, with what
   *  its search proposed when known (null: keep the old one). */
  recalibrate?: (runDir: string) => Promise<Bracket | { bracket: Bracket; rehearsal: RehearsalJson } | null>;
  /** Wall clock for run ids and stamps (tests pin it). */
  now?: () => Date;
  /** The Slurm allocation the run's engine runs in (manifest.json \`slurm\`, one entry per session's job). */
  slurm?: SlurmAllocationRecord;
  /** Called once the run directory is locked: where it is, and the host a container will run on (null: none). */
  onStart?: (run: { runDir: string; runId: string; containerHost: string | null }) => void;
}

export type RunStatus = 'completed' | 'failed' | 'interrupted';

export interface RunOutcome {
  runDir: string;
  status: RunStatus;
  reason: string;
  capacity: CapacityJson | null;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The parts of the plan manifest.json keeps. */
function manifestPlan(plan: RunPlan): ManifestPlan {
  return {
    engine: plan.engine,
    servedModel: plan.servedModel,
    maxContextTokens: plan.maxContextTokens,
    profile: { promptLengths: plan.profile.promptLengths, repeats: plan.profile.repeats },
    search: plan.search,
    probe: plan.probe,
    prompts: plan.prompts,
    probeSeeds: plan.probeSeeds,
    load: plan.load,
  };
}

/** Resolves the recipe's plan without launching anything (what --dry-run prints). */
export async function dryRun(recipeFile: string, now = new Date(), onWarning?: (message: string) => void): Promise<RunPlan> {
  const recipe = await loadRunRecipe(recipeFile, { onWarning, hosts: 'unchecked' });
  return resolveRun(recipe, newRunId(recipe.name, now, '/nonexistent'));
}

/** A run directory opened for writing: where it is, its plan and its manifest as it stands. */
interface OpenedRun {
  runDir: string;
  paths: RunPaths;
  plan: RunPlan;
  manifest: Manifest;
}

/** Creates the run directory of a new run; what the plan refuses is refused before it exists. */
async function createRun(opts: RunOptions, now: () => Date): Promise<OpenedRun> {
  const recipe = recipeInAllocation(await loadRunRecipe(opts.recipeFile, { env: process.env, hosts: opts.inventory }), opts.slurm?.gpuIndices);
  let runId = newRunId(recipe.name, now(), opts.outDir);
  // Random per run so no prompt of this run repeats one of an earlier run (prompt caches).
  const promptNonce = randomBytes(8).toString('hex');
  let plan = resolveRun(recipe, runId, promptNonce);
  makeDirs(opts.outDir);
  // Two runs of one recipe started in the same second pick the same id: the first mkdir wins.
  for (;;) {
    try {
      mkdirSync(resolve(opts.outDir, runId));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      runId = newRunId(recipe.name, now(), opts.outDir);
      plan = resolveRun(recipe, runId, promptNonce);
    }
  }
  const runDir = resolve(opts.outDir, runId);
  const paths = runPaths(runDir);
  const recipeText = readFileSync(opts.recipeFile, 'utf8');
  copyFileIn(runDir, opts.recipeFile, paths.recipeCopy);
  const manifest: Manifest = {
    runId,
    recipeFile: resolve(opts.recipeFile),
    recipeSha256: sha256(recipeText),
    ...(await toolInfo()),
    seed: recipe.workload.seed,
    promptNonce,
    startedAt: now().toISOString(),
    endedAt: null,
    status: 'running',
    exitReason: null,
    engineUpS: 0,
    recipe,
    plan: manifestPlan(plan),
    host: null,
  };
  return { runDir, paths, plan, manifest };
}

/** Reopens an interrupted run: its recipe must be unchanged, so both sessions run one plan. */
async function reopenRun(resumeDir: string, now: () => Date, inventory: Inventory | undefined, slurm?: SlurmAllocationRecord): Promise<OpenedRun> {
  const runDir = resolve(resumeDir);
  const paths = runPaths(runDir);
  const found = readManifest(paths.manifest);
  if (!found) throw new UserError(`${resumeDir}: not a run directory (no ${RUN_FILES.manifest})`);
  const { runId, recipeFile, recipeSha256 } = found;
  if (typeof runId !== 'string' || typeof recipeFile !== 'string' || typeof recipeSha256 !== 'string') {
    throw new UserError(`${paths.manifest}: runId, recipeFile and recipeSha256 must be strings, got ${JSON.stringify({ runId, recipeFile, recipeSha256 })}`);
  }
  let source = recipeFile;
  if (!existsSync(recipeFile)) {
    // A run directory copied or moved (with its sweep) keeps the recipe it started with beside it.
    const copy = confinedPath(runDir, paths.recipeCopy, { includeLast: true });
    if (!existsSync(copy) || sha256(readFileSync(copy, 'utf8')) !== recipeSha256) throw new UserError(`${paths.manifest}: the run's recipe ${recipeFile} no longer exists`);
    source = copy;
  }
  if (sha256(readFileSync(source, 'utf8')) !== recipeSha256) {
    throw new UserError(`${source} changed since run ${runId} started; resuming would mix two recipes (start a new run instead)`);
  }
  const recipe = recipeInAllocation(await loadRunRecipe(source, { env: process.env, storedRun: true, hosts: inventory }), slurm?.gpuIndices);
  // A run directory written before prompts had a nonce gets one now; kept on every later resume.
  const promptNonce = typeof found.promptNonce === 'string' ? found.promptNonce : randomBytes(8).toString('hex');
  // A run written before probes had seeds of their own replays the workload's seed at every rate,
  // as its finished probes did, so both sessions sample alike.
  const resolved = resolveRun(recipe, runId, promptNonce);
  // Where the load comes from stays as the run began when the recipe left it to the default (which
  // has changed: a run written before a manifest recorded it was sent from this process), so the
  // probes of both sessions are timed alike.
  const began: LoadPlan['from'] = found.plan?.load?.from === 'agent' ? 'agent' : 'client';
  const load = resolved.load.chosenBy === 'default' && resolved.load.agents === 1 ? { ...resolved.load, from: began } : resolved.load;
  // A run written before the bracket's step read the probes' length doubles up, as its first session did.
  const search = found.plan?.search !== undefined && found.plan.search.probeLength === undefined ? { ...resolved.search, probeLength: undefined } : resolved.search;
  const plan: RunPlan = { ...resolved, search, load, probeSeeds: found.plan?.probeSeeds === 'per-rate' ? 'per-rate' : 'workload' };
  // A manifest written by an older version may lack fields: what it records is kept, the rest filled in.
  const tool = await toolInfo();
  const manifest: Manifest = {
    toolVersion: found.toolVersion ?? tool.toolVersion,
    gitSha: found.gitSha === undefined ? tool.gitSha : found.gitSha,
    gitDirty: found.gitDirty === undefined ? tool.gitDirty : found.gitDirty,
    node: found.node ?? tool.node,
    seed: recipe.workload.seed,
    promptNonce,
    startedAt: found.startedAt ?? now().toISOString(),
    endedAt: null,
    exitReason: null,
    engineUpS: found.engineUpS ?? 0,
    host: found.host ?? null,
    ...(Array.isArray(found.slurm) ? { slurm: found.slurm as SlurmAllocationRecord[] } : {}),
    runId,
    recipeFile,
    recipeSha256,
    status: 'running',
    recipe,
    plan: manifestPlan(plan),
  };
  return { runDir, paths, plan, manifest };
}

/** Runs (or resumes) the whole capacity pipeline. Harness faults throw; Ctrl-C returns 'interrupted'. */
export async function runCapacity(opts: RunOptions): Promise<RunOutcome> {
  const now = opts.now ?? (() => new Date());
  const opened = opts.resumeDir ? await reopenRun(opts.resumeDir, now, opts.inventory, opts.slurm) : await createRun(opts, now);
  // Taken before anything in the directory is written: a second writer is refused untouched.
  const lock = acquireRunLock(opened.runDir, opts.log);
  try {
    const engine = opened.plan.engine;
    opts.onStart?.({ runDir: opened.runDir, runId: opened.manifest.runId, containerHost: engine.kind === 'container' || engine.kind === 'process' ? engine.host : null });
    return await runOpened(opts, opened, now);
  } finally {
    lock.release();
  }
}

/** The pipeline on a run directory this process holds the lock of. */
async function runOpened(opts: RunOptions, opened: OpenedRun, now: () => Date): Promise<RunOutcome> {
  const log = opts.log;
  const { runDir, paths, plan } = opened;
  let manifest = opened.manifest;
  const runId = manifest.runId;
  const journal = new Journal(paths.events);
  const history = journal.read();
  checkFinishedProbes(runDir, history, paths.events);
  const resumed = history.length > 0;
  const saveManifest = (update: Partial<Manifest> = {}) => {
    manifest = { ...manifest, ...update };
    writeJsonFile(runDir, paths.manifest, manifest);
  };
  const slurm = opts.slurm;
  saveManifest(slurm ? { slurm: [...(manifest.slurm ?? []).filter((a) => a.jobId !== slurm.jobId), slurm] } : {});
  journal.append({ type: 'run-started', runId, recipeFile: manifest.recipeFile, resumed });
  log(`${resumed ? 'resuming' : 'run'} ${runId} → ${runDir}`);

  let session: EngineSession | null = null;
  let status: RunStatus = 'failed';
  let reason = 'unknown';
  let capacity: CapacityJson | null = null;
  const engineUp = { sinceMs: 0, totalS: manifest.engineUpS };
  try {
    opts.progress?.phase('provision', `starting ${manifest.recipe.target.engine}`);
    // Inside a Slurm allocation an engine process is a step of the job (scancel ends it with the job);
    // a container runs beside it on the allocated node.
    const processLaunch = opts.slurm ? { ...opts.processLaunch, launcherPrefix: srunPrefix(opts.slurm.jobId) } : opts.processLaunch;
    session = await startEngineSession(plan, { runDir, inventory: opts.inventory, connect: opts.connect, log, signal: opts.signal, processLaunch });
    engineUp.sinceMs = performance.now();
    journal.append({ type: 'engine-ready', baseUrl: session.baseUrl, timeToReadyS: session.timeToReadyS, engine: manifest.recipe.target.engine });
    saveManifest({ host: session.facts });
    log(`engine ready at ${session.baseUrl}${session.timeToReadyS !== null ? ` after ${session.timeToReadyS.toFixed(1)} s` : ''}`);

    const up = session;
    const prompts = await whileEngineUp('prompt preparation', up, runDir, opts.signal, () =>
      setUpPrompts(plan, { name: manifest.recipe.target.engine, baseUrl: up.baseUrl, apiKey: up.apiKey }, plan.profile.promptLengths),
    );
    session.servedModel = prompts.model;
    for (const n of prompts.notes) log(`prompts: ${n}`);
    saveManifest({
      prompts: { ...plan.prompts, model: prompts.model, format: prompts.format, extraBody: prompts.extraBody, sizing: prompts.content.textSizing?.source ?? null, idOverheadTokens: prompts.content.idOverheadTokens ?? null, checks: prompts.checks, notes: prompts.notes, dialect: prompts.dialect },
    });
    const ctx: RunContext = { history, plan, session, runDir, paths, journal, opts, prompts };
    const fit = await profileOrReuse(ctx);
    if (opts.profileOnly) {
      status = 'completed';
      reason = `prefill profile only: D_p(P) = ${fit.a} + ${fit.b}·P + ${fit.c}·P² s, R² ${fit.r2}`;
      return { runDir, status, reason, capacity: null };
    }
    const result = await search(ctx, fit);
    if (result.interrupted !== null) {
      status = 'interrupted';
      reason = result.interrupted;
    } else {
      const decision = result.decision;
      capacity = buildCapacity(plan, decision, result.perSlo, result.summaries, runId, engineUp.totalS + (performance.now() - engineUp.sinceMs) / 1000, result.rehearsals);
      writeJsonFile(runDir, paths.capacity, capacity);
      journal.append({ type: 'search-finished', capacityQps: capacity.capacityQps, reason: capacity.reason });
      status = 'completed';
      reason = capacity.reason;
    }
  } catch (err) {
    // Ctrl-C ends the run as interrupted (resumable); any other failure is recorded, then thrown.
    status = opts.signal?.aborted ? 'interrupted' : 'failed';
    reason = opts.signal?.aborted ? 'interrupted by signal' : (err as Error).message;
    if (status === 'failed') throw diskFault(err, runDir);
  } finally {
    // A full results disk must not stop the engine's release, nor hide the error that ended the run.
    let unrecorded: unknown = null;
    const record = (write: () => void) => {
      try {
        write();
      } catch (err) {
        unrecorded ??= err;
      }
    };
    if (session) {
      opts.progress?.phase('teardown', 'releasing the engine');
      const stop = await session.stop();
      engineUp.totalS += (performance.now() - engineUp.sinceMs) / 1000;
      record(() => journal.append({ type: 'engine-stopped', verified: stop.verified }));
      for (const p of stop.problems) log(p);
    }
    record(() => saveManifest({ engineUpS: engineUp.totalS, status, exitReason: reason, endedAt: now().toISOString() }));
    record(() => journal.append({ type: 'run-finished', status, reason }));
    opts.progress?.done();
    if (unrecorded !== null) {
      log(`cannot record the run's end in ${runDir}: ${(unrecorded as Error).message} (resume finds where it stood from what was written)`);
      if (status !== 'failed') throw diskFault(unrecorded, runDir);
    }
  }
  if (status === 'completed' && capacity) {
    await writeReports(runDir);
    // One line per finished run in the results folder's index: what the nightly gate compares against.
    indexFinishedRun(dirname(runDir), runDir, log);
  }
  return { runDir, status, reason, capacity };
}

/** What every step of a run shares: its plan, journal, engine and where it writes. */
interface RunContext {
  history: JournalLine[];
  plan: RunPlan;
  session: EngineSession;
  runDir: string;
  paths: RunPaths;
  journal: Journal;
  opts: RunOptions;
  prompts: PromptSetup;
}

/**
 * Runs a step that talks to the engine with its exit watched. The engine dying under it is a
 * fault of the infrastructure, as under a probe (exit 3, its last log lines): the requests it
 * refused (connection refused or reset) are no finding about the recipe.
 */
async function whileEngineUp<T>(during: string, session: EngineSession, runDir: string, outer: AbortSignal | undefined, step: (signal: AbortSignal) => Promise<T>): Promise<T> {
  let engineDied: string | null = null;
  const abort = new AbortController();
  const onOuterAbort = () => abort.abort();
  outer?.addEventListener('abort', onOuterAbort);
  session.onExit((msg) => {
    engineDied = msg;
    abort.abort();
  });
  try {
    return await step(abort.signal);
  } catch (err) {
    if (outer?.aborted || !(err instanceof UserError) || err instanceof InfraError) throw err;
    const died = engineDied ?? (await engineGone(session, () => engineDied));
    if (died === null) throw err;
    throw new InfraError(`the engine died during ${during}: ${died} (resume with: fluidcap run --resume ${runDir})`, {
      host: typeof session.facts.host === 'string' ? session.facts.host : 'local',
      lastLogLines: lastLines(runPaths(runDir).serverLog, 20),
    });
  } finally {
    outer?.removeEventListener('abort', onOuterAbort);
  }
}

async function profileOrReuse({ history, plan, session, runDir, paths, journal, opts, prompts }: RunContext): Promise<PrefillFit> {
  if (history.some((e) => e.type === 'profile-finished') && existsSync(paths.fit)) {
    opts.log(`reusing the prefill profile in ${paths.fit}`);
    return readJsonFile(paths.fit) as FitFile;
  }
  if (opts.reuseFitFrom !== undefined) {
    const reused = reuseFit(opts.reuseFitFrom, paths, opts.log);
    if (reused !== null) {
      journal.append({ type: 'profile-finished', points: reused.n, r2: reused.r2, reusedFrom: resolve(opts.reuseFitFrom) });
      return reused;
    }
  }
  opts.progress?.phase('profile', `${plan.profile.requests.length} isolated prefills`);
  const { fit } = await whileEngineUp('prefill profiling', session, runDir, opts.signal, (signal) =>
    runProfile(
      plan.profile,
      {
        baseUrl: session.baseUrl,
        model: session.servedModel,
        api: plan.profile.api,
        format: prompts.format,
        apiKey: session.apiKey,
        seed: plan.seed,
        requestTimeoutS: plan.profile.requestTimeoutS,
        // A profile redone on resume is a new attempt with prompts of its own.
        content: { ...prompts.content, nonce: plan.prompts.nonce ?? undefined, stream: profileStream(history.filter((e) => e.type === 'run-started').length + 1) },
        extraBody: prompts.extraBody,
        continuousUsage: plan.probe.continuousUsage,
        tokenArrivals: plan.probe.tokenArrivals,
      },
      {
        runDir,
        ttftSlackS: plan.profile.ttftSlackS,
        fitBounds: plan.profile.fitBounds,
        log: opts.log,
        signal,
        onProgress: (done, total) => opts.progress?.update({ done, total }),
      },
    ),
  );
  journal.append({ type: 'profile-finished', points: fit.n, r2: fit.r2 });
  return fit;
}

/**
 * Another run's prefill fit, copied into this run (profile/fit.json and the prefills it was fitted
 * to), when that run profiled the same engine under the same recipe; null (and why, logged) when not.
 */
function reuseFit(sourceDir: string, paths: RunPaths, log: (line: string) => void): FitFile | null {
  const from = runPaths(resolve(sourceDir));
  const refuse = (why: string) => (log(`not reusing the prefill profile of ${from.runDir}: ${why}; profiling the engine`), null);
  const source = readManifest(from.manifest);
  const target = readManifest(paths.manifest);
  if (source === null || target === null) return refuse(`no readable ${RUN_FILES.manifest}`);
  if (!existsSync(from.fit) || !existsSync(from.prefill)) return refuse(`it has no ${RUN_FILES.fit} and ${RUN_FILES.prefill}`);
  if (!new Journal(from.events).read().some((e) => e.type === 'profile-finished')) return refuse('its profile never finished');
  const mismatch = fitReuseMismatch(source, target);
  if (mismatch !== null) return refuse(mismatch);
  makeDirs(paths.profileDir);
  copyFileIn(paths.runDir, from.prefill, paths.prefill);
  copyFileIn(paths.runDir, from.fit, paths.fit);
  log(`reusing the prefill profile of ${from.runDir} (same engine, recipe but its search, prompts and tool version)`);
  return readJsonFile(paths.fit) as FitFile;
}

async function search(
  { history, plan, session, runDir, journal, opts, prompts }: RunContext,
  fit: PrefillFit,
): Promise<
  | { decision: Extract<SearchDecision, { done: true }>; perSlo: PerSloResult[]; summaries: ProbeSummary[]; rehearsals: RehearsalJson[]; interrupted: null }
  | { interrupted: string; decision?: never; perSlo?: never; summaries?: never; rehearsals?: never }
> {
  const reclaimed = reclaimProbes(runDir, history, journal, opts.log);
  const summaries = reclaimed.summaries;
  let usedIndex = reclaimed.usedIndex;

  const earlyStop = opts.earlyStop ?? plan.probe.earlyStop;
  let warm = opts.warmStart;
  let recalibrated = false;
  const rehearsals: RehearsalJson[] = opts.rehearsal ? [opts.rehearsal] : [];
  // Each SLO entry also gets its own bracket (perSloSearch.ts); the combined search stays the headline.
  const defs = sloDefinitions(plan.slo);
  // Spelled out once; every probe line names each definition by its short name.
  for (const line of sloLegend(defs)) opts.log(line);
  for (;;) {
    // An invalid probe's reason, as capacity.json and the console quote it: in brief, with the fix.
    const verdicts: ProbeVerdict[] = summaries.map((s) => ({ qps: s.qps, passed: s.passed, valid: s.valid, reason: s.valid ? undefined : briefValidity(s.validity ?? s.client.reason), evidence: evidenceOfSummary(s) }));
    if (opts.recalibrate && !recalibrated && summaries.some((s) => s.valid)) {
      recalibrated = true;
      const found = await opts.recalibrate(runDir);
      const bracket = found && 'bracket' in found ? found.bracket : found;
      if (found && 'rehearsal' in found) rehearsals.push(found.rehearsal);
      if (bracket) {
        warm = bracket;
        journal.append({ type: 'twin-calibrated', file: RUN_FILES.calibration, passQps: bracket.passQps, failQps: bracket.failQps });
      }
    }
    const decision = warm ? warmNextProbe(plan.search, verdicts, warm) : nextProbe(plan.search, verdicts);
    const step = nextPerSloProbe(plan.search, decision, defs, summaries.map((s) => ({ ...probeEvidence(defs, summaryFacts(s)), evidence: evidenceOfSummary(s) })));
    if (step.done && decision.done) return { decision, perSlo: step.perSlo, summaries, rehearsals, interrupted: null };
    if (step.done) throw new Error('the per-SLO search ended before the combined search');
    if (opts.signal?.aborted) return { interrupted: 'interrupted by signal' };
    usedIndex += 1;
    const index = usedIndex;
    const qps = step.qps;
    const probe = probePaths(runDir, index, qps);
    // A search started from the twin's bracket probes near the knee from its first probe.
    const kneeMaxS = plan.probe.kneeWarmupMaxS ?? KNEE_WARMUP_S;
    const warmupS = warm ? kneeMaxS : kneeWarmupS(verdicts, kneeMaxS);
    const measureS = kneeMeasureS(plan.probe, Boolean(warm) || nearKnee(verdicts), plan.search.budgetS);
    journal.append({ type: 'probe-started', index, qps, dir: probe.rel });
    const forWhom = defs.length > 1 ? ` for ${step.forSearches.join(', ')}` : '';
    opts.progress?.phase('search', `probe ${index} (${step.phase}${forWhom}) at ${qps} QPS`, { planned: plannedRequests(plan.probe, qps, measureS), qps });
    const summary = await runProbeStep({
      index,
      qps,
      plan,
      fit,
      session,
      runDir,
      signal: opts.signal,
      earlyStop,
      earlyStopSlo: step.earlyStopSlo,
      log: opts.log,
      prompts,
      warmupS,
      measureS,
      repeat: summaries.filter((s) => s.qps === qps).length,
      onProgress: (p) => opts.progress?.update({ done: p.ended, total: p.planned, elapsedS: p.elapsedS }),
    });
    if (summary.interrupted) {
      const movedTo = probe.interruptedRel;
      renameIn(runDir, probe.dir, probe.interruptedDir);
      journal.append({ type: 'probe-interrupted', index, qps, dir: probe.rel, movedTo });
      const why = summary.engineDied ?? 'interrupted by signal';
      if (summary.agentLost && !summary.engineDied) {
        throw new InfraError(`a load agent was lost during probe ${index} at ${qps} QPS: ${summary.agentLost} (received data kept in ${movedTo}; resume with: fluidcap run --resume ${runDir})`, {
          host: typeof session.facts.host === 'string' ? session.facts.host : 'local',
        });
      }
      if (summary.engineDied) {
        throw new InfraError(`the engine died during probe ${index} at ${qps} QPS: ${summary.engineDied} (received data kept in ${movedTo}; resume with: fluidcap run --resume ${runDir})`, {
          host: typeof session.facts.host === 'string' ? session.facts.host : 'local',
          lastLogLines: lastLines(runPaths(runDir).serverLog, 20),
        });
      }
      return { interrupted: why };
    }
    journal.append({ type: 'probe-finished', ...probeOutcome(summary) });
    opts.log(probeLine(summary, defs, { perSlo: defs.length > 1 ? perSloLine(defs, summary) : undefined }));
    summaries.push(summary);
  }
}

// Each definition's verdict on a probe, or '—' where the probe is no evidence for it.
function perSloLine(defs: ReturnType<typeof sloDefinitions>, summary: ProbeSummary): string {
  const e = probeEvidence(defs, summaryFacts(summary));
  return defs.map((d) => `${d.name} ${e.verdicts[d.name] ?? '—'}`).join(', ');
}

/** A write the results disk refused is an infrastructure fault (exit 3), not a bug. */
function diskFault(err: unknown, runDir: string): unknown {
  const e = err as NodeJS.ErrnoException & { cause?: NodeJS.ErrnoException };
  const code = e?.code ?? e?.cause?.code;
  if (code !== 'ENOSPC' && code !== 'EDQUOT' && code !== 'EROFS' && code !== 'EIO') return err;
  return new InfraError(`the results disk refused a write in ${runDir} (${e.code ? `${code}: ` : ''}${(err as Error).message}); the data written so far is kept: free space, then resume with: fluidcap run --resume ${runDir}`, { cause: err });
}

/** The last `n` lines of a log file, or none when it cannot be read. */
function lastLines(file: string, n: number): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').slice(-n);
  } catch {
    return [];
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
  perSlo: PerSloResult[],
  summaries: ProbeSummary[],
  runId: string,
  engineUpS: number,
  rehearsals: readonly RehearsalJson[] = [],
): CapacityJson {
  const atCapacity = summaries.find((s) => s.qps === d.capacityQps && s.passed);
  const price = plan.gpuProfile ? loadGpuProfile(plan.gpuProfile).price?.usdPerGpuHour ?? null : null;
  const meanOutput = atCapacity?.metrics.outputTokensPerS && atCapacity.metrics.requestThroughputQps
    ? atCapacity.metrics.outputTokensPerS / atCapacity.metrics.requestThroughputQps
    : 0;
  // An endpoint's GPUs are not ours to count: it has no GPU count, so no GPU-seconds and no money.
  const gpuCount = plan.gpuCount > 0 ? plan.gpuCount : null;
  const run = runCost({ engineUpS, gpuCount, usdPerGpuHour: price });
  const costNote =
    gpuCount === null
      ? `the GPUs behind ${plan.engine.kind === 'endpoint' ? `the endpoint ${plan.engine.url}` : 'the engine'} are unknown to fluidcap (it did not start them), so GPU-seconds and costs are not counted`
      : plan.gpuProfile === null
        ? 'the recipe names no GPU profile (target.gpuProfile), so there is no price'
        : price === null
          ? `the GPU profile ${plan.gpuProfile} has no price`
          : null;
  // Probes archived before statistics kept their counts (a resumed older run) give no interval.
  const interval = summaries.some((s) => s.valid && s.statistics?.parts?.length) ? intervalOf(summaries) : null;
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
    bracketStatistics: { passQps: statisticsAt(summaries, d.bracket.passQps), failQps: statisticsAt(summaries, d.bracket.failQps) },
    decidedBracket: decidedBracketOf(summaries),
    ...(interval ? { interval } : {}),
    ...(rehearsals.length > 0 ? { rehearsals: rehearsals.map((r) => movedFrom(r, d.capacityQps, interval?.estimateQps ?? null)) } : {}),
    tolerance: plan.search.tolerance,
    probes: summaries.map(probeOutcome),
    baselines: plan.baselines,
    baselineCapacityQps,
    perSlo: perSlo.map(({ name, source, capacityQps, bracket, outcome, reason, probesUsed }) => ({ name, source, capacityQps, bracket, outcome, reason, probesUsed })),
    fluidTokenRateAtCapacity: atCapacity?.metrics.fluidRate ?? null,
    warmupFraction: plan.probe.warmupFraction,
    probeTimeS: summaries.reduce((t, s) => t + s.durationS, 0),
    gpuSeconds: run.gpuSeconds,
    ...(run.costUsd !== null ? { costUsd: run.costUsd } : {}),
    ...(costNote !== null ? { costNote } : {}),
    cost: d.capacityQps > 0 ? capacityCost({ usdPerGpuHour: price, gpuCount, capacityQps: d.capacityQps, meanOutputTokens: meanOutput }) : null,
    gpuProfile: plan.gpuProfile,
    gpuCount: plan.gpuCount,
  };
}

/** A rehearsal's proposal with how far the real search moved from it (relative to the rehearsal's figures). */
function movedFrom(r: RehearsalJson, capacityQps: number, estimateQps: number | null): RehearsalJson {
  const rel = (real: number | null, rehearsed: number | null | undefined) => (real === null || rehearsed == null || rehearsed <= 0 ? null : +((real - rehearsed) / rehearsed).toFixed(4));
  return { ...r, movedBy: { estimate: rel(estimateQps, r.interval?.estimateQps), capacity: rel(capacityQps, r.capacityQps) } };
}

/** What a probe's requests showed, as the search and the interval read it (its load, its counts). */
function evidenceOfSummary(s: Pick<ProbeSummary, 'qps' | 'durationS' | 'statistics'>): ProbeEvidence {
  return { qps: s.qps, arrivalQps: s.statistics?.arrivalQps, burstQps: s.statistics?.burstQps, durationS: s.durationS, parts: s.statistics?.parts ?? [] };
}

/** The capacity estimate and its interval from every valid probe's evidence (capacity/interval.ts). */
export function intervalOf(probes: readonly Pick<ProbeOutcome, 'qps' | 'durationS' | 'valid' | 'statistics'>[]): CapacityIntervalJson {
  return capacityInterval(probes.filter((p) => p.valid).map(evidenceOfSummary));
}

// The statistical decision of the last valid probe at a bracket end (retries share a rate).
function statisticsAt(summaries: readonly ProbeSummary[], qps: number | null): ProbeStatistics | null {
  if (qps === null) return null;
  return summaries.filter((s) => s.valid && s.qps === qps).at(-1)?.statistics ?? null;
}

// The bracket of the statistical decisions alone (undecided probes move neither end).
function decidedBracketOf(summaries: readonly ProbeSummary[]): NonNullable<CapacityJson['decidedBracket']> {
  const judged = summaries.filter((s) => s.statistics);
  const b = bracketOf(judged.map((s) => ({ qps: s.qps, passed: s.statistics!.decision === 'pass', decision: s.statistics!.decision, valid: s.valid })));
  const confidence = (qps: number | null, decision: 'pass' | 'fail') =>
    qps === null ? null : Math.max(...judged.filter((s) => s.valid && s.qps === qps && s.statistics!.decision === decision).map((s) => s.statistics!.confidence));
  return { passQps: b.passQps, failQps: b.failQps, passConfidence: confidence(b.passQps, 'pass'), failConfidence: confidence(b.failQps, 'fail') };
}
