// A refused prefill fit tells the user which recipe fields move its bounds, so a refusal on a busy
// machine is fixable from the message alone.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fitPrefill } from '../../harness/capacity/fit.ts';

test('a refused fit names profile.minR2, maxRepeatCv, noiseFloor and repeats', () => {
  // Medians that zig-zag (no quadratic explains them) and repeats that scatter widely.
  const medians: Record<number, number> = { 128: 0.3, 256: 0.02, 512: 0.4, 1024: 0.03, 2048: 0.35 };
  const points = Object.entries(medians).flatMap(([P, m]) => [0.2, 1, 3].map((f) => ({ promptTokens: Number(P), prefillS: m * f })));
  const fit = fitPrefill(points, { minR2: 0.95, maxRepeatCv: 0.2, noiseFloorS: 0.001 });
  const r2 = fit.problems.find((p) => p.includes('R²'));
  const noisy = fit.problems.find((p) => p.includes('too noisy'));
  assert.ok(r2 && noisy, fit.problems.join('\n'));
  assert.match(r2!, /profile\.minR2/);
  assert.match(r2!, /profile\.repeats/);
  for (const field of ['profile.maxRepeatCv', 'profile.noiseFloor', 'profile.repeats']) assert.ok(noisy!.includes(field), `${field} in: ${noisy}`);
});

test.run();
