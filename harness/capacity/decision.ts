// A probe's verdict as a statistical decision. Under a percentile SLO every evaluated request (or
// token gap, for TBT) meets or misses its target, and "P99 fluidity >= 0.9" is the claim "the
// miss fraction at this rate is at most 1%". A sample of a few hundred requests cannot tell 0.9%
// from 1.1%, so counting misses against a nearest-rank budget decides near the knee by chance.
// Instead: Wald's sequential probability ratio test between the two ends of an indifference zone
// around the allowed fraction p0, pL = p0 − δ·min(p0, 1 − p0) and pU = p0 + δ·min(p0, 1 − p0).
// A rate whose miss fraction is at least pU is called a pass with probability at most alpha; one
// at most pL is called a fail with probability at most beta; inside the zone either answer is
// acceptable and the test may stay undecided until the probe's cap. The thresholds come from
// Ville's inequality (the likelihood ratio is a martingale under the hypothesis it would wrongly
// reject), so the error bounds hold however often the test is looked at and however long the
// probe is extended, and the confidence reported is 1 − that bound at the decision.
//
// Requests of one probe are not independent: a burst of arrivals or one long prompt makes several
// consecutive requests miss together, which an independent test reads as several pieces of
// evidence. The log likelihood ratio is therefore divided by the integrated autocorrelation time
// τ of the miss indicator (in arrival order), estimated with overlapping batch means: τ ≈
// b · Var(means of b consecutive indicators) / (p̂(1 − p̂)), at least 1. Dividing by τ counts a
// cluster of τ correlated misses as the evidence of one.
//
// Token gaps come in requests, and the series holds each request's gaps in turn. A prefill that
// stalls the batch makes every request decoding beside it miss one gap at once: those misses lie a
// whole request's gaps apart in the series, farther than a batch of √k gaps reaches, so the
// indicator's own τ misses them (on the 70B's TBT it read 1.2 where probes scattered 2.8 times a
// binomial's variance: docs/verdicts.md). Given the requests' ends, τ is also at least the design
// effect of the requests as clusters: their miss counts summed over batches of ⌊√R⌋ consecutive
// requests, which run side by side.
//
// Pure: arrays in, numbers out.

/** The recipe's `search.decision` as resolved. */
export interface DecisionParams {
  /** Largest probability of a pass at a rate whose miss fraction is at the zone's upper end pU. */
  alpha: number;
  /** Largest probability of a fail at a rate whose miss fraction is at the zone's lower end pL. */
  beta: number;
  /** Half-width of the indifference zone, relative to min(p0, 1 − p0): 0.5 puts P99's at 0.5%–1.5%. */
  indifference: number;
  /** A probe that is still undecided after its planned requests grows up to this many times them. */
  maxExtension: number;
}

export const DEFAULT_DECISION: DecisionParams = { alpha: 0.05, beta: 0.05, indifference: 0.5, maxExtension: 4 };

export type Verdict = 'pass' | 'fail' | 'undecided';

/** The outcome of the test on one sequence of miss indicators. */
export interface FractionDecision {
  decision: Verdict;
  /**
   * For pass or fail, 1 − the Ville bound on having decided wrongly (≥ 1 − alpha or 1 − beta).
   * Undecided: the same figure for the side the evidence leans to (below the threshold).
   */
  confidence: number;
  /** Which side the evidence favours (= decision when decided). */
  leaning: 'pass' | 'fail';
  /** Observations used: up to the decision when decided sequentially, else all of them. */
  observed: number;
  misses: number;
  /** The allowed miss fraction p0 and the zone [pL, pU] around it. */
  allowedFraction: number;
  zone: [number, number];
  /** Integrated autocorrelation time the evidence was divided by (1 = independent). */
  tau: number;
  /** Log likelihood ratio of pU against pL, after dividing by tau. */
  llr: number;
}

export interface DecideOptions {
  /** A pass needs at least this many observations (a probe's planned minimum); fails need none. */
  passFrom?: number;
  /**
   * sequential (default): the first point at which the test crossed a threshold, as when a probe
   * stops there; whole: one test on the whole sequence (an archived run re-judged).
   */
  mode?: 'sequential' | 'whole';
  /** Sequential mode: the first this-many observations are known not to cross (resumes a scan). */
  startAt?: number;
  /** false: treat observations as independent (tau = 1). */
  dependence?: boolean;
  /**
   * Near misses, same length as the indicators: observations within a margin of missing (e.g. a
   * request that missed any token deadline, or a latency above half its limit). Their
   * autocorrelation time is a floor for tau: misses are rare, so a stretch without any says
   * nothing about how they cluster, while near misses come from the same queue excursions and
   * are common enough to measure once the rate is close to the knee.
   */
  nearMisses?: ArrayLike<number>;
  /**
   * The series' length after each cluster of observations (a request's token gaps), ascending:
   * τ is then at least the clusters' design effect (clusterTime). Without it, every observation is
   * its own cluster.
   */
  clusterEnds?: readonly number[];
}

