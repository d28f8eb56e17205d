// A sweep resolved into its runs before anything starts: every configuration's recipe text,
// validated by the recipe parser and the run planner, and its placement. `--dry-run` prints this;
// the executor only runs it. Pure: the catalog and the disk come in through `deps`.
import { isMap, isNode, parseDocument, type Document } from 'yaml';
import { parseRecipe, type Recipe } from '../recipe/parse.ts';
import { lookupProblems, type Lookups } from '../recipe/lookups.ts';
import { listModels } from '../catalog/models.ts';
import { planRun } from '../capacity/runPlan.ts';
import { describeValue } from '../util/errors.ts';
import { configRecipeText, describeValues, expandMatrix, type SweepConfig } from './expand.ts';
import { placeRuns, type Placement, type PlacementRequest } from './placement.ts';
import type { SweepFile } from './sweepFile.ts';
import { resolveField } from './fields.ts';

export interface SweepPlanDeps {
  /** The hosts a host or group name stands for; throws a UserError when it names neither. */
  hostsOf: (hostOrGroup: string) => string[];
  /** Context length of a model in the simulated engine's catalog, or null. */
  modelContext: (model: string) => number | null;
  gpuProfiles: string[];
  fileExists: (path: string) => boolean;
  /** A sweep being resumed: its runs' recipes are read as they started (parseRecipe's storedRun). */
  storedRun?: boolean;
}

export interface PlannedRun {
  config: SweepConfig;
  placement: Placement;
  /** The recipe the run executes, as written to `<sweepDir>/recipes/<id>.yaml`. */
  recipeText: string;
  recipe: Recipe;
}

export interface SweepPlan {
  name: string;
  runs: PlannedRun[];
  /** GPU sets in use, in placement order. */
  slots: string[];
  /** Most runs at once: the sweep's `parallel`, else one per GPU set. */
  parallel: number;
}

function launchOf(r: Recipe): PlacementRequest['launch'] {
  if (r.target.engine === 'endpoint') return 'endpoint';
  // A process on a host is placed as a container is: a host, its GPU set and a port.
  if (r.target.runtime === 'process') return 'container';
  return r.target.engine === 'sim' && r.target.image === undefined ? 'local-process' : 'container';
}

// The matrix and placement write into the base recipe's sections: a base that is not a mapping,
// or whose section on the way is a scalar or a list (`target: 5`), has nowhere to take them.
function baseShapeProblems(file: string, doc: Document, configs: SweepConfig[]): string[] {
  const shown = (v: unknown) => describeValue(isNode(v) ? v.toJSON() : v);
  if (doc.errors.length > 0) return [`${file}: ${doc.errors[0].message.split('\n')[0]}`];
  if (!isMap(doc.contents)) return [`${file}: a base recipe must be a mapping of fields (name, target, workload, …), got ${shown(doc.contents)}`];
  // The matrix's fields first, then what placement may set; one problem per section in the way.
  const paths: string[][] = [];
  for (const c of configs) {
    for (const key of Object.keys(c.values)) {
      const field = resolveField(key);
      if (field.ok) paths.push(field.path);
    }
  }
  paths.push(['target', 'host'], ['workload', 'lengths', 'trace']);
  const problems = new Map<string, string>();
  for (const path of paths) {
    for (let i = 1; i < path.length; i++) {
      const at = path.slice(0, i);
      const node = doc.getIn(at, true);
      if (node === undefined) break;
      if (!isMap(node)) {
        if (!problems.has(at.join('.'))) problems.set(at.join('.'), `${file}: ${at.join('.')} must be a mapping (the sweep sets ${path.join('.')} in it), got ${shown(node)}`);
        break;
      }
    }
  }
  return [...problems.values()];
}

