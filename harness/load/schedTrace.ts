// Where a client's receive − emit tail comes from, from the kernel's scheduler trace (tracefs
// sched_switch events, clock "mono"): for each burst of chunks the engine stamped in the same
// millisecond whose median receive − emit is in the tail, which threads held each CPU between the
// burst's first emit and its last receive. Time the receiving threads ran is the client draining
// the burst; time other threads of the client ran is contention the client caused itself; time
// the engine or another process ran, or a CPU sat idle while chunks were already stamped, is
// outside the client. Pure: the text of the trace in, figures out.

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
}

export interface TailAttribution {
  thresholdS: number;
  bursts: SlowBurst[];
  /** byRole summed over the slow bursts. */
  total: Record<ThreadRole, number>;
  others: Record<string, number>;
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
    for (const runs of input.intervals.values()) {
      for (const r of runs) {
        const overlap = Math.min(r.endS, to) - Math.max(r.startS, from);
        if (overlap <= 0) continue;
        const role = r.tid === 0 ? 'idle' : input.roleOf(r.tid);
        byRole[role] += overlap;
        if (role === 'other') others[r.comm] = (others[r.comm] ?? 0) + overlap;
      }
    }
    for (const k of Object.keys(byRole) as ThreadRole[]) total[k] += byRole[k];
    for (const [comm, s] of Object.entries(others)) allOthers[comm] = (allOthers[comm] ?? 0) + s;
    bursts.push({ emitS: from, chunks: chunks.length, medianRecvMinusEmitS: median, byRole, others });
  }
  return { thresholdS: input.thresholdS, bursts, total, others: allOthers };
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