/** Allowed miss fraction of a percentile SLO: P99 allows 1%. */
export function allowedMissFraction(percentile: number): number {
  return Math.max(0, Math.min(1, 1 - percentile / 100));
}

/** The indifference zone [pL, pU] around p0. */
export function indifferenceZone(p0: number, indifference: number): [number, number] {
  const half = indifference * Math.min(p0, 1 - p0);
  return [p0 - half, p0 + half];
}

/** Decides whether the miss fraction behind `misses` (1 = miss, 0 = met, in arrival order) is ≤ p0. */
export function decideFraction(misses: ArrayLike<number>, p0: number, params: DecisionParams, options: DecideOptions = {}): FractionDecision {
  const n = misses.length;
  const passFrom = options.passFrom ?? 0;
  const zone = indifferenceZone(p0, params.indifference);
  const [pL, pU] = zone;
  const base = { allowedFraction: p0, zone };

  // Prefix sums make each batch-means estimate O(n) and the running count O(1).
  const prefix = prefixOf(misses);

  if (!(pL > 0) || !(pU < 1)) return degenerate(prefix, n, p0, passFrom, base);

  const missStep = Math.log(pU / pL);
  const metStep = Math.log((1 - pU) / (1 - pL));
  const failAt = Math.log(1 / params.beta);
  const passAt = Math.log(params.alpha);
  const near = options.dependence !== false && options.nearMisses ? prefixOf(options.nearMisses) : null;
  const clusters = options.dependence !== false && options.clusterEnds && options.clusterEnds.length > 0 ? options.clusterEnds : null;
  // τ costs O(k): it is estimated on a grid of k about 1.5% apart and reused in between, so a
  // sequential scan over a long series (TBT's token gaps) stays near-linear.
  const tauMemo = new Map<number, number>();
  const tauAt = (k: number) => {
    if (options.dependence === false) return 1;
    const step = 2 ** Math.max(0, Math.floor(Math.log2(k)) - 6);
    const g = k - (k % step);
    let tau = tauMemo.get(g);
    if (tau === undefined) {
      tau = Math.max(autocorrelationTime(prefix, g), near ? autocorrelationTime(near, g) : 1, clusters ? clusterTime(prefix, clusters, g) : 1);
      tauMemo.set(g, tau);
    }
    return tau;
  };
  // While scanning, τ is estimated only where the raw ratio could cross; the answer returned
  // (`last`) always carries it: an undecided probe's counts are what the capacity's interval
  // weighs, and its leaning's confidence is no surer than its clusters allow.
  const judge = (k: number, last = false): FractionDecision => {
    const m = prefix[k];
    const raw = m * missStep + (k - m) * metStep;
    const tau = last || raw >= failAt || raw <= passAt ? tauAt(k) : 1;
    const llr = raw / tau;
    const leaning = llr > 0 ? 'fail' : 'pass';
    const confidence = 1 - Math.exp(-Math.abs(llr));
    let decision: Verdict = 'undecided';
    if (llr >= failAt) decision = 'fail';
    else if (llr <= passAt && k >= passFrom) decision = 'pass';
    return { decision, confidence, leaning, observed: k, misses: m, tau, llr, ...base };
  };

  if (options.mode === 'whole') return judge(n, true);
  // |llr| ≤ |raw| because tau ≥ 1: tau is only estimated where the raw ratio could cross.
  for (let k = Math.max(1, Math.min(n, options.startAt ?? 0)); k <= n; k++) {
    const d = judge(k);
    if (d.decision !== 'undecided') return d;
  }
  return judge(n, true);
}

// p0 = 0 (P100) or 1: no zone can be put around it. One miss fails P100 for certain; a pass is
// only what the sample shows (confidence 0: nothing bounds the miss fraction of the rate).
function degenerate(prefix: Float64Array, n: number, p0: number, passFrom: number, base: { allowedFraction: number; zone: [number, number] }): FractionDecision {
  const firstMiss = p0 < 1 ? firstIndexAbove(prefix, n, 0) : -1;
  if (firstMiss >= 0) return { decision: 'fail', confidence: 1, leaning: 'fail', observed: firstMiss + 1, misses: 1, tau: 1, llr: Infinity, ...base };
  const decision: Verdict = n >= passFrom && n > 0 ? 'pass' : 'undecided';
  return { decision, confidence: p0 >= 1 ? 1 : 0, leaning: 'pass', observed: n, misses: prefix[n], tau: 1, llr: -Infinity, ...base };
}

function firstIndexAbove(prefix: Float64Array, n: number, count: number): number {
  for (let i = 0; i < n; i++) if (prefix[i + 1] > count) return i;
  return -1;
}

