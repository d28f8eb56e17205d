// What a recipe asks of this machine and of the engine, checked before a results directory exists:
// the secrets it names are set here, a gated model has a Hugging Face token to fetch it with, and
// the simulated engine would accept the exact flags a run would start it with (extraArgs included). Each problem names the recipe field; a secret's
// value is never read beyond "set or not".
import { findModel } from '../catalog/models.ts';
import { listGpuProfiles } from '../catalog/gpus.ts';
import { renderContainerSpec } from '../provision/containerSpec.ts';
import { scaledContextTokens } from '../provision/targetSpec.ts';
import { simServeArgvProblems } from '../sim/serveFlags.ts';
import { describeValue } from '../util/errors.ts';
import type { Recipe } from './parse.ts';

/**
 * Every launch problem of a parsed recipe, as `file: field message`. `env` is where secrets are
 * read at launch; null skips that check (a dry run launches nothing).
 */
export function launchProblems(recipe: Recipe, env: NodeJS.ProcessEnv | null): string[] {
  const { file } = recipe.source;
  const t = recipe.target;
  const problems: string[] = [];
  for (const [name, fromEnv] of Object.entries(env === null ? {} : t.secrets)) {
    const value = env![fromEnv];
    if (value === undefined || value === '') {
      problems.push(`${file}: target.secrets.${name} names the environment variable ${fromEnv}, which is not set here (export it before running; fluidcap passes it to the engine and never writes it down)`);
    }
  }
  // A key named but not set would send every request unauthenticated: the probes would fail with
  // 401s, which look like an engine that cannot serve, not like a missing variable.
  const keyEnv = t.endpoint?.apiKeyEnv;
  if (env !== null && t.engine === 'endpoint' && keyEnv !== undefined && !env[keyEnv]) {
    problems.push(`${file}: target.endpoint.apiKeyEnv names the environment variable ${keyEnv}, which is not set here (export it before running; fluidcap sends it as the bearer token and never writes it down)`);
  }
  if (t.engine === 'endpoint' || t.model === undefined) return problems;
  const gated = env === null ? null : gatedModelProblem(recipe);
  if (gated !== null) problems.push(gated);
  const model = findModel(t.model);
  const maxModelLen = t.engineArgs.maxModelLen;
  // A maxModelLen beyond the context, or a GPU profile or model the catalogs lack, is reported by
  // the lookups (recipe/lookups.ts); the engine is not asked again about the same field.
  if (model !== null && maxModelLen !== undefined && maxModelLen > scaledContextTokens(model.maxContextTokens, t.engineArgs.ropeScaling)) return problems;
  if (t.gpuProfile !== undefined && !listGpuProfiles().includes(t.gpuProfile)) return problems;
  if (t.engine === 'sim' && model !== null) problems.push(...simProblems(recipe));
  return problems;
}

// The engine is asked the way a run starts it: the rendered argv, parsed by `sim serve`'s own rules.
function simProblems(recipe: Recipe): string[] {
  const t = recipe.target;
  const argvOf = (target: Recipe['target']) => renderContainerSpec(target, { runId: 'check' })!.argv;
  const all = simServeArgvProblems(argvOf(t));
  if (all.length === 0) return [];
  const extra = t.engineArgs.extraArgs;
  const withoutExtra = extra.length > 0 ? simServeArgvProblems(argvOf({ ...t, engineArgs: { ...t.engineArgs, extraArgs: [] } })) : all;
  const field = extra.length > 0 && withoutExtra.length === 0 ? 'target.engineArgs.extraArgs' : 'target';
  const got = field === 'target.engineArgs.extraArgs' ? `, got ${describeValue(extra)}` : '';
  return all.map((p) => `${recipe.source.file}: ${field}: the simulated engine would refuse to start: ${p}${got}`);
}

/** Container variables under which vLLM's Hugging Face client finds a token. */
const HF_TOKEN_NAMES = ['HF_TOKEN', 'HUGGING_FACE_HUB_TOKEN'];

/**
 * A vLLM container fetches the model's config and tokenizer from Hugging Face even with
 * `loadFormat: dummy`; for a gated model that fails without a token. Null when the recipe passes one
 * (or the model is not gated, or the engine fetches nothing).
 */
export function gatedModelProblem(recipe: Recipe): string | null {
  const t = recipe.target;
  if ((t.engine !== 'vllm' && t.engine !== 'sarathi') || t.model === undefined) return null;
  const model = findModel(t.model);
  if (model === null || !model.gated) return null;
  if (HF_TOKEN_NAMES.some((n) => n in t.secrets)) return null;
  return `${recipe.source.file}: target.secrets must pass a Hugging Face token (secrets: { HF_TOKEN: HF_TOKEN }) for the gated model ${describeValue(t.model)}: ` +
    'vLLM fetches its config and tokenizer even with loadFormat: dummy, and Hugging Face refuses them without a token of an account that accepted the licence';
}

/** What a dry run warns about and a run refuses (the dry run launches nothing and reads no secret). */
export function launchWarnings(recipe: Recipe): string[] {
  const gated = gatedModelProblem(recipe);
  return gated === null ? [] : [gated];
}
