// Where a client's receive − emit tail comes from, from the kernel's scheduler trace (tracefs
// sched_switch events, clock "mono"): for each burst of chunks the engine stamped in the same
// millisecond whose median receive − emit is in the tail, which threads held each CPU between the
// burst's first emit and its last receive. Time the receiving threads ran is the client draining
// the burst; time other threads of the client ran is contention the client caused itself; time
// the engine or another process ran, or a CPU sat idle while chunks were already stamped, is
// outside the client. Finer, with sched_wakeup events too: each tail chunk's own wait split by
// what its receiving thread was doing (running, woken but waiting for a CPU, asleep, blocked in a
// system call) and, while it waited for a CPU, who held that CPU. Pure: the text of the trace in,
// figures out.

/** One stretch of a CPU running one thread. */
export interface RunInterval {
  startS: number;
  endS: number;
  tid: number;
  comm: string;
}

const SWITCH = /\[(\d+)\][^:]*?\s(\d+\.\d+): sched_switch: prev_comm=.*? prev_pid=\d+ .*?==> next_comm=(.*?) next_pid=(\d+) /;

/** What each CPU ran, in order, from the sched_switch lines of a tracefs `trace` file. */
export function parseSchedSwitch(text: string): Map<number, RunInterval[]> {
  const byCpu = new Map<number, RunInterval[]>();
  const current = new Map<number, { startS: number; tid: number; comm: string }>();
  for (const line of text.split('\n')) {
    const m = SWITCH.exec(line);
    if (!m) continue;
    const cpu = Number(m[1]);
    const t = Number(m[2]);
    const was = current.get(cpu);
    if (was) {
      if (!byCpu.has(cpu)) byCpu.set(cpu, []);
      byCpu.get(cpu)!.push({ startS: was.startS, endS: t, tid: was.tid, comm: was.comm });
    }
    current.set(cpu, { startS: t, tid: Number(m[4]), comm: m[3] });
  }
  return byCpu;
}

/** Who a thread belongs to, for the attribution. */
export type ThreadRole = 'receiver' | 'client' | 'engine' | 'idle' | 'other';

export interface SlowBurst {
  /** The burst's first emit, s on the monotonic clock. */
  emitS: number;
  chunks: number;
  medianRecvMinusEmitS: number;
  /** Seconds each role held a CPU between the burst's first emit and its last receive, summed over CPUs. */
  byRole: Record<ThreadRole, number>;
  /** The other processes' share, by command name. */
  others: Record<string, number>;
  /** The client's other threads' share, by thread id. */
  clientThreads: Record<number, number>;
}

export interface TailAttribution {
  thresholdS: number;
  bursts: SlowBurst[];
  /** byRole summed over the slow bursts. */
  total: Record<ThreadRole, number>;
  others: Record<string, number>;
  clientThreads: Record<number, number>;
}

/**
 * Groups chunks into bursts by emit millisecond, keeps those whose median receive − emit exceeds
 * `thresholdS` (and that hold `minChunks` chunks or more), and attributes each one's window.
 * `recvS`/`emitS` are absolute monotonic seconds, one pair per chunk; `roleOf` names each thread.
 */
