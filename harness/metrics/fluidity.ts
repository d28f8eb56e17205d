// The fluidity-index of Metron (Agrawal et al., Algorithm 1; SPEC §5): how many token deadlines a
// request met, where the first token is due D_p after arrival and each later one D_d after the
// previous, and time saved by early tokens (slack) carries forward until a deadline is missed.
import { floorDivide } from './floorDivide.ts';

/**
 * A token that arrives exactly on its deadline (t == D + slack): 'met' as Metron's code and
 * fluidcap count it (the default), or 'missed' as Algorithm 1 of the paper prints it (met iff
 * t < D + slack). Only exact ties differ, so measured timelines almost never tell the two apart;
 * the paper's §4 example (M-S10: tokens every 100 ms against a 100 ms deadline) is all ties.
 */
export type TieRule = 'met' | 'missed';
export const DEFAULT_TIE_RULE: TieRule = 'met';

/** Deadline counts of one request; fluidity = (total − missed) / total, 1 when total is 0. */
export interface FluidityResult {
  fluidity: number;
  total: number;
  missed: number;
}

/**
 * Algorithm 1 over a first inter-token time and a range of later ones, without building an array
 * (the fluid-rate search re-runs it over stored samples). `first` is TTFT; NaN means "no tokens".
 */
export function fluidityOfRange(
  firstS: number,
  restS: ArrayLike<number>,
  start: number,
  end: number,
  dpS: number,
  ddS: number,
  tie: TieRule = DEFAULT_TIE_RULE,
): FluidityResult {
  let slack = 0;
  let missed = 0;
  let total = 0;
  const step = (t: number, d: number) => {
    if (tie === 'met' ? t <= d + slack : t < d + slack) {
      slack += d - t;
      total += 1;
    } else {
      // One late token can span several deadlines; they are all missed, then slack restarts.
      const misses = floorDivide(t - slack - d, ddS) + 1;
      missed += misses;
      total += misses;
      slack = 0;
    }
  };
  if (!Number.isNaN(firstS)) {
    step(firstS, dpS);
    for (let i = start; i < end; i++) step(restS[i], ddS);
  }
  return { fluidity: total === 0 ? 1 : (total - missed) / total, total, missed };
}

/**
 * fluidity-index of inter-token times T = [TTFT, gap1, gap2, ...] (seconds) with the first token
 * due at dpS (predicted prefill + TTFT slack) and later ones every ddS (the TBT deadline).
 */
export function fluidityIndex(interTokenTimesS: readonly number[], dpS: number, ddS: number, tie: TieRule = DEFAULT_TIE_RULE): FluidityResult {
  if (!(ddS > 0)) throw new RangeError(`fluidityIndex: the TBT deadline must be > 0 s, got ${ddS}`);
  if (interTokenTimesS.length === 0) return { fluidity: 1, total: 0, missed: 0 };
  return fluidityOfRange(interTokenTimesS[0], interTokenTimesS, 1, interTokenTimesS.length, dpS, ddS, tie);
}
