// Linux thread priorities for a probe: its receiving threads take a shared core first.
//
// The threads that only ever work in the background (the decoder, V8's compiler and
// garbage-collector helpers, libuv's pool) run under SCHED_IDLE while a probe runs, and are put
// back afterwards where the kernel allows it. Traced on one core at 500 streams, V8's helper
// threads held the core 2-3 ms at a time while a burst of chunks waited for the receiving thread.
// Niceness 19 alone is not enough: the kernel's scheduler (EEVDF) may let a running nice-19 thread
// finish its slice before a woken receiver runs, where a SCHED_IDLE thread is preempted on the
// wake-up. The main thread is left as it is: it answers Ctrl-C and runs the early stop.
//
// Where the kernel allows it (root, CAP_SYS_NICE or an RLIMIT_RTPRIO), the receivers themselves
// run under SCHED_FIFO at the lowest real-time priority while the probe runs. SCHED_IDLE on the
// others is not strict: EEVDF still picks a SCHED_IDLE thread over a woken receiver that has had
// more than its share of the CPU, and the main thread preempted a receiver about 1,300 times in one
// 500-stream probe. Traced, woken-but-waiting was 73-88% of the worst 1% of chunks' waits without
// it; with it a woken receiver runs within microseconds. The receivers block on their sockets
// between reads, so they leave the CPU to everything else, and the kernel's real-time throttling
// keeps 5% for other threads even if one never did.
//
// Policies are set with util-linux's `chrt`; without it, or where it is refused, niceness 19 stands
// in for SCHED_IDLE and the receivers keep their priority. Nothing here is needed for
// correctness: off Linux, or where a thread cannot be changed, it does nothing.
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { execa } from 'execa';

const LOWEST = 19;
const SCHED_OTHER = 0;
/** The SCHED_IDLE policy number, as schedulingPolicy() reports it. */
export const SCHED_IDLE = 5;

/** The calling thread's Linux thread id (as /proc names it), or null where there is no /proc. */
export function currentThreadId(): number | null {
  try {
    return Number(readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return null;
  }
}

/** A thread's scheduling policy (0 SCHED_OTHER, 5 SCHED_IDLE, ...), from /proc; null if unknown. */
export function schedulingPolicy(tid: number): number | null {
  try {
    const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: the 3rd field
    // onwards; the policy is the 41st.
    const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[41 - 3]);
    return Number.isInteger(policy) ? policy : null;
  } catch {
    return null;
  }
}

/** What one probe's call did, and what ends its claim. */
export interface ReceiverPriority {
  /** Threads this call lowered (niceness 19 at least); others may have been lowered by a probe running beside it. */
  lowered: number;
  /** Of those, the ones that run under SCHED_IDLE. */
  idle: number;
  /** This call's receivers that run under SCHED_FIFO. */
  realtime: number;
  /** Ends this probe's claim; once no probe holds one, every lowered thread still alive is put back. */
  release(): Promise<void>;
}

// Probes can run side by side in one process (a sweep runs its configurations in parallel), so the
// state is process-wide: no probe lowers another's receivers, and nothing is put back while a probe
// still runs.
const keptReceivers = new Set<number>();
const lowered = new Map<number, { tid: number; nice: number; idle: boolean }>();
let claims = 0;

/**
 * Keeps the main thread as it is, puts `receivers` under SCHED_FIFO (unless `realtime` is false,
 * and where the kernel allows it; else they too stay as they are) and lowers every other thread of
 * this process, until release(). Putting a thread back needs CAP_SYS_NICE or a permissive
 * RLIMIT_NICE; without them the helpers stay low, which costs only background work. Threads under another policy than
 * SCHED_OTHER (set by whoever started us) are left alone.
 */
export async function prioritiseReceivers(receivers: readonly number[], options: { realtime?: boolean; mainThreadId?: number } = {}): Promise<ReceiverPriority> {
  const mainThreadId = options.mainThreadId ?? process.pid;
  claims++;
  for (const tid of receivers) keptReceivers.add(tid);
  // A probe running beside this one may have lowered these receivers before they were claimed.
  await Promise.all(receivers.filter((tid) => lowered.has(tid)).map((tid) => putBack(tid)));
  let tids: number[] = [];
  try {
    tids = readdirSync('/proc/self/task').map(Number);
  } catch {
    // Not Linux: nothing to lower.
  }
  const mine: { tid: number; nice: number; idle: boolean }[] = [];
  for (const tid of tids) {
    if (tid === mainThreadId || keptReceivers.has(tid) || lowered.has(tid) || schedulingPolicy(tid) !== SCHED_OTHER) continue;
    try {
      const nice = getPriority(tid);
      if (nice < LOWEST) setPriority(tid, LOWEST);
      const entry = { tid, nice, idle: false };
      lowered.set(tid, entry);
      mine.push(entry);
    } catch {
      // Gone already, or not ours to change.
    }
  }
  await Promise.all(
    mine.map(async (c) => {
      c.idle = await chrt('--idle', c.tid);
    }),
  );
  const realtime = options.realtime === false ? [] : (await Promise.all(receivers.map(async (tid) => ((await chrt('--fifo', tid, 1)) ? [tid] : [])))).flat();
  let released = false;
  return {
    lowered: mine.length,
    idle: mine.filter((c) => c.idle).length,
    realtime: realtime.length,
    async release() {
      if (released) return;
      released = true;
      // Receivers that still exist (their probe's workers usually have ended) leave real time.
      await Promise.all(realtime.filter((tid) => existsSync(`/proc/self/task/${tid}`)).map((tid) => chrt('--other', tid)));
      for (const tid of receivers) keptReceivers.delete(tid);
      if (--claims > 0) return;
      await Promise.all([...lowered.keys()].map((tid) => putBack(tid)));
    },
  };
}

/** Puts one lowered thread back to its policy and niceness, where it still exists and that is allowed. */
async function putBack(tid: number): Promise<void> {
  const was = lowered.get(tid);
  if (!was) return;
  lowered.delete(tid);
  if (was.idle && !(await chrt('--other', tid))) return;
  try {
    if (was.nice < LOWEST) setPriority(tid, was.nice);
  } catch {
    // Exited (a probe's worker threads), or not permitted: it stays low.
  }
}

/** Sets one thread's policy (priority 0) with util-linux's chrt; false if it is missing or refused. */
async function chrt(policy: '--idle' | '--other' | '--fifo', tid: number, priority = 0): Promise<boolean> {
  try {
    await execa('chrt', [policy, '--pid', String(priority), String(tid)], { stdio: 'ignore', timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}
