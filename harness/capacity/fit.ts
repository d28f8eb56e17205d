// Fits the prefill-time curve D_p(P) = a + b·P + c·P² (seconds, P prompt tokens) to isolated
// prefill measurements, and judges whether the fit is good enough to set every request's TTFT
// deadline. Pure: takes points, returns numbers and the problems a caller turns into a message.
//
// Why non-negative least squares on all three coefficients: prefill time is never negative and
// never shrinks as the prompt grows, so a < 0, b < 0 or c < 0 would predict impossible deadlines
// (a negative D_p for short prompts, or a curve bending down past the profiled range). The method
// below constrains all three alike.
//
// Method (exact for three coefficients): minimise ‖Xθ − y‖² subject to θ ≥ 0. The problem is
// convex, and at its optimum θ* the coefficients that are positive (its support S) must equal the
// unconstrained least-squares solution on the columns in S (KKT stationarity on the free
// coordinates); the others are 0. So θ* is one of the 2³ = 8 "solve on a subset, zero the rest"
// candidates. Every candidate whose coefficients are all ≥ 0 is feasible, hence the feasible
// candidate with the smallest squared error is the constrained optimum. This is the active-set
// (Lawson–Hanson NNLS) answer found by enumeration, which is simpler and cannot cycle. A subset
// whose columns are rank-deficient is skipped: an optimum with a smaller support then exists.
// Columns are scaled (x = P / Pmax) before solving so 1, x, x² are all O(1) and the solve is well
// conditioned even for 128k-token prompts; scaling by a positive number keeps the signs.
//
// Robust to a hiccup: the curve is fitted to each length's MEDIAN time (one outlier among the
// repeats, a GC pause or a scheduler hiccup on a shared host, moves a median not at all), and the
// noise bound uses the robust coefficient of variation 1.4826·MAD/median, which equals sd/mean for
// normal noise but is not dominated by a single outlier. R² is that of the fit to the medians.
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import type { LengthStats, PrefillFitResult } from '../runDir/schema.ts';


/** One isolated prefill: the prompt length and its measured prefill time (TTFT of a 1-token request). */
export interface PrefillPoint {
  promptTokens: number;
  prefillS: number;
}


/** Bounds of the quality verdict; the defaults are stated in the report next to the figures. */
export interface FitBounds {
  /** Refuse when R² is below this (default 0.95): a quadratic should explain prefill time well. */
  minR2: number;
  /** Refuse when repeats at one length have sd/mean above this (default 0.2). */
  maxRepeatCv: number;
  /**
   * Ignore the CV bound when the sd itself is below this (default 1 ms): timer and event-loop
   * jitter of a millisecond on a 3 ms prefill is not evidence of a noisy server.
   */
  noiseFloorS: number;
  /** Fewer distinct lengths cannot determine a quadratic (default 3). */
  minDistinctLengths: number;
  /**
   * A fit below minR2, or repeats above maxRepeatCv, are still used when the fit's largest error
   * (or the repeats' spread) is at most this share of the TTFT slack its deadlines carry (default
   * 0.1): a deadline off by a tenth of its slack cannot turn a request that meets its SLO into one
   * that misses it by any margin worth reporting.
   */
  maxErrorOfSlack: number;
}

export const DEFAULT_FIT_BOUNDS: FitBounds = {
  minR2: 0.95,
  maxRepeatCv: 0.2,
  noiseFloorS: 0.001,
  minDistinctLengths: 3,
  maxErrorOfSlack: 0.1,
};

/** What the fit feeds: each request's first-token deadline is D_p(P) + ttftSlackS. */
export interface FitUse {
  ttftSlackS: number;
}

const NAMES = ['a', 'b', 'c'] as const;

/**
 * Fits D_p(P) with a, b, c ≥ 0 and returns the fit with its quality verdict. R² says how much of
 * the prefill time's spread the curve explains, which says little when the spread is itself tiny
 * (1–8 ms prefills of short prompts): given `use`, a low R² is weighed by what the fit's error does
 * to the deadlines it sets, in seconds against their slack.
 */
