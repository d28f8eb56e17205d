// The QPS search as a pure function of the finished probes: given the recipe's search bounds and
// the probes so far (their verdicts and the evidence they carry), say which rate to probe next or
// that the search is done and why. Holding no state of its own is what makes `--resume` trivial:
// replaying the journal's finished probes yields exactly the decision the killed run would have
// made next. The rates it picks lie on a grid of at most a tenth of the tolerance (gridRate).
//
// Strategy, in two stages:
//  - Bracket (probe `start`; double while passing, capped at `max`, or quadruple from a pass whose
//    length its request count set when a load budget bounds the search (BUDGET_BRACKET_STEP); halve
//    while failing, floored at `min`) until a probe passes below one that fails. The capacity's
//    interval needs both sides.
//  - Then search for the interval (capacity/interval.ts), not for a bracket. While the probed
//    rates around the estimate are further apart than the tolerance, the next probe goes to the
//    estimate: the curve between them is only interpolated, and a probe there halves the gap
//    whatever its verdict (passing evidence if the knee lies above it, failing if below). Then an
//    open side is closed: above, a step of 2 × tolerance beyond the highest probed rate (within
//    max); below, the highest passing rate again (at a P99 a pass is sure by the number of
//    requests that passed, which a second probe there pools). Then each candidate rate
//    (the estimate, the interval's ends and the points between them, the middle of every gap
//    between probed rates the interval overlaps, the probed rates from just below it to just above
//    it, whose counts a new probe would pool with) is weighed by the interval it would leave if a
//    probe there brought the evidence the fitted curve expects (expectedProbe), and the narrowest
//    wins (ties: the one nearest the estimate). A probe just above the estimate adds failing
//    evidence, one below passing evidence; one near an end also shortens the gap between probed
//    rates whose share (SHAPE_MARGIN) moves that end out.
//    The search stops when the interval lies within ± tolerance of its estimate ('converged'),
//    when its probes have spent the load budget (search.budget, load-seconds: a probe starts only
//    when one as long as the last still fits in it), or after maxProbes probes, and says which.
//    A recipe without a budget also stops, as the bracket search did, once the bracket is within
//    the tolerance ('converged'), so it costs what it did.
// Probes without evidence (journals written before probes kept their counts) give no interval;
// the search then bisects the bracket as before: between the highest passing rate below the
// lowest failing rate and that failing rate until (fail − pass) / pass ≤ tolerance. A probe's
// verdict may be a statistical decision (decision.ts): pass, fail, or undecided when its cap came
// before the evidence. An undecided rate raises no passing rate and lowers no failing one, so the
// bracket's ends are always decided; in the bisection it splits the bracket there, and once the
// undecided rates span the tolerance the search only raises the decided pass to within the
// tolerance of the lowest undecided rate, then stops and says so. Invalid probes (the client could
// not keep up, so the verdict says nothing about the server) are neither pass nor fail: the same
// rate is retried once, and a second invalid result in a row stops the search with the reason.

import type { Verdict } from './decision.ts';
import { capacityInterval, expectedProbe, type CapacityInterval, type ProbeEvidence } from './interval.ts';

/** The search bounds as resolved from the recipe (structurally the lead's SearchSection). */
export interface SearchBounds {
  qps: { startQps: number; minQps: number; maxQps: number };
  /** Relative bracket width at which bisection stops (0.025 = 2.5% of the passing rate). */
  tolerance: number;
  /** Upper bound on probes run, invalid ones included (each costs a probe's time). */
  maxProbes: number;
  /** Load-seconds the search may spend, invalid probes included: a probe starts only when one as
   *  long as the last still fits in it (null or absent: only maxProbes bounds the search). */
  budgetS?: number | null;
  /** What sets a probe's length (the recipe's search.probe): its request count or its minimum
   *  duration, whichever is longer at its rate. Absent in plans written before it: the bracket doubles. */
  probeLength?: { requests: number; minDurationS: number };
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
  /** What its requests showed (the interval's input) and the load it spent; absent in journals
   *  written before probes kept their counts, which the search then brackets on alone. */
  evidence?: ProbeEvidence;
}

export type SearchPhase = 'start' | 'bracket-up' | 'bracket-down' | 'bisect' | 'split-undecided' | 'retry-invalid' | 'narrow-interval' | 'close-interval';

/** Why the search ended; each has a sentence in `reason` for the report. */
export type SearchOutcome = 'converged' | 'budget' | 'max-probes' | 'below-min' | 'at-least-max' | 'invalid-probes' | 'undecided';

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
      /** The interval the stop was judged on (null: no probe carried evidence). */
      interval: CapacityInterval | null;
      /** Load-seconds the probes spent, invalid ones included. */
      loadS: number;
    };

