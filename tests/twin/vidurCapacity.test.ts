// Vidur's capacity on the twin (the highest rate with P99 scheduling delay under 5 s) and pipeline
// parallelism in the simulated engine and the twin's search space: each probe's verdict is its
// requests' scheduling delays, not the SLO; a pipeline runs one micro-batch per stage at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { planOf } from '../../harness/twin/rehearse.ts';
import { capacityRuleOf, runTwinSearch, VIDUR_CAPACITY } from '../../harness/twin/twinSearch.ts';
import { simConfigOf } from '../../harness/twin/simTarget.ts';
import { engineConfigOf, modelledIterationS } from '../../harness/sim/engine.ts';
import { resolveSimConfig } from '../../harness/sim/config.ts';
import { microBatchConfig } from '../../harness/sim/pipeline.ts';
import { pipelineHopS } from '../../harness/sim/costModel.ts';
import { runVirtualProbe } from '../../harness/twin/virtualProbe.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { percentile } from '../../harness/metrics/percentile.ts';
import { prepareTwinSweep, evaluateOnTwin } from '../../harness/twin/twinSweep.ts';
import { UserError } from '../../harness/util/errors.ts';

const recipe = await loadRecipe('recipes/quickstart.yaml');

test("scheduling-delay capacity: each probe passes iff its P99 scheduling delay is under 5 s, runs to its end, and the capacity is not the SLO's", () => {
  const plan = planOf(recipe);
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const bySlo = runTwinSearch({ plan, workload: recipe.workload, engine });
  // The quickstart's tiny model never queues for 5 s within a probe; a 0.5 s bound puts its knee inside the search's range.
  const rule = { kind: 'scheduling-delay', percentile: 99, maxS: 0.5 } as const;
  const vidur = runTwinSearch({ plan, workload: recipe.workload, engine, capacity: rule });
  assert.ok(vidur.bracket.passQps !== null && vidur.bracket.failQps !== null, JSON.stringify(vidur.bracket));
  for (const p of vidur.probes) {
    assert.is(p.earlyStop, null, `probe at ${p.qps} QPS runs to its end`);
    assert.is(p.passed, p.sloValue! < 0.5, `probe at ${p.qps} QPS: P99 delay ${p.sloValue}`);
  }
  assert.ok(vidur.probes.find((p) => p.qps === vidur.bracket.passQps)!.sloValue! < 0.5);
  assert.ok(vidur.probes.find((p) => p.qps === vidur.bracket.failQps)!.sloValue! >= 0.5);
  // The SLO plays no part: judged at P90 instead of P99, the SLO's capacity moves, the scheduling
  // delay's probes and capacity do not.
  const loose = { ...plan, slo: { ...plan.slo, fluidity: { ...plan.slo.fluidity!, percentile: 90 } } };
  const looseSlo = runTwinSearch({ plan: loose, workload: recipe.workload, engine });
  assert.ok(Math.abs(looseSlo.capacityQps - bySlo.capacityQps) > 0.05 * bySlo.capacityQps, `the SLO's capacity ${bySlo.capacityQps}, at P90 ${looseSlo.capacityQps}`);
  const looseVidur = runTwinSearch({ plan: loose, workload: recipe.workload, engine, capacity: rule });
  assert.equal(looseVidur.probes.map((p) => [p.qps, p.passed, p.sloValue]), vidur.probes.map((p) => [p.qps, p.passed, p.sloValue]));
  assert.is(looseVidur.capacityQps, vidur.capacityQps);
  assert.equal(capacityRuleOf('scheduling-delay'), VIDUR_CAPACITY);
  assert.throws(() => capacityRuleOf('p99'), (e: unknown) => e instanceof UserError && /--capacity must be slo or scheduling-delay, got "p99"/.test((e as Error).message));
});

test('scheduling delay: from arrival to the start of the first iteration that schedules the request, never past its first token', () => {
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const workload = workloadSchema.parse({ lengths: { prompt: 400, output: 20 }, arrivals: { process: 'poisson' }, seed: 5 });
  const plan = planProbe({ workload, rateQps: 40, requests: 200, maxContextTokens: 4096 });
  const run = runVirtualProbe(plan, engine);
  const delays = run.records.map((r) => run.schedulingDelayS[r.id]);
  assert.ok(delays.every((d) => d !== undefined && d >= 0));
  run.records.forEach((r, i) => assert.ok(delays[i] <= r.chunks[0][0] - r.sentS + 1e-9, `${r.id}: delay ${delays[i]} after its first token`));
  assert.ok(percentile(delays, 99) > 0, 'a loaded probe queues some request');
});

