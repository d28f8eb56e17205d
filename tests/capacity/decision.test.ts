// The sequential decision on a miss fraction: its error rates on seeded Bernoulli and
// autocorrelated sequences stay within the configured alpha and beta, it stops early in both
// directions, and ignoring dependence would break those rates (so the correction is needed).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  allowedMissFraction,
  autocorrelationTime,
  clusterTime,
  combineDecisions,
  decideFraction,
  DEFAULT_DECISION,
  describeDecision,
  indifferenceZone,
  type DecideOptions,
  type Verdict,
} from '../../harness/capacity/decision.ts';
import { createRng } from '../../harness/util/rng.ts';

const P0 = 0.01; // P99
const [PL, PU] = indifferenceZone(P0, DEFAULT_DECISION.indifference);
const CAP = 2400;

function bernoulli(seed: number, p: number, n = CAP): Uint8Array {
  const rng = createRng(seed);
  return Uint8Array.from({ length: n }, () => (rng.next() < p ? 1 : 0));
}

// Misses as exceedances of a latent AR(1) process (a queue's memory): misses cluster. Near misses
// are the exceedances of a lower level (10% of observations), which the decision may use to
// estimate the clustering before misses are common (they must be common enough to measure it).
function clustered(seed: number, p: number, rho: number, n = CAP): { misses: Uint8Array; nearMisses: Uint8Array } {
  const rng = createRng(seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - rng.next())) * Math.cos(2 * Math.PI * rng.next());
  const q = upperNormalQuantile(p);
  const score = new Float64Array(n);
  let z = normal();
  for (let i = 0; i < n; i++) {
    z = rho * z + Math.sqrt(1 - rho * rho) * normal();
    score[i] = z;
  }
  const qNear = upperNormalQuantile(0.1);
  return { misses: Uint8Array.from(score, (v) => (v > q ? 1 : 0)), nearMisses: Uint8Array.from(score, (v) => (v > Math.min(q, qNear) ? 1 : 0)) };
}

function upperNormalQuantile(p: number): number {
  // Abramowitz–Stegun 26.2.17 for the upper tail, inverted by bisection.
  const tail = (x: number) => {
    const t = 1 / (1 + 0.2316419 * x);
    const d = Math.exp((-x * x) / 2) / Math.sqrt(2 * Math.PI);
    return d * t * (0.31938153 + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
  };
  let lo = 0;
  let hi = 8;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (tail(mid) > p) lo = mid;
    else hi = mid;
  }
  return lo;
}

function tally(trials: number, make: (seed: number) => { misses: ArrayLike<number>; options?: DecideOptions }): Record<Verdict, number> {
  const out: Record<Verdict, number> = { pass: 0, fail: 0, undecided: 0 };
  for (let seed = 1; seed <= trials; seed++) {
    const { misses, options } = make(seed);
    out[decideFraction(misses, P0, DEFAULT_DECISION, { passFrom: 300, ...options }).decision] += 1;
  }
  return out;
}

test('P99 allows a 1% miss fraction; the zone is 0.5%–1.5% at the default indifference', () => {
  assert.ok(Math.abs(allowedMissFraction(99) - 0.01) < 1e-12);
  assert.ok(Math.abs(PL - 0.005) < 1e-12 && Math.abs(PU - 0.015) < 1e-12, `${PL} ${PU}`);
});

test('independent requests: wrong passes at pU and wrong fails at pL stay within alpha and beta', () => {
  const trials = 400;
  const atUpper = tally(trials, (s) => ({ misses: bernoulli(s, PU) }));
  const atLower = tally(trials, (s) => ({ misses: bernoulli(1000 + s, PL) }));
  // Binomial slack: 400 trials at a true 5% exceed 7.5% with probability < 1%.
  assert.ok(atUpper.pass / trials <= 0.075, `passes at pU: ${JSON.stringify(atUpper)}`);
  assert.ok(atLower.fail / trials <= 0.075, `fails at pL: ${JSON.stringify(atLower)}`);
  // And they are decided mostly the right way, not just left undecided.
  assert.ok(atUpper.fail / trials >= 0.8, JSON.stringify(atUpper));
  assert.ok(atLower.pass / trials >= 0.8, JSON.stringify(atLower));
});