/** Decides the next probe (or the result) from the bounds and every finished probe, in order. */
export function nextProbe(bounds: SearchBounds, probes: readonly ProbeVerdict[]): SearchDecision {
  const { startQps, minQps, maxQps } = bounds.qps;
  const bracket = bracketOf(probes);
  const { passQps, failQps } = bracket;
  const probeIndex = probes.length;
  const undecided = undecidedRates(probes, bracket);
  const evidence = evidenceOf(probes);
  const loadS = probes.reduce((t, p) => t + (p.evidence?.durationS ?? 0), 0);
  const interval = evidence.length > 0 ? capacityInterval(evidence) : null;
  // The interval steers the search once both sides are probed; before, or without evidence, the bracket does.
  const steering = passQps !== null && failQps !== null && interval !== null ? interval : null;
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
    interval,
    loadS,
  });

  // Conclusions that hold whatever the probe budget: stated first so a search that converged on
  // its last allowed probe reports "converged", not "max-probes".
  if (failQps !== null && passQps === null && failQps <= minQps) {
    return finish('below-min', `the SLO failed at the minimum rate ${fmt(failQps)} QPS: capacity is below search.qps.min (reported as 0)`);
  }
  if (passQps !== null && failQps === null && passQps >= maxQps) {
    return finish('at-least-max', `the SLO held at the maximum rate ${fmt(passQps)} QPS: capacity is at least search.qps.max; raise it to find the limit`);
  }
  if (steering !== null && halfWidth(steering) <= bounds.tolerance) {
    return finish('converged', `the 95% interval ${fmtInterval(steering)} QPS is within the tolerance ±${pct(bounds.tolerance)} of the estimate ${fmtQ3(steering.estimateQps!)} QPS (±${pct(halfWidth(steering))})`);
  }
  // Without a load budget the search stops where the bracket search stopped, so a recipe that sets
  // none costs what it did; with one, a narrow bracket of two chance verdicts is no reason to stop.
  if ((steering === null || bounds.budgetS == null) && passQps !== null && failQps !== null && (failQps - passQps) / passQps <= bounds.tolerance) {
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
  const unfinished = steering !== null ? `the 95% interval ${fmtInterval(steering)} QPS${steering.open === 'none' ? ` (±${pct(halfWidth(steering))})` : ''} is wider than the tolerance ±${pct(bounds.tolerance)}`
    : passQps !== null && failQps !== null ? `the bracket ${fmtBracket(bracket)} is wider than the tolerance ${pct(bounds.tolerance)} (${pct((failQps - passQps) / passQps)})`
    : `the bracket ${fmtBracket(bracket)} is not closed`;
  // The budget bounds the load: a probe starts only when one as long as the last fits in what is left.
  const nextS = probes.at(-1)?.evidence?.durationS ?? 0;
  if (bounds.budgetS != null && probes.length > 0 && loadS + nextS > bounds.budgetS) {
    return finish('budget', `the load budget search.budget (${fmtS(bounds.budgetS)}) is spent: ${fmtS(loadS)} of load in ${probes.length} probes, and another as long as the last (${fmtS(nextS)}) would exceed it; ${unfinished}`);
  }
  if (probes.length >= bounds.maxProbes) {
    return finish('max-probes', `search.maxProbes (${bounds.maxProbes}) probes run (${fmtS(loadS)} of load) and ${unfinished}`);
  }

  const probe = (qps: number, phase: SearchPhase): SearchDecision => ({ done: false, qps, phase, probeIndex, bracket });
  if (trailingInvalid === 1) return probe(probes[probes.length - 1].qps, 'retry-invalid');
  if (steering !== null) {
    const next = placeProbe(bounds, evidence, steering, bracket);
    return probe(next.qps, next.phase);
  }
  // A rate already probed and left undecided would only be undecided again.
  const fresh = (qps: number, phase: SearchPhase, why: string): SearchDecision =>
    undecided.all.includes(qps)
      ? finish('undecided', `the probe at ${fmt(qps)} QPS ended undecided and ${why}; the bracket is ${fmtBracket(bracket)}`)
      : probe(qps, phase);
  if (passQps === null && failQps === null && undecided.all.length === 0) return probe(startQps, 'start');
  if (passQps === null) {
    const lowest = Math.min(...(failQps !== null ? [failQps] : []), ...undecided.all);
    return fresh(gridRate(lowest / 2, bounds.tolerance, minQps, maxQps), 'bracket-down', 'no lower rate is allowed (search.qps.min)');
  }
  if (failQps === null) {
    const highest = Math.max(passQps, ...undecided.all.filter((q) => q > passQps));
    const up = bracketStep(bounds, highest);
    return fresh(gridRate(highest * up, bounds.tolerance, minQps, maxQps), 'bracket-up', 'no higher rate is allowed (search.qps.max)');
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
    const mid = gridRate((lo + hi) / 2, bounds.tolerance, minQps, maxQps);
    // The grid is a tenth of the tolerance and the gap wider than the tolerance, so the midpoint
    // stays strictly inside; the exact midpoint guards a bound off the grid.
    return probe(mid > lo && mid < hi ? mid : (lo + hi) / 2, phase);
  }
}

