// Reads a recipe file: YAML syntax errors with line and column (nothing else can be read then),
// else every problem the files can tell at once: schema, lookups, engine limits, workload against
// the context. Throws one UserError listing them all.
import { readFile } from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { LineCounter, parseDocument, isMap, isPair, isScalar, type Node } from 'yaml';
import { UserError, printable, truncate } from '../util/errors.ts';
import { parseRecipe, type Recipe } from './parse.ts';
import { listGpuProfiles } from '../catalog/gpus.ts';
import { findModel, listModels } from '../catalog/models.ts';
import { lookupProblems, type Lookups } from './lookups.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import { MAX_ALIAS_COUNT, yamlExpansionProblem } from '../util/yamlLimits.ts';
import { launchProblems, launchWarnings } from './launchChecks.ts';

/** Reads the YAML file and returns its decoded value plus its text, or throws a UserError naming the line. */
export async function readYamlFile(file: string): Promise<{ raw: unknown; text: string; doc: ReturnType<typeof parseDocument> }> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(`${file}: cannot read the file (${code === 'ENOENT' ? 'no such file' : code ?? String(err)})`);
  }
  // linePos is only filled with prettyErrors; a LineCounter gives line and column without the code frame.
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, uniqueKeys: true, lineCounter });
  if (doc.errors.length > 0) {
    const lines = doc.errors.map((e) => {
      const at = e.linePos?.[0] ?? lineCounter.linePos(e.pos[0]);
      // yaml's message can quote the source line: cut and made terminal-safe like any quoted value.
      return `${file}:${at ? `${at.line}:${at.col}` : ''} YAML ${printable(truncate(e.message.split('\n')[0], 200))}`;
    });
    throw new UserError(lines.join('\n'));
  }
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    throw new UserError(`${file}: ${yamlExpansionProblem(err as Error)}`);
  }
  return { raw, text, doc };
}


/** The text of each `slo.<name>` entry as written, whitespace collapsed, so reports quote the user. */
function sloTexts(doc: ReturnType<typeof parseDocument>, text: string): Record<string, string> {
  const slo = doc.get('slo', true) as Node | undefined;
  const out: Record<string, string> = {};
  if (!isMap(slo)) return out;
  for (const pair of slo.items) {
    if (!isPair(pair) || !isScalar(pair.key)) continue;
    const start = pair.key.range?.[0];
    const end = (pair.value as Node | null)?.range?.[1];
    if (start === undefined || end === undefined) continue;
    out[String(pair.key.value)] = text.slice(start, end).replace(/\s+/g, ' ').trim();
  }
  return out;
}

export interface LoadOptions {
  /** Where secrets are read at launch; without it (a dry run) only what the files tell is checked. */
  env?: NodeJS.ProcessEnv;
  onWarning?: (message: string) => void;
  /** The recipe of a run being resumed: see parseRecipe's `storedRun`. */
  storedRun?: boolean;
  /**
   * Checks of the layers that use the recipe (the run plan, the inventory's hosts), run on a parsed
   * recipe and reported in the same list, so no problem waits for the next attempt.
   */
  moreChecks?: (recipe: Recipe) => string[];
}

/**
 * Loads and fully validates a recipe before anything is launched, in one pass: the schema, what
 * the catalogs and the disk say about the names it uses (read from the YAML even when other fields
 * are wrong), the engine's flags and limits, the workload against the model's context, and, given
 * `env` (where secrets are read at launch), that every secret is set there. A run passes its
 * environment; a dry run, which launches nothing, shows the plan without them. Only what needs the
 * network or Docker (an image's facts) is left to launch. Throws one UserError listing everything.
 */
export async function loadRecipe(file: string, opts: LoadOptions = {}): Promise<Recipe> {
  const { raw, text, doc } = await readYamlFile(file);
  const dir = dirname(resolve(file));
  const result = parseRecipe(raw, { file, dir, sloText: sloTexts(doc, text) }, { storedRun: opts.storedRun });
  const problems = result.ok ? [] : [...result.problems];
  problems.push(...lookupProblems(raw, file, fileLookups(dir)));
  if (result.ok) {
    const recipe = result.recipe;
    problems.push(...traceColumnProblems(recipe), ...launchProblems(recipe, opts.env ?? null), ...(opts.moreChecks?.(recipe) ?? []));
  }
  const unique = [...new Set(problems)];
  if (unique.length > 0) throw new UserError(`${file} has ${plural(unique.length, 'problem')}:\n  ${unique.join('\n  ')}`);
  const recipe = (result as { recipe: Recipe }).recipe;
  if (opts.env === undefined) for (const w of launchWarnings(recipe)) opts.onWarning?.(`${w} (a run refuses this)`);
  return recipe;
}

/** The catalogs and the disk as this machine has them, for a recipe in `dir`. */
export function fileLookups(dir: string): Lookups {
  return {
    gpuProfiles: listGpuProfiles(),
    findModel,
    models: listModels(),
    traceProblem: (path) => tracePathProblem(path, dir),
  };
}

// A trace file that exists must also have the columns the workload reads, so a dry run refuses
// what the run would refuse.
function traceColumnProblems(recipe: Recipe): string[] {
  const lengths = (recipe.workload as { lengths?: { trace?: string } }).lengths;
  if (lengths?.trace === undefined || tracePathProblem(lengths.trace, recipe.source.dir) !== null) return [];
  try {
    loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file);
    return [];
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    return [err.message];
  }
}

/**
 * Where a recipe may point: a relative path stays inside the recipe's directory (a recipe someone
 * sent cannot reach `../../../etc/passwd`); an absolute path is allowed by design, since the
 * person running the recipe names shared datasets that way and sees the path in the recipe.
 * Either must be a regular file. Messages never quote the file's content.
 */
export function tracePathProblem(path: string, recipeDir: string): string | null {
  const full = resolve(recipeDir, path);
  if (!isAbsolute(path)) {
    const rel = relative(recipeDir, full);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      return "must stay inside the recipe's directory (use an absolute path to name a file elsewhere)";
    }
  }
  if (!existsSync(full)) return 'must be an existing CSV file (relative to the recipe)';
  if (!statSync(full).isFile()) return 'must be a CSV file, not a directory or device';
  return null;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;
