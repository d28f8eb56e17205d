// Linux thread priorities for a probe: its receiving threads take a shared core first. Every other
// thread of the process (the main thread, the decoder, V8's compiler and garbage-collector helpers,
// libuv's pool) is lowered to the weakest niceness while a probe runs, and put back afterwards
// where the kernel allows it. Traced on one core at 500 streams, V8's helper threads held the core
// 2-3 ms at a time while a burst of chunks waited for the receiving thread. Nothing here is needed
// for correctness: off Linux, or where a thread cannot be changed, it does nothing.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

const LOWEST = 19;

/** The calling thread's Linux thread id (as /proc names it), or null where there is no /proc. */
export function currentThreadId(): number | null {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return null;
  }
}

/**
 * Lowers every thread of this process except `keep` to niceness 19 and returns what puts them
 * back. The main thread is lowered only if its old niceness can be restored (CAP_SYS_NICE, or an
 * RLIMIT_NICE that allows it): the main thread does the rest of the run's work after the probe. V8's and libuv's
 * helpers are lowered either way; they only ever do background work.
 */
export function lowerOtherThreads(keep: readonly number[], mainThreadId = process.pid): { lowered: number; restore(): void } {
  let tids: number[];
  try {
    tids = readdirSync('/proc/self/task').map(Number);
  } catch {
    return { lowered: 0, restore() {} };
  }
  const changed: { tid: number; nice: number }[] = [];
  for (const tid of tids) {
    if (keep.includes(tid)) continue;
    try {
      const nice = getPriority(tid);
      if (nice >= LOWEST) continue;
      if (tid === mainThreadId && !canLowerNiceTo(nice)) continue;
      setPriority(tid, LOWEST);
      changed.push({ tid, nice });
    } catch {
      // Gone already, or not ours to change.
    }
  }
  return {
    lowered: changed.length,
    restore() {
      for (const { tid, nice } of changed) {
        try {
          setPriority(tid, nice);
        } catch {
          // Exited (a probe's worker threads), or not permitted: it stays low.
        }
      }
    },
  };
}

/** Whether this process may set a thread's niceness back down to `nice` after raising it. */
export function canLowerNiceTo(nice: number): boolean {
  try {
    // CAP_SYS_NICE (bit 23 of the effective set) allows any niceness; root in a container often lacks it.
    const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (capEff !== undefined && (BigInt(`0x${capEff}`) >> 23n) & 1n) return true;
    // Otherwise RLIMIT_NICE's soft limit r allows niceness down to 20 - r.
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max nice priority'));
    const soft = line ? Number(line.split(/\s{2,}/)[1]) : 0;
    return Number.isFinite(soft) && 20 - soft <= nice;
  } catch {
    return false;
  }
}