/**
 * The factor the bracket rises by from a pass whose length its request count set (the recipe's
 * requests take longer to arrive than its minDuration), when a load budget bounds the search. Such
 * a probe lasts longer the lower its rate (Sarathi's 300 requests: 300 s at 1 QPS, 150 s at 2),
 * while a probe above the knee stops early once it surely fails, so overshooting the knee costs
 * less than creeping up to it, and the wider bracket it leaves is narrowed by probes near the knee,
 * whose evidence the interval keeps. Doubling up from 1 QPS spent two thirds of Sarathi's 15-min
 * budget before its first fail; stepping by four, 80 searches held the long-run capacity in 77
 * (from 75), none open (from 14), and erred 3.40% (from 3.60%; mean −0.3% from −2.7%)
 * (docs/verdicts.md, "Bracketing up by four"). Where minDuration sets the length (the quickstart's
 * 15 s at every rate of its bracket) a higher rate costs no less and its pass holds more requests,
 * so the bracket doubles: stepping by four there left 7 of 80 quickstart intervals without a floor.
 */
export const BUDGET_BRACKET_STEP = 4;

/** The factor the bracket rises by from a pass at `qps` (see BUDGET_BRACKET_STEP). */
export function bracketStep(bounds: Pick<SearchBounds, 'budgetS' | 'probeLength'>, qps: number): number {
  const length = bounds.probeLength;
  return bounds.budgetS != null && length !== undefined && length.requests > qps * length.minDurationS ? BUDGET_BRACKET_STEP : 2;
}

/** Draws the search weighs each candidate rate with: fewer than the interval's own, same seed. */
const CANDIDATE_DRAWS = 500;

/**
 * Where the next probe narrows the interval most (see the header): the estimate while the probed
 * rates around it are far apart, then an open side, then the candidate whose expected evidence
 * leaves the narrowest interval. Always within [min, max].
 */
export function placeProbe(bounds: SearchBounds, evidence: readonly ProbeEvidence[], interval: CapacityInterval, bracket: Bracket): { qps: number; phase: SearchPhase } {
  const { minQps, maxQps } = bounds.qps;
  const clamp = (q: number) => gridRate(q, bounds.tolerance, minQps, maxQps);
  const probed = [...new Set(evidence.map((p) => p.qps))].sort((a, b) => a - b);
  // Between the probed rates around the estimate the curve is interpolated, not seen: while they are
  // further apart than the tolerance, the estimate itself is probed (a bisection that follows the
  // fitted curve), which halves that gap whatever the verdict and brings the next estimate closer.
  // Without an estimate (the fit crosses outside the probed rates) the bracket's middle stands in.
  const est = interval.estimateQps ?? (bracket.passQps !== null && bracket.failQps !== null ? (bracket.passQps + bracket.failQps) / 2 : null);
  if (est !== null) {
    const a = probed.filter((q) => q <= est).at(-1);
    const b = probed.find((q) => q > est);
    if (a !== undefined && b !== undefined && (b - a) / a > bounds.tolerance) {
      const at = clamp(est);
      return { qps: at > a && at < b ? at : clamp((a + b) / 2), phase: 'narrow-interval' };
    }
  }
  // An open side next. Above: nothing fails surely, and a higher rate fails more surely (a step of
  // 2 × tolerance above the highest probed rate). Below: nothing passes surely, which at a P99 is
  // a matter of how many requests passed, not of how low: the highest passing rate again, whose
  // counts the new probe's pool with.
  const step = 1 + 2 * bounds.tolerance;
  if (interval.open === 'hi' || interval.open === 'both' || interval.estimateQps === null) return { qps: clamp(probed.at(-1)! * step), phase: 'close-interval' };
  if (interval.open === 'lo') return { qps: clamp(bracket.passQps ?? probed[0] / step), phase: 'close-interval' };
  const lo = interval.loQps!;
  const hi = interval.hiQps!;
  const center = interval.estimateQps;
  const candidates = new Set<number>([center, (lo + center) / 2, (center + hi) / 2, lo, hi].map(clamp));
  for (let i = 1; i < probed.length; i++) if (probed[i] > lo && probed[i - 1] < hi) candidates.add(clamp((probed[i - 1] + probed[i]) / 2));
  // A rate probed again pools its counts with the earlier probe's (a narrower posterior there).
  const below = probed.filter((q) => q <= lo).at(-1);
  const above = probed.find((q) => q >= hi);
  for (const q of probed) if (q >= (below ?? lo) && q <= (above ?? hi)) candidates.add(q);
  let best: { qps: number; width: number } | null = null;
  for (const qps of [...candidates].sort((a, b) => a - b)) {
    const after = capacityInterval([...evidence, expectedProbe(evidence, qps)], { draws: CANDIDATE_DRAWS });
    const width = after.loQps !== null && after.hiQps !== null ? after.hiQps - after.loQps : Infinity;
    const better = best === null || width < best.width - 1e-9 || (Math.abs(width - best.width) <= 1e-9 && Math.abs(qps - center) < Math.abs(best.qps - center));
    if (better) best = { qps, width };
  }
  return { qps: best!.qps, phase: 'narrow-interval' };
}

