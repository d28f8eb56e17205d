// The one resolve step of `run`, `profile`, `probe` and `--dry-run`: recipe → run plan, with the
// catalog consulted and the workload's trace file loaded once. What only the catalog or the trace
// file can refuse is refused here, before any run directory exists.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Recipe } from '../recipe/parse.ts';
import { findModel } from '../catalog/models.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import { planRun, type RunPlan } from './runPlan.ts';

/** The plan of `recipe` under the run id `runId`. */
export function resolveRun(recipe: Recipe, runId: string, promptNonce?: string): RunPlan {
  const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file) ?? null;
  return planRun(recipe, { runId, modelContext: (m) => findModel(m)?.maxContextTokens ?? null, trace, promptNonce });
}

/** `<recipe name>-<UTC yyyymmdd-hhmmss>`, with `-2`, `-3`... when `outDir` already holds one. */
export function newRunId(recipeName: string, now: Date, outDir: string): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  const base = `${recipeName}-${stamp}`;
  let id = base;
  for (let n = 2; existsSync(join(outDir, id)); n++) id = `${base}-${n}`;
  return id;
}
