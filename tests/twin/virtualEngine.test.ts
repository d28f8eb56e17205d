// The engine core on the virtual clock: event order, exact modelled timings for a lone request
// (the cost model's own numbers, nothing else added), batching of simultaneous arrivals, and the
// same records for the same plan every time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { VirtualClock } from '../../harness/sim/virtualClock.ts';
import { engineConfigOf, SimEngine } from '../../harness/sim/engine.ts';
import { resolveSimConfig } from '../../harness/sim/config.ts';
import { iterationCost } from '../../harness/sim/costModel.ts';
import { newSimRequest } from '../../harness/sim/request.ts';
import { runVirtualProbe } from '../../harness/twin/virtualProbe.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

test('virtual clock: time order, FIFO among equal times, defer after what is due, cancel', () => {
  const clock = new VirtualClock(0n);
  const seen: string[] = [];
  clock.at(20n, () => seen.push('b@20'));
  clock.at(10n, () => {
    seen.push('a@10');
    clock.defer(() => seen.push(`deferred@${clock.nowNs()}`));
  });
  clock.at(10n, () => seen.push('a2@10'));
  const h = clock.fireAt(15n, () => seen.push('cancelled'));
  h.cancel();
  clock.fireAt(5n, () => {
    seen.push('c@5');
    clock.fireAt(1n, () => seen.push(`past→now@${clock.nowNs()}`));
  });
  clock.run();
  assert.equal(seen, ['c@5', 'past→now@5', 'a@10', 'a2@10', 'deferred@10', 'b@20']);
  assert.is(clock.nowNs(), 20n);
});

test('a lone request: TTFT is the modelled prefill, each gap the modelled decode (× time scale), exactly', () => {
  const config = resolveSimConfig({ model: 'llama-3-8b', gpu: 'h100-sxm-80gb', scheduler: 'vllm', timeScale: 0.5 });
  const engine = engineConfigOf(config);
  const workload = workloadSchema.parse({ lengths: { prompt: 700, output: 5 }, arrivals: { process: 'constant' }, seed: 1 });
  const plan = planProbe({ workload, rateQps: 1, requests: 1, maxContextTokens: 4096 });
  const { records } = runVirtualProbe(plan, engine);
  assert.is(records.length, 1);
  const r = records[0];
  assert.is(r.status, 'ok');
  assert.is(r.outputTokens, 5);
  const prefillS = iterationCost(config.model, config.gpu, { prefills: [{ chunkTokens: 700, contextTokens: 0, completes: true }], decodeKvTokens: [] }).totalS * 0.5;
  assert.ok(Math.abs(r.chunks[0][0] - prefillS) <= 1e-6, `TTFT ${r.chunks[0][0]} vs modelled ${prefillS}`);
  for (let i = 1; i < 5; i++) {
    const decodeS = iterationCost(config.model, config.gpu, { prefills: [], decodeKvTokens: [700 + i] }).totalS * 0.5;
    const gap = r.chunks[i][0] - r.chunks[i - 1][0];
    assert.ok(Math.abs(gap - decodeS) <= 2e-6, `gap ${i}: ${gap} vs modelled ${decodeS}`);
  }
});

test('arrivals at one instant share the first batch (vllm), as requests in one event-loop turn do on the server', () => {
  const config = resolveSimConfig({ model: 'tiny', scheduler: 'vllm' });
  const clock = new VirtualClock(0n);
  const batches: number[] = [];
  const engine = new SimEngine(engineConfigOf(config), clock, () => {}, (t) => batches.push(t.prefills));
  clock.at(1000n, () => {
    for (let i = 0; i < 3; i++) engine.submit(newSimRequest(i, 100, 2, 'length'));
  });
  clock.run();
  assert.is(batches[0], 3);
  assert.is(engine.scheduler.idle, true);
});

test('same plan, same records (determinism); another seed, other records', () => {
  const config = resolveSimConfig({ model: 'llama-3-8b', gpu: 'h100-sxm-80gb', scheduler: 'sarathi' });
  const engine = engineConfigOf(config);
  const run = (seed: number) => {
    const workload = workloadSchema.parse({ lengths: { prompt: { min: 100, max: 2000 }, output: { min: 10, max: 200 } }, seed });
    return runVirtualProbe(planProbe({ workload, rateQps: 20, requests: 300, maxContextTokens: 4096 }), engine, { warmupFraction: 0.1 });
  };
  const a = run(3);
  const b = run(3);
  assert.equal(a, b);
  assert.is(a.records.length, 300);
  assert.is(a.records.filter((r) => r.warmup).length, 30);
  assert.ok(a.records.every((r) => r.status === 'ok' && r.outputTokens === r.maxTokens && r.chunks.length === r.maxTokens));
  assert.not.equal(run(4).records, a.records);
});

test.run();
