// What a recipe names that only the catalogs and the disk can confirm: its GPU profile, a model of
// the simulated engine, the context that bounds maxModelLen, a trace file. Read from the decoded
// YAML as written, not from the parsed recipe, so these are reported beside the schema's problems
// even when other fields are wrong: one pass tells the user everything the files can tell.
// A value of the wrong type is the schema's to report and is skipped here.
import { describeValue } from '../util/errors.ts';

export interface Lookups {
  /** Names of the GPU profiles in gpu-profiles/. */
  gpuProfiles: readonly string[];
  /** A catalog model by name, alias or Hugging Face id, or null when the catalog does not know it. */
  findModel: (model: string) => { name: string; maxContextTokens: number } | null;
  /** Names of the simulated engine's catalog models, listed when one is unknown. */
  models: readonly string[];
  /** Why a trace path cannot be read (`must be ...`), or null when it names a usable file. */
  traceProblem: (path: string) => string | null;
}

const field = (o: unknown, key: string): unknown => (o !== null && typeof o === 'object' && !Array.isArray(o) ? (o as Record<string, unknown>)[key] : undefined);

/** The problem of a `target.model` the simulated engine does not know (one text for every caller). */
export function simModelProblem(file: string, model: string, models: readonly string[]): string {
  return `${file}: target.model must name a model of the simulated engine's catalog (${models.join(', ')}), got ${describeValue(model)}`;
}

/** Every lookup problem of a decoded recipe, as `file: field must ..., got value`. */
export function lookupProblems(raw: unknown, file: string, lookups: Lookups): string[] {
  const problems: string[] = [];
  const target = field(raw, 'target');
  const gpuProfile = field(target, 'gpuProfile');
  if (typeof gpuProfile === 'string' && !lookups.gpuProfiles.includes(gpuProfile)) {
    problems.push(`${file}: target.gpuProfile must name a profile in gpu-profiles/ (${lookups.gpuProfiles.join(', ')}), got ${describeValue(gpuProfile)}`);
  }
  const model = field(target, 'model');
  const known = typeof model === 'string' ? lookups.findModel(model) : null;
  if (field(target, 'engine') === 'sim' && typeof model === 'string' && known === null) {
    problems.push(simModelProblem(file, model, lookups.models));
  }
  const maxModelLen = field(field(target, 'engineArgs'), 'maxModelLen');
  const factor = field(field(field(target, 'engineArgs'), 'ropeScaling'), 'factor');
  const scaled = typeof factor === 'number' && factor > 1 ? factor : null;
  const context = known === null ? 0 : Math.floor(known.maxContextTokens * (scaled ?? 1));
  if (known !== null && typeof maxModelLen === 'number' && maxModelLen > context) {
    const how = scaled === null ? ' (target.engineArgs.ropeScaling stretches it)' : ` × target.engineArgs.ropeScaling.factor ${scaled} = ${context}`;
    problems.push(`${file}: target.engineArgs.maxModelLen must be <= ${known.name}'s context of ${known.maxContextTokens} tokens${how}, got ${describeValue(maxModelLen)}`);
  }
  const trace = field(field(field(raw, 'workload'), 'lengths'), 'trace');
  if (typeof trace === 'string') {
    const problem = lookups.traceProblem(trace);
    if (problem !== null) problems.push(`${file}: workload.lengths.trace ${problem}, got ${describeValue(trace)}`);
  }
  return problems;
}
