// The rate a probe's bursts put it at, read against the planner's own draws of the run's workload
// (metrics/virtualBacklog.ts). The reference is drawn once per workload and length, at one request
// a second, and serves every rate; a workload whose arrival times come from a trace has no draws to
// compare with, and is read at its realized rate.
//
// The planner is deterministic, so the reference is too (memoized by workload); no I/O.
import { planProbe } from '../load/plan.ts';
import type { TraceTable } from '../load/traceCsv.ts';
import type { WorkloadSpec } from '../load/workloadSpec.ts';
import { deriveSeed } from '../util/rng.ts';
import { SIZE_BOUNDS } from '../util/sizeBounds.ts';
import { backlogReferenceSteps, burstQpsOf, type BacklogReference, type PlannedArrival } from '../metrics/virtualBacklog.ts';

/**
 * Draws in a reference. Its mean backlog is common to every probe at a rate, so its own error moves
 * them all together: with 400 draws about a third of a percent of the rate on Sarathi's probes.
 * Longer references draw fewer (a probe's own scatter shrinks as its length grows, and so may the
 * reference's), at most REFERENCE_ARRIVALS arrivals in all, at least 20 draws.
 */
export const REFERENCE_DRAWS = 400;
const REFERENCE_ARRIVALS = 4_000_000;

const references = new Map<string, BacklogReference>();
const traceIds = new WeakMap<TraceTable, number>();
let traces = 0;

type Judged = readonly { scheduledS: number; promptTokens: number; maxTokens: number }[];

// The reference a probe of `least` judged requests is read against: the memoized one when it is long
// enough, else the steps that draw a new one (longer than asked, so that a search's later probes,
// longer near the knee, reuse it).
function referenceSteps(workload: WorkloadSpec, trace: TraceTable | undefined, maxContextTokens: number, least: number): { key: string; have: BacklogReference } | { key: string; steps: Generator<void, BacklogReference> } {
  if (trace && !traceIds.has(trace)) traceIds.set(trace, ++traces);
  const key = JSON.stringify([workload, trace ? traceIds.get(trace) : null, maxContextTokens]);
  const have = references.get(key);
  if (have && have.at.length > least) return { key, have };
  const length = Math.min(SIZE_BOUNDS.probeRequests.max, Math.max(1000, 2 * least));
  const count = Math.max(20, Math.min(REFERENCE_DRAWS, Math.floor(REFERENCE_ARRIVALS / length)));
  const drawOf = (k: number) => planProbe({ workload, rateQps: 1, requests: length, seed: deriveSeed(workload.seed, `backlog reference ${k}`), maxContextTokens, trace }).requests.map(arrivalOf);
  return { key, steps: backlogReferenceSteps(count, length, drawOf) };
}

const unread = (workload: WorkloadSpec, judged: Judged) => workload.arrivals.process === 'trace' || judged.length < 2;

/** A planned request as the backlog reads it: its arrival and its tokens, prompt and planned output. */
export const arrivalOf = (r: { scheduledS: number; promptTokens: number; maxTokens: number }): PlannedArrival => ({ scheduledS: r.scheduledS, tokens: r.promptTokens + r.maxTokens });

// Keeps a newly drawn reference and reads the probe against it.
function readAgainst(key: string, ref: BacklogReference, judged: Judged, qps: number): number | null {
  references.set(key, ref);
  return burstQpsOf(judged.map(arrivalOf), qps, ref);
}

/** The rate the judged requests' bursts put a probe planned at `qps` at; null for trace-timed arrivals or fewer than two. */
export function burstQps(judged: Judged, qps: number, workload: WorkloadSpec, trace: TraceTable | undefined, maxContextTokens: number): number | null {
  if (unread(workload, judged)) return null;
  const r = referenceSteps(workload, trace, maxContextTokens, judged.length);
  if ('have' in r) return readAgainst(r.key, r.have, judged, qps);
  let step = r.steps.next();
  while (!step.done) step = r.steps.next();
  return readAgainst(r.key, step.value, judged, qps);
}

/**
 * burstQps for a caller that shares its thread with a probe's client (the probe step; a sweep runs
 * several runs in one process): a new reference takes up to seconds, so it is drawn one draw at a
 * time, letting the event loop run between them.
 */
export async function burstQpsYielding(judged: Judged, qps: number, workload: WorkloadSpec, trace: TraceTable | undefined, maxContextTokens: number): Promise<number | null> {
  if (unread(workload, judged)) return null;
  const r = referenceSteps(workload, trace, maxContextTokens, judged.length);
  if ('have' in r) return readAgainst(r.key, r.have, judged, qps);
  let step = r.steps.next();
  while (!step.done) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    step = r.steps.next();
  }
  return readAgainst(r.key, step.value, judged, qps);
}
