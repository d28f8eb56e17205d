// How long the calling thread ran and how long it sat runnable waiting for a CPU (Linux schedstat).
// A client whose threads wait for a CPU times its reads late however little work it does per read,
// so every probe states it: on a shared or overcommitted machine this is the client error's cause.
import { readFileSync } from 'node:fs';

/** Cumulative scheduler figures of one thread (ns), or their difference between two readings. */
export interface ThreadCpu {
  runNs: number;
  /** Time spent runnable but not running (queued behind other threads for a CPU). */
  waitNs: number;
  /** Times the thread was put on a CPU. */
  slices: number;
}

/** The calling thread's figures; null where /proc/thread-self/schedstat does not exist (not Linux). */
export function readThreadCpu(): ThreadCpu | null {
  try {
    const [run, wait, slices] = readFileSync('/proc/thread-self/schedstat', 'utf8').trim().split(/\s+/).map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) && Number.isFinite(slices) ? { runNs: run, waitNs: wait, slices } : null;
  } catch {
    return null;
  }
}

/** Figures accumulated between two readings (null when either is missing). */
export function threadCpuSince(before: ThreadCpu | null, after: ThreadCpu | null): ThreadCpu | null {
  return before && after ? { runNs: after.runNs - before.runNs, waitNs: after.waitNs - before.waitNs, slices: after.slices - before.slices } : null;
}
