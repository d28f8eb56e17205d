// The one resolve step of `run`, `profile`, `probe` and `--dry-run`: recipe → run plan, with the
// catalog consulted and the workload's trace file loaded once. What only the catalog or the trace
// file can refuse is refused here, before any run directory exists.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Recipe } from '../recipe/parse.ts';
import { loadRecipe, type LoadOptions } from '../recipe/load.ts';
import { findModel } from '../catalog/models.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import { resolveHosts, type Inventory } from '../provision/inventory.ts';
import { UserError } from '../util/errors.ts';
import { planProblems, planRun, type RunPlan } from './runPlan.ts';

const modelContext = (m: string) => findModel(m)?.maxContextTokens ?? null;

/**
 * Loads a recipe for a run: the recipe's own checks and the plan's (and, given `hosts`, that
 * target.host names a host of the inventory) in one report, so a user fixes every problem at once.
 * `hosts` is the inventory of --hosts, undefined without it, or 'unchecked' when nothing will be
 * launched (a dry run, a rehearsal).
 */
export function loadRunRecipe(file: string, opts: Omit<LoadOptions, 'moreChecks'> & { hosts: Inventory | undefined | 'unchecked' }): Promise<Recipe> {
  const { hosts, ...load } = opts;
  return loadRecipe(file, {
    ...load,
    moreChecks: (recipe) => [...planProblems(recipe, { modelContext }), ...(hosts === 'unchecked' ? [] : hostProblems(recipe, hosts))],
  });
}

// A container engine runs on target.host; the simulated engine without an image runs here.
function hostProblems(recipe: Recipe, inventory: Inventory | undefined): string[] {
  const t = recipe.target;
  if (t.engine === 'endpoint' || (t.engine === 'sim' && t.image === undefined)) return [];
  try {
    resolveHosts(inventory, t.host);
    return [];
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    return [`${recipe.source.file}: ${err.message}`];
  }
}

/** The plan of `recipe` under the run id `runId`. */
export function resolveRun(recipe: Recipe, runId: string, promptNonce?: string): RunPlan {
  const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file) ?? null;
  return planRun(recipe, { runId, modelContext, trace, promptNonce });
}

/** `<recipe name>-<UTC yyyymmdd-hhmmss>`, with `-2`, `-3`... when `outDir` already holds one. */
export function newRunId(recipeName: string, now: Date, outDir: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const base = `${recipeName}-${stamp}`;
  let id = base;
  for (let n = 2; existsSync(join(outDir, id)); n++) id = `${base}-${n}`;
  return id;
}
