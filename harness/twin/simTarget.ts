// Which simulated engine stands in for a recipe's target: the sim's own settings for `engine: sim`,
// and for vllm / sarathi the same scheduler policy, model, GPU profile, tensor parallelism and
// batch limits on the roofline cost model (the twin of a GPU deployment). Pure apart from reading
// the GPU profile file through the sim's config resolver.
import { LLAMACPP_DEFAULTS, type TargetSpec } from '../provision/targetSpec.ts';
import type { LinearCostModel } from '../sim/costModel.ts';
import { engineConfigOf, type EngineConfig } from '../sim/engine.ts';
import { resolveSimConfig, type SimConfig, type SimServerOptions } from '../sim/config.ts';
import { UserError } from '../util/errors.ts';

/** The sim options that model the target (no port, no faults: the twin has neither). */
export function simOptionsOf(target: TargetSpec, file: string): SimServerOptions {
  if (target.engine === 'endpoint') {
    throw new UserError(`${file}: target.engine "endpoint" has no model the twin can simulate (it needs vllm, sarathi or sim with a catalog model)`);
  }
  if (!target.model) throw new UserError(`${file}: target.model is needed to simulate the engine, got none`);
  const a = target.engineArgs;
  const scheduler = target.engine === 'sim' ? (target.sim?.scheduler ?? 'vllm') : target.engine === 'sarathi' ? 'sarathi' : 'vllm';
  return {
    model: target.model,
    ...(target.gpuProfile !== undefined ? { gpu: target.gpuProfile } : {}),
    scheduler,
    timeScale: target.engine === 'sim' ? (target.sim?.timeScale ?? 1) : 1,
    tensorParallel: target.tensorParallel,
    pipelineParallel: target.pipelineParallel,
    gpuMemoryUtilization: a.gpuMemoryUtilization,
    maxNumSeqs: a.maxNumSeqs,
    ...(a.maxNumBatchedTokens !== undefined ? { maxNumBatchedTokens: a.maxNumBatchedTokens } : {}),
    // vLLM's chunked prefill takes its budget from --max-num-batched-tokens; the adapter passes the chunk size there.
    ...(a.chunkSize !== undefined ? { chunkSize: a.chunkSize } : {}),
    ...(a.maxModelLen !== undefined ? { maxModelLen: a.maxModelLen } : {}),
    ...(a.ropeScaling !== undefined ? { ropeScalingFactor: a.ropeScaling.factor } : {}),
    port: 0,
  };
}

/** The resolved sim config of the target; a UserError names the recipe file when the sim refuses it. */
export function simConfigOf(target: TargetSpec, file: string): SimConfig {
  try {
    return resolveSimConfig(simOptionsOf(target, file));
  } catch (err) {
    if (err instanceof UserError) throw new UserError(`${file}: the twin cannot model this target: ${err.message}`);
    throw err;
  }
}

/** llama-server's settings the twin needs: slots (`--parallel`), context (`--ctx-size`) and n_batch. */
export interface LlamacppSlots {
  slots: number;
  ctxSize: number;
  /** llama.cpp's default n_batch (`-b`) is 2048. */
  nBatch?: number;
}

/** The recipe's llama.cpp settings, as the adapter launches the server (its defaults filled in). */
export function llamacppSlotsOf(target: TargetSpec): LlamacppSlots {
  return { slots: target.engineArgs.slots ?? LLAMACPP_DEFAULTS.slots, ctxSize: target.engineArgs.ctxSize ?? LLAMACPP_DEFAULTS.ctxSize };
}

/**
 * The twin of a llama-server: the fixed-slot scheduler on an iteration model calibrated to it. A CPU
 * has no roofline in the catalog, so there is no twin before a run has measured one; the catalog
 * model and GPU profile below only satisfy the engine's types (a calibrated model never reads them).
 */
export function llamacppEngineOf(slots: LlamacppSlots, iterationModel: LinearCostModel): EngineConfig {
  const base = engineConfigOf(resolveSimConfig({ model: 'tiny', scheduler: 'llamacpp', maxNumSeqs: slots.slots, port: 0 }));
  const slotContextTokens = Math.floor(slots.ctxSize / slots.slots);
  return {
    ...base,
    limits: { ...base.limits, maxNumBatchedTokens: slots.nBatch ?? 2048, slotContextTokens },
    iterationModel,
  };
}
