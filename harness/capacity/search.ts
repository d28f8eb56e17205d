// The QPS search as a pure function of the finished probes: given the recipe's search bounds and
// the verdicts so far, say which rate to probe next or that the search is done and why. Holding no
// state of its own is what makes `--resume` trivial: replaying the journal's finished probes
// yields exactly the decision the killed run would have made next.
//
// Strategy: bracket first (probe `start`; double while passing, capped at `max`; halve while
// failing, floored at `min`), then bisect between the highest passing rate below the lowest
// failing rate and that failing rate until (fail − pass) / pass ≤ tolerance or maxProbes probes
// have run. Invalid probes (the client could not keep up, so the verdict says nothing about the
// server) are neither pass nor fail: the same rate is retried once, and a second invalid result in
// a row stops the search with the reason.

/** The search bounds as resolved from the recipe (structurally the lead's SearchSection). */
export interface SearchBounds {
  qps: { startQps: number; minQps: number; maxQps: number };
  /** Relative bracket width at which bisection stops (0.025 = 2.5% of the passing rate). */
  tolerance: number;
  /** Upper bound on probes run, invalid ones included (each costs a probe's time). */
  maxProbes: number;
}

/** What the search needs to know about a finished probe (a subset of the journal's event). */
export interface ProbeVerdict {
  qps: number;
  passed: boolean;
  /** false when the probe's measurement cannot be trusted (client error too large). */
  valid: boolean;
  /** Why it was invalid, quoted when the search stops on it. */
  reason?: string;
}

export type SearchPhase = 'start' | 'bracket-up' | 'bracket-down' | 'bisect' | 'retry-invalid';

/** Why the search ended; each has a sentence in `reason` for the report. */
export type SearchOutcome = 'converged' | 'max-probes' | 'below-min' | 'at-least-max' | 'invalid-probes';

/** Highest passing rate (below every failing one) and lowest failing rate seen so far. */
export interface Bracket {
  passQps: number | null;
  failQps: number | null;
}

/** The next step: probe a rate, or report the capacity. */
export type SearchDecision =
  | { done: false; qps: number; phase: SearchPhase; probeIndex: number; bracket: Bracket }
  | {
      done: true;
      /** Highest passing rate below every failing rate; 0 when nothing passed. */
      capacityQps: number;
      bracket: Bracket;
      outcome: SearchOutcome;
      reason: string;
      /** true when the SLO failed even at the minimum rate (capacity is below qps.min). */
      belowMin: boolean;
      /** true when the SLO held at the maximum rate (capacity is at least qps.max). */
      atLeastMax: boolean;
      probesRun: number;
    };

/** Decides the next probe (or the result) from the bounds and every finished probe, in order. */
export function nextProbe(bounds: SearchBounds, probes: readonly ProbeVerdict[]): SearchDecision {
  const { startQps, minQps, maxQps } = bounds.qps;
  const bracket = bracketOf(probes);
  const { passQps, failQps } = bracket;
  const probeIndex = probes.length;
  const finish = (outcome: SearchOutcome, reason: string): SearchDecision => ({
    done: true,
    capacityQps: passQps ?? 0,
    bracket,
    outcome,
    reason,
    belowMin: outcome === 'below-min',
    atLeastMax: outcome === 'at-least-max',
    probesRun: probes.length,
  });

  // Conclusions that hold whatever the probe budget: stated first so a search that converged on
  // its last allowed probe reports "converged", not "max-probes".
  if (failQps !== null && passQps === null && failQps <= minQps) {
    return finish('below-min', `the SLO failed at the minimum rate ${fmt(failQps)} QPS: capacity is below search.qps.min (reported as 0)`);
  }
  if (passQps !== null && failQps === null && passQps >= maxQps) {
    return finish('at-least-max', `the SLO held at the maximum rate ${fmt(passQps)} QPS: capacity is at least search.qps.max; raise it to find the limit`);
  }
  if (passQps !== null && failQps !== null && (failQps - passQps) / passQps <= bounds.tolerance) {
    return finish(
      'converged',
      `bracket ${fmt(passQps)}–${fmt(failQps)} QPS is within the tolerance ${pct(bounds.tolerance)} (${pct((failQps - passQps) / passQps)})`,
    );
  }

  const trailingInvalid = countTrailingInvalid(probes);
  if (trailingInvalid >= 2) {
    const last = probes[probes.length - 1];
    return finish(
      'invalid-probes',
      `the probe at ${fmt(last.qps)} QPS was invalid twice in a row${last.reason ? ` (${last.reason})` : ''}: the client cannot measure this rate, so the search stops at the last valid bracket`,
    );
  }
  if (probes.length >= bounds.maxProbes) {
    const gap = passQps !== null && failQps !== null ? ` (width ${pct((failQps - passQps) / passQps)} > tolerance ${pct(bounds.tolerance)})` : '';
    return finish('max-probes', `search.maxProbes (${bounds.maxProbes}) probes run before the bracket ${fmtBracket(bracket)} narrowed to the tolerance${gap}`);
  }

  const probe = (qps: number, phase: SearchPhase): SearchDecision => ({ done: false, qps, phase, probeIndex, bracket });
  if (trailingInvalid === 1) return probe(probes[probes.length - 1].qps, 'retry-invalid');
  if (passQps === null && failQps === null) return probe(startQps, 'start');
  if (passQps === null) return probe(roundRate(Math.max(failQps! / 2, minQps)), 'bracket-down');
  if (failQps === null) return probe(roundRate(Math.min(passQps * 2, maxQps)), 'bracket-up');

  const mid = roundRate((passQps + failQps) / 2);
  // Rounding can land on an end when the tolerance is finer than the rounding; the exact midpoint
  // is then used (it is strictly inside because the bracket is wider than the tolerance).
  return probe(mid > passQps && mid < failQps ? mid : (passQps + failQps) / 2, 'bisect');
}

/**
 * The bracket implied by finished probes: the lowest failing rate, and the highest passing rate
 * below it. Assumes the SLO is monotone in rate; when noise gives a pass above a fail, the fail
 * wins (the conservative reading) and the report still lists every probe.
 */
export function bracketOf(probes: readonly ProbeVerdict[]): Bracket {
  let failQps: number | null = null;
  for (const p of probes) if (p.valid && !p.passed && (failQps === null || p.qps < failQps)) failQps = p.qps;
  let passQps: number | null = null;
  for (const p of probes) {
    if (p.valid && p.passed && (failQps === null || p.qps < failQps) && (passQps === null || p.qps > passQps)) passQps = p.qps;
  }
  return { passQps, failQps };
}

/** Rates to 6 significant digits: readable directory names (`03-qps-12.5`) without drift. */
export function roundRate(qps: number): number {
  return Number(qps.toPrecision(6));
}

function countTrailingInvalid(probes: readonly ProbeVerdict[]): number {
  let n = 0;
  for (let i = probes.length - 1; i >= 0 && !probes[i].valid; i--) n++;
  return n;
}

const fmt = (q: number) => String(roundRate(q));
const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
const fmtBracket = (b: Bracket) => `[pass ${b.passQps === null ? 'none' : fmt(b.passQps)}, fail ${b.failQps === null ? 'none' : fmt(b.failQps)}]`;
