// The QPS search as a pure function of the finished probes: given the recipe's search bounds and
// the verdicts so far, say which rate to probe next or that the search is done and why. Holding no
// state of its own is what makes `--resume` trivial: replaying the journal's finished probes
// yields exactly the decision the killed run would have made next.
//
// Strategy: bracket first (probe `start`; double while passing, capped at `max`; halve while
// failing, floored at `min`), then bisect between the highest passing rate below the lowest
// failing rate and that failing rate until (fail − pass) / pass ≤ tolerance or maxProbes probes
// have run. A probe's verdict is a statistical decision (decision.ts): pass, fail, or undecided
// when its cap came before the evidence. An undecided rate is neither: it raises no passing rate
// and lowers no failing one, so the bracket's ends are always decided. It does say the knee is
// near, so the search splits the bracket there: the next rate is the middle of the widest gap
// between the bracket's ends and the undecided rates inside it. Decided ends can never get closer
// than the undecided rates between them; once those span the tolerance, the search only raises
// the decided pass to within the tolerance of the lowest undecided rate, then stops and says so. Invalid probes (the client could not keep up, so the verdict says nothing about the
// server) are neither pass nor fail: the same rate is retried once, and a second invalid result in
// a row stops the search with the reason.

import type { Verdict } from './decision.ts';

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
  /** true only for a decided pass. */
  passed: boolean;
  /** Absent in journals written before decisions existed: passed then says pass or fail. */
  decision?: Verdict;
  /** Confidence of the decision (see decision.ts); absent when not known. */
  confidence?: number | null;
  /** false when the probe's measurement cannot be trusted (client error too large). */
  valid: boolean;
  /** Why it was invalid, quoted when the search stops on it. */
  reason?: string;
}

export type SearchPhase = 'start' | 'bracket-up' | 'bracket-down' | 'bisect' | 'split-undecided' | 'retry-invalid';

/** Why the search ended; each has a sentence in `reason` for the report. */
export type SearchOutcome = 'converged' | 'max-probes' | 'below-min' | 'at-least-max' | 'invalid-probes' | 'undecided';

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
      /** Confidence of the decided pass and fail at the bracket's ends (null: no such end). */
      confidence: { passQps: number | null; failQps: number | null };
      /** Rates between the bracket's ends whose probes ended undecided. */
      undecidedQps: number[];
    };

