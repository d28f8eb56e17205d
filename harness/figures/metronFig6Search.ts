// metron-fig6 with each SLO definition's capacity measured by its own search (the default; `--grid`
// keeps the fixed grid of runFigure.ts). Per system, two capacity runs on the paper recipe: one with
// the P99 TBT, P99 TPOT and fluidity SLOs (a recipe holds one entry per metric), one with the P50
// TPOT SLO; each run's per-SLO search brackets and bisects every entry on its own, reusing probes
// and stopping early only for the entries a probe can still teach. The figure reads capacity.json's
// perSlo. figure.json names each run, so --resume reuses finished runs and resumes the others.
import { existsSync, readFileSync } from 'node:fs';
import { makeDirIn, writeFileIn } from '../util/confinedFs.ts';
import { FIGURE_STATE_FILE, checkFigureRuns, figureRunDir } from './figureRuns.ts';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse, stringify } from 'yaml';
import { runCapacity } from '../capacity/runCapacity.ts';
import { probeEvidence, sloDefinitions, summaryFacts } from '../capacity/perSloSearch.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { isTimelineRecord } from '../report/probeDetail.ts';
import { readJsonFile, readJsonLines, writeJsonFile } from '../runDir/jsonFiles.ts';
import { findProbeDir, readFit } from '../runDir/read.ts';
import { runPaths } from '../runDir/layout.ts';
import type { CapacityJson, ProbeSummary } from '../runDir/schema.ts';
import type { Inventory } from '../provision/inventory.ts';
import { UserError, describeValue } from '../util/errors.ts';
import { figurePaper, parsePaperNumbers } from './paperNumbers.ts';
import { metronFig6Measured, type Fig6MeasuredCapacity, type Fig6MeasuredSystem } from './metronFig6.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';
import { SIM_HARDWARE_NOTE, metronFacts, metronRecipe, profileLengths, profileNoiseFloorMs, workloadWords } from './metronFacts.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');
const STATE_FILE = FIGURE_STATE_FILE;
const PAPER_TBT_DEADLINE_S = 0.025;
const PAPER_TTFT_SLACK_S = 0.3;
/** The search's settings in the paper's time: wide enough for both systems on the full Arxiv trace (the paper's 0.6 QPS well inside), fine enough to tell them apart. */
export const FIG6_SEARCH: { minQps: number; maxQps: number; tolerance: number; maxProbes: number } = { minQps: 0.1, maxQps: 16, tolerance: 0.15, maxProbes: 10 };

const SYSTEMS = [
  { key: 'vllm', label: 'vLLM', recipe: 'llama3-8b-h100-vllm' },
  { key: 'sarathi', label: 'Sarathi-Serve', recipe: 'llama3-8b-h100-sarathi' },
] as const;

/** The two runs per system and, for each, which recipe entry is which fig6Slos key. */
const PARTS = [
  { part: 'tbt-tpot99-fluidity', keys: { tbt: 'tbtP99', tpot: 'tpotP99', fluidity: 'fluidity' } as Record<string, string> },
  { part: 'tpot50', keys: { tpot: 'tpotP50' } as Record<string, string> },
] as const;

export interface Fig6SearchOptions {
  name: string;
  outDir: string;
  resumeDir?: string;
  inventory?: Inventory;
  timeScale: number;
  /** The search's first rate, in the paper's time. */
  rateQps: number;
  requests: number;
  grid?: number[];
  /** Overrides of FIG6_SEARCH (tests run a smaller search). */
  search?: Partial<typeof FIG6_SEARCH>;
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
}

interface State {
  name: 'metron-fig6';
  mode: 'search';
  timeScale: number;
  rateQps: number;
  requests: number;
  onHosts: boolean;
  search: typeof FIG6_SEARCH;
  runs: Record<string, string | null>;
  runSeconds: Record<string, number>;
}

