// `fluidcap sweep --twin <sweep.yaml>`: the sweep file's matrix evaluated on the twin instead of on
// engines. Each configuration's recipe is expanded and validated exactly as a real sweep does it
// (sweep/plan.ts), then its whole capacity search runs in virtual time (twinSearch.ts). A
// configuration whose model does not fit in its GPUs' memory is reported infeasible with the
// numbers, not refused. The ranking, its files and the top-N sweep file are twinSweepRank.ts's;
// the page (report.html) and the console's summary lines are twinSweepPage.ts's.
import { existsSync, readFileSync } from 'node:fs';
import { writeFileIn } from '../util/confinedFs.ts';
import { basename, isAbsolute, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseDocument } from 'yaml';
import { findModel, modelSizes, type ModelSpec } from '../catalog/models.ts';
import { loadGpuProfile, type GpuProfile } from '../catalog/gpus.ts';
import { planProbe } from '../load/plan.ts';
import { plannedRequests, probeSeed } from '../capacity/runPlan.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import type { Recipe } from '../recipe/parse.ts';
import { engineConfigOf } from '../sim/engine.ts';
import { blocksFor, kvBlocksForMemory } from '../sim/kvCache.ts';
import type { SweepFile } from '../sweep/sweepFile.ts';
import type { PlannedRun } from '../sweep/plan.ts';
import { loadSweepPlan } from '../sweep/runSweep.ts';
import { configLabels } from '../sweep/expand.ts';
import { UserError } from '../util/errors.ts';
import { planOf } from './rehearse.ts';
import { simOptionsOf, simConfigOf } from './simTarget.ts';
import { capacityRuleText, runTwinSearch, type CapacityRule } from './twinSearch.ts';
import { SWEEP_FILES } from '../runDir/layout.ts';
import { renderPage } from '../report/html.ts';
import { twinPageBlocks, twinSummaryLines } from './twinSweepPage.ts';
import {
  distinctRanked,
  rankTwinRows,
  topSweepText,
  twinRankingCsv,
  twinRankingJson,
  twinRankingMarkdown,
  type RankedRow,
  type TwinConfigRow,
  type TwinSweepHeader,
} from './twinSweepRank.ts';
import { makeDirs, makeWritableDir } from '../util/makeDirs.ts';

/** The files a twin sweep writes in its directory. */
export const TWIN_SWEEP_FILES = {
  page: SWEEP_FILES.reportHtml,
  sweep: 'sweep.yaml',
  rankingMd: 'twin-ranking.md',
  rankingCsv: 'twin-ranking.csv',
  rankingJson: 'twin-ranking.json',
} as const;

/** The top-N sweep file's name. */
export const topSweepFileName = (n: number) => `top-${n}.yaml`;

/** Whether the model's weights and one full-length sequence fit in the GPUs' memory, as the simulated engine sizes its KV cache. */
export function memoryFit(a: { model: ModelSpec; gpu: GpuProfile; tensorParallel: number; gpuMemoryUtilization: number; maxModelLen: number }): { fits: true } | { fits: false; reason: string } {
  const sizes = modelSizes(a.model);
  const weightsGiB = sizes.weightBytes / 2 ** 30 / a.tensorParallel;
  const usableGiB = a.gpu.memoryGiB * a.gpuMemoryUtilization;
  if (weightsGiB >= usableGiB) {
    return {
      fits: false,
      reason: `${a.model.name} does not fit: ${weightsGiB.toFixed(1)} GiB of bf16 weights per GPU at tensor parallelism ${a.tensorParallel}, but ${a.gpu.name} offers ${a.gpu.memoryGiB} GiB × gpuMemoryUtilization ${a.gpuMemoryUtilization} = ${usableGiB.toFixed(1)} GiB`,
    };
  }
  const blocks = kvBlocksForMemory({ memoryGiB: a.gpu.memoryGiB, gpuMemoryUtilization: a.gpuMemoryUtilization, weightBytes: sizes.weightBytes, kvBytesPerToken: sizes.kvBytesPerToken, tensorParallel: a.tensorParallel });
  // The simulated engine keeps 1% of the blocks free as vLLM does (watermark).
  if (blocks - Math.floor(blocks * 0.01) < blocksFor(a.maxModelLen)) {
    return { fits: false, reason: `KV cache too small: ${(usableGiB - weightsGiB).toFixed(1)} GiB per GPU left after the weights holds ${blocks * 16} tokens, less than one ${a.maxModelLen}-token sequence` };
  }
  return { fits: true };
}

