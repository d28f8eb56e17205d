// `fluidcap sweep`: plan → write each configuration's recipe → run them through runCapacity, at
// most `parallel` at once and one per GPU set → sweep report. The sweep journal (sweep.jsonl)
// records each run's start and end, so `--resume` skips finished runs and resumes the others from
// their own run directories. Ctrl-C aborts every run in progress (each releases its engine) and
// starts no new one.
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readFileSync, readdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { copyFileIn, makeDirIn, writeFileIn } from '../util/confinedFs.ts';
import pLimit from 'p-limit';
import { runCapacity, type RunOptions, type RunOutcome } from '../capacity/runCapacity.ts';
import { findModel } from '../catalog/models.ts';
import { listGpuProfiles } from '../catalog/gpus.ts';
import { readYamlFile } from '../recipe/load.ts';
import { resolveHosts, type Inventory } from '../provision/inventory.ts';
import type { ConnectOptions } from '../provision/sshConnection.ts';
import { runPaths, sweepPaths } from '../runDir/layout.ts';
import { readManifest } from '../runDir/read.ts';
import { readJsonFile } from '../runDir/jsonFiles.ts';
import { indexFinishedRun } from '../runDir/resultsIndex.ts';
import { UserError } from '../util/errors.ts';
import { loadSweepFile, type SweepFile } from './sweepFile.ts';
import { planSweep, type PlannedRun, type SweepPlan } from './plan.ts';
import { gpuLocks } from './placement.ts';
import { SweepJournal, originalSweepDirs, runStates, slurmTimes, type SweepRunStatus } from './journal.ts';
import { runReportHref, sweepCsv, sweepHtml, sweepMarkdown, type CapacitySummary, type SweepRow } from './sweepReport.ts';
import { makeDirs } from '../util/makeDirs.ts';
import { SweepAllocations, slurmEntry } from '../slurm/sweepAllocations.ts';

export interface SweepOptions {
  /** A new sweep: the sweep file. */
  sweepFile?: string;
  /** Continue the sweep in this directory (its journal names the sweep file). */
  resumeDir?: string;
  outDir: string;
  inventory?: Inventory;
  connect?: ConnectOptions;
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
  /** Runs one recipe (tests may wrap it); default runCapacity. */
  runOne?: (opts: RunOptions) => Promise<RunOutcome>;
}

export interface SweepOutcome {
  sweepDir: string;
  status: 'completed' | 'failed' | 'interrupted';
  rows: SweepRow[];
  counts: { completed: number; failed: number; interrupted: number; notStarted: number; invalid: number };
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** Loads the sweep file and its base recipe and resolves the plan; throws one UserError listing every problem. */
export async function prepareSweep(sweepFile: string, inventory: Inventory | undefined, opts: { storedRun?: boolean } = {}): Promise<{ sweep: SweepFile; baseText: string; plan: SweepPlan }> {
  return loadSweepPlan(sweepFile, (name) => resolveHosts(inventory, name).map((h) => h.name), opts);
}

/** prepareSweep with the hosts a group stands for given by `hostsOf` (the twin places nothing). */
export async function loadSweepPlan(sweepFile: string, hostsOf: (name: string) => string[], opts: { storedRun?: boolean } = {}): Promise<{ sweep: SweepFile; baseText: string; plan: SweepPlan }> {
  const sweep = await loadSweepFile(sweepFile);
  if (!existsSync(sweep.recipeFile)) throw new UserError(`${sweepFile}: recipe must name an existing recipe file, got "${sweep.recipe}" (${sweep.recipeFile} does not exist)`);
  const { text: baseText } = await readYamlFile(sweep.recipeFile);
  const result = planSweep(sweep, baseText, {
    hostsOf,
    modelContext: (m) => findModel(m)?.maxContextTokens ?? null,
    gpuProfiles: listGpuProfiles(),
    fileExists: existsSync,
    storedRun: opts.storedRun,
  });
  if (!result.ok) {
    const n = result.problems.length;
    throw new UserError(`${sweepFile} has ${n} problem${n === 1 ? '' : 's'}:\n  ${result.problems.join('\n  ')}`);
  }
  return { sweep, baseText, plan: result.plan };
}

function newSweepDir(outDir: string, name: string, now: Date): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  let dir = resolve(outDir, `${name}-${stamp}`);
  for (let n = 2; existsSync(dir); n++) dir = resolve(outDir, `${name}-${stamp}-${n}`);
  return dir;
}