/**
 * Integrated autocorrelation time of the first k indicators by overlapping batch means with
 * batches of b = ⌊√k⌋: τ = b · Var(batch means) / (p̂(1 − p̂)), clamped to [1, b]. 1 when there
 * are too few observations or misses to estimate it (fewer than 4 batches, no miss or no met).
 */
export function autocorrelationTime(prefix: Float64Array, k: number): number {
  const b = Math.floor(Math.sqrt(k));
  if (b < 2 || k < 4 * b) return 1;
  const p = prefix[k] / k;
  if (p <= 0 || p >= 1) return 1;
  let sumSq = 0;
  const windows = k - b + 1;
  for (let j = 0; j + b <= k; j++) {
    const d = (prefix[j + b] - prefix[j]) / b - p;
    sumSq += d * d;
  }
  // Overlapping-batch-means variance of a batch mean (Meketon & Schmeiser's bias correction).
  const varMean = (sumSq / windows) * (k / (k - b));
  const tau = (b * varMean) / (p * (1 - p));
  return Math.min(b, Math.max(1, tau));
}

/**
 * The design effect of the clusters that end within the first k indicators (`ends`: the series'
 * length after each cluster, ascending): the variance of their misses' total, estimated from
 * overlapping batches of B = ⌊√R⌋ consecutive clusters (R of them), over a binomial's p̂(1 − p̂)·n.
 * Each batch sums the clusters' misses less p̂ times their observations, so clusters of unequal size
 * weigh by what they hold. Clamped to [1, a batch's mean observations]; 1 when there is no miss or
 * no met. Fewer than 16 clusters (4 batches) cannot show how independent they are, so until then
 * each cluster, the one still filling included, counts as one observation: a request whose own
 * gaps miss a few times in a row is not yet evidence about the rate.
 */
export function clusterTime(prefix: Float64Array, ends: readonly number[], k: number): number {
  let r = 0;
  for (let hi = ends.length; r < hi; ) {
    const mid = (r + hi) >> 1;
    if (ends[mid] <= k) r = mid + 1;
    else hi = mid;
  }
  const b = Math.floor(Math.sqrt(r));
  if (r < 16) {
    const touched = r + (k > (r > 0 ? ends[r - 1] : 0) ? 1 : 0);
    return Math.max(1, k / Math.max(1, touched));
  }
  const n = ends[r - 1];
  const p = prefix[n] / n;
  if (!(n > 0) || p <= 0 || p >= 1) return 1;
  // Residual at cluster c's end: its misses so far less p̂ times its observations so far.
  const residual = (c: number) => (c === 0 ? 0 : prefix[ends[c - 1]] - p * ends[c - 1]);
  let sumSq = 0;
  const windows = r - b + 1;
  for (let j = 0; j + b <= r; j++) sumSq += (residual(j + b) - residual(j)) ** 2;
  const varTotal = (sumSq / windows) * (r / b) * (r / (r - b));
  const tau = varTotal / (p * (1 - p) * n);
  return Math.min((n * b) / r, Math.max(1, tau));
}

function prefixOf(indicators: ArrayLike<number>): Float64Array {
  const prefix = new Float64Array(indicators.length + 1);
  for (let i = 0; i < indicators.length; i++) prefix[i + 1] = prefix[i] + (indicators[i] ? 1 : 0);
  return prefix;
}

/** Several SLOs judged together: fail when any fails, pass when all pass, else undecided. */
export function combineDecisions(parts: readonly FractionDecision[]): { decision: Verdict; confidence: number } {
  if (parts.length === 0) return { decision: 'undecided', confidence: 0 };
  const fails = parts.filter((p) => p.decision === 'fail');
  if (fails.length > 0) return { decision: 'fail', confidence: Math.max(...fails.map((p) => p.confidence)) };
  // A pass of all is wrong when any part is: the union bound sums their error bounds.
  const errorSum = parts.reduce((s, p) => s + (1 - p.confidence), 0);
  if (parts.every((p) => p.decision === 'pass')) return { decision: 'pass', confidence: Math.max(0, 1 - errorSum) };
  return { decision: 'undecided', confidence: Math.min(...parts.filter((p) => p.decision !== 'pass').map((p) => p.confidence)) };
}

/** One line for logs and reports: "pass (97.1% confidence: 3 misses in 640 requests, allowed 1%)". */
export function describeDecision(d: FractionDecision, unit = 'requests'): string {
  const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
  const zone = `indifference zone ${pct(d.zone[0])}–${pct(d.zone[1])}`;
  const tau = d.tau > 1.0001 ? `, clustering τ ${d.tau.toFixed(2)}` : '';
  const head = d.decision === 'undecided' ? `undecided (leaning ${d.leaning}, ${pct(d.confidence)} confidence)` : `${d.decision} (${pct(d.confidence)} confidence)`;
  return `${head}: ${d.misses} misses in ${d.observed} ${unit} (${pct(d.observed ? d.misses / d.observed : 0)}; allowed ${pct(d.allowedFraction)}, ${zone}${tau})`;
}