const mean = (xs: number[]) => (xs.length === 0 ? null : xs.reduce((a, b) => a + b, 0) / xs.length);

/** One configuration's capacity search on the twin, as a row of the ranking. */
export function evaluateOnTwin(run: Pick<PlannedRun, 'config' | 'recipe'>, capacity: CapacityRule = { kind: 'slo' }): TwinConfigRow {
  const recipe: Recipe = run.recipe;
  const t0 = performance.now();
  const file = recipe.source.file;
  const opts = simOptionsOf(recipe.target, file);
  const model = findModel(opts.model ?? '');
  if (!model) throw new UserError(`${file}: target.model ${JSON.stringify(recipe.target.model)} is not in the simulated engine's catalog, so the twin cannot model it`);
  let gpu: GpuProfile;
  try {
    gpu = loadGpuProfile(opts.gpu ?? 'h100-sxm-80gb');
  } catch (err) {
    throw new UserError(`${file}: target.gpuProfile: ${(err as Error).message}`);
  }
  const tp = opts.tensorParallel ?? 1;
  const pp = opts.pipelineParallel ?? 1;
  const base: TwinConfigRow = {
    id: run.config.id,
    values: run.config.values,
    status: 'ranked',
    reason: '',
    model: model.name,
    gpuProfile: gpu.name,
    scheduler: opts.scheduler ?? 'vllm',
    tensorParallel: tp,
    pipelineParallel: pp,
    gpuCount: tp * pp,
    usdPerGpuHour: gpu.price?.usdPerGpuHour ?? null,
    capacityQps: null,
    bracket: null,
    outcome: null,
    probes: 0,
    meanPromptTokens: null,
    meanOutputTokens: null,
    ttftP90S: null,
    tbtP99S: null,
    virtualS: 0,
    wallS: 0,
  };
  // Every GPU of the deployment holds 1/(TP·PP) of the weights and of the KV cache (the sim sizes it so).
  const fit = memoryFit({ model, gpu, tensorParallel: tp * pp, gpuMemoryUtilization: opts.gpuMemoryUtilization ?? 0.9, maxModelLen: opts.maxModelLen ?? model.maxContextTokens });
  if (!fit.fits) return { ...base, status: 'infeasible', reason: fit.reason, wallS: (performance.now() - t0) / 1000 };

  const sim = simConfigOf(recipe.target, file);
  const plan = planOf(recipe, `${recipe.name}-twin`);
  const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, file);
  const result = runTwinSearch({ plan, workload: recipe.workload, trace, engine: engineConfigOf(sim), fitBounds: recipe.profile.fitBounds, capacity });
  const atCapacity = result.probes.find((p) => p.passed && p.qps === result.bracket.passQps) ?? null;
  const capacityQps = result.bracket.passQps === null ? null : result.capacityQps;
  let meanPromptTokens: number | null = null;
  let meanOutputTokens: number | null = null;
  if (capacityQps !== null && capacityQps > 0) {
    // The requests a probe at capacity sends (the twin runs every request to its max tokens).
    const requests = planProbe({
      workload: recipe.workload,
      rateQps: capacityQps,
      requests: plannedRequests(plan.probe, capacityQps),
      durationS: plan.probe.durationLimitS,
      seed: probeSeed(plan, capacityQps),
      maxContextTokens: plan.maxContextTokens,
      trace,
    }).requests;
    meanPromptTokens = mean(requests.map((r) => r.promptTokens));
    meanOutputTokens = mean(requests.map((r) => r.maxTokens));
  }
  return {
    ...base,
    status: capacityQps === null || capacityQps <= 0 ? 'no-capacity' : 'ranked',
    reason: capacityQps === null || capacityQps <= 0 ? `${result.outcome}: ${result.reason}` : '',
    capacityQps,
    bracket: result.bracket,
    outcome: result.outcome,
    probes: result.probes.length,
    meanPromptTokens,
    meanOutputTokens,
    ttftP90S: atCapacity?.ttftS.p90 ?? null,
    tbtP99S: atCapacity?.tbtS.p99 ?? null,
    virtualS: result.probeTimeS + result.profileTimeS,
    wallS: (performance.now() - t0) / 1000,
  };
}