test('stops early both ways far from the threshold', () => {
  const clean = decideFraction(new Uint8Array(CAP), P0, DEFAULT_DECISION, { passFrom: 100 });
  assert.is(clean.decision, 'pass');
  // Zero misses still need ln(1/alpha) / −ln((1 − pU)/(1 − pL)) ≈ 297 requests of evidence.
  assert.ok(clean.observed >= 290 && clean.observed <= 310, `observed ${clean.observed}`);
  assert.ok(clean.confidence >= 0.95);
  const bad = decideFraction(bernoulli(5, 0.1), P0, DEFAULT_DECISION, { passFrom: 600 });
  assert.is(bad.decision, 'fail');
  assert.ok(bad.observed < 150, `observed ${bad.observed}`);
  assert.ok(bad.confidence >= 0.95);
});

test('a pass waits for passFrom; a fail does not', () => {
  const d = decideFraction(new Uint8Array(CAP), P0, DEFAULT_DECISION, { passFrom: 1000 });
  assert.is(d.decision, 'pass');
  assert.is(d.observed, 1000);
  const short = decideFraction(new Uint8Array(500), P0, DEFAULT_DECISION, { passFrom: 1000 });
  assert.is(short.decision, 'undecided');
  assert.is(short.leaning, 'pass');
  const early = new Uint8Array(CAP);
  early.fill(1, 20, 30);
  assert.is(decideFraction(early, P0, DEFAULT_DECISION, { passFrom: 1000, dependence: false }).decision, 'fail');
});

test('inside the zone with a short cap the test stays undecided rather than guess', () => {
  const t = tally(200, (s) => ({ misses: bernoulli(5000 + s, P0, 600) }));
  assert.ok(t.undecided / 200 >= 0.5, JSON.stringify(t));
});

test('clustered misses: with near misses the error rates hold; treated as independent they do not', () => {
  const trials = 200;
  const rho = 0.9;
  const withScore = (p: number, base: number) => tally(trials, (s) => {
    const { misses, nearMisses } = clustered(base + s, p, rho);
    return { misses, options: { nearMisses } };
  });
  const independent = (p: number, base: number) => tally(trials, (s) => ({ misses: clustered(base + s, p, rho).misses, options: { dependence: false } }));
  const upper = withScore(PU, 0);
  const lower = withScore(PL, 10_000);
  assert.ok(upper.pass / trials <= 0.075, `passes at pU with clustering accounted: ${JSON.stringify(upper)}`);
  assert.ok(lower.fail / trials <= 0.075, `fails at pL with clustering accounted: ${JSON.stringify(lower)}`);
  const naiveUpper = independent(PU, 0);
  assert.ok(naiveUpper.pass / trials > 0.2, `ignoring clustering should pass wrongly often: ${JSON.stringify(naiveUpper)}`);
});

test('clustered misses far from the threshold are still decided', () => {
  const { misses, nearMisses } = clustered(3, 0.2, 0.9);
  assert.is(decideFraction(misses, P0, DEFAULT_DECISION, { nearMisses }).decision, 'fail');
  const calm = clustered(4, 0.0001, 0.5);
  assert.is(decideFraction(calm.misses, P0, DEFAULT_DECISION, { nearMisses: calm.nearMisses, passFrom: 300 }).decision, 'pass');
});

test('sequential mode reports the first crossing; whole mode judges everything', () => {
  const m = new Uint8Array(CAP);
  m.fill(1, 0, 12); // a bad start, then clean
  const seq = decideFraction(m, P0, DEFAULT_DECISION, { dependence: false });
  assert.is(seq.decision, 'fail');
  assert.ok(seq.observed <= 12);
  const whole = decideFraction(m, P0, DEFAULT_DECISION, { dependence: false, mode: 'whole' });
  assert.is(whole.observed, CAP);
  assert.is(whole.misses, 12);
});

