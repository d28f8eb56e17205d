// Calibration recovers the engine's iteration times. The "real" engine here is the simulated one on
// an A100; the twin starts as an H100 (a different roofline) and is fitted to what the A100 run
// measured: its isolated-prefill profile and the inter-token gaps of one probe. Measured in virtual
// time the measurements are exact, so what is left is the model's own error: decode iterations
// within 2% at every batch size the probe saw (measured: < 1%); isolated prefills within 6% over
// the profiled lengths (measured: 4.8% at 128 tokens, < 3% from 256 up), the profile's quadratic
// not following the roofline's bend from weight-bound to compute-bound. The uncalibrated H100 twin
// is off by more than 25% on both, so the test fails without the fit.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveSimConfig } from '../../harness/sim/config.ts';
import { engineConfigOf, modelledIterationS, type EngineConfig } from '../../harness/sim/engine.ts';
import { planProfile } from '../../harness/capacity/profilePlan.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { runVirtualProfile } from '../../harness/twin/virtualProfile.ts';
import { runVirtualProbe } from '../../harness/twin/virtualProbe.ts';
import { calibrate, calibratedEngine, decodeGaps } from '../../harness/twin/calibrate.ts';
import { llamacppEngineOf } from '../../harness/twin/simTarget.ts';
import { rehearse, twinEngineOf, UncalibratedTwin } from '../../harness/twin/rehearse.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const engineOn = (gpu: string, scheduler: 'vllm' | 'sarathi'): EngineConfig =>
  engineConfigOf(resolveSimConfig({ model: 'llama-3-8b', gpu, scheduler, maxModelLen: 4096, port: 0 }));
const workload = workloadSchema.parse({ lengths: { prompt: { min: 256, max: 1024 }, output: { min: 32, max: 96 } }, arrivals: { process: 'poisson' }, seed: 7 });
const profilePlan = planProfile({ promptLengths: [128, 256, 512, 1024, 2048], repeats: 3, warmup: 1 }, { maxContextTokens: 4096 });

function measure(engine: EngineConfig, qps: number) {
  const profile = runVirtualProfile(profilePlan, engine);
  const probe = runVirtualProbe(planProbe({ workload, rateQps: qps, requests: 120, maxContextTokens: 4096, idPrefix: '01' }), engine);
  return { profile, records: probe.records };
}

const decodeShape = (n: number, kv: number) => ({ prefills: [], decodeKvTokens: Array.from({ length: n }, () => kv) });
const prefillShape = (p: number) => ({ prefills: [{ chunkTokens: p, contextTokens: 0, completes: true }], decodeKvTokens: [] });
const relErr = (x: number, truth: number) => Math.abs(x - truth) / truth;

