// Option validation in process: defaults, KV capacity from memory, and one message naming every
// bad flag with its value and type.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveSimConfig } from '../../harness/sim/config.ts';
import { UserError } from '../../harness/util/errors.ts';
import { modelSizes } from '../../harness/catalog/models.ts';

function problem(options: Parameters<typeof resolveSimConfig>[0]): string {
  try {
    resolveSimConfig(options);
  } catch (err) {
    assert.instance(err, UserError);
    return (err as Error).message;
  }
  throw new Error('expected a UserError');
}

test('defaults: tiny on H100, vllm, budget max(4096, context), KV from (memory × 0.9 − weights)', () => {
  const c = resolveSimConfig({});
  assert.is(c.model.name, 'tiny');
  assert.is(c.gpu.name, 'h100-sxm-80gb');
  assert.is(c.scheduler, 'vllm');
  assert.is(c.maxNumBatchedTokens, 4096);
  assert.is(c.maxModelLen, 4096);
  const l3 = resolveSimConfig({ model: 'meta-llama/Meta-Llama-3-8B' });
  assert.is(l3.maxNumBatchedTokens, 8192);
  assert.is(l3.servedModelName, 'meta-llama/Meta-Llama-3-8B');
  // (79.6 GiB × 0.9 − 16.06 GB of weights) / (16 tokens × 128 KiB per token) ≈ 29k blocks
  assert.is(l3.totalKvBlocks, Math.floor((79.6 * 2 ** 30 * 0.9 - modelSizes(l3.model).weightBytes) / (16 * 131072)));
  assert.ok(l3.totalKvBlocks > 28_000 && l3.totalKvBlocks < 30_000, String(l3.totalKvBlocks));
  const tp2 = resolveSimConfig({ model: 'llama-3-70b', tensorParallel: 2 });
  assert.ok(tp2.totalKvBlocks > 0);
});

test('every bad option reported at once, each with flag, value and type', () => {
  const msg = problem({ timeScale: -1, port: 70000, scheduler: 'fifo' as never, faultStallFraction: 2, startDelay: 'soon' });
  assert.match(msg, /--time-scale must be > 0, got -1 \(number\)/);
  assert.match(msg, /--port must be <= 65535, got 70000 \(number\)/);
  assert.match(msg, /--scheduler must be vllm, sarathi or llamacpp, got "fifo" \(string\)/);
  assert.match(msg, /--fault-stall-fraction must be between 0 and 1, got 2 \(number\)/);
  assert.match(msg, /--start-delay must be a duration such as 25ms, 2s or 10m, got "soon" \(string\)/);
});

test('models that do not fit, TP that does not divide the heads, a too-small KV cache', () => {
  assert.match(problem({ model: 'llama-3-70b', gpu: 'a100-sxm-80gb' }), /does not fit: 131\.4 GiB of bf16 weights per GPU at --tensor-parallel 1/);
  assert.match(problem({ model: 'llama-3-8b', tensorParallel: 3 }), /--tensor-parallel must divide the model's 32 attention heads and 8 KV heads, got 3 \(number\)/);
  assert.match(problem({ numGpuBlocksOverride: 100 }), /KV cache too small: 100 blocks/);
  assert.match(problem({ model: 'tiny', maxModelLen: 9000 }), /--max-model-len must be <= tiny's context of 4096 tokens/);
  assert.match(problem({ maxNumBatchedTokens: 2048 }), /--max-num-batched-tokens must be >= --max-model-len \(4096\) with the vllm scheduler/);
  assert.is(resolveSimConfig({ scheduler: 'sarathi', maxNumBatchedTokens: 2048 }).scheduler, 'sarathi');
});

test('rope scaling: the context is the catalog\'s × the factor, and the longest context defaults to it (as vLLM derives it)', () => {
  assert.match(problem({ model: 'llama-3-8b', maxModelLen: 65536 }), /--max-model-len must be <= llama-3-8b's context of 8192 tokens, got 65536/);
  const stretched = resolveSimConfig({ model: 'llama-3-8b', maxModelLen: 65536, ropeScalingFactor: 8 });
  assert.is(stretched.maxModelLen, 65536);
  assert.is(resolveSimConfig({ model: 'llama-3-8b', ropeScalingFactor: 4 }).maxModelLen, 32768);
  assert.match(problem({ model: 'llama-3-8b', maxModelLen: 65536, ropeScalingFactor: 4 }), /8192 tokens × --rope-scaling-factor 4 = 32768, got 65536/);
  assert.match(problem({ ropeScalingFactor: 1 }), /--rope-scaling-factor must be > 1, got 1 \(number\)/);
});

test.run();