test('P100: one miss fails for certain; no miss passes with no statistical claim', () => {
  const p0 = allowedMissFraction(100);
  const m = new Uint8Array(50);
  assert.is(decideFraction(m, p0, DEFAULT_DECISION, { passFrom: 40 }).decision, 'pass');
  assert.is(decideFraction(m, p0, DEFAULT_DECISION, { passFrom: 40 }).confidence, 0);
  m[30] = 1;
  const d = decideFraction(m, p0, DEFAULT_DECISION);
  assert.is(d.decision, 'fail');
  assert.is(d.observed, 31);
});

test('combined SLOs: any fail fails, all pass passes with the union-bound confidence', () => {
  const pass = decideFraction(new Uint8Array(CAP), P0, DEFAULT_DECISION);
  const fail = decideFraction(bernoulli(9, 0.2), P0, DEFAULT_DECISION);
  const open = decideFraction(new Uint8Array(100), P0, DEFAULT_DECISION);
  assert.is(combineDecisions([pass, fail]).decision, 'fail');
  assert.is(combineDecisions([pass, open]).decision, 'undecided');
  const both = combineDecisions([pass, pass]);
  assert.is(both.decision, 'pass');
  assert.ok(Math.abs(both.confidence - (1 - 2 * (1 - pass.confidence))) < 1e-12);
  assert.match(describeDecision(fail), /^fail \(\d/);
});


// Token gaps of requests that decode side by side: request i covers time slots [i·G/C, i·G/C + G)
// (C requests at once, G gaps each), and a stalled slot (probability q) makes every request
// decoding in it miss that gap, as a long prefill stalls the whole batch. The series holds each
// request's gaps in turn, so one stall's misses lie G − G/C positions apart.
function stalls(seed: number, q: number, requests = 100, gaps = 400, concurrent = 4): { misses: Uint8Array; ends: number[] } {
  const rng = createRng(seed);
  const step = gaps / concurrent;
  const stalled = Uint8Array.from({ length: requests * step + gaps }, () => (rng.next() < q ? 1 : 0));
  const misses = new Uint8Array(requests * gaps);
  const ends: number[] = [];
  for (let i = 0; i < requests; i++) {
    for (let j = 0; j < gaps; j++) misses[i * gaps + j] = stalled[i * step + j];
    ends.push((i + 1) * gaps);
  }
  return { misses, ends };
}

const prefixOf = (xs: ArrayLike<number>) => {
  const p = new Float64Array(xs.length + 1);
  for (let i = 0; i < xs.length; i++) p[i + 1] = p[i] + xs[i];
  return p;
};

test('clusterTime: misses shared by requests side by side read as one; independent gaps read as 1', () => {
  const shared = stalls(1, 0.01);
  const prefix = prefixOf(shared.misses);
  const k = shared.misses.length;
  // A batch of √k gaps holds less than one request: the gaps' own τ cannot see the sharing.
  assert.ok(autocorrelationTime(prefix, k) < 1.6, `gap τ ${autocorrelationTime(prefix, k)}`);
  assert.ok(clusterTime(prefix, shared.ends, k) > 2.5, `cluster τ ${clusterTime(prefix, shared.ends, k)}`);
  const independent = bernoulli(2, 0.01, k);
  assert.ok(clusterTime(prefixOf(independent), shared.ends, k) < 1.6, `independent ${clusterTime(prefixOf(independent), shared.ends, k)}`);
});

test('clusterTime: fewer than 16 requests count as one observation each, the one filling included', () => {
  const ends = Array.from({ length: 10 }, (_, i) => (i + 1) * 200);
  const prefix = prefixOf(bernoulli(3, 0.02, 2000));
  assert.is(clusterTime(prefix, ends, 100), 100);
  assert.is(clusterTime(prefix, ends, 1000), 200);
  assert.is(clusterTime(prefix, ends, 1100), 1100 / 6);
});

test("a few misses in one request's gaps decide nothing once the requests are known", () => {
  // The 70B's early-stopped fail: 4 misses in the first 117 gaps, all of one request.
  const misses = new Uint8Array(117);
  for (const i of [10, 40, 70, 100]) misses[i] = 1;
  assert.is(decideFraction(misses, P0, DEFAULT_DECISION).decision, 'fail');
  assert.is(decideFraction(misses, P0, DEFAULT_DECISION, { clusterEnds: [190, 380] }).decision, 'undecided');
});

test('clusterTime: the miss fraction scatters across samples as much as the clusters say', () => {
  // 200 samples of 100 requests × 400 gaps, 4 side by side: the variance of their miss fractions
  // against p(1 − p)·τ/n, with τ read by each sample from itself.
  const fractions: number[] = [];
  const clusterTaus: number[] = [];
  const gapTaus: number[] = [];
  for (let s = 1; s <= 200; s++) {
    const { misses, ends } = stalls(30_000 + s, 0.01);
    const prefix = prefixOf(misses);
    fractions.push(prefix[misses.length] / misses.length);
    clusterTaus.push(clusterTime(prefix, ends, misses.length));
    gapTaus.push(autocorrelationTime(prefix, misses.length));
  }
  const n = 100 * 400;
  const mean = fractions.reduce((a, b) => a + b, 0) / fractions.length;
  const variance = fractions.reduce((a, b) => a + (b - mean) ** 2, 0) / (fractions.length - 1);
  const implied = (taus: number[]) => taus.reduce((a, t) => a + (mean * (1 - mean) * t) / n, 0) / taus.length;
  const ratio = variance / implied(clusterTaus);
  assert.ok(ratio > 0.6 && ratio < 1.6, `variance ÷ implied by the clusters ${ratio}`);
  assert.ok(variance / implied(gapTaus) > 2.5, `variance ÷ implied by the gaps' τ ${variance / implied(gapTaus)}`);
});

test('stalls shared by requests: with the requests as clusters wrong passes stay within alpha; without, they do not', () => {
  const trials = 120;
  const at = (clusters: boolean) => tally(trials, (s) => {
    const { misses, ends } = stalls(20_000 + s, PU);
    return { misses, options: clusters ? { clusterEnds: ends } : {} };
  });
  const withClusters = at(true);
  const without = at(false);
  assert.ok(withClusters.pass / trials <= 0.075, `passes at pU with clusters: ${JSON.stringify(withClusters)}`);
  assert.ok(without.pass / trials > 0.075, `passes at pU without clusters: ${JSON.stringify(without)}`);
});

test('an undecided answer carries its clustering time: the counts the interval weighs, a leaning no surer than its clusters', () => {
  // Stalls shared by 4 requests at the allowed fraction itself: inside the zone, undecided.
  // A probe re-judged whole (as its summary keeps it).
  const { misses, ends } = stalls(7, P0);
  const d = decideFraction(misses, P0, DEFAULT_DECISION, { clusterEnds: ends, mode: 'whole' });
  assert.is(d.decision, 'undecided');
  assert.ok(d.tau > 2, `τ ${d.tau}`);
  const naive = decideFraction(misses, P0, DEFAULT_DECISION, { dependence: false, mode: 'whole' });
  assert.ok(d.confidence < naive.confidence, `${d.confidence} against ${naive.confidence}`);
  // A scan that ends undecided: its raw ratio never reached a threshold, so τ was never needed on the way.
  const short = stalls(1, P0, 24);
  const scanned = decideFraction(short.misses, P0, DEFAULT_DECISION, { clusterEnds: short.ends });
  assert.is(scanned.decision, 'undecided');
  assert.ok(scanned.tau > 1.5, `scan's τ ${scanned.tau}`);
});

test.run();