for (const scheduler of ['vllm', 'sarathi'] as const) {
  test(`${scheduler}: a twin that started as an H100 recovers the A100's iteration times`, () => {
    const truth = engineOn('a100-sxm-80gb', scheduler);
    const twin = engineOn('h100-sxm-80gb', scheduler);
    const { profile, records } = measure(truth, 8);
    const cal = calibrate({
      fit: profile.fit,
      prefills: profile.points,
      records,
      source: { fit: 'profile/fit.json', prefill: 'profile/prefill.jsonl', probe: 'probes/01-qps-8/timelines.jsonl' },
      uncalibrated: (shape) => modelledIterationS(twin, shape),
      meanKvTokens: 700,
    });
    const calibrated = calibratedEngine(twin, cal);
    assert.ok(cal.decode, `no decode fit: ${cal.notes.join('; ')}`);
    assert.ok(cal.decode!.rows.length >= 3, `only ${cal.decode!.rows.length} batch sizes`);
    const lines: string[] = [];
    for (const p of profilePlan.promptLengths) {
      const t = modelledIterationS(truth, prefillShape(p));
      const c = modelledIterationS(calibrated, prefillShape(p));
      const u = modelledIterationS(twin, prefillShape(p));
      lines.push(`prefill ${p}: A100 ${(t * 1e3).toFixed(2)} calibrated ${(c * 1e3).toFixed(2)} H100 ${(u * 1e3).toFixed(2)} ms`);
      assert.ok(relErr(c, t) < 0.06, lines.join('\n'));
      assert.ok(relErr(u, t) > 0.25, `the uncalibrated twin is already close: ${lines.join('\n')}`);
    }
    for (const row of cal.decode!.rows) {
      // The A100's decode iteration at this batch size, at about the KV length the probe's requests had.
      const t = modelledIterationS(truth, decodeShape(row.decoding, 700));
      const c = modelledIterationS(calibrated, decodeShape(row.decoding, 700));
      const u = modelledIterationS(twin, decodeShape(row.decoding, 700));
      lines.push(`decode ×${row.decoding} (${row.gaps} gaps): A100 ${(t * 1e3).toFixed(2)} calibrated ${(c * 1e3).toFixed(2)} H100 ${(u * 1e3).toFixed(2)} ms`);
      assert.ok(relErr(c, t) < 0.02, lines.join('\n'));
      assert.ok(relErr(u, t) > 0.25, lines.join('\n'));
    }
    assert.ok(cal.decode!.maxAbsRelError < 0.02 && cal.prefill.maxAbsRelError < 0.06, JSON.stringify(cal, null, 1));
    // Out of sample: requests that had the engine to themselves took their fitted prefill time.
    assert.ok(cal.probePrefill && cal.probePrefill.requests >= 1 && Math.abs(cal.probePrefill.medianRatio - 1) < 0.06, JSON.stringify(cal.probePrefill));
  });
}

test('llama.cpp slots: the CPU iteration model (per-token and per-sequence terms) is recovered from a profile and a probe', () => {
  // A made-up CPU: 4 ms per step, 40 µs per prompt token, 1.5 ms per generating slot.
  const cpu = { prefillBaseS: 0.004, perPromptTokenS: 40e-6, perAttentionPairS: 0, decodeBaseS: 0.004, perDecodeS: 0.0015 };
  const truth = llamacppEngineOf({ slots: 4, ctxSize: 8192 }, cpu);
  const lengths = workloadSchema.parse({ lengths: { prompt: { min: 32, max: 256 }, output: { min: 16, max: 64 } }, arrivals: { process: 'poisson' }, seed: 5 });
  const profile = runVirtualProfile(planProfile({ promptLengths: [32, 64, 128, 256], repeats: 3, warmup: 1 }, { maxContextTokens: 2048 }), truth);
  const probe = runVirtualProbe(planProbe({ workload: lengths, rateQps: 6, requests: 80, maxContextTokens: 2048, idPrefix: '01' }), truth);
  const cal = calibrate({ fit: profile.fit, prefills: profile.points, records: probe.records, source: { fit: 'f', prefill: 'p', probe: 'q' } });
  assert.ok(cal.decode && cal.decode.rows.length >= 3, JSON.stringify(cal.decode));
  const m = cal.model;
  const near = (x: number, y: number, tol: number) => Math.abs(x - y) <= tol * Math.abs(y);
  assert.ok(near(m.perPromptTokenS, cpu.perPromptTokenS, 0.02) && near(m.prefillBaseS, cpu.prefillBaseS, 0.05), JSON.stringify(m));
  assert.ok(near(m.perDecodeS, cpu.perDecodeS, 0.02) && near(m.decodeBaseS, cpu.decodeBaseS, 0.05), JSON.stringify(m));
});

test('decode gaps: batch size from the timelines, gaps beside a prefill marked', () => {
  const rec = (id: string, sentS: number, times: number[]): TimelineRecord => ({
    id, scheduledS: sentS, sentS, promptTokens: 10, maxTokens: times.length, outputTokens: times.length,
    chunks: times.map((t) => [t, 1]), status: 'ok', httpStatus: 200, error: null,
  });
  // a decodes alone 1.0→1.1→1.2; b is sent at 1.15, first token 1.3; then both decode 1.3→1.4.
  const gaps = decodeGaps([rec('a', 0.9, [1.0, 1.1, 1.2, 1.3, 1.4]), rec('b', 1.15, [1.3, 1.4])]);
  const show = gaps.map((g) => `${g.gapS.toFixed(2)}/${g.decoding}/${g.onlyDecode}`);
  assert.equal(show, ['0.10/1/true', '0.10/1/false', '0.10/1/false', '0.10/2/true', '0.10/2/true']);
});