export function fitPrefill(points: readonly PrefillPoint[], bounds: Partial<FitBounds> = {}, use?: FitUse): PrefillFitResult {
  const limits = { ...DEFAULT_FIT_BOUNDS, ...bounds };
  const problems: string[] = [];
  const valid: PrefillPoint[] = [];
  points.forEach((p, i) => {
    const okTokens = Number.isInteger(p.promptTokens) && p.promptTokens > 0;
    const okTime = Number.isFinite(p.prefillS) && p.prefillS > 0;
    if (okTokens && okTime) valid.push(p);
    else problems.push(`point ${i} is not usable: promptTokens ${p.promptTokens}, prefillS ${p.prefillS} (need a positive integer and a positive time)`);
  });

  const n = valid.length;
  const maxTokens = n > 0 ? Math.max(...valid.map((p) => p.promptTokens)) : 1;
  const medians = medianPerLength(valid);
  const m = medians.length;
  const xs = medians.map((p) => p.promptTokens / maxTokens);
  const ys = medians.map((p) => p.prefillS);
  const best = bestNonNegative(xs, ys);
  const [alpha, beta, gamma] = best.theta;
  const fit = { a: alpha, b: beta / maxTokens, c: gamma / (maxTokens * maxTokens) };

  const meanY = m > 0 ? ys.reduce((s, y) => s + y, 0) / m : 0;
  const sst = ys.reduce((s, y) => s + (y - meanY) ** 2, 0);
  const sse = best.sse;
  const r2 = m === 0 ? 0 : sst > 0 ? 1 - sse / sst : sse <= 1e-24 ? 1 : 0;
  const rmseS = m > 0 ? Math.sqrt(sse / m) : 0;

  const lengths = lengthStats(valid, fit);
  const maxRepeatCv = lengths.reduce((mx, l) => Math.max(mx, l.cv), 0);

  const notes: string[] = [];
  if (lengths.length < limits.minDistinctLengths) {
    problems.push(`only ${lengths.length} distinct prompt length(s) were measured; a quadratic fit needs at least ${limits.minDistinctLengths}`);
  }
  if (n > 0 && r2 < limits.minR2) {
    // The largest distance between a length's median and the curve: the most any deadline is off.
    const errorS = lengths.reduce((mx, l) => Math.max(mx, Math.abs(l.medianS - l.fittedS)), 0);
    const r2Text = `R² ${r2.toFixed(4)} (fit to per-length medians) is below the bound ${limits.minR2}`;
    const slackS = use?.ttftSlackS;
    if (slackS !== undefined && slackS > 0) {
      const weighed = `its largest error, ${fmtMs(errorS)} ms, is ${pct(errorS / slackS)} of the ${fmtMs(slackS)} ms TTFT slack each first-token deadline carries`;
      if (errorS <= limits.maxErrorOfSlack * slackS) {
        notes.push(`${r2Text}, but ${weighed} (at most ${pct(limits.maxErrorOfSlack)}): too small to change a verdict, so the fit is used`);
      } else {
        problems.push(`the fit explains too little of the prefill time: ${r2Text}, and ${weighed}, above ${pct(limits.maxErrorOfSlack)}: deadlines it sets could change verdicts (${n} points at ${lengths.length} lengths; recipe fields: profile.minR2 sets the bound, more profile.repeats steady the medians, a larger slo.fluidity.ttftSlack tolerates the error)`);
      }
    } else {
      problems.push(`the fit explains too little of the prefill time: ${r2Text} (${n} points at ${lengths.length} lengths; recipe fields: profile.minR2 sets the bound, more profile.repeats steady the medians)`);
    }
  }
  for (const l of lengths) {
    if (l.count >= 2 && l.cv > limits.maxRepeatCv && l.robustSdS > limits.noiseFloorS) {
      const times = valid.filter((p) => p.promptTokens === l.promptTokens).map((p) => `${fmtS(p.prefillS)} s`).join(', ');
      const cvText = `robust coefficient of variation (1.4826·MAD/median) ${pct(l.cv)} is above the bound ${pct(limits.maxRepeatCv)} (${times})`;
      const slackS = use?.ttftSlackS;
      // The same weighing as R²'s: a spread of a few milliseconds on a short prefill is a large
      // share of that prefill but a small one of the slack each deadline carries.
      if (slackS !== undefined && slackS > 0 && l.robustSdS <= limits.maxErrorOfSlack * slackS) {
        notes.push(`repeats at ${l.promptTokens} prompt tokens: ${cvText}, but their spread, ${fmtMs(l.robustSdS)} ms, is ${pct(l.robustSdS / slackS)} of the ${fmtMs(slackS)} ms TTFT slack (at most ${pct(limits.maxErrorOfSlack)}): too small to change a verdict, so the fit is used`);
        continue;
      }
      const weighed = slackS !== undefined && slackS > 0 ? `; their spread, ${fmtMs(l.robustSdS)} ms, is ${pct(l.robustSdS / slackS)} of the ${fmtMs(slackS)} ms TTFT slack, above ${pct(limits.maxErrorOfSlack)}` : '';
      problems.push(`repeats at ${l.promptTokens} prompt tokens are too noisy: ${cvText.slice(0, -1)}${weighed}; recipe fields: profile.maxRepeatCv sets the bound, profile.noiseFloor the spread ignored as noise, profile.repeats how many runs)`);
    }
  }

  return {
    ...fit,
    r2,
    n,
    rmseS,
    residualCv: meanY > 0 ? rmseS / meanY : 0,
    maxRepeatCv,
    freeCoefficients: NAMES.filter((_, i) => best.free[i]),
    lengths,
    problems,
    ...(notes.length > 0 ? { notes } : {}),
    ok: problems.length === 0,
  };
}

