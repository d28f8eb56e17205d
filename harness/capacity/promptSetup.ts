// Prompt set-up once the engine answers, shared by `run` and `probe`: the served model (from
// /v1/models when the recipe names none), token ids or text sized on the engine's own counts, the
// engine's per-request cache-off switch, and length checks at the shortest, middle and longest of
// the lengths given.
import { findModel } from '../catalog/models.ts';
import { preparePrompts, type PromptSetup } from '../load/tokenizeCalibration.ts';
import { UserError } from '../util/errors.ts';
import type { RunPlan } from './runPlan.ts';

export async function setUpPrompts(
  plan: RunPlan,
  engine: { name: string; baseUrl: string; apiKey?: string },
  lengths: readonly number[],
): Promise<PromptSetup> {
  const sorted = [...new Set(lengths)].sort((a, b) => a - b);
  return preparePrompts({
    baseUrl: engine.baseUrl,
    apiKey: engine.apiKey,
    api: plan.workload.api,
    model: plan.session.requestedModel ?? undefined,
    engine: engine.name,
    format: plan.prompts.format,
    tokenIdRange: plan.prompts.tokenIdRange ?? undefined,
    knownVocab: findModel(plan.servedModel)?.vocabSize ?? null,
    cacheOff: plan.prompts.cache.mode === 'off',
    checkLengths: [...new Set([sorted[0], sorted[Math.floor(sorted.length / 2)], sorted[sorted.length - 1]])],
    nonce: plan.prompts.nonce ?? undefined,
  }).catch((err: Error) => {
    throw new UserError(`${plan.recipeFile}: prompts cannot be prepared for ${engine.baseUrl}: ${err.message}`);
  });
}
