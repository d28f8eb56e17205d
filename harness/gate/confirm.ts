// Confirming probes for an undecided gate answer: one probe of the candidate's own configuration
// (the recipe its run directory keeps) at a rate the decision names, as a run pinned to that rate
// (one probe, its length set by the budget), judged on the candidate's own prefill fit, so its
// deadlines are those of the night's probes it is pooled with. They live inside the candidate's run directory
// (<run>/confirm/), so no results index ever counts them as a night, and a later compare of the
// same candidate reads them back instead of probing again. The load they used counts against the
// budget, in load-seconds.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseDocument } from 'yaml';
import { runPaths } from '../runDir/layout.ts';
import { readCapacityFile } from '../runDir/read.ts';
import { UserError } from '../util/errors.ts';
import type { Confirmation } from './decide.ts';
import { probeDecisionsOf } from './evidence.ts';

/** Where a candidate's confirming runs go. */
export const confirmDir = (candidateRunDir: string) => join(candidateRunDir, 'confirm');

/** The confirming probes already measured for a candidate, and the load-seconds they used. */
export function readConfirmations(candidateRunDir: string): { probes: Confirmation[]; loadS: number } {
  const dir = confirmDir(candidateRunDir);
  const probes: Confirmation[] = [];
  let loadS = 0;
  if (!existsSync(dir)) return { probes, loadS };
  for (const name of readdirSync(dir).sort()) {
    const run = join(dir, name);
    const file = runPaths(run).capacity;
    if (!existsSync(file)) continue;
    const raw = readCapacityFile(file) as { probeTimeS?: unknown };
    if (typeof raw.probeTimeS === 'number' && Number.isFinite(raw.probeTimeS)) loadS += raw.probeTimeS;
    probes.push(...probeDecisionsOf(raw, run));
  }
  return { probes, loadS };
}

/**
 * The candidate's recipe pinned to one rate: the search starts there and stops after one probe,
 * which sends rate × `durationS` requests over `durationS` (the recipe's own warm-up is kept).
 */
export function pinnedRecipe(recipeText: string, file: string, qps: number, durationS: number): string {
  const doc = parseDocument(recipeText);
  if (doc.errors.length) throw new UserError(`${file}: not valid YAML (${doc.errors[0].message})`);
  const seconds = Math.max(1, Math.round(durationS));
  doc.setIn(['search', 'qps'], { start: qps, min: qps / 2, max: qps * 2 });
  doc.setIn(['search', 'maxProbes'], 1);
  doc.setIn(['search', 'probe', 'requests'], Math.max(1, Math.ceil(qps * seconds)));
  doc.setIn(['search', 'probe', 'minDuration'], `${seconds}s`);
  doc.setIn(['search', 'probe', 'duration'], `${seconds}s`);
  return `# A confirming probe of the gate at ${qps} QPS for ${seconds} s (written by fluidcap compare --confirm-budget)\n${doc.toString()}`;
}

/**
 * What running one confirming probe needs: runs the pinned recipe, taking the prefill fit of
 * `fitFrom` (the candidate's run) when its engine and recipe match (capacity/fitReuse.ts), and
 * returns the run directory made (null: none).
 */
export type RunPinned = (recipeFile: string, outDir: string, fitFrom: string) => Promise<string | null>;

/**
 * Runs a confirming probe of the candidate at `qps` for `durationS` (its recipe pinned), and
 * returns its decisions (empty when the run left no capacity result: a refused profile, a launch
 * failure) and the load-seconds it used.
 */
export async function confirmAt(candidateRunDir: string, qps: number, durationS: number, runPinned: RunPinned): Promise<{ probes: Confirmation[]; loadS: number; problem: string | null }> {
  const recipeFile = runPaths(candidateRunDir).recipeCopy;
  if (!existsSync(recipeFile)) return { probes: [], loadS: 0, problem: `${recipeFile} does not exist: the candidate's recipe is needed to probe it again` };
  const dir = confirmDir(candidateRunDir);
  mkdirSync(dir, { recursive: true });
  const pinned = join(dir, `pinned-recipe-${qps}.yaml`);
  writeFileSync(pinned, pinnedRecipe(readFileSync(recipeFile, 'utf8'), recipeFile, qps, durationS));
  const runDir = await runPinned(pinned, dir, candidateRunDir);
  if (runDir === null || !existsSync(runPaths(runDir).capacity)) return { probes: [], loadS: 0, problem: `the confirming run at ${qps} QPS left no capacity result${runDir ? ` (${runDir})` : ''}` };
  const raw = readCapacityFile(runPaths(runDir).capacity) as { probeTimeS?: unknown };
  const loadS = typeof raw.probeTimeS === 'number' && Number.isFinite(raw.probeTimeS) ? raw.probeTimeS : durationS;
  return { probes: probeDecisionsOf(raw, runDir), loadS, problem: null };
}