test('pipeline parallelism: S micro-batches at once, each with 1/S of the batch cap and KV, its iteration the whole model plus S − 1 hops', () => {
  const one = resolveSimConfig({ model: 'llama-2-70b', gpu: 'h100-sxm-80gb', tensorParallel: 2, maxNumSeqs: 2, scheduler: 'sarathi' });
  const two = resolveSimConfig({ model: 'llama-2-70b', gpu: 'h100-sxm-80gb', tensorParallel: 2, pipelineParallel: 2, maxNumSeqs: 2, scheduler: 'sarathi' });
  // Four GPUs hold the weights once: more KV left per GPU than on two.
  assert.ok(two.totalKvBlocks > 2 * one.totalKvBlocks, `${two.totalKvBlocks} vs ${one.totalKvBlocks}`);
  const lane = microBatchConfig(engineConfigOf(two));
  assert.equal([lane.limits.maxNumSeqs, lane.totalKvBlocks], [1, Math.floor(two.totalKvBlocks / 2)]);
  const shape = { prefills: [], decodeKvTokens: [1000] };
  const hop = pipelineHopS(two.model, two.gpu, 1);
  assert.ok(Math.abs(modelledIterationS(engineConfigOf(two), shape) - modelledIterationS(engineConfigOf(one), shape) - hop) < 1e-12);
  // Two requests at once: with two stages each has its micro-batch and neither waits; with one
  // stage and the same batch cap of 1 per micro-batch, the second waits for the first to end.
  const workload = workloadSchema.parse({ lengths: { prompt: 300, output: 8 }, arrivals: { process: 'constant' }, seed: 1 });
  const plan = planProbe({ workload, rateQps: 1e6, requests: 2, maxContextTokens: 4096 });
  const piped = runVirtualProbe(plan, engineConfigOf(two));
  assert.ok(Object.values(piped.schedulingDelayS).every((d) => d < 1e-3), JSON.stringify(piped.schedulingDelayS));
  const serial = runVirtualProbe(plan, engineConfigOf(resolveSimConfig({ model: 'llama-2-70b', gpu: 'h100-sxm-80gb', tensorParallel: 2, maxNumSeqs: 1, scheduler: 'sarathi' })));
  const [first, second] = serial.records.map((r) => serial.schedulingDelayS[r.id]).sort((a, b) => a - b);
  assert.ok(first < 1e-3 && second > 0.05, `${first}, ${second}`);
  assert.match(String((() => { try { resolveSimConfig({ model: 'llama-2-70b', pipelineParallel: 3 }); } catch (e) { return (e as Error).message; } })()), /--pipeline-parallel must divide the model's 80 layers/);
});

test("the twin's search space holds Vidur's: TP and PP in {1, 2, 4}, batch 32 to 512; a PP configuration is priced for TP × PP GPUs", async () => {
  const { runs } = await prepareTwinSweep('sweeps/vidur-fig5.yaml');
  const values = (k: string) => [...new Set(runs.map((r) => r.config.values[k]))].sort((a, b) => Number(a) - Number(b));
  assert.equal(values('tensorParallel'), [1, 2, 4]);
  assert.equal(values('pipelineParallel'), [1, 2, 4]);
  assert.equal(values('maxNumSeqs'), [32, 64, 128, 256, 512]);
  assert.ok(runs.every((r) => r.recipe.target.pipelineParallel === r.config.values.pipelineParallel));
  // The paper's Chat-1M best (PP 2, TP 2, Sarathi-Serve chunk 512, batch 256, H100), on the check's matrix.
  const check = (await prepareTwinSweep('sweeps/vidur-check.yaml')).runs;
  const best = check.find((r) => r.config.values.pipelineParallel === 2 && r.config.values.tensorParallel === 2 && r.config.values.scheduler === 'sarathi' && r.config.values.maxNumSeqs === 256 && r.config.values.gpuProfile === 'h100-sxm-80gb')!;
  assert.ok(best, 'the check sweeps PP 2 × TP 2');
  const row = evaluateOnTwin(best);
  assert.equal([row.status, row.tensorParallel, row.pipelineParallel, row.gpuCount], ['ranked', 2, 2, 4]);
});

test.run();
