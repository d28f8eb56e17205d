// The backlog a probe's own arrivals find on a fixed-rate server: Lindley's recursion by hand, its
// growth with the rate a draw is replayed at, and its mean over Poisson draws rising toward saturation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { backlogReference, drainTokensPerS, meanBacklogS } from '../../harness/metrics/virtualBacklog.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

test('each arrival finds what the earlier ones left undrained', () => {
  // Drain 100 tokens/s. At 0 s: finds 0, leaves 200 (2 s of work). At 1 s: finds 100 (1 s), leaves 150.
  // At 5 s: the 150 drained 4 s ago, finds 0. Mean (0 + 1 + 0) / 3.
  const arrivals = [{ scheduledS: 1, tokens: 50 }, { scheduledS: 0, tokens: 200 }, { scheduledS: 5, tokens: 10 }];
  assert.ok(Math.abs(meanBacklogS(arrivals, 100) - 1 / 3) < 1e-12, String(meanBacklogS(arrivals, 100)));
  // Replayed twice as fast the second arrival comes at 0.5 s and finds 150 tokens (1.5 s).
  assert.ok(Math.abs(meanBacklogS(arrivals, 100, 2) - 0.5) < 1e-12, String(meanBacklogS(arrivals, 100, 2)));
  assert.ok(Number.isNaN(meanBacklogS([], 100)));
  assert.ok(Number.isNaN(meanBacklogS(arrivals, 0)));
});

test('on Poisson draws the backlog grows with the rate a draw is replayed at, and with the load', () => {
  const workload = workloadSchema.parse({ lengths: { prompt: 200, output: 20 }, arrivals: { process: 'poisson' }, seed: 1 });
  const draws = Array.from({ length: 60 }, (_, seed) => planProbe({ workload, rateQps: 10, requests: 400, seed, maxContextTokens: 4096 }).requests.map((r) => ({ scheduledS: r.scheduledS, tokens: r.promptTokens + r.maxTokens })));
  const meanTokens = draws.flat().reduce((a, x) => a + x.tokens, 0) / draws.flat().length;
  const mean = (utilization: number, compress = 1) => draws.reduce((a, d) => a + meanBacklogS(d, drainTokensPerS(10, meanTokens, utilization), compress), 0) / draws.length;
  // Fixed sizes on a Poisson stream (M/D/1): at load ρ the mean wait is ρ/(2(1−ρ)) service times.
  const service = meanTokens / drainTokensPerS(10, meanTokens, 0.5);
  assert.ok(Math.abs(mean(0.5) / service - 0.5) < 0.08, `${mean(0.5) / service}`);
  assert.ok(mean(0.8) > 2 * mean(0.5));
  assert.ok(mean(0.5, 1.05) > mean(0.5));
  // The same draw: replaying it faster never leaves less behind.
  for (const d of draws.slice(0, 10)) assert.ok(meanBacklogS(d, 3000, 1.05) >= meanBacklogS(d, 3000) - 1e-12);
});

test('the reference holds, for every length, the draws\' mean backlog of their first arrivals, and the same replayed 2% faster', () => {
  const workload = workloadSchema.parse({ lengths: { prompt: { median: 300, p90: 900 }, output: 50 }, arrivals: { process: 'poisson' }, seed: 2 });
  const draws = Array.from({ length: 30 }, (_, seed) => planProbe({ workload, rateQps: 1, requests: 120, seed, maxContextTokens: 4096 }).requests.map((r) => ({ scheduledS: r.scheduledS, tokens: r.promptTokens + r.maxTokens })));
  let reads = 0;
  const ref = backlogReference(draws.length, 100, (k) => (reads++, draws[k]));
  // Each draw read twice: for the drain's scale, then for the backlog.
  assert.is(reads, 2 * draws.length);
  const all = draws.flat();
  assert.ok(Math.abs(ref.meanTokens - all.reduce((a, x) => a + x.tokens, 0) / all.length) < 1e-9);
  const drain = ref.meanTokens / ref.utilization;
  for (const n of [2, 17, 100]) {
    const mean = (compress: number) => draws.reduce((a, d) => a + meanBacklogS(d.slice(0, n), drain, compress), 0) / draws.length;
    assert.ok(Math.abs(ref.at[n] - mean(1)) < 1e-9, `n ${n}: ${ref.at[n]} against ${mean(1)}`);
    assert.ok(Math.abs(ref.faster[n] - mean(1.02)) < 1e-9, `n ${n} faster`);
  }
  assert.throws(() => backlogReference(2, 200, (k) => draws[k]), /fewer than 200/);
});

test.run();
