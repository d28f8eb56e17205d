// Which simulated engine stands in for a recipe's target: the sim's own settings for `engine: sim`,
// and for vllm / sarathi the same scheduler policy, model, GPU profile, tensor parallelism and
// batch limits on the roofline cost model (the twin of a GPU deployment). Pure apart from reading
// the GPU profile file through the sim's config resolver.
import type { TargetSpec } from '../provision/targetSpec.ts';
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
    gpuMemoryUtilization: a.gpuMemoryUtilization,
    maxNumSeqs: a.maxNumSeqs,
    ...(a.maxNumBatchedTokens !== undefined ? { maxNumBatchedTokens: a.maxNumBatchedTokens } : {}),
    // vLLM's chunked prefill takes its budget from --max-num-batched-tokens; the adapter passes the chunk size there.
    ...(a.chunkSize !== undefined ? { chunkSize: a.chunkSize } : {}),
    ...(a.maxModelLen !== undefined ? { maxModelLen: a.maxModelLen } : {}),
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
