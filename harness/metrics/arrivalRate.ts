// The arrival rate a probe's judged requests were sent at. A Poisson probe draws its own rate: over
// n requests its count over its span scatters by about 1/√n (5% at 400), and near the knee the miss
// fraction follows the rate a probe realized, on long probes about as the long-run curve follows
// the planned rate (docs/verdicts.md, "Each probe at the rate it realized"). The capacity's
// interval reads an SLO entry of token gaps there, which takes that scatter out of the curve it
// fits; other entries follow the probe's bursts (capacity/burstRate.ts).
//
// Pure: arrival times in, a rate out.

/**
 * Requests per second over the judged arrivals' span: their count less one over the time from the
 * first to the last; null with fewer than two, or when they all arrive at once. Planned arrival
 * times, not send times: a late send is the client's error, judged on its own.
 */
export function arrivalQpsOver(count: number, firstS: number, lastS: number): number | null {
  return count >= 2 && lastS > firstS ? (count - 1) / (lastS - firstS) : null;
}

/** arrivalQpsOver for judged requests (warm-up left out by the caller), with their planned times. */
export function arrivalQpsOf(judged: readonly { scheduledS: number }[]): number | null {
  let first = Infinity;
  let last = -Infinity;
  for (const r of judged) {
    first = Math.min(first, r.scheduledS);
    last = Math.max(last, r.scheduledS);
  }
  return arrivalQpsOver(judged.length, first, last);
}