export function attributeTail(input: {
  intervals: Map<number, RunInterval[]>;
  recvS: ArrayLike<number>;
  emitS: ArrayLike<number>;
  thresholdS: number;
  minChunks?: number;
  roleOf: (tid: number) => ThreadRole;
}): TailAttribution {
  const groups = new Map<number, number[]>();
  for (let i = 0; i < input.emitS.length; i++) {
    const key = Math.round(input.emitS[i] * 1000);
    let g = groups.get(key);
    if (!g) groups.set(key, (g = []));
    g.push(i);
  }
  const roles = (): Record<ThreadRole, number> => ({ receiver: 0, client: 0, engine: 0, idle: 0, other: 0 });
  const total = roles();
  const allOthers: Record<string, number> = {};
  const allClient: Record<number, number> = {};
  const bursts: SlowBurst[] = [];
  for (const key of [...groups.keys()].sort((a, b) => a - b)) {
    const chunks = groups.get(key)!;
    if (chunks.length < (input.minChunks ?? 1)) continue;
    const rme = chunks.map((i) => input.recvS[i] - input.emitS[i]).sort((a, b) => a - b);
    const median = rme[Math.floor(rme.length / 2)];
    if (median <= input.thresholdS) continue;
    let from = Infinity;
    let to = -Infinity;
    for (const i of chunks) {
      from = Math.min(from, input.emitS[i]);
      to = Math.max(to, input.recvS[i]);
    }
    const byRole = roles();
    const others: Record<string, number> = {};
    const clientThreads: Record<number, number> = {};
    for (const runs of input.intervals.values()) {
      for (const r of runs) {
        const overlap = Math.min(r.endS, to) - Math.max(r.startS, from);
        if (overlap <= 0) continue;
        const role = r.tid === 0 ? 'idle' : input.roleOf(r.tid);
        byRole[role] += overlap;
        if (role === 'other') others[r.comm] = (others[r.comm] ?? 0) + overlap;
        if (role === 'client') clientThreads[r.tid] = (clientThreads[r.tid] ?? 0) + overlap;
      }
    }
    for (const k of Object.keys(byRole) as ThreadRole[]) total[k] += byRole[k];
    for (const [comm, s] of Object.entries(others)) allOthers[comm] = (allOthers[comm] ?? 0) + s;
    for (const [tid, s] of Object.entries(clientThreads)) allClient[Number(tid)] = (allClient[Number(tid)] ?? 0) + s;
    bursts.push({ emitS: from, chunks: chunks.length, medianRecvMinusEmitS: median, byRole, others, clientThreads });
  }
  return { thresholdS: input.thresholdS, bursts, total, others: allOthers, clientThreads: allClient };
}

/** The threads of `ownTgid` that ran longest between `fromS` and `toS`: during a probe, its receiving threads. */
export function busiestThreads(intervals: Map<number, RunInterval[]>, tgidOf: (tid: number) => number | undefined, ownTgid: number, count: number, fromS: number, toS: number): number[] {
  const run = new Map<number, number>();
  for (const runs of intervals.values()) {
    for (const r of runs) {
      const overlap = Math.min(r.endS, toS) - Math.max(r.startS, fromS);
      if (overlap > 0 && r.tid !== 0 && tgidOf(r.tid) === ownTgid) run.set(r.tid, (run.get(r.tid) ?? 0) + overlap);
    }
  }
  return [...run.entries()].sort((a, b) => b[1] - a[1]).slice(0, count).map(([tid]) => tid);
}

/** Parses tracefs `saved_tgids` ("pid tgid" per line). */
export function parseSavedTgids(text: string): Map<number, number> {
  const map = new Map<number, number>();
  for (const line of text.split('\n')) {
    const [pid, tgid] = line.trim().split(/\s+/).map(Number);
    if (Number.isInteger(pid) && Number.isInteger(tgid)) map.set(pid, tgid);
  }
  return map;
}

/** What one receiving thread was doing: on a CPU, woken but waiting for one, asleep, or blocked in the kernel. */
export type ReceiverState = 'running' | 'runnable' | 'sleeping' | 'blocked';

/** One change of the receiver's state; `cpu` is where it runs or waits to run. */
interface StateChange {
  t: number;
  state: ReceiverState;
  cpu: number;
}

const SWITCH_FULL = /\[(\d+)\][^:]*?\s(\d+\.\d+): sched_switch: prev_comm=.*? prev_pid=(\d+) .*?prev_state=(\S+) ==> next_comm=.*? next_pid=(\d+) /;
const WAKEUP = /\s(\d+\.\d+): sched_wakeup: comm=.*? pid=(\d+) .*?target_cpu=(\d+)/;