/** The interval's input: every valid probe that carried evidence. */
export function evidenceOf(probes: readonly ProbeVerdict[]): ProbeEvidence[] {
  return probes.filter((p) => p.valid && p.evidence !== undefined && p.evidence.parts.length > 0).map((p) => p.evidence!);
}

/** How far the interval reaches from its estimate, relative to it (Infinity when open). */
export function halfWidth(iv: Pick<CapacityInterval, 'estimateQps' | 'loQps' | 'hiQps' | 'open'>): number {
  if (iv.open !== 'none' || iv.estimateQps === null || iv.loQps === null || iv.hiQps === null || iv.estimateQps <= 0) return Infinity;
  return Math.max(iv.estimateQps - iv.loQps, iv.hiQps - iv.estimateQps) / iv.estimateQps;
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

/**
 * The grid the search picks its rates on: within each decade of rates, the largest 1, 2 or 5 ×
 * 10^k step no coarser than a tenth of the tolerance at the decade's foot (so at most a tenth of it
 * at any rate in the decade). Bisection midpoints and fitted estimates are otherwise arbitrary reals
 * ("52.0063 QPS") that nobody types or compares; on this grid they read as a person would pick them
 * (52, 40.85), while moving a rate by at most a twentieth of the tolerance, far below what a probe
 * can tell apart. One step per decade makes it a grid (a rate on it maps to itself: a power of ten
 * is on every finer step), and it depends only on the rate and the recipe's tolerance, so a resumed
 * search picks the same rates. Kept within [min, max]: a bound off the grid is used as given.
 */
export function gridRate(qps: number, tolerance: number, minQps = 0, maxQps = Infinity): number {
  const q = Math.min(maxQps, Math.max(minQps, qps));
  if (!(q > 0) || !Number.isFinite(q) || !(tolerance > 0)) return roundRate(q);
  const finest = (10 ** Math.floor(Math.log10(q) + 1e-12) * tolerance) / 10;
  const unit = 10 ** Math.floor(Math.log10(finest));
  const step = [5, 2, 1].map((m) => m * unit).find((s) => s <= finest * (1 + 1e-9)) ?? unit;
  const snapped = Number((Math.round(q / step) * step).toPrecision(12));
  return snapped < minQps ? minQps : snapped > maxQps ? maxQps : snapped;
}

function countTrailingInvalid(probes: readonly ProbeVerdict[]): number {
  let n = 0;
  for (let i = probes.length - 1; i >= 0 && !probes[i].valid; i--) n++;
  return n;
}

const fmt = (q: number) => String(roundRate(q));
const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
const fmtS = (s: number) => `${+s.toPrecision(4)} s`;
const fmtInterval = (iv: CapacityInterval) => `${iv.loQps === null ? 'open' : fmtQ3(iv.loQps)}–${iv.hiQps === null ? 'open' : fmtQ3(iv.hiQps)}`;
const fmtQ3 = (q: number) => String(+q.toPrecision(3));
const fmtBracket = (b: Bracket) => `[pass ${b.passQps === null ? 'none' : fmt(b.passQps)}, fail ${b.failQps === null ? 'none' : fmt(b.failQps)}]`;
