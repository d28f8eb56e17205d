// Cost figures checked against hand arithmetic, and the no-price / zero-capacity cases.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { capacityCost, runCost } from '../../harness/capacity/cost.ts';

const near = (a: number | null, b: number) => assert.ok(a !== null && Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${a} vs ${b}`);

test('H100 at $6.16/GPU-h, 1 GPU, 5 QPS, 200 output tokens each', () => {
  const c = capacityCost({ usdPerGpuHour: 6.16, gpuCount: 1, capacityQps: 5, meanOutputTokens: 200 });
  near(c.usdPerHour, 6.16);
  near(c.qpsPerUsdPerHour, 5 / 6.16);
  near(c.outputTokensPerS, 1000);
  // 1000 tok/s = 3.6 M tok/h for $6.16 → $1.7111 per million.
  near(c.usdPerMillionOutputTokens, 6.16 / 3.6);
});

test('tensor parallel 4 multiplies the hourly price by the GPU count', () => {
  const c = capacityCost({ usdPerGpuHour: 2.7, gpuCount: 4, capacityQps: 2, meanOutputTokens: 100 });
  near(c.usdPerHour, 10.8);
  near(c.usdPerMillionOutputTokens, (10.8 / (200 * 3600)) * 1e6);
});

test('a GPU profile without a price leaves every money figure null but keeps throughput', () => {
  const c = capacityCost({ usdPerGpuHour: null, gpuCount: 1, capacityQps: 3, meanOutputTokens: 10 });
  assert.equal(c, { usdPerHour: null, qpsPerUsdPerHour: null, outputTokensPerS: 30, usdPerMillionOutputTokens: null });
});

test('capacity 0: QPS per dollar is 0 and the per-token price is null (not Infinity)', () => {
  const c = capacityCost({ usdPerGpuHour: 6.16, gpuCount: 1, capacityQps: 0, meanOutputTokens: 200 });
  assert.is(c.qpsPerUsdPerHour, 0);
  assert.is(c.usdPerMillionOutputTokens, null);
});

test('run cost: GPU-seconds and dollars of the time the engine was held', () => {
  const r = runCost({ engineUpS: 1800, gpuCount: 4, usdPerGpuHour: 2.7 });
  assert.is(r.gpuSeconds, 7200);
  near(r.costUsd, 5.4);
  assert.is(runCost({ engineUpS: 10, gpuCount: 1, usdPerGpuHour: null }).costUsd, null);
});

test('unknown GPUs (an endpoint fluidcap did not start): no GPU-seconds, no money, throughput kept', () => {
  assert.equal(runCost({ engineUpS: 120, gpuCount: null, usdPerGpuHour: 6.16 }), { gpuSeconds: null, costUsd: null });
  const c = capacityCost({ usdPerGpuHour: 6.16, gpuCount: null, capacityQps: 2, meanOutputTokens: 50 });
  assert.equal(c, { usdPerHour: null, qpsPerUsdPerHour: null, outputTokensPerS: 100, usdPerMillionOutputTokens: null });
});

test('bad inputs throw with the field and value', () => {
  assert.throws(() => capacityCost({ usdPerGpuHour: 1, gpuCount: 0, capacityQps: 1, meanOutputTokens: 1 }), /gpuCount must be a positive integer, got 0/);
  assert.throws(() => runCost({ engineUpS: Number.NaN, gpuCount: 1, usdPerGpuHour: 1 }), /engineUpS must be a finite number >= 0, got NaN/);
});

test.run();
