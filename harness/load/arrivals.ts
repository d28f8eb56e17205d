// Open-loop arrival schedules, computed in full before a probe starts: every request's planned
// send time (seconds from the probe's single start) is fixed here, never by when a slot frees up.
import { exponential, gamma, type Rng } from '../util/rng.ts';

/** The arrival processes a recipe may name (see workloadSpec.ts for the recipe syntax). */
export type ArrivalProcess =
  | { process: 'poisson' }
  | { process: 'gamma'; burstiness: number }
  | { process: 'constant' }
  | { process: 'trace'; timeScale?: number };

export interface ArrivalInput {
  arrivals: ArrivalProcess;
  rateQps: number;
  /** Stop after this many arrivals (at least one of maxCount / durationS must be finite). */
  maxCount: number;
  /** Stop before the first arrival at or after this time. */
  durationS: number;
  rng: Rng;
  /** For `trace`: the trace's `arrived_at` column in seconds, in file order. */
  traceArrivedS?: readonly number[];
}

/** Planned arrival times in seconds from the probe start, ascending, the first at 0. */
export function arrivalTimesS(input: ArrivalInput): number[] {
  const { arrivals, rateQps, maxCount, durationS, rng } = input;
  if (arrivals.process === 'trace') return traceTimesS(input);
  if (!(maxCount < Infinity) && !(durationS < Infinity)) throw new Error('arrivals need a request count or a duration');
  if (!(rateQps > 0)) throw new Error(`arrivals need a positive rate, got ${rateQps}`);
  const meanGapS = 1 / rateQps;
  const gap: () => number =
    arrivals.process === 'poisson'
      ? () => exponential(rng, meanGapS)
      : arrivals.process === 'gamma'
        ? () => gamma(rng, arrivals.burstiness, meanGapS / arrivals.burstiness)
        : () => meanGapS;
  const times: number[] = [];
  // Constant arrivals use i·period (not summed gaps) so rounding never drifts the rate.
  for (let i = 0, t = 0; i < maxCount; i++) {
    const at = arrivals.process === 'constant' ? i * meanGapS : t;
    if (at >= durationS) break;
    times.push(at);
    t += gap();
  }
  return times;
}

/** Trace replay: `arrived_at` relative to the first row, times `timeScale`, or scaled to `rateQps` when no scale is set. */
function traceTimesS({ arrivals, rateQps, maxCount, durationS, traceArrivedS }: ArrivalInput): number[] {
  if (!traceArrivedS || traceArrivedS.length === 0) throw new Error('trace arrivals need the trace arrived_at column');
  const t0 = traceArrivedS[0];
  const spanS = traceArrivedS[traceArrivedS.length - 1] - t0;
  const scale =
    arrivals.process === 'trace' && arrivals.timeScale !== undefined
      ? arrivals.timeScale
      : spanS > 0 && rateQps > 0
        ? (traceArrivedS.length - 1) / spanS / rateQps
        : 1;
  const times: number[] = [];
  for (let i = 0; i < traceArrivedS.length && i < maxCount; i++) {
    const at = (traceArrivedS[i] - t0) * scale;
    if (at >= durationS) break;
    times.push(at);
  }
  return times;
}
