// The sweep's journal (sweep.jsonl): one JSON line per run start and end, appended and flushed as
// it happens, so `--resume` knows which runs finished (skipped), which began (resumed from their
// run directory) and which never started. A torn last line (crash mid-write) is ignored.
// Run directories and recipe files are written relative to the sweep directory, so a sweep copied
// or moved elsewhere resumes into its own runs; an entry that would leave it is refused.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import { appendFileIn, confinedPath, relativeInside } from '../util/confinedFs.ts';
import { SWEEP_FILES } from '../runDir/layout.ts';

export type SweepRunStatus = 'completed' | 'failed' | 'interrupted';

export type SweepEvent =
  | { type: 'sweep-started'; name: string; sweepFile: string; sweepSha256: string; recipeSha256: string; runs: number; resumed: boolean }
  | { type: 'run-started'; id: string; host: string; gpus: number[]; port: number | null; recipeFile: string; resumeDir: string | null }
  | { type: 'run-finished'; id: string; status: SweepRunStatus; reason: string; runDir: string | null; capacityQps: number | null }
  // A run on a Slurm entry: its job id as soon as Slurm gave one (resume re-attaches to it while it
  // lives), its node and queue wait once it runs, and how long it was held once released.
  | { type: 'allocation-submitted'; id: string; jobId: string }
  | { type: 'allocation-running'; id: string; jobId: string; node: string; queuedS: number; slurmQueuedS: number | null; reattached: boolean }
  | { type: 'allocation-released'; id: string; jobId: string; heldS: number }
  | { type: 'sweep-finished'; status: 'completed' | 'failed' | 'interrupted'; completed: number; failed: number; interrupted: number; notStarted: number };

export type SweepJournalLine = SweepEvent & { atIso: string };

export class SweepJournal {
  constructor(readonly path: string) {}

  /** sweep.jsonl sits at the top of the sweep directory, the directory it may write in. */
  get sweepDir(): string {
    return dirname(this.path);
  }

  append(event: SweepEvent): void {
    appendFileIn(this.sweepDir, this.path, JSON.stringify({ atIso: new Date().toISOString(), ...event }) + '\n');
  }

  /** A path inside the sweep directory as the journal writes it: relative to the sweep directory. */
  relativePath(path: string): string {
    const rel = relative(resolve(this.sweepDir), resolve(path));
    relativeInside(this.sweepDir, rel, `${this.path}: a path to journal`);
    return rel;
  }

  /**
   * A run directory the journal names (`entry` says which line and field), as a directory inside
   * the sweep with no link on the way. Journals written before paths were relative hold absolute
   * ones: those that point into the sweep's runs/ where it then stood (`originalDirs`) are read as
   * the same run under this directory; any other entry is refused.
   */
  runDirOf(value: string, entry: string, originalDirs: ReadonlySet<string>): string {
    const what = `${this.path}: ${entry}`;
    if (typeof value !== 'string') throw new UserError(`${what}: must be a run directory relative to ${this.sweepDir}, got ${describeValue(value)}`);
    let path: string;
    if (isAbsolute(value)) {
      const parent = dirname(value);
      if (basename(parent) !== SWEEP_FILES.runsDir || !(originalDirs.has(dirname(parent)) || resolve(dirname(parent)) === resolve(this.sweepDir))) {
        throw new UserError(`${what}: must be a run directory under ${SWEEP_FILES.runsDir}/ of this sweep, got ${describeValue(value)}`);
      }
      path = join(resolve(this.sweepDir), SWEEP_FILES.runsDir, basename(value));
    } else path = relativeInside(this.sweepDir, value, what);
    return confinedPath(this.sweepDir, path, { includeLast: true });
  }


  read(): SweepJournalLine[] {
    if (!existsSync(this.path)) return [];
    const out: SweepJournalLine[] = [];
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as SweepJournalLine);
      } catch {
        // a line cut short by SIGKILL: the step it describes did not complete
      }
    }
    return out;
  }
}

/** Where each run stands according to the journal: its last status and run directory. */
export interface RunState {
  /** `pending`: never started; `started`: began and has no end line (the process was killed). */
  status: SweepRunStatus | 'pending' | 'started';
  runDir: string | null;
  attempts: number;
  /** The Slurm job of the run not yet released (fluidcap was killed while holding it). */
  jobId: string | null;
}

/**
 * Where the sweep directory stood when an older journal wrote absolute paths: the parent of the
 * recipes/ folder its run-started lines name.
 */
export function originalSweepDirs(lines: readonly SweepEvent[]): Set<string> {
  const out = new Set<string>();
  for (const e of lines) {
    if (e.type === 'run-started' && typeof e.recipeFile === 'string' && isAbsolute(e.recipeFile) && basename(dirname(e.recipeFile)) === 'recipes') out.add(dirname(dirname(e.recipeFile)));
  }
  return out;
}

/**
 * Folds the journal into each run's state (pure). `runDirOf` turns a journalled run directory into
 * the path to use (and refuses one that leaves the sweep); by default it is kept as written.
 */
export function runStates(
  lines: readonly SweepEvent[],
  ids: readonly string[],
  runDirOf: (value: string, entry: string) => string = (v) => v,
): Map<string, RunState> {
  const states = new Map<string, RunState>(ids.map((id) => [id, { status: 'pending', runDir: null, attempts: 0, jobId: null }]));
  for (const e of lines) {
    if (e.type === 'allocation-submitted' || e.type === 'allocation-released') {
      const a = states.get(e.id);
      if (a) a.jobId = e.type === 'allocation-submitted' ? e.jobId : null;
      continue;
    }
    if (e.type !== 'run-started' && e.type !== 'run-finished') continue;
    const s = states.get(e.id);
    if (!s) continue;
    if (e.type === 'run-started') {
      s.status = 'started';
      s.attempts += 1;
      if (e.resumeDir) s.runDir = runDirOf(e.resumeDir, `run-started of ${e.id}: resumeDir`);
    } else {
      s.status = e.status;
      if (e.runDir) s.runDir = runDirOf(e.runDir, `run-finished of ${e.id}: runDir`);
    }
  }
  return states;
}

/** What a run's Slurm allocations cost in time, over every session of the sweep: the queue is Slurm's, the hold the run's. */
export interface SlurmTimes {
  /** The last job's id and node. */
  jobId: string;
  node: string;
  /** Seconds waiting in the queue, summed over the run's jobs (a job re-attached to adds none). */
  queuedS: number;
  /** Seconds allocated, summed over the jobs released so far. */
  heldS: number;
  jobs: number;
}

/** Each run's Slurm times from the journal (pure); runs that never ran on Slurm are absent. */
export function slurmTimes(lines: readonly SweepEvent[]): Map<string, SlurmTimes> {
  const out = new Map<string, SlurmTimes>();
  for (const e of lines) {
    if (e.type === 'allocation-running') {
      const t = out.get(e.id) ?? { jobId: e.jobId, node: e.node, queuedS: 0, heldS: 0, jobs: 0 };
      if (!e.reattached) t.jobs += 1;
      out.set(e.id, { ...t, jobId: e.jobId, node: e.node, queuedS: t.queuedS + (Number.isFinite(e.queuedS) ? e.queuedS : 0) });
    } else if (e.type === 'allocation-released') {
      const t = out.get(e.id);
      if (t && Number.isFinite(e.heldS)) t.heldS += e.heldS;
    }
  }
  return out;
}
