// Fluid token generation rate (Metron; SPEC §5): 1 / the smallest TBT deadline D_d at which the
// chosen percentile of requests reaches fluidity >= minFluidity, searched on a 0.1 ms grid.
//
// Bisection is valid because fluidity never decreases as D_d grows: with a larger D_d every token
// is due no earlier, slack (reset only on a miss) is never smaller, so each on-time test that
// passed still passes and each late token spans no more deadlines. On-time count rises and missed
// count falls, hence fluidity = on-time / (on-time + missed) rises, and so does any percentile.
import type { MetricColumns } from './columns.ts';
import { fluidityOfRange, type TieRule } from './fluidity.ts';
import { sortedPercentileFromTop, type PercentileMethod } from './percentile.ts';

/** Grid of the search: D_d = k / STEPS_PER_S seconds (0.1 ms). */
export const FLUID_RATE_STEPS_PER_S = 10_000;

/** The rate, the deadline it corresponds to, and how it was found. */
export interface FluidRateResult {
  tokensPerS: number | null;
  tbtDeadlineS: number | null;
  percentile: number;
  minFluidity: number;
  resolutionS: number;
  search: 'bisection';
  evaluations: number;
  note?: string;
}

/** Options: the fluidity SLO's percentile and minimum (Metron's P99 and 0.9 by default). */
export interface FluidRateOptions {
  percentile?: number;
  minFluidity?: number;
  method?: PercentileMethod;
  /** How a token exactly on its deadline counts (fluidity.ts); default met. */
  tieRule?: TieRule;
}

/** Searches the smallest D_d (0.1 ms grid) whose fluidity percentile reaches minFluidity. */
export function fluidTokenRate(cols: MetricColumns, opts: FluidRateOptions = {}): FluidRateResult {
  const percentile = opts.percentile ?? 99;
  const minFluidity = opts.minFluidity ?? 0.9;
  const method = opts.method ?? 'nearest-rank';
  const base = {
    percentile,
    minFluidity,
    resolutionS: 1 / FLUID_RATE_STEPS_PER_S,
    search: 'bisection' as const,
  };
  if (cols.count === 0) return { ...base, tokensPerS: null, tbtDeadlineS: null, evaluations: 0, note: 'no requests' };

  const fluidity = new Float64Array(cols.count);
  let evaluations = 0;
  const reaches = (k: number): boolean => {
    evaluations += 1;
    const ddS = k / FLUID_RATE_STEPS_PER_S;
    for (let i = 0; i < cols.count; i++) {
      fluidity[i] = cols.succeeded[i]
        ? fluidityOfRange(cols.ttftS[i], cols.tbtSamplesS, cols.tbtStart[i], cols.tbtStart[i + 1], cols.dpS[i], ddS, opts.tieRule)
            .fluidity
        : 0;
    }
    fluidity.sort();
    return sortedPercentileFromTop(fluidity, percentile, method) >= minFluidity;
  };

  // Above every gap and every first-token overrun, no larger D_d changes any request's fluidity:
  // decode tokens are all on time and a late first token costs exactly one miss.
  let maxS = 0;
  for (let i = 0; i < cols.count; i++) {
    if (!cols.succeeded[i]) continue;
    maxS = Math.max(maxS, cols.ttftS[i] - cols.dpS[i]);
    for (let j = cols.tbtStart[i]; j < cols.tbtStart[i + 1]; j++) maxS = Math.max(maxS, cols.tbtSamplesS[j]);
  }
  // A gap past 1.8e304 s would put the grid index at Infinity: cap it at the largest double.
  let hi = Math.min(Math.floor(maxS * FLUID_RATE_STEPS_PER_S) + 1, Number.MAX_VALUE);
  if (!reaches(hi)) {
    return {
      ...base,
      tokensPerS: null,
      tbtDeadlineS: null,
      evaluations,
      note: `no TBT deadline reaches it: too many requests failed or missed their first-token deadline`,
    };
  }
  let lo = 0; // D_d = 0 is not a deadline: treated as failing.
  while (hi - lo > 1) {
    // Past 2^53 neighbouring doubles are more than one grid step apart: once no double lies
    // strictly between lo and hi the midpoint stops moving, and hi is as fine as a double can say.
    const mid = Math.floor(lo / 2 + hi / 2);
    if (mid <= lo || mid >= hi) break;
    if (reaches(mid)) hi = mid;
    else lo = mid;
  }
  const tbtDeadlineS = hi / FLUID_RATE_STEPS_PER_S;
  return { ...base, tokensPerS: 1 / tbtDeadlineS, tbtDeadlineS, evaluations };
}
