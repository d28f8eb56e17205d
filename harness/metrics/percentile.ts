// Exact percentiles over every value (no sampling, no histogram buckets), so SLO verdicts near a
// threshold are reproducible. Two methods, and every report names the one it used:
//  - nearest-rank: the smallest value such that at least p% of the values are <= it
//    (rank = ceil(p/100 · n), 1-based; p = 0 gives the minimum). It is always an observed value,
//    and "pN <= max" holds exactly when at most n − ceil(pN/100 · n) values exceed max.
//  - linear: numpy's default (Hyndman–Fan type 7), h = (n − 1)·p/100, interpolated between the
//    two neighbouring order statistics.

export type PercentileMethod = 'nearest-rank' | 'linear';
export const PERCENTILE_METHODS: readonly PercentileMethod[] = ['nearest-rank', 'linear'];

// p·n/100 can land a hair above an integer in floating point (99.9·1000/100); ranks tolerate that.
const RANK_EPSILON = 1e-9;

/** Nearest-rank index (0-based) of percentile p in n sorted values; shared by count-based checks. */
export function nearestRankIndex(n: number, p: number): number {
  const rank = Math.ceil((p * n) / 100 - RANK_EPSILON);
  return Math.min(n - 1, Math.max(0, rank - 1));
}

/**
 * Percentile p (0..100) of a sorted sequence given by its length and an accessor, so a sorted array
 * followed by k virtual +Infinity entries (failed requests) needs no copy. NaN when empty.
 */
export function percentileAt(
  length: number,
  at: (i: number) => number,
  p: number,
  method: PercentileMethod = 'nearest-rank',
): number {
  if (length === 0) return NaN;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  if (method === 'nearest-rank') return at(nearestRankIndex(length, p));
  const h = ((length - 1) * p) / 100;
  const lo = Math.floor(h);
  const hi = Math.min(length - 1, lo + 1);
  const frac = h - lo;
  const a = at(lo);
  const b = at(hi);
  // Infinity stands for a failed request: avoid Infinity·0 and Infinity − Infinity turning into NaN.
  if (frac === 0 || a === b) return a;
  return a + (b - a) * frac;
}

/** Percentile p (0..100) of values already sorted ascending; NaN when there are none. */
export function sortedPercentile(
  sorted: ArrayLike<number>,
  p: number,
  method: PercentileMethod = 'nearest-rank',
): number {
  return percentileAt(sorted.length, (i) => sorted[i], p, method);
}

/** Sorts a copy ascending (numeric, NaN-free input expected); typed arrays sort numerically. */
export function sortedCopy(values: ArrayLike<number>): Float64Array {
  const out = Float64Array.from(values as ArrayLike<number>);
  out.sort();
  return out;
}

/** Percentile p (0..100) of unsorted values, exact; NaN when there are none. */
export function percentile(
  values: ArrayLike<number>,
  p: number,
  method: PercentileMethod = 'nearest-rank',
): number {
  return sortedPercentile(sortedCopy(values), p, method);
}

/** Several percentiles with one sort: `{ 50: x, 90: y, 99: z }`. */
export function percentiles(
  values: ArrayLike<number>,
  ps: readonly number[],
  method: PercentileMethod = 'nearest-rank',
): Record<number, number> {
  const sorted = sortedCopy(values);
  const out: Record<number, number> = {};
  for (const p of ps) out[p] = sortedPercentile(sorted, p, method);
  return out;
}

/**
 * Percentile counted from the top, for "higher is better" values such as fluidity: the value that
 * at least p% of the values reach or exceed. fluidity "p99 >= 0.9" means at least 99% of requests
 * have fluidity >= 0.9, i.e. at most n − ceil(0.99 · n) fall below.
 */
export function sortedPercentileFromTop(
  sorted: ArrayLike<number>,
  p: number,
  method: PercentileMethod = 'nearest-rank',
): number {
  const n = sorted.length;
  if (n === 0) return NaN;
  if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile must be within 0..100, got ${p}`);
  if (method === 'nearest-rank') return sorted[n - 1 - nearestRankIndex(n, p)];
  // Type 7 is symmetric: the p-th from the top is the (100 − p)-th from the bottom.
  return sortedPercentile(sorted, 100 - p, 'linear');
}

/** Unsorted version of sortedPercentileFromTop. */
export function percentileFromTop(
  values: ArrayLike<number>,
  p: number,
  method: PercentileMethod = 'nearest-rank',
): number {
  return sortedPercentileFromTop(sortedCopy(values), p, method);
}

/** Arithmetic mean; NaN when empty. */
export function mean(values: ArrayLike<number>): number {
  if (values.length === 0) return NaN;
  let sum = 0;
  for (let i = 0; i < values.length; i++) sum += values[i];
  return sum / values.length;
}