/** The receiver's state over time, from sched_switch and sched_wakeup lines. */
export function receiverStates(text: string, receiverTid: number): StateChange[] {
  const events: (StateChange & { wakeup: boolean })[] = [];
  for (const line of text.split('\n')) {
    const s = SWITCH_FULL.exec(line);
    if (s) {
      const cpu = Number(s[1]);
      const t = Number(s[2]);
      if (Number(s[3]) === receiverTid) {
        const prev = s[4];
        // R (or R+): preempted, still runnable; D: blocked in the kernel (uninterruptible); else asleep.
        events.push({ t, cpu, wakeup: false, state: prev.startsWith('R') ? 'runnable' : prev.startsWith('D') ? 'blocked' : 'sleeping' });
      }
      if (Number(s[5]) === receiverTid) events.push({ t, cpu, wakeup: false, state: 'running' });
      continue;
    }
    const w = WAKEUP.exec(line);
    if (w && Number(w[2]) === receiverTid) events.push({ t: Number(w[1]), cpu: Number(w[3]), wakeup: true, state: 'runnable' });
  }
  events.sort((a, b) => a.t - b.t);
  const out: StateChange[] = [];
  for (const e of events) {
    // A wake-up of a thread that is on a CPU, or already woken, changes nothing.
    if (e.wakeup && out.length > 0 && out[out.length - 1].state !== 'sleeping' && out[out.length - 1].state !== 'blocked') continue;
    out.push({ t: e.t, state: e.state, cpu: e.cpu });
  }
  return out;
}

/** Where the tail chunks' waits went, as shares of their summed receive − emit. */
export interface TailWaits {
  /** The chunks counted: those at or above the receive − emit quantile asked for. */
  chunks: number;
  /** Share of the wait by the receiver's state (sums to 1). */
  byState: Record<ReceiverState, number>;
  /** Of the runnable share, who held the CPU the receiver waited for: idle (the CPU waking up), or a role. */
  runnableHeldBy: Record<ThreadRole, number>;
}

/**
 * Splits each tail chunk's wait (emit to receive) by what its receiving thread was doing:
 * `sleeping` means the bytes had not reached it (the engine or the kernel still held them);
 * `runnable` means it was woken and waited for a CPU (split by who held that CPU, where `idle` is
 * the CPU coming out of idle); `running` means it was busy with the chunks ahead of this one;
 * `blocked` means it was stuck in a system call. One receiving thread; times in monotonic seconds.
 */
export function tailWaits(input: {
  states: StateChange[];
  intervals: Map<number, RunInterval[]>;
  recvS: ArrayLike<number>;
  emitS: ArrayLike<number>;
  quantile: number;
  roleOf: (tid: number) => ThreadRole;
}): TailWaits {
  const { states, intervals } = input;
  const n = input.recvS.length;
  const waits = Array.from({ length: n }, (_, i) => input.recvS[i] - input.emitS[i]);
  const sorted = [...waits].sort((a, b) => a - b);
  const cut = sorted[Math.min(n - 1, Math.floor(input.quantile * n))];
  const byState: Record<ReceiverState, number> = { running: 0, runnable: 0, sleeping: 0, blocked: 0 };
  const held: Record<ThreadRole, number> = { receiver: 0, client: 0, engine: 0, idle: 0, other: 0 };
  const times = states.map((s) => s.t);
  const heldOn = (cpu: number, from: number, to: number) => {
    for (const r of intervals.get(cpu) ?? []) {
      const overlap = Math.min(r.endS, to) - Math.max(r.startS, from);
      if (overlap > 0) held[r.tid === 0 ? 'idle' : input.roleOf(r.tid)] += overlap;
    }
  };
  let chunks = 0;
  for (let i = 0; i < n; i++) {
    if (waits[i] < cut || waits[i] <= 0) continue;
    chunks++;
    const from = input.emitS[i];
    const to = input.recvS[i];
    let k = upperBound(times, from) - 1;
    let t = from;
    let cur: StateChange = k >= 0 ? states[k] : { t: from, state: 'sleeping', cpu: -1 };
    for (k++; k < states.length && states[k].t < to; k++) {
      byState[cur.state] += states[k].t - t;
      if (cur.state === 'runnable') heldOn(cur.cpu, t, states[k].t);
      t = states[k].t;
      cur = states[k];
    }
    byState[cur.state] += to - t;
    if (cur.state === 'runnable') heldOn(cur.cpu, t, to);
  }
  const total = Object.values(byState).reduce((a, b) => a + b, 0) || 1;
  const heldTotal = Object.values(held).reduce((a, b) => a + b, 0) || 1;
  return {
    chunks,
    byState: Object.fromEntries(Object.entries(byState).map(([k, v]) => [k, v / total])) as Record<ReceiverState, number>,
    runnableHeldBy: Object.fromEntries(Object.entries(held).map(([k, v]) => [k, v / heldTotal])) as Record<ThreadRole, number>,
  };
}

/** The first index whose value is greater than x (values ascending). */
function upperBound(values: number[], x: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
