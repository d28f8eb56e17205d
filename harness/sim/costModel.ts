// The iteration-time model: how long one engine iteration takes on a GPU for a given batch
// (prefill chunks and decodes), from a roofline of the model's layers. Pure: no I/O.
import type { GpuProfile } from '../catalog/gpuProfile.ts';
import { modelSizes, type ModelSpec } from '../catalog/models.ts';

// One prefill chunk in a batch: `chunkTokens` new tokens after `contextTokens` already in the KV cache.
export interface PrefillChunk {
  chunkTokens: number;
  contextTokens: number;
  /** True when this chunk ends the prompt, so a token is sampled (LM head runs for it). */
  completes: boolean;
}

// A batch as the scheduler composes it.
export interface BatchShape {
  prefills: PrefillChunk[];
  /** KV length (tokens already cached) of each decoding request. */
  decodeKvTokens: number[];
}

// The parts of an iteration's time, in seconds, for tests and traces.
export interface IterationCost {
  totalS: number;
  linearS: number;
  prefillAttentionS: number;
  decodeAttentionS: number;
  allReduceS: number;
  lmHeadS: number;
  overheadS: number;
}

const BF16_BYTES = 2;

// Linear layers of ONE transformer layer for `tokens` tokens: max of compute- and weight-read-bound.
export function linearLayerTimeS(model: ModelSpec, gpu: GpuProfile, tokens: number, tensorParallel = 1): number {
  const params = modelSizes(model).linearParamsPerLayer / tensorParallel;
  const computeS = (2 * tokens * params) / (gpu.bf16Tflops * 1e12 * gpu.efficiency.compute);
  const weightReadS = (params * BF16_BYTES) / (gpu.hbmTBps * 1e12 * gpu.efficiency.memory);
  return Math.max(computeS, weightReadS);
}

// Whole-model time of one iteration. Prefill attention costs ∝ Σ c·(ctx + c/2), which for fresh
// prompts is ½Σc², i.e. one prompt of the √Σc² equivalent length; decode attention ∝ KV bytes read.
export function iterationCost(model: ModelSpec, gpu: GpuProfile, batch: BatchShape, tensorParallel = 1): IterationCost {
  const sizes = modelSizes(model);
  const tp = tensorParallel;
  const eff = gpu.efficiency;
  const peakFlops = gpu.bf16Tflops * 1e12;
  const bandwidth = gpu.hbmTBps * 1e12;
  const prefillTokens = batch.prefills.reduce((s, p) => s + p.chunkTokens, 0);
  const tokens = prefillTokens + batch.decodeKvTokens.length;
  if (tokens === 0) {
    return { totalS: 0, linearS: 0, prefillAttentionS: 0, decodeAttentionS: 0, allReduceS: 0, lmHeadS: 0, overheadS: 0 };
  }

  const linearS = model.layers * linearLayerTimeS(model, gpu, tokens, tp);

  const qWidth = model.heads * sizes.headDim;
  let causalPairs = 0;
  for (const p of batch.prefills) causalPairs += p.chunkTokens * (p.contextTokens + (p.chunkTokens + 1) / 2);
  const prefillAttentionS = (model.layers * 4 * qWidth * causalPairs) / tp / (peakFlops * eff.attention);

  const kvTokensRead = batch.decodeKvTokens.reduce((s, k) => s + k, 0);
  const decodeAttentionS = (kvTokensRead * sizes.kvBytesPerToken) / tp / (bandwidth * eff.memory);

  let allReduceS = 0;
  if (tp > 1) {
    const linkGBps = gpu.nvlinkGBps > 0 ? gpu.nvlinkGBps : gpu.pcieGBps;
    const bytes = tokens * model.hiddenSize * BF16_BYTES;
    const oneS = ((2 * (tp - 1)) / tp) * bytes / (linkGBps * 1e9 * eff.allReduce) + eff.allReduceLatencyUs * 1e-6;
    allReduceS = model.layers * 2 * oneS;
  }

  const sampled = batch.decodeKvTokens.length + batch.prefills.filter((p) => p.completes).length;
  let lmHeadS = 0;
  if (sampled > 0) {
    const params = (model.vocabSize * model.hiddenSize) / tp;
    lmHeadS = Math.max(
      (2 * sampled * params) / (peakFlops * eff.compute),
      (params * BF16_BYTES) / (bandwidth * eff.memory),
    );
  }

  const overheadS = eff.iterationOverheadMs * 1e-3;
  const totalS = linearS + prefillAttentionS + decodeAttentionS + allReduceS + lmHeadS + overheadS;
  return { totalS, linearS, prefillAttentionS, decodeAttentionS, allReduceS, lmHeadS, overheadS };
}

/**
 * One activation hop between pipeline stages: the batch's hidden states (bf16) over the GPUs' link
 * (NVLink where the profile has it, else PCIe) plus the link's latency.
 */
export function pipelineHopS(model: ModelSpec, gpu: GpuProfile, tokens: number): number {
  const linkGBps = gpu.nvlinkGBps > 0 ? gpu.nvlinkGBps : gpu.pcieGBps;
  return (tokens * model.hiddenSize * BF16_BYTES) / (linkGBps * 1e9 * gpu.efficiency.allReduce) + gpu.efficiency.allReduceLatencyUs * 1e-6;
}

// An iteration-time model fitted to a measured engine instead of derived from a roofline: linear
// in what a batch computes. A batch with prompt tokens starts from the prefill base (one whole
// prompt's fixed cost, as the isolated-prefill profile measures it), a decode-only batch from the
// decode base; prompt tokens, causal attention pairs and decoding sequences each add their own
// per-unit time. For an isolated prompt of P tokens this is a + b·P + c·P² with
// perPromptTokenS = b − c and perAttentionPairS = 2c (pairs = P(P+1)/2), so the profile's
// quadratic maps onto it exactly.
export interface LinearCostModel {
  prefillBaseS: number;
  perPromptTokenS: number;
  perAttentionPairS: number;
  decodeBaseS: number;
  perDecodeS: number;
}

/** The time of one iteration under a fitted linear model (never below zero). */
export function linearIterationS(m: LinearCostModel, batch: BatchShape): number {
  let promptTokens = 0;
  let pairs = 0;
  for (const p of batch.prefills) {
    promptTokens += p.chunkTokens;
    pairs += p.chunkTokens * (p.contextTokens + (p.chunkTokens + 1) / 2);
  }
  const decodes = batch.decodeKvTokens.length;
  if (promptTokens === 0 && decodes === 0) return 0;
  const base = promptTokens > 0 ? m.prefillBaseS : m.decodeBaseS;
  return Math.max(0, base + m.perPromptTokenS * promptTokens + m.perAttentionPairS * pairs + m.perDecodeS * decodes);
}
