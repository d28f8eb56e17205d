// Arrival schedules: Poisson gaps pass a Kolmogorov–Smirnov test against the exponential with the
// right mean, gamma gaps have CV² ≈ 1/b, constant is exact, trace replay scales, and a seed
// reproduces the schedule byte for byte.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { arrivalTimesS } from '../../harness/load/arrivals.ts';
import { createRng } from '../../harness/util/rng.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

const gapsOf = (t: number[]) => t.slice(1).map((v, i) => v - t[i]);

/** One-sample KS statistic of `xs` against the CDF `F`. */
function ksStatistic(xs: number[], F: (x: number) => number): number {
  const s = [...xs].sort((a, b) => a - b);
  let d = 0;
  s.forEach((x, i) => {
    const f = F(x);
    d = Math.max(d, (i + 1) / s.length - f, f - i / s.length);
  });
  return d;
}

test('Poisson gaps pass KS against Exp(mean 1/rate) at α = 0.01, and fail against a wrong mean', () => {
  const rateQps = 8;
  const t = arrivalTimesS({ arrivals: { process: 'poisson' }, rateQps, maxCount: 5001, durationS: Infinity, rng: createRng(123) });
  const gaps = gapsOf(t);
  const critical = 1.628 / Math.sqrt(gaps.length);
  const d = ksStatistic(gaps, (x) => 1 - Math.exp(-rateQps * x));
  assert.ok(d < critical, `D = ${d} >= ${critical}`);
  const wrong = ksStatistic(gaps, (x) => 1 - Math.exp(-rateQps * 1.1 * x));
  assert.ok(wrong > critical, `a 10% wrong mean should fail: D = ${wrong}`);
  assert.is(t[0], 0);
});

test('gamma gaps: mean 1/rate and CV² ≈ 1/burstiness for b = 0.25, 1, 4', () => {
  for (const b of [0.25, 1, 4]) {
    const t = arrivalTimesS({ arrivals: { process: 'gamma', burstiness: b }, rateQps: 5, maxCount: 40001, durationS: Infinity, rng: createRng(9) });
    const g = gapsOf(t);
    const mean = g.reduce((s, x) => s + x, 0) / g.length;
    const variance = g.reduce((s, x) => s + (x - mean) ** 2, 0) / (g.length - 1);
    const cv2 = variance / mean ** 2;
    assert.ok(Math.abs(mean - 0.2) / 0.2 < 0.03, `b=${b}: mean ${mean}`);
    assert.ok(Math.abs(cv2 - 1 / b) / (1 / b) < 0.08, `b=${b}: CV² ${cv2} vs ${1 / b}`);
  }
});

test('constant arrivals are i/rate exactly; a duration cuts the schedule', () => {
  const t = arrivalTimesS({ arrivals: { process: 'constant' }, rateQps: 4, maxCount: Infinity, durationS: 10, rng: createRng(1) });
  assert.is(t.length, 40);
  t.forEach((v, i) => assert.is(v, i / 4));
});

test('trace arrivals replay arrived_at relative to the first row, by timeScale or scaled to the rate', () => {
  const arrived = [100, 101, 103, 106];
  const scaled = arrivalTimesS({ arrivals: { process: 'trace', timeScale: 0.5 }, rateQps: 0, maxCount: Infinity, durationS: Infinity, rng: createRng(1), traceArrivedS: arrived });
  assert.equal(scaled, [0, 0.5, 1.5, 3]);
  const toRate = arrivalTimesS({ arrivals: { process: 'trace' }, rateQps: 2, maxCount: Infinity, durationS: Infinity, rng: createRng(1), traceArrivedS: arrived });
  assert.equal(toRate, [0, 0.25, 0.75, 1.5]);
});

test('the same seed gives the same plan byte for byte; another seed does not', () => {
  const workload = workloadSchema.parse({ lengths: { preset: 'chat-1m' }, arrivals: { process: 'gamma', burstiness: 0.5 }, seed: 7 });
  const a = JSON.stringify(planProbe({ workload, rateQps: 3, requests: 500, maxContextTokens: 4096 }));
  const b = JSON.stringify(planProbe({ workload, rateQps: 3, requests: 500, maxContextTokens: 4096 }));
  const c = JSON.stringify(planProbe({ workload, rateQps: 3, requests: 500, maxContextTokens: 4096, seed: 8 }));
  assert.is(a, b);
  assert.is.not(a, c);
});

test.run();