/** The fit's stored coefficients (profile/fit.json), so every writer stores the same fields. */
export function toFitJson(result: PrefillFit, ttftSlackS?: number): PrefillFit {
  const out: PrefillFit = { a: result.a, b: result.b, c: result.c, r2: result.r2, n: result.n };
  if (ttftSlackS !== undefined) out.ttftSlackS = ttftSlackS;
  return out;
}

interface Candidate {
  theta: [number, number, number];
  free: [boolean, boolean, boolean];
  sse: number;
}

// Enumerates the 8 supports (largest first, so ties keep the richer model) and keeps the feasible
// one with the smallest squared error; see the header for why this is the constrained optimum.
function bestNonNegative(xs: number[], ys: number[]): Candidate {
  const columns = [xs.map(() => 1), xs, xs.map((x) => x * x)];
  let best: Candidate = { theta: [0, 0, 0], free: [false, false, false], sse: ys.reduce((s, y) => s + y * y, 0) };
  const supports = [7, 3, 5, 6, 1, 2, 4];
  for (const mask of supports) {
    const idx = [0, 1, 2].filter((i) => mask & (1 << i));
    const solved = leastSquares(idx.map((i) => columns[i]), ys);
    if (!solved || solved.some((v) => v < 0)) continue;
    const theta: [number, number, number] = [0, 0, 0];
    idx.forEach((col, k) => (theta[col] = solved[k]));
    const sse = ys.reduce((s, y, r) => s + (y - (theta[0] + theta[1] * xs[r] + theta[2] * xs[r] * xs[r])) ** 2, 0);
    if (sse < best.sse * (1 - 1e-12)) best = { theta, free: [0, 1, 2].map((i) => idx.includes(i)) as Candidate['free'], sse };
  }
  return best;
}

// Least squares by modified Gram–Schmidt QR; returns null when the columns are (nearly) dependent.
function leastSquares(columns: number[][], ys: number[]): number[] | null {
  const k = columns.length;
  const m = ys.length;
  if (m < k) return null;
  const q = columns.map((c) => c.slice());
  const r: number[][] = Array.from({ length: k }, () => new Array<number>(k).fill(0));
  for (let j = 0; j < k; j++) {
    const originalNorm = Math.hypot(...columns[j]);
    for (let i = 0; i < j; i++) {
      const dot = q[i].reduce((s, v, t) => s + v * q[j][t], 0);
      r[i][j] = dot;
      for (let t = 0; t < m; t++) q[j][t] -= dot * q[i][t];
    }
    const norm = Math.hypot(...q[j]);
    if (!(norm > 1e-10 * originalNorm)) return null;
    r[j][j] = norm;
    for (let t = 0; t < m; t++) q[j][t] /= norm;
  }
  const qty = q.map((col) => col.reduce((s, v, t) => s + v * ys[t], 0));
  const theta = new Array<number>(k).fill(0);
  for (let j = k - 1; j >= 0; j--) {
    let s = qty[j];
    for (let i = j + 1; i < k; i++) s -= r[j][i] * theta[i];
    theta[j] = s / r[j][j];
  }
  return theta;
}

function lengthStats(points: PrefillPoint[], fit: Pick<PrefillFit, 'a' | 'b' | 'c'>): LengthStats[] {
  const byLength = new Map<number, number[]>();
  for (const p of points) byLength.set(p.promptTokens, [...(byLength.get(p.promptTokens) ?? []), p.prefillS]);
  return [...byLength.entries()]
    .sort(([x], [y]) => x - y)
    .map(([promptTokens, times]) => {
      const count = times.length;
      const meanS = times.reduce((s, t) => s + t, 0) / count;
      // Sample standard deviation (n − 1): repeats are a sample of the server's behaviour.
      const sdS = count >= 2 ? Math.sqrt(times.reduce((s, t) => s + (t - meanS) ** 2, 0) / (count - 1)) : 0;
      const medianS = median(times);
      // 1.4826·MAD estimates the sd of normal noise without letting one outlier dominate.
      const robustSdS = count >= 2 ? 1.4826 * median(times.map((t) => Math.abs(t - medianS))) : 0;
      return {
        promptTokens,
        count,
        meanS,
        sdS,
        medianS,
        robustSdS,
        cv: medianS > 0 ? robustSdS / medianS : 0,
        fittedS: predictPrefillS(fit, promptTokens),
      };
    });
}

function median(values: number[]): number {
  const v = [...values].sort((x, y) => x - y);
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

function medianPerLength(points: PrefillPoint[]): PrefillPoint[] {
  const byLength = new Map<number, number[]>();
  for (const p of points) byLength.set(p.promptTokens, [...(byLength.get(p.promptTokens) ?? []), p.prefillS]);
  return [...byLength.entries()].sort(([x], [y]) => x - y).map(([promptTokens, t]) => ({ promptTokens, prefillS: median(t) }));
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;
const fmtS = (s: number) => String(+s.toPrecision(4));
const fmtMs = (s: number) => String(+(s * 1000).toPrecision(3));
