// Reads a recipe file: YAML syntax errors with line and column, then schema problems, then the
// checks that need the disk (GPU profile, trace file). Throws one UserError listing them all.
import { readFile } from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { LineCounter, parseDocument, isMap, isPair, isScalar, type Node } from 'yaml';
import { UserError, describeValue, printable, truncate } from '../util/errors.ts';
import { parseRecipe, type Recipe } from './parse.ts';
import { listGpuProfiles } from '../catalog/gpus.ts';
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

/**
 * Loads and fully validates a recipe before anything is launched: the engine's flags and limits
 * always, and, given `env` (where secrets are read at launch), that every secret is set there. A
 * run passes its environment; a dry run, which launches nothing, shows the plan without them.
 */
export async function loadRecipe(file: string, opts: { env?: NodeJS.ProcessEnv; onWarning?: (message: string) => void } = {}): Promise<Recipe> {
  const { raw, text, doc } = await readYamlFile(file);
  const result = parseRecipe(raw, { file, dir: dirname(resolve(file)), sloText: sloTexts(doc, text) });
  if (!result.ok) throw new UserError(`${file} has ${plural(result.problems.length, 'problem')}:\n  ${result.problems.join('\n  ')}`);
  const problems = [...diskProblems(result.recipe), ...launchProblems(result.recipe, opts.env ?? null)];
  if (problems.length > 0) throw new UserError(`${file} has ${plural(problems.length, 'problem')}:\n  ${problems.join('\n  ')}`);
  if (opts.env === undefined) for (const w of launchWarnings(result.recipe)) opts.onWarning?.(`${w} (a run refuses this)`);
  return result.recipe;
}

function diskProblems(recipe: Recipe): string[] {
  const problems: string[] = [];
  const { file } = recipe.source;
  const gpuProfile = (recipe.target as { gpuProfile?: string }).gpuProfile;
  if (gpuProfile !== undefined) {
    const known = listGpuProfiles();
    if (!known.includes(gpuProfile)) {
      problems.push(`${file}: target.gpuProfile must name a profile in gpu-profiles/ (${known.join(', ')}), got ${describeValue(gpuProfile)}`);
    }
  }
  const lengths = (recipe.workload as { lengths?: { trace?: string } }).lengths;
  if (lengths?.trace !== undefined) {
    const problem = tracePathProblem(lengths.trace, recipe.source.dir);
    if (problem !== null) problems.push(`${file}: workload.lengths.trace ${problem}, got ${describeValue(lengths.trace)}`);
    else {
      // Its columns too, so a dry run refuses what the run would refuse.
      try {
        loadWorkloadTrace(recipe.workload, recipe.source.dir, file);
      } catch (err) {
        if (!(err instanceof UserError)) throw err;
        problems.push(err.message);
      }
    }
  }
  return problems;
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
