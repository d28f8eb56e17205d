// Prefill fit: exact recovery, the non-negativity constraint checked against the KKT conditions,
// conditioning at long contexts, and each refusal the quality verdict can give.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fitPrefill, toFitJson, type PrefillPoint } from '../../harness/capacity/fit.ts';
import { predictPrefillS } from '../../harness/metrics/prefill.ts';

const close = (actual: number, expected: number, rel = 1e-9, msg = '') =>
  assert.ok(Math.abs(actual - expected) <= rel * Math.max(Math.abs(expected), 1e-12), `${msg} ${actual} vs ${expected}`);

function mulberry32(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const lengths = [128, 256, 512, 1024, 2048, 4096];
const curve = (P: number) => 0.012 + 2.1e-5 * P + 3.0e-9 * P * P;

test('recovers an exact quadratic and reports R² 1 with no problems', () => {
  const points = lengths.flatMap((P) => [0, 1, 2].map(() => ({ promptTokens: P, prefillS: curve(P) })));
  const fit = fitPrefill(points);
  close(fit.a, 0.012, 1e-9, 'a');
  close(fit.b, 2.1e-5, 1e-9, 'b');
  close(fit.c, 3.0e-9, 1e-7, 'c');
  close(fit.r2, 1, 1e-12, 'r2');
  assert.is(fit.n, 18);
  assert.equal(fit.freeCoefficients, ['a', 'b', 'c']);
  assert.equal(fit.problems, []);
  assert.ok(fit.ok);
  assert.is(fit.lengths.length, 6);
  close(fit.lengths[3].fittedS, curve(1024), 1e-9, 'fitted at 1024');
});

test('stays well conditioned at 128k-token prompts', () => {
  const big = [128, 1024, 8192, 32768, 65536, 131072];
  const f = (P: number) => 0.02 + 1.5e-5 * P + 7e-11 * P * P;
  const fit = fitPrefill(big.map((P) => ({ promptTokens: P, prefillS: f(P) })));
  close(fit.a, 0.02, 1e-7, 'a');
  close(fit.b, 1.5e-5, 1e-7, 'b');
  close(fit.c, 7e-11, 1e-6, 'c');
  close(predictPrefillS(fit, 100000), f(100000), 1e-9, 'prediction');
});

test('concave data: c is held at 0 and the result is the linear least-squares line', () => {
  // Saturating curve: an unconstrained quadratic would bend down (c < 0).
  const points = lengths.map((P) => ({ promptTokens: P, prefillS: 0.01 + 0.05 * Math.sqrt(P / 4096) }));
  const fit = fitPrefill(points, { minR2: 0 });
  assert.is(fit.c, 0);
  assert.equal(fit.freeCoefficients, ['a', 'b']);
  // Closed-form simple linear regression for comparison.
  const xs = points.map((p) => p.promptTokens);
  const ys = points.map((p) => p.prefillS);
  const mx = xs.reduce((s, x) => s + x, 0) / xs.length;
  const my = ys.reduce((s, y) => s + y, 0) / ys.length;
  const slope = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / xs.reduce((s, x) => s + (x - mx) ** 2, 0);
  close(fit.b, slope, 1e-9, 'slope');
  close(fit.a, my - slope * mx, 1e-9, 'intercept');
});

test('a negative unconstrained intercept is held at 0 (D_p never negative)', () => {
  // Steep superlinear data whose straight part would cross zero above P = 0.
  const points = lengths.map((P) => ({ promptTokens: P, prefillS: Math.max(1e-4, 1e-5 * P - 0.001) + 1e-12 * P * P }));
  const fit = fitPrefill(points, { minR2: 0 });
  assert.ok(fit.a >= 0 && fit.b >= 0 && fit.c >= 0);
  assert.ok(predictPrefillS(fit, 1) >= 0);
});

// For min ½‖Xθ − y‖² s.t. θ ≥ 0 the optimum satisfies: g = Xᵀ(Xθ − y); g_i = 0 where θ_i > 0 and
// g_i ≥ 0 where θ_i = 0. Checked on random curves with random signs, in the scaled basis.
test('random data sets: the answer satisfies the KKT conditions of the constrained problem', () => {
  const rand = mulberry32(7);
  let sawConstrained = 0;
  for (let trial = 0; trial < 200; trial++) {
    const sign = () => (rand() < 0.5 ? -1 : 1);
    const [a0, b0, c0] = [sign() * rand() * 0.05, sign() * rand() * 0.05, sign() * rand() * 0.05];
    const points: PrefillPoint[] = [];
    for (const P of lengths) {
      for (let r = 0; r < 2; r++) {
        const x = P / 4096;
        points.push({ promptTokens: P, prefillS: 0.2 + a0 + b0 * x + c0 * x * x + (rand() - 0.5) * 0.02 });
      }
    }
    const fit = fitPrefill(points, { minR2: 0, maxRepeatCv: 10 });
    const theta = [fit.a, fit.b * 4096, fit.c * 4096 * 4096];
    assert.ok(theta.every((v) => v >= 0), `trial ${trial}: negative coefficient ${theta}`);
    const g = [0, 0, 0];
    for (const p of points) {
      const x = p.promptTokens / 4096;
      const resid = theta[0] + theta[1] * x + theta[2] * x * x - p.prefillS;
      g[0] += resid;
      g[1] += resid * x;
      g[2] += resid * x * x;
    }
    theta.forEach((v, i) => {
      if (v > 0) assert.ok(Math.abs(g[i]) < 1e-9, `trial ${trial}: gradient ${g[i]} at free coefficient ${i}`);
      else assert.ok(g[i] > -1e-9, `trial ${trial}: gradient ${g[i]} < 0 at bound coefficient ${i}`);
    });
    if (theta.some((v) => v === 0)) sawConstrained++;
  }
  assert.ok(sawConstrained > 20, `only ${sawConstrained} trials hit the constraint; the test would not exercise it`);
});

test('refuses noisy repeats, naming the length, the robust CV and the times', () => {
  const points = lengths.flatMap((P) => [1, 1, 1].map((k) => ({ promptTokens: P, prefillS: curve(P) * k })));
  // Spread across all three repeats at 1024 (0.6×, 1×, 1.5×): noise, not one hiccup.
  points[9].prefillS = curve(1024) * 0.6;
  points[11].prefillS = curve(1024) * 1.5;
  const fit = fitPrefill(points);
  assert.not.ok(fit.ok);
  const msg = fit.problems.find((p) => p.includes('1024 prompt tokens'));
  assert.ok(msg, fit.problems.join('\n'));
  assert.match(msg!, /robust coefficient of variation \(1\.4826·MAD\/median\) \d+\.\d% is above the bound 20\.0%/);
  assert.ok(fit.maxRepeatCv > 0.2);
});

test('one hiccup among the repeats (a 3× outlier) neither refuses the profile nor moves the curve', () => {
  const clean = lengths.flatMap((P) => [1, 1, 1].map((k) => ({ promptTokens: P, prefillS: curve(P) * k })));
  const hiccup = clean.map((p) => ({ ...p }));
  hiccup[4].prefillS = curve(hiccup[4].promptTokens) * 3;
  const a = fitPrefill(clean);
  const b = fitPrefill(hiccup);
  assert.ok(b.ok, b.problems.join('\n'));
  for (const P of lengths) assert.ok(Math.abs(predictPrefillS(b, P) - predictPrefillS(a, P)) < 1e-9 * Math.max(1, curve(P)));
});

test('sub-millisecond jitter on tiny prefills is under the noise floor, not a refusal', () => {
  const points = lengths.flatMap((P) => [0, 1, 2].map((r) => ({ promptTokens: P, prefillS: 0.002 + 1e-6 * P + (r - 1) * 0.0005 })));
  const fit = fitPrefill(points, { minR2: 0 });
  assert.ok(fit.lengths[0].cv > 0.2, 'the smallest length has a high CV');
  assert.not.ok(fit.problems.some((p) => p.includes('noisy')), fit.problems.join('\n'));
});

test('refuses a poor fit with its R² and the bound', () => {
  const rand = mulberry32(3);
  const points = lengths.map((P) => ({ promptTokens: P, prefillS: 0.1 + rand() * 0.1 }));
  const fit = fitPrefill(points);
  assert.ok(fit.r2 < 0.95);
  assert.ok(fit.problems.some((p) => /R² 0\.\d{4} \(fit to per-length medians\) is below the bound 0\.95/.test(p)), fit.problems.join('\n'));
});

test('refuses fewer than three distinct lengths and unusable points', () => {
  const fit = fitPrefill([
    { promptTokens: 128, prefillS: 0.01 },
    { promptTokens: 256, prefillS: 0.02 },
    { promptTokens: 512, prefillS: Number.NaN },
    { promptTokens: -1, prefillS: 0.03 },
  ]);
  assert.is(fit.n, 2);
  assert.ok(fit.problems.some((p) => p.includes('only 2 distinct prompt length')));
  assert.ok(fit.problems.some((p) => p.startsWith('point 2 is not usable')));
  assert.ok(fit.problems.some((p) => p.startsWith('point 3 is not usable')));
  assert.not.ok(fit.ok);
});

test('no points at all is a refusal, not a throw', () => {
  const fit = fitPrefill([]);
  assert.not.ok(fit.ok);
  assert.is(fit.n, 0);
});

test('toFitJson keeps exactly the fit.json fields', () => {
  const fit = fitPrefill(lengths.map((P) => ({ promptTokens: P, prefillS: curve(P) })));
  assert.equal(Object.keys(toFitJson(fit)), ['a', 'b', 'c', 'r2', 'n']);
  assert.equal(toFitJson(fit, 0.3).ttftSlackS, 0.3);
});

test.run();