/** The sweep file and its configurations' validated recipes, without placing them (the twin needs no hosts). */
export async function prepareTwinSweep(sweepFile: string): Promise<{ sweep: SweepFile; baseText: string; runs: PlannedRun[] }> {
  // No inventory: a host or group stands for itself (the twin runs nowhere).
  const { sweep, baseText, plan } = await loadSweepPlan(sweepFile, (name) => [name]);
  return { sweep, baseText, runs: plan.runs };
}

export interface TwinSweepOptions {
  sweepFile: string;
  outDir: string;
  /** Also write a sweep file of the top N configurations. */
  top?: number;
  /** What a probe must meet (default: the recipe's SLO). */
  capacity?: CapacityRule;
  log: (line: string) => void;
  now?: () => Date;
}

export interface TwinSweepOutcome {
  dir: string;
  rows: RankedRow[];
  wallS: number;
  files: string[];
  /** Configurations the twin could not evaluate (a fault of fluidcap, not of the input). */
  failed: number;
  /** The first configuration's recipe (its SLO and workload are every configuration's unless the matrix sets them). */
  firstRecipe: Recipe;
  /** The top-N file written (with --top), and how many configurations it runs. */
  top: { file: string; n: number; runs: number } | null;
}

function sloTextOf(recipe: Recipe): string {
  return Object.values(recipe.slo).map((s) => (s as { source?: string }).source ?? '').filter(Boolean).join(' and ');
}

function workloadTextOf(recipe: Recipe): string {
  const l = recipe.workload.lengths as { kind: string; preset?: string; trace?: string };
  const lengths = l.kind === 'preset' ? `${l.preset} lengths (synthetic, the preset's median and p90)` : l.kind === 'trace' ? `lengths from ${l.trace}` : 'lengths from the recipe\u2019s distributions';
  return `${lengths}, ${recipe.workload.arrivals.process} arrivals, seed ${recipe.workload.seed}`;
}

