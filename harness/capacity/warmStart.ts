// The real search started from a rehearsal's bracket (the simulated twin's, harness/twin/): the first probes go to the twin's passing and
// failing rates instead of doubling up from search.qps.start, and when the real engine disagrees
// the bracket is widened in steps of 4 × tolerance from there; once a pass and a fail are known,
// capacity/search.ts's own rule (the interval's placement, or the bisection of probes without
// evidence, and every stop rule) takes over unchanged. Pure, stateless
// like nextProbe, so --resume replays it.
import { bracketOf, nextProbe, roundRate, type Bracket, type ProbeVerdict, type SearchBounds, type SearchDecision } from './search.ts';

/** The next probe of a search warm-started from the twin's bracket. */
export function warmNextProbe(bounds: SearchBounds, probes: readonly ProbeVerdict[], twin: Bracket): SearchDecision {
  const decision = nextProbe(bounds, probes);
  // Only the bracketing is the twin's to steer; once a pass and a fail are known the search's own rule goes on.
  if (decision.done || (decision.phase !== 'start' && decision.phase !== 'bracket-up' && decision.phase !== 'bracket-down')) return decision;
  const { minQps, maxQps } = bounds.qps;
  const clamp = (q: number) => roundRate(Math.min(maxQps, Math.max(minQps, q)));
  const step = 1 + 4 * bounds.tolerance;
  const { passQps, failQps } = bracketOf(probes);
  const tried = new Set(probes.filter((p) => p.valid).map((p) => p.qps));
  const probe = (qps: number, phase: 'start' | 'bracket-up' | 'bracket-down'): SearchDecision => ({ done: false, qps, phase, probeIndex: probes.length, bracket: decision.bracket });
  if (passQps === null && failQps === null) {
    const first = twin.passQps ?? twin.failQps;
    return first === null ? decision : probe(clamp(first), 'start');
  }
  if (failQps === null) {
    // Only passes so far: the twin's failing rate next, else a step above the highest pass.
    const next = twin.failQps !== null && twin.failQps > passQps! && !tried.has(clamp(twin.failQps)) ? twin.failQps : passQps! * step;
    return probe(clamp(next), 'bracket-up');
  }
  // Only fails so far: the twin's passing rate next, else a step below the lowest fail.
  const next = twin.passQps !== null && twin.passQps < failQps && !tried.has(clamp(twin.passQps)) ? twin.passQps : failQps / step;
  return probe(clamp(next), 'bracket-down');
}