/** Whether this module draws the figure: metron-fig6 without --grid, or the resume of one it drew. */
export function fig6SearchOwns(o: { name: string; resumeDir?: string; grid?: number[] }): boolean {
  if (o.resumeDir) {
    const file = join(o.resumeDir, STATE_FILE);
    return existsSync(file) && (readJsonFile(file) as { mode?: unknown } | null)?.mode === 'search';
  }
  return o.name === 'metron-fig6' && o.grid === undefined;
}

const secondsText = (s: number) => `${+s.toPrecision(6)}s`;

// The paper recipe for one system and part: time-scaled on the simulated engine, the four SLOs'
// thresholds × the scale, a search over rates in the engine's time.
function partRecipe(base: Record<string, unknown>, s: State, name: string, part: (typeof PARTS)[number]['part']): Record<string, unknown> {
  const scale = s.onHosts ? 1 : s.timeScale;
  const target = { ...(base.target as Record<string, unknown>) };
  if (!s.onHosts) target.sim = { ...(target.sim as Record<string, unknown>), timeScale: scale };
  const d = secondsText(PAPER_TBT_DEADLINE_S * scale);
  const slo =
    part === 'tpot50'
      ? { tpot: { percentile: 50, max: d } }
      : {
          fluidity: { tbtDeadline: d, ttftSlack: secondsText(PAPER_TTFT_SLACK_S * scale), minFluidity: 0.9, percentile: 99 },
          tbt: { percentile: 99, max: d },
          tpot: { percentile: 99, max: d },
        };
  const engineRate = (q: number) => +(q / scale).toPrecision(6);
  return {
    ...base,
    name,
    description: `${String(base.description ?? '')} Reduced for fluidcap figure metron-fig6: ${part} SLOs searched on their own, ${s.requests} requests per probe${scale !== 1 ? `, time scale ${scale}` : ''}.`,
    target,
    // As runFigure.ts's grid recipes: long prompts only and loose repeat bounds, for time-scaled prefills on a shared machine.
    profile: { ...(base.profile as Record<string, unknown>), promptLengths: profileLengths(base), repeats: 3, noiseFloor: `${profileNoiseFloorMs(profileLengths(base))}ms`, minR2: 0.8 },
    search: {
      qps: { start: engineRate(s.rateQps), min: engineRate(s.search.minQps), max: engineRate(s.search.maxQps) },
      tolerance: s.search.tolerance,
      maxProbes: s.search.maxProbes,
      earlyStop: true,
      probe: { requests: s.requests, minDuration: '0s', duration: '10m', warmup: '10%', clientTolerance: secondsText(0.4 * PAPER_TBT_DEADLINE_S * scale) },
    },
    slo,
  };
}