/** Expands, validates and places a sweep; every problem of every run at once. */
export function planSweep(sweep: SweepFile, baseText: string, deps: SweepPlanDeps): { ok: true; plan: SweepPlan } | { ok: false; problems: string[] } {
  const baseDoc = parseDocument(baseText);
  const configs = expandMatrix(sweep);
  const shape = baseShapeProblems(sweep.recipeFile, baseDoc, configs);
  if (shape.length > 0) return { ok: false, problems: shape };
  const baseName = String(baseDoc.get('name') ?? sweep.name);
  if (configs.length === 0) return { ok: false, problems: [`${sweep.file}: exclude leaves no configuration of the matrix to run`] };

  const where = (c: SweepConfig) => `${sweep.file} [${c.id}: ${describeValues(c.values)}]`;
  // What the catalogs, the GPU profiles and the disk say about the names a run uses, read from its
  // YAML even when other fields are wrong, so every problem of every run is listed at once.
  const lookups: Lookups = {
    gpuProfiles: deps.gpuProfiles,
    findModel: (m) => {
      const context = deps.modelContext(m);
      return context === null ? null : { name: m, maxContextTokens: context };
    },
    models: listModels(),
    traceProblem: (path) => (deps.fileExists(path) ? null : 'must be an existing CSV file (relative to the base recipe)'),
  };
  const parse = (c: SweepConfig, text: string): { recipe: Recipe; problems: string[] } | { problems: string[] } => {
    const raw = parseDocument(text).toJS();
    const found = lookupProblems(raw, where(c), lookups);
    const r = parseRecipe(raw, { file: where(c), dir: sweep.dir, sloText: {} }, { storedRun: deps.storedRun });
    return r.ok ? { recipe: r.recipe, problems: found } : { problems: [...r.problems, ...found] };
  };

  // What only the run plan can refuse, for a recipe the parser passed.
  const check = (recipe: Recipe): string[] => {
    try {
      planRun(recipe, { runId: `${recipe.name}-dry`, modelContext: deps.modelContext, trace: null });
      return [];
    } catch (err) {
      return (err as Error).message.split('\n');
    }
  };

  const problems: string[] = [];
  const firstPass: { config: SweepConfig; recipe: Recipe }[] = [];
  for (const c of configs) {
    // With gpusPerHost the placement chooses the GPU ids: a run's list only has to have its size.
    let text = configRecipeText(baseText, sweep.dir, baseName, c);
    const tp = parseDocument(text).getIn(['target', 'tensorParallel']);
    if (sweep.gpusPerHost !== undefined && Number.isInteger(tp) && (tp as number) > sweep.gpusPerHost) {
      // Refused before a list of that many GPU ids is built (gpusPerHost is bounded, tensorParallel is not yet).
      problems.push(`${where(c)}: target.tensorParallel (${tp}) is more than gpusPerHost (${sweep.gpusPerHost})`);
      continue;
    }
    if (sweep.gpusPerHost !== undefined && Number.isInteger(tp) && (tp as number) > 0) {
      text = configRecipeText(baseText, sweep.dir, baseName, c, { gpus: Array.from({ length: tp as number }, (_, i) => i) });
    }
    const r = parse(c, text);
    const found = [...r.problems, ...('recipe' in r ? check(r.recipe) : [])];
    problems.push(...new Set(found));
    if ('recipe' in r) firstPass.push({ config: c, recipe: r.recipe });
  }
  if (problems.length > 0) return { ok: false, problems };

  const placed = placeRuns(
    firstPass.map(({ config, recipe }) => ({
      id: config.id,
      hostOrGroup: recipe.target.host,
      gpus: recipe.target.gpus,
      gpuCount: Math.max(recipe.target.gpus.length, recipe.target.tensorParallel),
      launch: launchOf(recipe),
    })),
    { hostsOf: deps.hostsOf, gpusPerHost: sweep.gpusPerHost, portBase: sweep.ports?.base ?? firstPass[0].recipe.target.port },
  );
  if (!placed.ok) return { ok: false, problems: placed.problems.map((p) => `${sweep.file}: ${p}`) };

  const runs: PlannedRun[] = [];
  firstPass.forEach(({ config, recipe: first }, i) => {
    const p = placed.placements[i];
    const launch = launchOf(first);
    if (p.port !== null && p.port > 65535) problems.push(`${sweep.file}: ports.base leaves ${config.id} with port ${p.port}, above 65535`);
    const text = configRecipeText(baseText, sweep.dir, baseName, config, launch === 'endpoint' ? {} : {
      host: launch === 'container' ? p.host : undefined,
      gpus: p.gpus,
      port: p.port ?? undefined,
    });
    // The placed recipe is parsed and checked again: it is the text the run will read.
    const r = parse(config, text);
    const found = [...new Set([...r.problems, ...('recipe' in r ? check(r.recipe) : [])])];
    if (found.length > 0 || !('recipe' in r)) return void problems.push(...found);
    runs.push({ config, placement: p, recipeText: text, recipe: r.recipe });
  });
  if (problems.length > 0) return { ok: false, problems };
  const distinct = new Set(placed.slots).size;
  return { ok: true, plan: { name: sweep.name, runs, slots: placed.slots, parallel: Math.min(sweep.parallel ?? distinct, runs.length) } };
}

/** The expanded matrix and its placement, one line per run (what `--dry-run` prints). */
export function describeSweepPlan(plan: SweepPlan): string {
  const lines = [`sweep ${plan.name}: ${plan.runs.length} run${plan.runs.length === 1 ? '' : 's'} on ${plan.slots.length} GPU set${plan.slots.length === 1 ? '' : 's'}, at most ${plan.parallel} at once`];
  const rows = plan.runs.map((r) => [
    r.config.id,
    describeValues(r.config.values),
    r.placement.slot.startsWith('endpoint#') ? 'endpoint' : r.placement.host,
    r.placement.slot.startsWith('endpoint#') ? '-' : r.placement.gpus.join(','),
    r.placement.port === null ? '-' : String(r.placement.port),
  ]);
  const head = ['run', 'values', 'host', 'gpus', 'port'];
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  for (const row of [head, ...rows]) lines.push(row.map((c, i) => c.padEnd(width[i])).join('  ').trimEnd());
  return lines.join('\n') + '\n';
}
