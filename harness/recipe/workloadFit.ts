// Does the workload fit the model's context? Requests whose prompt + output would exceed it are cut
// (Vidur's proportional truncation, load/plan.ts), which changes the workload being measured: a
// recipe asking for 256–10000-token prompts under a 4096-token context would otherwise be measured
// on prompts piled at the cap. A cut is accepted when the recipe says so by a cap of its own
// (workload.lengths.maxTotalTokens within the context); presets and traces carry the cap of the
// paper that defines them and are cut as that paper does. Pure.
import type { LengthDist } from '../load/lengths.ts';
import { PRESETS, shareOverCap } from '../load/lengths.ts';
import { createRng, deriveSeed } from '../util/rng.ts';
import type { Recipe } from './parse.ts';
import { scaledContextTokens } from '../provision/targetSpec.ts';

/** A model's context when no catalog knows it and the recipe sets no maxModelLen. */
export const ASSUMED_CONTEXT_TOKENS = 4096;

/** The context a run's requests must fit, and the words that say where it comes from. */
export function runContext(target: Recipe['target'], modelContext: (model: string) => number | null): { tokens: number; from: string } {
  const set = target.engineArgs.maxModelLen;
  if (set !== undefined) return { tokens: set, from: 'target.engineArgs.maxModelLen' };
  const known = target.model ? modelContext(target.model) : null;
  const rope = target.engineArgs.ropeScaling;
  if (known !== null) return { tokens: scaledContextTokens(known, rope), from: `${target.model}'s context${rope ? ` × target.engineArgs.ropeScaling.factor ${rope.factor}` : ''}` };
  return { tokens: ASSUMED_CONTEXT_TOKENS, from: 'the context assumed for a model the catalog does not know (set target.engineArgs.maxModelLen)' };
}

const describeDist = (d: LengthDist): string => {
  switch (d.dist) {
    case 'fixed':
      return `${d.tokens}`;
    case 'uniform':
      return `${d.min}–${d.max}`;
    case 'quantiles':
      return `median ${d.median}, p90 ${d.p90}`;
    case 'zipf':
      return `zipf ${d.min}–${d.max}`;
  }
};

/** The problem of a workload cut to the context without the recipe asking, or null. */
export function contextCutProblem(recipe: Recipe, modelContext: (model: string) => number | null): string | null {
  const lengths = recipe.workload.lengths;
  const context = runContext(recipe.target, modelContext);
  if (lengths.kind === 'preset') {
    // A preset without a cap of its own (the full Arxiv trace) is measured only where none of it is cut.
    const needs = PRESETS[lengths.preset].needsContextTokens;
    if (needs === undefined || needs <= context.tokens) return null;
    return (
      `${recipe.source.file}: workload.lengths.preset ${lengths.preset} draws prompt + output up to ${needs} tokens, above the ${context.tokens}-token context ` +
      `(${context.from}), so its longest requests would be cut; set target.engineArgs.maxModelLen: ${needs} (with target.engineArgs.ropeScaling past the model's trained context)`
    );
  }
  if (lengths.kind !== 'dists') return null;
  if (lengths.maxTotalTokens !== undefined && lengths.maxTotalTokens <= context.tokens) return null;
  const rng = createRng(deriveSeed(recipe.workload.seed, 'context-fit'));
  const share = shareOverCap(lengths.prompt, lengths.output, context.tokens, rng);
  if (share === 0) return null;
  const pct = share >= 0.01 ? `${Math.round(share * 100)}%` : share >= 0.001 ? `${(share * 100).toFixed(1)}%` : 'under 0.1%';
  const own = lengths.maxTotalTokens === undefined ? '' : ` (workload.lengths.maxTotalTokens ${lengths.maxTotalTokens} is above it)`;
  return (
    `${recipe.source.file}: workload.lengths: about ${pct} of requests would have prompt + output above the ${context.tokens}-token context ` +
    `(${context.from})${own} and be cut to it, so the run would measure another workload; got prompt ${describeDist(lengths.prompt)}, ` +
    `output ${describeDist(lengths.output)} tokens. Shorten workload.lengths.prompt or output, raise the context, or accept the cut ` +
    `with workload.lengths.maxTotalTokens: ${context.tokens} (Vidur's proportional truncation)`
  );
}