/** Runs (or reuses) both parts for both systems, then writes the figure's files. */
export async function runFig6Search(o: Fig6SearchOptions): Promise<{ dir: string; status: 'completed' | 'interrupted'; artifacts: FigureArtifacts[]; runSeconds: Record<string, number> }> {
  const now = o.now ?? (() => new Date());
  let dir: string;
  let state: State;
  if (o.resumeDir) {
    dir = o.resumeDir;
    state = readJsonFile(join(dir, STATE_FILE)) as State;
    checkFigureRuns(dir, state?.runs);
  } else {
    if (!(o.timeScale > 0 && o.timeScale <= 1)) throw new UserError(`--time-scale must be > 0 and <= 1, got ${describeValue(o.timeScale)}`);
    const bounds = { ...FIG6_SEARCH, ...o.search };
    if (!(o.rateQps >= bounds.minQps && o.rateQps <= bounds.maxQps)) throw new UserError(`--qps must be within ${bounds.minQps}..${bounds.maxQps} (the search's bounds, paper time), got ${describeValue(o.rateQps)}`);
    const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
    dir = join(o.outDir, `metron-fig6-${stamp}`);
    state = { name: 'metron-fig6', mode: 'search', timeScale: o.timeScale, rateQps: o.rateQps, requests: o.requests, onHosts: Boolean(o.inventory), search: { ...FIG6_SEARCH, ...o.search }, runs: {}, runSeconds: {} };
  }
  makeDirIn(dir, join(dir, 'recipes'));
  makeDirIn(dir, join(dir, 'runs'));
  const save = () => writeJsonFile(dir, join(dir, STATE_FILE), state);
  save();
  const scale = state.onHosts ? 1 : state.timeScale;
  const runOf = (key: string) => figureRunDir(dir, state.runs, key);
  const jobs = SYSTEMS.flatMap((sys) => PARTS.map((p) => ({ sys, part: p, key: `${sys.key}-${p.part}` })));
  for (const { sys, part, key } of jobs) {
    const runDir = runOf(key);
    if (runDir && existsSync(runPaths(runDir).capacity)) {
      o.log(`${sys.label}, ${part.part}: reusing ${runDir}`);
      continue;
    }
    const baseFile = join(ROOT, 'recipes', 'papers', `${metronRecipe('metron-fig6', sys.recipe, state.onHosts)}.yaml`);
    const recipeFile = join(dir, 'recipes', `${key}.yaml`);
    if (!runDir) {
      const base = parse(readFileSync(baseFile, 'utf8')) as Record<string, unknown>;
      writeFileIn(dir, recipeFile, `# Written by fluidcap figure metron-fig6 from ${baseFile}\n${stringify(partRecipe(base, state, `metron-fig6-${key}`, part.part))}`);
    }
    o.log(`${sys.label}, ${part.part}: ${runDir ? `resuming ${runDir}` : `running ${recipeFile}`}`);
    const t0 = performance.now();
    const outcome = await runCapacity({ recipeFile, outDir: join(dir, 'runs'), resumeDir: runDir ?? undefined, inventory: o.inventory, signal: o.signal, log: (line) => o.log(`  ${key}: ${line}`), now });
    state.runs[key] = relative(dir, outcome.runDir);
    state.runSeconds[key] = (performance.now() - t0) / 1000;
    save();
    if (outcome.status === 'interrupted') return { dir, status: 'interrupted', artifacts: [], runSeconds: state.runSeconds };
    if (outcome.status !== 'completed') throw new Error(`${sys.label} run ${outcome.runDir} ended ${outcome.status}: ${outcome.reason}`);
  }

  const systems: Fig6MeasuredSystem[] = SYSTEMS.map((sys) => {
    const capacities: Record<string, Fig6MeasuredCapacity> = {};
    const verdicts: Fig6MeasuredSystem['verdicts'] = [];
    let atFluidityCapacity: RequestMetrics[] = [];
    for (const part of PARTS) {
      const runDir = runOf(`${sys.key}-${part.part}`)!;
      const rel = relative(dir, runDir);
      const capacity = readJsonFile(runPaths(runDir).capacity) as CapacityJson;
      const defs = sloDefinitions(capacity.slo);
      const summaries = capacity.probes.map((p) => readJsonFile(probeFiles(runDir, p).summary) as ProbeSummary);
      for (const s of summaries) {
        const e = probeEvidence(defs, summaryFacts(s));
        for (const d of defs) {
          const v = e.verdicts[d.name];
          verdicts.push({ slo: part.keys[d.name], run: rel, probe: s.index, rateQps: +(s.qps * scale).toPrecision(6), verdict: v === 'pass' || v === 'fail' ? v : 'no evidence', why: v === null ? e.note : null });
        }
      }
      for (const p of capacity.perSlo ?? []) {
        const key = part.keys[p.name];
        if (!key) continue;
        const paper = (q: number | null) => (q === null ? null : +(q * scale).toPrecision(6));
        capacities[key] = { capacityQps: paper(p.capacityQps)!, passQps: paper(p.bracket.passQps), failQps: paper(p.bracket.failQps), outcome: p.outcome, reason: p.reason, probesUsed: p.probesUsed.length, run: rel };
        if (key === 'fluidity' && p.bracket.passQps !== null) atFluidityCapacity = metricsAt(runDir, capacity, summaries, p.bracket.passQps, scale);
      }
    }
    return { key: sys.key, label: sys.label, capacities, atFluidityCapacity, verdicts };
  });
  const paper = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
  const total = (sys: string) => jobs.filter((j) => j.sys.key === sys).reduce((t, j) => t + (state.runSeconds[j.key] ?? 0), 0);
  const baseName = metronRecipe('metron-fig6', SYSTEMS[0].recipe, state.onHosts);
  const base = parse(readFileSync(join(ROOT, 'recipes', 'papers', `${baseName}.yaml`), 'utf8')) as { workload?: { lengths?: { preset?: string } }; profile?: unknown };
  const trace = base.workload?.lengths?.preset ?? 'the recipe\u2019s lengths';
  const lengths = profileLengths(base);
  const setup = [
    `Engine: ${state.onHosts ? 'the hosts of the inventory' : 'fluidcap\u2019s simulated engine (a local process)'}, Llama-3-8B on one H100, ${workloadWords(trace)} (recipes/papers/${baseName}.yaml and its Sarathi twin).`,
    `Reductions: per system two capacity runs (P99 TBT + P99 TPOT + fluidity; P50 TPOT), each searching from ${state.rateQps} QPS within ${state.search.minQps}–${state.search.maxQps} QPS (paper time) to a tolerance of ${state.search.tolerance * 100}% in at most ${state.search.maxProbes} probes of ${state.requests} requests (first 10% warm-up, early stop on), prefill profile at ${lengths.length} prompt lengths from ${lengths[0]} to ${lengths.at(-1)} tokens, 3 repeats each${scale !== 1 ? `, every modelled duration × ${scale}` : ''}.`,
    ...(state.onHosts ? [] : [SIM_HARDWARE_NOTE]),
    `Run time here: ${SYSTEMS.map((s) => `${s.label} ${total(s.key).toFixed(0)} s`).join(', ')} (what the last invocation ran; a run reused by --resume keeps its time).`,
    `Runs (relative to this directory): ${jobs.map((j) => state.runs[j.key]).join(', ')}.`,
  ];
  const figPaper = figurePaper(paper, 'metron-fig6', { trace, onHosts: state.onHosts }, { ...metronFacts(trace), requests: state.requests });
  const artifacts = await drawFigure(metronFig6Measured({ systems, timeScale: scale, tbtDeadlineS: PAPER_TBT_DEADLINE_S, ttftSlackS: PAPER_TTFT_SLACK_S, paper: figPaper, setup }));
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  return { dir, status: 'completed', artifacts: [artifacts], runSeconds: state.runSeconds };
}

