// One writer per run directory: a lock file created with O_EXCL (`wx`) when a run starts or
// resumes, naming its holder (pid, host, process start, time). A second writer is refused with the
// holder's name; a lock whose process is gone from this host is stale and taken over, with a log line.
import { closeSync, fsyncSync, openSync, readFileSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { UserError, fileSystemFault } from '../util/errors.ts';
import { runPaths } from './layout.ts';

/** What the lock file says about its holder. */
export interface LockHolder {
  pid: number;
  host: string;
  /** The process's start in clock ticks since boot (/proc/<pid>/stat), so a reused pid is not mistaken for the holder. */
  pidStart: string | null;
  startedAt: string;
}

export interface RunLock {
  readonly path: string;
  /** Removes the lock if it is still ours; safe to call twice. */
  release(): void;
}

export interface LockDeps {
  pid: number;
  host: string;
  now: () => Date;
  /** Start of process `pid` (null: no such process or unknown); undefined when the platform cannot tell. */
  processStart: (pid: number) => string | null | undefined;
  log: (line: string) => void;
}

/** Field 22 of /proc/<pid>/stat; the command name before it may hold spaces, so count after ")". */
function processStart(pid: number): string | null | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? undefined;
  } catch {
    // No such process, or no /proc (not Linux): signal 0 tells whether the pid exists.
    try {
      process.kill(pid, 0);
      return undefined;
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EPERM' ? undefined : null;
    }
  }
}

const realDeps = (log: (line: string) => void): LockDeps => ({ pid: process.pid, host: hostname(), now: () => new Date(), processStart, log });

/** A lock file written but never filled (killed between create and write) is stale after this long. */
const EMPTY_LOCK_STALE_S = 10;

/** Takes the run directory's lock or throws a UserError naming the holder. */
export function acquireRunLock(runDir: string, log: (line: string) => void, deps: LockDeps = realDeps(log)): RunLock {
  const path = runPaths(runDir).lock;
  const mine: LockHolder = { pid: deps.pid, host: deps.host, pidStart: deps.processStart(deps.pid) ?? null, startedAt: deps.now().toISOString() };
  const text = JSON.stringify(mine) + '\n';
  for (let attempt = 0; attempt < 3; attempt++) {
    let fd: number;
    try {
      fd = openSync(path, 'wx', 0o644);
    } catch (err) {
      // A read-only or full disk is the disk's fault (exit 3), as it is anywhere else in a run.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw fileSystemFault(err) ?? new UserError(`${path}: cannot create the run's lock file (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
      const seen = readLock(path, deps.now());
      if (seen === 'gone') continue;
      const stale = staleness(seen, deps);
      if (stale === null) throw new UserError(refusal(runDir, path, seen as LockHolder));
      // Only the lock as read is removed: if another process took it over meanwhile, its lock stays.
      if (!sameLock(path, seen as Exclude<Seen, 'gone'>)) continue;
      try {
        unlinkSync(path);
      } catch {
        // Another process removed it first; the create below decides who holds it.
      }
      deps.log(`${runDir}: removed a stale lock (${stale})`);
      continue;
    }
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      process.off('exit', release);
      try {
        if (readFileSync(path, 'utf8') === text) unlinkSync(path);
      } catch {
        // Already gone: nothing to release.
      }
    };
    // A forced exit skips `finally` blocks; the lock still goes with the process.
    process.on('exit', release);
    return { path, release };
  }
  throw new UserError(`${path}: the run's lock changed hands three times while taking it; another fluidcap is using ${runDir}`);
}

type Seen = LockHolder | { unreadable: string; ageS: number } | 'gone';

function readLock(path: string, now: Date): Seen {
  let raw: string;
  let ageS: number;
  try {
    raw = readFileSync(path, 'utf8');
    ageS = (now.getTime() - statSync(path).mtimeMs) / 1000;
  } catch {
    return 'gone';
  }
  try {
    const v = JSON.parse(raw) as Partial<LockHolder>;
    if (typeof v.pid === 'number' && typeof v.host === 'string') return { pid: v.pid, host: v.host, pidStart: v.pidStart ?? null, startedAt: String(v.startedAt ?? 'unknown') };
  } catch {
    // Falls through: an unreadable lock is judged by its age alone.
  }
  return { unreadable: raw.slice(0, 80), ageS };
}

function sameLock(path: string, seen: Exclude<Seen, 'gone'>): boolean {
  const again = readLock(path, new Date(0));
  if (again === 'gone') return false;
  return JSON.stringify('unreadable' in again ? again.unreadable : again) === JSON.stringify('unreadable' in seen ? seen.unreadable : seen);
}

/** Why a lock is stale, or null while its holder may still be running. */
function staleness(seen: Exclude<Seen, 'gone'>, deps: LockDeps): string | null {
  if ('unreadable' in seen) return seen.ageS > EMPTY_LOCK_STALE_S ? `unreadable for ${seen.ageS.toFixed(0)} s: ${JSON.stringify(seen.unreadable)}` : null;
  // A process on another host cannot be checked from here: its lock stands.
  if (seen.host !== deps.host) return null;
  const start = deps.processStart(seen.pid);
  if (start === null) return `pid ${seen.pid} on ${seen.host}, started ${seen.startedAt}, is gone`;
  if (start !== undefined && seen.pidStart !== null && start !== seen.pidStart) return `pid ${seen.pid} on ${seen.host} is now another process than the one that took the lock at ${seen.startedAt}`;
  return null;
}

function refusal(runDir: string, path: string, holder: LockHolder | { unreadable: string; ageS: number }): string {
  if ('unreadable' in holder) return `${runDir} is being opened by another fluidcap (its lock ${path} was created ${holder.ageS.toFixed(1)} s ago and is not written yet); try again in a few seconds`;
  return (
    `${runDir} is in use by fluidcap pid ${holder.pid} on host ${holder.host} since ${holder.startedAt} (lock file ${path}); ` +
    `a run directory has one writer: wait for that process to finish, or, if it no longer runs on ${holder.host}, delete the lock file`
  );
}
