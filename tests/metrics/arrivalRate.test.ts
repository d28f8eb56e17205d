// The arrival rate a probe's judged requests realized: count less one over their span, and none
// where fewer than two arrived or all at once; a Poisson draw's rate scatters around the planned one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { arrivalQpsOf, arrivalQpsOver } from '../../harness/metrics/arrivalRate.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

test('count less one over the span of the arrivals; none for fewer than two or a single instant', () => {
  assert.is(arrivalQpsOf([{ scheduledS: 1 }, { scheduledS: 1.5 }, { scheduledS: 2 }, { scheduledS: 3 }]), 1.5);
  // Order does not matter.
  assert.is(arrivalQpsOf([{ scheduledS: 3 }, { scheduledS: 1 }, { scheduledS: 2 }]), 1);
  assert.is(arrivalQpsOf([{ scheduledS: 1 }]), null);
  assert.is(arrivalQpsOf([]), null);
  assert.is(arrivalQpsOver(5, 2, 2), null);
  assert.is(arrivalQpsOver(5, 0, 2), 2);
});

test('Poisson probes of 400 requests realize rates scattered about 5% around the planned one', () => {
  const workload = workloadSchema.parse({ lengths: { prompt: 200, output: 20 }, arrivals: { process: 'poisson' }, seed: 1 });
  const rates = Array.from({ length: 200 }, (_, seed) => arrivalQpsOf(planProbe({ workload, rateQps: 10, requests: 400, seed, maxContextTokens: 4096 }).requests)!);
  const mean = rates.reduce((a, b) => a + b, 0) / rates.length;
  const sd = Math.sqrt(rates.reduce((a, r) => a + (r - mean) ** 2, 0) / (rates.length - 1));
  assert.ok(Math.abs(mean / 10 - 1) < 0.01, `mean ${mean}`);
  assert.ok(sd / 10 > 0.035 && sd / 10 < 0.065, `sd ${sd / 10}`);
});

test.run();