test('decode fit: a line with a negative intercept is refitted through the origin (step time per sequence, as on a CPU)', () => {
  const rec = (id: string, sentS: number, firstS: number, n: number, gapS: number): TimelineRecord => ({
    id, scheduledS: sentS, sentS, promptTokens: 10, maxTokens: n, outputTokens: n,
    chunks: Array.from({ length: n }, (_, i) => [firstS + i * gapS, 1] as [number, number]), status: 'ok', httpStatus: 200, error: null,
  });
  // Alone: 0.5 ms per token; two together: 1.1 ms per token (a line through −0.1 ms at zero sequences).
  const records = [rec('a', 0, 0.01, 60, 0.0005), rec('b', 1, 1.01, 60, 0.0011), rec('c', 1, 1.01, 60, 0.0011)];
  const cal = calibrate({ fit: { a: 0.004, b: 0, c: 1e-7 }, prefills: [], records, source: { fit: 'f', prefill: 'p', probe: 'q' } });
  assert.is(cal.model.decodeBaseS, 0);
  // Count-weighted through the origin: (59·1·0.5 + 118·2·1.1) / (59·1 + 118·4) ms.
  const expected = (59 * 0.0005 + 118 * 2 * 0.0011) / (59 + 118 * 4);
  assert.ok(Math.abs(cal.model.perDecodeS - expected) < 1e-9, `${cal.model.perDecodeS} vs ${expected}`);
  assert.equal(cal.decode!.rows.map((r) => [r.decoding, r.gaps]), [[1, 59], [2, 118]]);
});

test('no probe yet: decode taken from the profile and said so', () => {
  const cal = calibrate({ fit: { a: 0.01, b: 1e-5, c: 0 }, prefills: [{ promptTokens: 100, prefillS: 0.011 }], records: null, source: { fit: 'f', prefill: 'p', probe: null } });
  assert.is(cal.decode, null);
  assert.ok(Math.abs(cal.model.decodeBaseS - 0.01001) < 1e-9);
  assert.match(cal.notes.join(' '), /no probe measured/);
});

test('a llama.cpp recipe has no twin before calibration; with one it is the slot scheduler of the recipe\'s slots and context', async () => {
  const recipe = await loadRecipe('recipes/llamacpp-cpu.yaml');
  assert.throws(() => twinEngineOf(recipe), (e: Error) => e instanceof UncalibratedTwin && /until a run has measured one/.test(e.message));
  const model = { prefillBaseS: 0.004, perPromptTokenS: 2e-5, perAttentionPairS: 1e-7, decodeBaseS: 0.001, perDecodeS: 0.0005 };
  const engine = twinEngineOf(recipe, { model });
  assert.equal(engine.limits, { policy: 'llamacpp', maxNumSeqs: 4, maxNumBatchedTokens: 2048, chunkSize: 512, slotContextTokens: 2048 });
  assert.equal(engine.iterationModel, model);
  // The run plan renders the container spec, which names the model file; the twin never opens it.
  const before = process.env.FLUIDCAP_LLAMA_MODEL;
  process.env.FLUIDCAP_LLAMA_MODEL = '/models/stories260K.gguf';
  let r;
  try {
    r = rehearse(recipe, undefined, { calibration: { model }, fit: { a: 0.004, b: 2e-5, c: 5e-8, r2: 1, n: 12 } });
  } finally {
    if (before === undefined) delete process.env.FLUIDCAP_LLAMA_MODEL;
    else process.env.FLUIDCAP_LLAMA_MODEL = before;
  }
  assert.ok(r.probes.length > 0 && r.capacityQps > 0, JSON.stringify({ capacity: r.capacityQps, reason: r.reason }));
});

test.run();