/**
 * The run directory runCapacity made for a recipe file: the one whose manifest names it, here or
 * at the same place under where the sweep directory stood before it was copied (`originalDirs`).
 * Links in runs/ are passed over: a run directory is never one the sweep does not hold.
 */
function findRunDir(runsDir: string, recipeFile: string, originalDirs: ReadonlySet<string> = new Set()): string | null {
  if (!existsSync(runsDir)) return null;
  const sameRecipe = (named: unknown) =>
    named === recipeFile ||
    (typeof named === 'string' && basename(named) === basename(recipeFile) && basename(dirname(named)) === 'recipes' && originalDirs.has(dirname(dirname(named))));
  for (const entry of readdirSync(runsDir)) {
    try {
      if (lstatSync(join(runsDir, entry)).isSymbolicLink()) continue;
      if (sameRecipe(readManifest(runPaths(join(runsDir, entry)).manifest)?.recipeFile)) return join(runsDir, entry);
    } catch {
      // a manifest being written: not this run's
    }
  }
  return null;
}

// The sweep page links a run's report only when it is a file (not a link) inside the sweep directory.
function reportLink(sweepDir: string, runDir: string | null): string | null {
  const href = runReportHref(sweepDir, runDir);
  if (href === null || runDir === null) return null;
  try {
    return lstatSync(runPaths(runDir).reportHtml).isFile() ? href : null;
  } catch {
    return null;
  }
}

function readCapacity(runDir: string | null): CapacitySummary | null {
  if (runDir === null) return null;
  const file = runPaths(runDir).capacity;
  return existsSync(file) ? (readJsonFile(file) as CapacitySummary) : null;
}

/** Exclusive holds on named resources (GPUs), granted in request order; several names are taken in sorted order so two runs cannot deadlock. */
class Locks {
  private tails = new Map<string, Promise<void>>();

  async with<T>(names: string[], work: () => Promise<T>): Promise<T> {
    const releases: (() => void)[] = [];
    for (const name of [...names].sort()) {
      const before = this.tails.get(name) ?? Promise.resolve();
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      this.tails.set(name, before.then(() => held));
      await before;
      releases.push(release);
    }
    try {
      return await work();
    } finally {
      for (const r of releases) r();
    }
  }
}