// A finished probe's files, wherever its directory is.
function probeFiles(runDir: string, p: { index: number; qps: number }) {
  const found = findProbeDir(runDir, p);
  if (!found) throw new UserError(`${runDir}: the directory of probe ${p.index} at ${p.qps} QPS is missing`);
  return found;
}

// The evaluated requests of the probe that passed the fluidity SLO at `qps` (engine rate), with the run's fit and deadlines.
function metricsAt(runDir: string, capacity: CapacityJson, summaries: ProbeSummary[], qps: number, scale: number): RequestMetrics[] {
  const defs = sloDefinitions(capacity.slo);
  const s = summaries.find((x) => x.qps === qps && probeEvidence(defs, summaryFacts(x)).verdicts.fluidity === 'pass');
  if (!s) return [];
  const fit = readFit(runPaths(runDir).fit);
  const slackS = capacity.slo.fluidity?.ttftSlackS ?? PAPER_TTFT_SLACK_S * scale;
  const tbtDeadlineS = capacity.slo.fluidity?.tbtDeadlineS ?? PAPER_TBT_DEADLINE_S * scale;
  return readJsonLines(probeFiles(runDir, s).timelines)
    .filter(isTimelineRecord)
    .filter((r) => r.warmup !== true)
    .map((r) => {
      const prefillS = fit ? predictPrefillS(fit, r.promptTokens) : undefined;
      return computeRequestMetrics(r, { dpS: (prefillS ?? 0) + slackS, tbtDeadlineS, prefillS });
    });
}
