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

test('a cool-down: its arrivals load the engine while the measured requests end, unrecorded; the probe ends with the last measured one', () => {
  const config = resolveSimConfig({ model: 'llama-3-8b', gpu: 'h100-sxm-80gb', scheduler: 'vllm' });
  const engine = engineConfigOf(config);
  const workload = workloadSchema.parse({ lengths: { prompt: { min: 500, max: 3000 }, output: 200 }, seed: 5 });
  const plan = planProbe({ workload, rateQps: 30, requests: 240, maxContextTokens: 4096 });
  const measured = { ...plan, requests: plan.requests.slice(0, 200) };
  const cooled = runVirtualProbe(plan, engine, { warmupFraction: 0.1, coolDownRequests: 40 });
  const whole = runVirtualProbe(plan, engine, { warmupFraction: 0.1 });
  const drained = runVirtualProbe(measured, engine, { warmupFraction: 0.1 });
  const ids = (rs: { id: string }[]) => rs.map((r) => r.id).sort();
  assert.equal(ids(cooled.records), ids(measured.requests));
  assert.is(cooled.sent, 200);
  assert.is(cooled.planned, 200);
  assert.is(cooled.warmupRequests, 20);
  // Until the last measured request ends, the engine saw every arrival of the whole plan: the
  // measured requests' timelines are those of the whole plan run to its end.
  // (The warm-up share is of each run's own measured count: 20 of 200, 24 of 240.)
  const timeline = ({ warmup, ...r }: (typeof cooled.records)[number]) => r;
  const byId = new Map(whole.records.map((r) => [r.id, timeline(r)]));
  for (const r of cooled.records) assert.equal(timeline(r), byId.get(r.id), r.id);
  const lastEnd = Math.max(...cooled.records.map((r) => r.chunks.at(-1)![0]));
  assert.is(cooled.durationS, lastEnd);
  assert.ok(cooled.durationS < whole.durationS, `${cooled.durationS} < ${whole.durationS}`);
  // Without the cool-down the last measured requests end on a draining engine: faster.
  const endOf = (rs: typeof cooled.records, id: string) => rs.find((r) => r.id === id)!.chunks.at(-1)![0];
  const lastIds = measured.requests.slice(-10).map((r) => r.id);
  assert.ok(lastIds.some((id) => endOf(drained.records, id) < endOf(cooled.records, id)));
});

test.run();