/** Runs (or resumes) a sweep to its end, or until the signal aborts it. */
export async function runSweep(opts: SweepOptions): Promise<SweepOutcome> {
  const now = opts.now ?? (() => new Date());
  const runOne = opts.runOne ?? runCapacity;
  let sweepDir: string;
  let sweepFile: string;
  const resumed = opts.resumeDir !== undefined;
  if (opts.resumeDir !== undefined) {
    sweepDir = resolve(opts.resumeDir);
    const started = new SweepJournal(sweepPaths(sweepDir).journal).read().find((e) => e.type === 'sweep-started');
    if (!started || started.type !== 'sweep-started') throw new UserError(`${opts.resumeDir}: not a sweep directory (no sweep.jsonl with a sweep-started line)`);
    sweepFile = started.sweepFile;
    if (!existsSync(sweepFile)) throw new UserError(`${sweepPaths(sweepDir).journal}: the sweep file ${sweepFile} no longer exists`);
    if (sha256(readFileSync(sweepFile, 'utf8')) !== started.sweepSha256) {
      throw new UserError(`${sweepFile} changed since sweep ${basename(sweepDir)} started; resuming would mix two matrices (start a new sweep instead)`);
    }
    const sweep = await loadSweepFile(sweepFile);
    if (existsSync(sweep.recipeFile) && sha256(readFileSync(sweep.recipeFile, 'utf8')) !== started.recipeSha256) {
      throw new UserError(`${sweep.recipeFile} changed since sweep ${basename(sweepDir)} started; resuming would mix two recipes (start a new sweep instead)`);
    }
  } else {
    if (!opts.sweepFile) throw new UserError('sweep needs a sweep file (or --resume <sweepDir>)');
    sweepFile = resolve(opts.sweepFile);
    sweepDir = '';
  }
  // A resumed sweep reads its recipes as they started (parseRecipe's storedRun).
  const { sweep, plan } = await prepareSweep(sweepFile, opts.inventory, { storedRun: resumed });
  if (!resumed) {
    sweepDir = newSweepDir(opts.outDir, sweep.name, now());
    makeDirs(sweepDir);
    copyFileIn(sweepDir, sweepFile, join(sweepDir, 'sweep.yaml'));
  }
  const recipesDir = join(sweepDir, 'recipes');
  const runsDir = sweepPaths(sweepDir).runsDir;
  makeDirIn(sweepDir, recipesDir);
  makeDirIn(sweepDir, runsDir);

  const journal = new SweepJournal(sweepPaths(sweepDir).journal);
  const history = journal.read();
  const originals = originalSweepDirs(history);
  const states = runStates(history, plan.runs.map((r) => r.config.id), (value, entry) => journal.runDirOf(value, entry, originals));
  const recipeFileOf = (r: PlannedRun) => join(recipesDir, `${r.config.id}.yaml`);
  const findRun = (file: string) => findRunDir(runsDir, file, originals);
  for (const run of plan.runs) {
    const file = recipeFileOf(run);
    const runDir = states.get(run.config.id)?.runDir ?? findRun(file);
    if (existsSync(file) && readFileSync(file, 'utf8') !== run.recipeText) {
      // A started run keeps the recipe it began with; only a run that never started may be re-placed.
      if (runDir !== null) throw new UserError(`${file}: ${run.config.id} would now be placed differently (was the inventory changed?); resume with the same --hosts`);
    }
    if (!existsSync(file) || runDir === null) writeFileIn(sweepDir, file, run.recipeText);
  }
  journal.append({
    type: 'sweep-started',
    name: sweep.name,
    sweepFile,
    sweepSha256: sha256(readFileSync(sweepFile, 'utf8')),
    recipeSha256: sha256(readFileSync(sweep.recipeFile, 'utf8')),
    runs: plan.runs.length,
    resumed,
  });
  opts.log(`${resumed ? 'resuming sweep' : 'sweep'} ${sweep.name}: ${plan.runs.length} runs, at most ${plan.parallel} at once → ${sweepDir}`);

  const results = new Map<string, { status: SweepRunStatus | 'not started'; reason: string; runDir: string | null }>();
  const limit = pLimit(plan.parallel);
  const locks = new Locks();
  const allocations = new SweepAllocations(opts.inventory, { connect: opts.connect, signal: opts.signal });

  const execute = async (run: PlannedRun): Promise<void> => {
    const id = run.config.id;
    const file = recipeFileOf(run);
    const state = states.get(id)!;
    const priorDir = state.runDir ?? findRun(file);
    if (state.status === 'completed' && readCapacity(priorDir) !== null) {
      opts.log(`[${id}] finished before: skipped`);
      results.set(id, { status: 'completed', reason: 'finished before the resume', runDir: priorDir });
      return;
    }
    if (opts.signal?.aborted) {
      results.set(id, { status: 'not started', reason: 'the sweep was interrupted first', runDir: priorDir });
      return;
    }
    const p = run.placement;
    journal.append({ type: 'run-started', id, host: p.host, gpus: p.gpus, port: p.port, recipeFile: journal.relativePath(file), resumeDir: priorDir && journal.relativePath(priorDir) });
    opts.log(`[${id}] ${priorDir ? 'resuming' : 'starting'} on ${p.host} GPUs ${p.gpus.join(',')}${p.port !== null ? ` port ${p.port}` : ''}`);
    let status: SweepRunStatus;
    let reason: string;
    let runDir: string | null;
    const runLog = (line: string) => opts.log(`[${id}] ${line}`);
    const runWith = (inventory: Inventory | undefined, slurm?: RunOptions['slurm']) =>
      runOne({ recipeFile: file, outDir: runsDir, resumeDir: priorDir ?? undefined, inventory, connect: opts.connect, signal: opts.signal, log: runLog, slurm });
    try {
      const outcome = slurmEntry(opts.inventory, p.host)
        ? await allocations.withAllocation(
            { id, host: p.host, gpus: p.gpus.length, priorJobId: state.jobId },
            {
              log: runLog,
              onSubmitted: (jobId) => journal.append({ type: 'allocation-submitted', id, jobId }),
              onRunning: (f) => journal.append({ type: 'allocation-running', id, jobId: f.jobId, node: f.node, queuedS: f.queuedS, slurmQueuedS: f.slurmQueuedS, reattached: f.reattached }),
              onReleased: (jobId, f, heldS) => {
                journal.append({ type: 'allocation-released', id, jobId, heldS });
                // Queue time apart from run time: the wait is Slurm's, the hold is the run's.
                if (f) runLog(`Slurm job ${jobId}: ${f.queuedS.toFixed(1)} s in the queue, ${heldS.toFixed(1)} s allocated on ${f.node}`);
              },
            },
            (held) => runWith(held.inventory, held.facts),
          )
        : await runWith(opts.inventory);
      ({ status, reason, runDir } = outcome);
    } catch (err) {
      status = opts.signal?.aborted ? 'interrupted' : 'failed';
      reason = (err as Error).message;
      runDir = findRun(file);
    }
    const capacity = status === 'completed' ? readCapacity(runDir) : null;
    // Each finished run enters the results folder's index as it finishes (the sweep's parent
    // folder), so a nightly gate finds it even when the sweep is stopped before its end.
    if (capacity && runDir) indexFinishedRun(dirname(sweepDir), runDir, (line) => opts.log(`[${id}] ${line}`));
    journal.append({ type: 'run-finished', id, status, reason, runDir: runDir && journal.relativePath(runDir), capacityQps: capacity?.capacityQps ?? null });
    opts.log(`[${id}] ${status}${capacity ? `: ${capacity.capacityQps} QPS` : ''} (${reason})`);
    results.set(id, { status, reason, runDir });
  };

  // allSettled: a fault in one run's bookkeeping must not abandon the others mid-teardown.
  // Runs on a Slurm entry take no GPU locks of ours: Slurm places them, at most maxConcurrent at once.
  const settled = await Promise.allSettled(
    plan.runs.map((run) => {
      const onSlurm = slurmEntry(opts.inventory, run.placement.host) !== null;
      return locks.with(onSlurm ? [] : gpuLocks(run.placement), () => allocations.limited(run.placement.host, () => limit(() => execute(run))));
    }),
  );
  await allocations.close();
  const fault = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (fault) throw fault.reason;

  const slurm = slurmTimes(journal.read());
  const rows: SweepRow[] = plan.runs.map((run) => {
    const r = results.get(run.config.id)!;
    return {
      id: run.config.id,
      values: run.config.values,
      host: run.placement.host,
      gpus: run.placement.gpus,
      status: r.status,
      reason: r.reason,
      runDir: r.runDir,
      capacity: r.status === 'completed' ? readCapacity(r.runDir) : null,
      reportHref: reportLink(sweepDir, r.runDir),
      ...(slurm.has(run.config.id) ? { slurm: slurm.get(run.config.id)! } : {}),
    };
  });
  const counts = {
    completed: rows.filter((r) => r.status === 'completed').length,
    failed: rows.filter((r) => r.status === 'failed').length,
    interrupted: rows.filter((r) => r.status === 'interrupted').length,
    notStarted: rows.filter((r) => r.status === 'not started').length,
    invalid: rows.filter((r) => r.capacity?.outcome === 'invalid-probes').length,
  };
  const status = opts.signal?.aborted || counts.interrupted + counts.notStarted > 0 ? 'interrupted' : counts.failed > 0 ? 'failed' : 'completed';
  const out = sweepPaths(sweepDir);
  writeFileIn(sweepDir, out.reportMd, sweepMarkdown(sweep.name, rows));
  writeFileIn(sweepDir, out.reportHtml, await sweepHtml(sweep.name, rows));
  writeFileIn(sweepDir, out.reportCsv, sweepCsv(rows));
  const { invalid: _invalid, ...journalCounts } = counts;
  journal.append({ type: 'sweep-finished', status, ...journalCounts });
  return { sweepDir, status, rows, counts };
}