/** Decides the next probe (or the result) from the bounds and every finished probe, in order. */
export function nextProbe(bounds: SearchBounds, probes: readonly ProbeVerdict[]): SearchDecision {
  const { startQps, minQps, maxQps } = bounds.qps;
  const bracket = bracketOf(probes);
  const { passQps, failQps } = bracket;
  const probeIndex = probes.length;
  const undecided = undecidedRates(probes, bracket);
  const finish = (outcome: SearchOutcome, reason: string): SearchDecision => ({
    done: true,
    capacityQps: passQps ?? 0,
    bracket,
    outcome,
    reason,
    belowMin: outcome === 'below-min',
    atLeastMax: outcome === 'at-least-max',
    probesRun: probes.length,
    confidence: { passQps: endConfidence(probes, passQps, 'pass'), failQps: endConfidence(probes, failQps, 'fail') },
    undecidedQps: undecided.inside,
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
  // A rate already probed and left undecided would only be undecided again.
  const fresh = (qps: number, phase: SearchPhase, why: string): SearchDecision =>
    undecided.all.includes(qps)
      ? finish('undecided', `the probe at ${fmt(qps)} QPS ended undecided and ${why}; the bracket is ${fmtBracket(bracket)}`)
      : probe(qps, phase);
  if (passQps === null && failQps === null && undecided.all.length === 0) return probe(startQps, 'start');
  if (passQps === null) {
    const lowest = Math.min(...(failQps !== null ? [failQps] : []), ...undecided.all);
    return fresh(roundRate(Math.max(lowest / 2, minQps)), 'bracket-down', 'no lower rate is allowed (search.qps.min)');
  }
  if (failQps === null) {
    const highest = Math.max(passQps, ...undecided.all.filter((q) => q > passQps));
    return fresh(roundRate(Math.min(highest * 2, maxQps)), 'bracket-up', 'no higher rate is allowed (search.qps.max)');
  }

  // The widest gap between the bracket's ends and the undecided rates inside it.
  const points = [passQps, ...undecided.inside, failQps];
  let widest = 1;
  for (let i = 2; i < points.length; i++) {
    if ((points[i] - points[i - 1]) / points[i - 1] > (points[widest] - points[widest - 1]) / points[widest - 1]) widest = i;
  }
  const lo = points[widest - 1];
  const hi = points[widest];
  const span = undecided.inside.length > 0 ? (undecided.inside[undecided.inside.length - 1] - undecided.inside[0]) / undecided.inside[0] : 0;
  if (span >= bounds.tolerance) {
    // The bracket cannot close; what is left to learn is how high the decided pass reaches.
    const below = undecided.inside[0];
    if ((below - passQps) / passQps > bounds.tolerance) return bisectOrExact(passQps, below, 'split-undecided');
    return finish(
      'undecided',
      `rates ${undecided.inside.map(fmt).join(', ')} QPS inside the bracket ${fmtBracket(bracket)} ended undecided and span ${pct(span)}, at least the tolerance ${pct(bounds.tolerance)}: ` +
        `no decided pass and fail can get closer than they are, so the probes are too short to decide this close to the knee; ` +
        `the capacity is the highest decided pass, within the tolerance below the lowest undecided rate ` +
        `(raise search.decision.maxExtension, widen search.decision.indifference or the tolerance)`,
    );
  }
  return bisectOrExact(lo, hi, undecided.inside.length > 0 ? 'split-undecided' : 'bisect');

  function bisectOrExact(lo: number, hi: number, phase: SearchPhase): SearchDecision {
    const mid = roundRate((lo + hi) / 2);
    // Rounding can land on an end when the tolerance is finer than the rounding; the exact midpoint
    // is then used (it is strictly inside because the gap is wider than the tolerance).
    return probe(mid > lo && mid < hi ? mid : (lo + hi) / 2, phase);
  }
}

/** The decision of a finished probe (journals from before decisions existed have only passed). */
export function verdictOf(p: ProbeVerdict): Verdict {
  return p.decision ?? (p.passed ? 'pass' : 'fail');
}

// Undecided rates of valid probes: all of them, and those strictly inside the bracket, ascending.
function undecidedRates(probes: readonly ProbeVerdict[], b: Bracket): { all: number[]; inside: number[] } {
  const all = [...new Set(probes.filter((p) => p.valid && verdictOf(p) === 'undecided').map((p) => p.qps))].sort((x, y) => x - y);
  const inside = b.passQps !== null && b.failQps !== null ? all.filter((q) => q > b.passQps! && q < b.failQps!) : [];
  return { all, inside };
}

// The highest confidence among the probes that decided `verdict` at this rate.
function endConfidence(probes: readonly ProbeVerdict[], qps: number | null, verdict: Verdict): number | null {
  if (qps === null) return null;
  let best: number | null = null;
  for (const p of probes) {
    if (p.valid && p.qps === qps && verdictOf(p) === verdict && typeof p.confidence === 'number') best = Math.max(best ?? 0, p.confidence);
  }
  return best;
}

/**
 * The bracket implied by finished probes: the lowest failing rate, and the highest passing rate
 * below it. Assumes the SLO is monotone in rate; when noise gives a pass above a fail, the fail
 * wins (the conservative reading) and the report still lists every probe. Undecided probes count
 * for neither end.
 */
export function bracketOf(probes: readonly ProbeVerdict[]): Bracket {
  let failQps: number | null = null;
  for (const p of probes) if (p.valid && verdictOf(p) === 'fail' && (failQps === null || p.qps < failQps)) failQps = p.qps;
  let passQps: number | null = null;
  for (const p of probes) {
    if (p.valid && verdictOf(p) === 'pass' && (failQps === null || p.qps < failQps) && (passQps === null || p.qps > passQps)) passQps = p.qps;
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
