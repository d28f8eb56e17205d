// A probe's own arrivals as a queue would hold them. Near the knee a probe's misses follow the
// bursts its Poisson draw happens to hold more than the rate it realized: feed each judged request's
// tokens (prompt and planned output) to one server that drains a fixed number of tokens a second,
// and the mean backlog the arrivals find explains most of how far a probe's miss fraction strays
// from the long run (docs/verdicts.md, "Each probe at the rate its bursts put it at"). Nothing of the engine goes
// in: the backlog is a function of the plan alone, so its mean over the planner's draws is known
// without probing.
//
// Pure: planned arrivals in, seconds out.

/** One judged request as the plan sent it: its planned arrival time and its tokens (prompt and planned output). */
export interface PlannedArrival {
  scheduledS: number;
  tokens: number;
}

/**
 * The mean backlog, in seconds of the server's work, that each arrival finds on a server draining
 * `tokensPerS` (Lindley's recursion), arrivals taken in time order. `compress` > 1 replays the same
 * draw that many times faster (its rate times `compress`), which gives the backlog's slope in the
 * rate on one draw. NaN without arrivals or without a positive drain.
 */
export function meanBacklogS(arrivals: readonly PlannedArrival[], tokensPerS: number, compress = 1): number {
  if (arrivals.length === 0 || !(tokensPerS > 0) || !(compress > 0)) return NaN;
  let sum = 0;
  eachBacklog(inTimeOrder(arrivals), arrivals.length, tokensPerS, compress, (_, backlog) => void (sum += backlog));
  return sum / arrivals.length / tokensPerS;
}

const inTimeOrder = (arrivals: readonly PlannedArrival[]) => [...arrivals].sort((a, b) => a.scheduledS - b.scheduledS);

// Lindley's recursion over the first `length` arrivals in time order: the tokens each finds waiting.
function eachBacklog(order: readonly PlannedArrival[], length: number, tokensPerS: number, compress: number, found: (i: number, backlog: number) => void): void {
  let backlog = 0;
  let lastS = order[0].scheduledS / compress;
  for (let i = 0; i < length; i++) {
    const atS = order[i].scheduledS / compress;
    backlog = Math.max(0, backlog - tokensPerS * (atS - lastS));
    lastS = atS;
    found(i, backlog);
    backlog += order[i].tokens;
  }
}

/**
 * The drain that makes a workload of `meanTokens` a request, arriving at `qps`, load the server to
 * `utilization`: the scale the backlog is read on (0.8 explained the most in the measurements).
 */
export function drainTokensPerS(qps: number, meanTokens: number, utilization: number): number {
  return (qps * meanTokens) / utilization;
}

/** The utilization the backlog is read at: of 0.6, 0.8 and 0.9, 0.8 explained the most of Sarathi's scatter. */
export const BACKLOG_UTILIZATION = 0.8;

/** How far above the utilization the backlog's slope is taken (the draws replayed this much faster). */
const SLOPE_STEP = 0.02;

/**
 * The planner's draws at one request a second, as a probe's backlog is read against them. At any
 * rate the same draws, their times divided by the rate and the drain multiplied by it, leave the
 * same backlog divided by the rate: one reference serves every rate.
 */
export interface BacklogReference {
  utilization: number;
  /** Mean tokens of a request over the draws: the drain's scale. */
  meanTokens: number;
  /** Index n: the mean over the draws of the mean backlog their first n arrivals find (seconds at one request a second). */
  at: Float64Array;
  /** The same with the draws replayed SLOPE_STEP faster. */
  faster: Float64Array;
}

/**
 * The reference of `count` draws made at one request a second, each `length` arrivals or more,
 * read one at a time (`drawOf(k)`, twice: first for the drain's scale, the mean tokens of a
 * request), so that only one is held. A generator that yields after each draw, so that a caller
 * sharing its thread with a probe's client can let it run between them (backlogReference runs it
 * through); its return value is the reference.
 */
export function* backlogReferenceSteps(count: number, length: number, drawOf: (k: number) => readonly PlannedArrival[], utilization = BACKLOG_UTILIZATION): Generator<void, BacklogReference> {
  let tokens = 0;
  let arrivals = 0;
  for (let k = 0; k < count; k++) {
    for (const a of drawOf(k)) (tokens += a.tokens), (arrivals += 1);
    yield;
  }
  const meanTokens = tokens / arrivals;
  const drain = meanTokens / utilization;
  const at = new Float64Array(length + 1);
  const faster = new Float64Array(length + 1);
  // Each length's mean backlog, accumulated over the draws as a running mean of the first i + 1.
  const add = (order: readonly PlannedArrival[], compress: number, out: Float64Array) => {
    let sum = 0;
    eachBacklog(order, length, drain, compress, (i, backlog) => {
      sum += backlog;
      out[i + 1] += sum / (i + 1) / drain / count;
    });
  };
  for (let k = 0; k < count; k++) {
    const order = inTimeOrder(drawOf(k));
    if (order.length < length) throw new Error(`backlogReference: draw ${k} holds ${order.length} arrivals, fewer than ${length}`);
    add(order, 1, at);
    add(order, 1 + SLOPE_STEP, faster);
    yield;
  }
  return { utilization, meanTokens, at, faster };
}

/** backlogReferenceSteps run through at once. */
export function backlogReference(count: number, length: number, drawOf: (k: number) => readonly PlannedArrival[], utilization = BACKLOG_UTILIZATION): BacklogReference {
  const steps = backlogReferenceSteps(count, length, drawOf, utilization);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * The rate a probe's bursts put it at: the rate whose average draw of as many arrivals leaves the
 * backlog this probe's judged arrivals (planned at `qps`) found, to first order. Null with fewer
 * than two arrivals, more than the reference holds, or a reference whose backlog does not grow.
 */
export function burstQpsOf(judged: readonly PlannedArrival[], qps: number, ref: BacklogReference): number | null {
  const n = judged.length;
  if (n < 2 || n >= ref.at.length || !(qps > 0)) return null;
  const at = ref.at[n];
  const rise = ref.faster[n] - at;
  if (!(rise > 0)) return null;
  // At rate q the reference's backlog is at/q; with the drain held, its slope in q is rise/(STEP q²).
  const backlogS = meanBacklogS(judged, drainTokensPerS(qps, ref.meanTokens, ref.utilization));
  return qps * (1 + (SLOPE_STEP * (qps * backlogS - at)) / rise);
}