/** Evaluates every configuration on the twin, ranks them and writes the ranking (and the top-N sweep file). */
export async function runTwinSweep(o: TwinSweepOptions): Promise<TwinSweepOutcome> {
  const t0 = performance.now();
  const now = o.now ?? (() => new Date());
  if (o.top !== undefined && !(Number.isInteger(o.top) && o.top >= 1)) throw new UserError(`--top must be a whole number >= 1, got ${JSON.stringify(o.top)}`);
  const { sweep, runs } = await prepareTwinSweep(o.sweepFile);
  makeWritableDir(o.outDir);
  const rows: TwinConfigRow[] = [];
  const labels = configLabels(runs.map((r) => r.config));
  let failed = 0;
  for (const run of runs) {
    let row: TwinConfigRow;
    try {
      row = evaluateOnTwin(run, o.capacity);
    } catch (err) {
      if (err instanceof UserError) throw err;
      // Keep the other configurations' results; the fault is reported and the exit code says so.
      failed++;
      row = {
        id: run.config.id, values: run.config.values, status: 'failed', reason: (err as Error).message, model: String(run.recipe.target.model ?? ''),
        gpuProfile: String(run.recipe.target.gpuProfile ?? ''), scheduler: '', tensorParallel: run.recipe.target.tensorParallel, pipelineParallel: run.recipe.target.pipelineParallel, gpuCount: run.recipe.target.tensorParallel * run.recipe.target.pipelineParallel,
        usdPerGpuHour: null, capacityQps: null, bracket: null, outcome: null, probes: 0, meanPromptTokens: null, meanOutputTokens: null, ttftP90S: null, tbtP99S: null, virtualS: 0, wallS: 0,
      };
    }
    rows.push(row);
    // Infeasible configurations are summed up in one line at the end (each with its numbers in the files).
    if (row.status === 'infeasible') continue;
    const what = row.status === 'ranked' ? `${+row.capacityQps!.toPrecision(4)} QPS (${row.probes} probes, ${row.virtualS.toFixed(0)} virtual s in ${row.wallS.toFixed(2)} s)` : `${row.status}: ${row.reason}`;
    o.log(`[${rows.length}/${runs.length}] ${labels.get(row.id)}: ${what}`);
  }
  const ranked = rankTwinRows(rows);
  const wallS = (performance.now() - t0) / 1000;
  const created = now();
  const stamp = created.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  let dir = resolve(o.outDir, `${sweep.name}-twin-${stamp}`);
  for (let n = 2; existsSync(dir); n++) dir = resolve(o.outDir, `${sweep.name}-twin-${stamp}-${n}`);
  makeDirs(dir);
  const first = runs[0].recipe;
  const header: TwinSweepHeader = {
    sweepName: sweep.name,
    sweepFile: sweep.file,
    recipeFile: sweep.recipeFile,
    sloText: o.capacity?.kind === 'scheduling-delay' ? `${sloTextOf(first)}, reported only: capacity is ${capacityRuleText(o.capacity, sloTextOf(first))}` : sloTextOf(first),
    workloadText: workloadTextOf(first),
    baseEngine: first.target.engine,
    baseHost: first.target.host ?? null,
    wallS,
    createdAt: created.toISOString(),
  };
  const files: string[] = [];
  const write = (name: string, text: string) => {
    writeFileIn(dir, join(dir, name), text);
    files.push(name);
  };
  const sweepCopy = parseDocument(readFileSync(sweep.file, 'utf8'));
  sweepCopy.set('recipe', basename(sweep.recipeFile));
  write(TWIN_SWEEP_FILES.sweep, sweepCopy.toString());
  write(TWIN_SWEEP_FILES.rankingMd, twinRankingMarkdown(header, ranked));
  write(TWIN_SWEEP_FILES.rankingCsv, twinRankingCsv(ranked));
  write(TWIN_SWEEP_FILES.rankingJson, twinRankingJson(header, ranked));
  // The base recipe travels with the copied sweep file and the top-N file (a sweep's recipe must sit in its directory).
  write(basename(sweep.recipeFile), recipeCopyText(readFileSync(sweep.recipeFile, 'utf8'), sweep.recipeFile));
  const top = o.top !== undefined && ranked.some((r) => r.rank !== null) ? { file: topSweepFileName(o.top), n: o.top } : null;
  if (top) {
    const input = { sweepName: sweep.name, recipe: basename(sweep.recipeFile), engine: header.baseEngine, host: header.baseHost, gpusPerHost: sweep.gpusPerHost, parallel: sweep.parallel, portsBase: sweep.ports?.base, createdAt: created.toISOString() };
    write(top.file, topSweepText(input, ranked, top.n));
  }
  // The page last: it links every file above.
  write(TWIN_SWEEP_FILES.page, (await renderPage(twinPageBlocks({ header, rows: ranked, files: [...files], top }), `${sweep.name}: configurations ranked on the twin`, null)).html);
  for (const line of twinSummaryLines(ranked, top)) o.log(line);
  return { dir, rows: ranked, wallS, files, failed, firstRecipe: first, top: top && { ...top, runs: Math.min(top.n, distinctRanked(ranked).length) } };
}

/** The base recipe as copied beside the sweep: a relative trace path made absolute, so it still names the same file. */
function recipeCopyText(text: string, recipeFile: string): string {
  const doc = parseDocument(text);
  const trace = doc.getIn(['workload', 'lengths', 'trace']);
  if (typeof trace === 'string' && !isAbsolute(trace)) doc.setIn(['workload', 'lengths', 'trace'], resolve(recipeFile, '..', trace));
  return trace === undefined ? text : doc.toString();
}
