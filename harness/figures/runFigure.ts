// `fluidcap figure <name>`: runs the probes a paper figure needs (one capacity run per system, each
// an ordinary run directory under the figure's directory, so `fluidcap report` works on it), then
// draws the figure from the archived timelines. metron-fig5d measures the endpoints of an endpoints
// file (endpointFigure.ts), as the paper measured public APIs. On the simulated engine by default, time-scaled and
// with fewer requests than the paper; on real hosts with an inventory. figure.json in the figure's
// directory names each system's run, so --resume reuses finished runs and resumes interrupted ones.
import { existsSync, readFileSync } from 'node:fs';
import { makeDirIn, writeFileIn } from '../util/confinedFs.ts';
import { FIGURE_STATE_FILE, checkFigureRuns, figureRunDir } from './figureRuns.ts';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse, stringify } from 'yaml';
import { runCapacity } from '../capacity/runCapacity.ts';
import type { Inventory } from '../provision/inventory.ts';
import { loadRun } from '../report/loadRun.ts';
import { isTimelineRecord } from '../report/probeDetail.ts';
import { readJsonFile, readJsonLines, writeJsonFile } from '../runDir/jsonFiles.ts';
import { findProbeDir } from '../runDir/read.ts';
import { runPaths } from '../runDir/layout.ts';
import { DEFAULT_FLUIDITY } from '../metrics/slo.ts';
import { UserError, describeValue } from '../util/errors.ts';
import { figurePaper, parsePaperNumbers, type OurValues } from './paperNumbers.ts';
import { SIM_HARDWARE_NOTE, metronFacts, metronRecipe, profileLengths, profileNoiseFloorMs, workloadWords } from './metronFacts.ts';
import { metronFig3, type Fig3System } from './metronFig3.ts';
import { metronFig6, type Fig6System } from './metronFig6.ts';
import { computeRequestMetrics } from '../metrics/request.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';
import { runVidurFigure } from './vidurRun.ts';
import type { CapacityRule } from '../twin/twinSearch.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');
const STATE_FILE = FIGURE_STATE_FILE;

/** The figures this command draws. */
export const FIGURES = ['metron-fig5d', 'metron-fig3', 'metron-fig6', 'vidur-fig5', 'vidur-fig6', 'deepspeed-throughput'] as const;
export type FigureName = (typeof FIGURES)[number];

export interface FigureOptions {
  name: string;
  /** Directory that receives the figure's directory. */
  outDir: string;
  resumeDir?: string;
  inventory?: Inventory;
  /** Real seconds per modelled second on the simulated engine (ignored on real hosts). */
  timeScale: number;
  /** Request rate in the paper's time (the engine sees rate / timeScale). */
  rateQps: number;
  /** metron-fig6: the rates (paper time) every SLO is judged at; default DEFAULT_GRID. */
  grid?: number[];
  requests: number;
  /** vidur-fig5 / vidur-fig6: the sweep file the twin evaluates (default sweeps/vidur-fig5.yaml). */
  sweepFile?: string;
  /** metron-fig5d: the endpoints file (endpointsFile.ts) naming the servers to measure. */
  endpointsFile?: string;
  /** vidur-fig5 / vidur-fig6: the capacity rule (default the SLOs; Vidur's is P99 scheduling delay under 5 s). */
  capacity?: CapacityRule;
  /** metron-fig6 (search mode): overrides of FIG6_SEARCH, e.g. a shorter search for --check. */
  fig6Search?: { minQps?: number; maxQps?: number; tolerance?: number; maxProbes?: number };
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
}

export interface FigureOutcome {
  dir: string;
  status: 'completed' | 'interrupted';
  artifacts: FigureArtifacts[];
  /** Seconds each system's run took here (0 when reused). */
  runSeconds: Record<string, number>;
}

interface State {
  name: string;
  timeScale: number;
  rateQps: number;
  /** Rates each system is probed at: [rateQps], or metron-fig6's grid. */
  rates: number[];
  requests: number;
  onHosts: boolean;
  runs: Record<string, string | null>;
  runSeconds: Record<string, number>;
}

const SYSTEMS = [
  { key: 'vllm', label: 'vLLM', recipe: 'llama3-8b-h100-vllm' },
  { key: 'sarathi', label: 'Sarathi-Serve', recipe: 'llama3-8b-h100-sarathi' },
] as const;

const PAPER_TBT_DEADLINE_S = 0.025;
const PAPER_TTFT_SLACK_S = 0.3;
/** metron-fig6's rate grid in the paper's time: doubling from below the paper's 0.6 QPS fluidity capacity (which it holds) to above both systems' capacity here. */
export const DEFAULT_GRID = [0.3, 0.6, 1.2, 2.4, 4.8, 9.6];

/** Checks the figure's name and numbers before anything starts. */
export function checkFigureOptions(o: Pick<FigureOptions, 'name' | 'timeScale' | 'rateQps' | 'requests' | 'grid'>): FigureName {
  if (!(FIGURES as readonly string[]).includes(o.name)) {
    throw new UserError(`figure name must be one of ${FIGURES.join(', ')}, got ${describeValue(o.name)}`);
  }
  if (!(o.timeScale > 0 && o.timeScale <= 1)) throw new UserError(`--time-scale must be > 0 and <= 1, got ${describeValue(o.timeScale)}`);
  if (!(o.rateQps > 0 && Number.isFinite(o.rateQps))) throw new UserError(`--qps must be a rate > 0, got ${describeValue(o.rateQps)}`);
  if (!(Number.isInteger(o.requests) && o.requests >= 4)) throw new UserError(`--requests must be a whole number >= 4, got ${describeValue(o.requests)}`);
  if (o.grid !== undefined && !(o.grid.length >= 2 && o.grid.every((r) => r > 0 && Number.isFinite(r)))) {
    throw new UserError(`--grid must list at least two rates > 0, got ${describeValue(o.grid)}`);
  }
  return o.name as FigureName;
}

const secondsText = (s: number) => `${+s.toPrecision(6)}s`;

// The paper recipe for one system, reduced to one fixed-rate probe with every request run to its
// end (no early stop: the figure needs the whole timeline), time-scaled on the simulated engine.
function figureRecipe(base: Record<string, unknown>, s: State, name: string, rateQps: number): Record<string, unknown> {
  const scale = s.onHosts ? 1 : s.timeScale;
  const target = { ...(base.target as Record<string, unknown>) };
  if (!s.onHosts) target.sim = { ...(target.sim as Record<string, unknown>), timeScale: scale };
  const engineRate = rateQps / scale;
  return {
    ...base,
    name,
    description: `${String(base.description ?? '')} Reduced for fluidcap figure: one probe at ${rateQps} QPS (paper time), ${s.requests} requests${scale !== 1 ? `, time scale ${scale}` : ''}.`,
    target,
    // Long prompts only, and repeats that may differ by 20 ms (40 ms on the full Arxiv trace): time-scaled prefills last a few
    // milliseconds, and on a machine shared with the load generator its scheduling jitter is as long,
    // so the default bounds would refuse the fit for noise. The fit only sets first-token deadlines.
    profile: { ...(base.profile as Record<string, unknown>), promptLengths: profileLengths(base), repeats: 3, noiseFloor: `${profileNoiseFloorMs(profileLengths(base))}ms`, minR2: 0.8 },
    search: {
      qps: { start: engineRate, min: engineRate / 2, max: engineRate },
      tolerance: 0.5,
      maxProbes: 1,
      earlyStop: false,
      probe: {
        requests: s.requests,
        minDuration: '0s',
        duration: '10m',
        warmup: '10%',
        // The client shares this machine's cores with the engine; its error is measured and every
        // deadline at or below it is left off the charts, so the probe's own check only needs to be loose.
        clientTolerance: secondsText(0.4 * PAPER_TBT_DEADLINE_S * scale),
      },
    },
    slo: { fluidity: { tbtDeadline: secondsText(PAPER_TBT_DEADLINE_S * scale), ttftSlack: secondsText(PAPER_TTFT_SLACK_S * scale), minFluidity: 0.9, percentile: 99 } },
  };
}

function readState(dir: string): State {
  const file = join(dir, STATE_FILE);
  if (!existsSync(file)) throw new UserError(`--resume ${dir}: ${STATE_FILE} is missing, so this is not a figure directory`);
  const s = readJsonFile(file) as State;
  if (typeof s?.name !== 'string' || typeof s.runs !== 'object') throw new UserError(`${file}: not a figure state file (no name or runs)`);
  checkFigureRuns(dir, s.runs);
  return { ...s, rates: Array.isArray(s.rates) ? s.rates : [s.rateQps], runSeconds: s.runSeconds ?? {} };
}

/** Runs (or reuses) every system's probe, then writes the figure's files. */
export async function runFigure(o: FigureOptions): Promise<FigureOutcome> {
  if (o.name === 'deepspeed-throughput' && !o.resumeDir) return (await import('./deepspeedRun.ts')).runDeepspeedThroughput(o);
  if ((await import('./endpointFigure.ts')).endpointFigureOwns(o)) {
    if (o.inventory) throw new UserError('--hosts: metron-fig5d measures the endpoints its --endpoints file names; it launches nothing on hosts');
    return (await import('./endpointFigure.ts')).runEndpointFigure(o);
  }
  if ((o.name === 'metron-fig6' || o.resumeDir) && (await import('./metronFig6Search.ts')).fig6SearchOwns(o)) return (await import('./metronFig6Search.ts')).runFig6Search({ ...o, search: o.fig6Search });
  const now = o.now ?? (() => new Date());
  if (o.name === 'vidur-fig5' || o.name === 'vidur-fig6') {
    // Evaluated on the twin in seconds: nothing to resume, no engine to place on a host.
    if (o.resumeDir) throw new UserError(`--resume: ${o.name} runs on the twin in seconds and keeps no state; run it again`);
    if (o.inventory) throw new UserError(`--hosts: ${o.name} is evaluated on the twin; run its best configurations on your hosts with \`fluidcap sweep --twin sweeps/vidur-fig5.yaml --top N\` and then \`fluidcap sweep <dir>/top-N.yaml --hosts ...\``);
    const r = await runVidurFigure({ name: o.name, outDir: o.outDir, sweepFile: o.sweepFile, capacity: o.capacity, log: o.log, now });
    return { dir: r.dir, status: 'completed', artifacts: [r.artifacts], runSeconds: { twin: r.twinWallS } };
  }
  let dir: string;
  let state: State;
  if (o.resumeDir) {
    dir = o.resumeDir;
    state = readState(dir);
    checkFigureOptions({ ...state, grid: state.name === 'metron-fig6' ? state.rates : undefined });
  } else {
    checkFigureOptions(o);
    const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
    dir = join(o.outDir, `${o.name}-${stamp}`);
    const rates = o.name === 'metron-fig6' ? [...(o.grid ?? DEFAULT_GRID)].sort((a, b) => a - b) : [o.rateQps];
    state = { name: o.name, timeScale: o.timeScale, rateQps: o.rateQps, rates, requests: o.requests, onHosts: Boolean(o.inventory), runs: {}, runSeconds: {} };
  }
  makeDirIn(dir, join(dir, 'recipes'));
  makeDirIn(dir, join(dir, 'runs'));
  const save = () => writeJsonFile(dir, join(dir, STATE_FILE), state);
  save();
  const paper = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);

  // Runs are named relative to the figure's directory, so a moved or copied directory still resumes.
  const runOf = (key: string) => figureRunDir(dir, state.runs, key);
  const jobs = SYSTEMS.flatMap((sys) => state.rates.map((rateQps) => ({ sys, rateQps, key: state.rates.length === 1 ? sys.key : `${sys.key}@${rateQps}` })));
  for (const { sys, rateQps, key } of jobs) {
    const runDir = runOf(key);
    if (runDir && existsSync(runPaths(runDir).capacity)) {
      o.log(`${sys.label} at ${rateQps} QPS: reusing ${runDir}`);
      continue;
    }
    const baseFile = join(ROOT, 'recipes', 'papers', `${metronRecipe(state.name, sys.recipe, state.onHosts)}.yaml`);
    const recipeFile = join(dir, 'recipes', `${key.replace('@', '-at-')}.yaml`);
    if (!runDir) {
      const base = parse(readFileSync(baseFile, 'utf8')) as Record<string, unknown>;
      writeFileIn(dir, recipeFile, `# Written by fluidcap figure ${state.name} from ${baseFile}\n${stringify(figureRecipe(base, state, `${state.name}-${key.replace('@', '-at-')}`, rateQps))}`);
    }
    o.log(`${sys.label} at ${rateQps} QPS: ${runDir ? `resuming ${runDir}` : `running ${recipeFile}`}`);
    const t0 = performance.now();
    const outcome = await runCapacity({
      recipeFile,
      outDir: join(dir, 'runs'),
      resumeDir: runDir ?? undefined,
      inventory: o.inventory,
      signal: o.signal,
      log: (line) => o.log(`  ${key}: ${line}`),
      earlyStop: false,
      now,
    });
    state.runs[key] = relative(dir, outcome.runDir);
    state.runSeconds[key] = (performance.now() - t0) / 1000;
    save();
    if (outcome.status === 'interrupted') return { dir, status: 'interrupted', artifacts: [], runSeconds: state.runSeconds };
    if (outcome.status !== 'completed') throw new Error(`${sys.label} run ${outcome.runDir} ended ${outcome.status}: ${outcome.reason}`);
  }

  const scale = state.onHosts ? 1 : state.timeScale;
  const baseName = metronRecipe(state.name, SYSTEMS[0].recipe, state.onHosts);
  const base = parse(readFileSync(join(ROOT, 'recipes', 'papers', `${baseName}.yaml`), 'utf8')) as { workload?: { lengths?: { preset?: string } }; profile?: unknown };
  const trace = base.workload?.lengths?.preset ?? 'the recipe’s lengths';
  const lengths = profileLengths(base);
  const setup = [
    `Engine: ${state.onHosts ? 'the hosts of the inventory' : 'fluidcap\'s simulated engine (a local process)'}, Llama-3-8B on one H100, ${workloadWords(trace)} (recipes/papers/${baseName}.yaml and its Sarathi twin).`,
    `Reductions: ${state.rates.length === 1 ? `one Poisson probe per system at ${state.rateQps} QPS (paper time)` : `one Poisson probe per system at each of ${state.rates.join(', ')} QPS (paper time), each its own run`} with ${state.requests} requests (first 10% warm-up), prefill profile at ${lengths.length} prompt lengths from ${lengths[0]} to ${lengths.at(-1)} tokens, 3 repeats each (fit accepted with R² ≥ 0.8 and repeats differing by up to ${profileNoiseFloorMs(lengths)} ms)${scale !== 1 ? `, every modelled duration × ${scale}` : ''}.`,
    ...(state.name === 'metron-fig6' && !state.onHosts ? [SIM_HARDWARE_NOTE] : []),
    `Run time here: ${SYSTEMS.map((s) => `${s.label} ${jobs.filter((j) => j.sys === s).reduce((t, j) => t + (state.runSeconds[j.key] ?? 0), 0).toFixed(0)} s`).join(', ')} (what the last invocation ran; a run reused by --resume keeps its time).`,
    `Runs (relative to this directory): ${jobs.map((j) => state.runs[j.key]).join(', ')}.`,
  ];
  const facts: OurValues = { ...metronFacts(trace), requests: state.requests };
  const figPaper = figurePaper(paper, state.name, { trace, onHosts: state.onHosts }, facts);
  if (state.name === 'metron-fig6') {
    const systems: Fig6System[] = SYSTEMS.map((sys) => ({
      key: sys.key,
      label: sys.label,
      probes: jobs.filter((j) => j.sys === sys).map((j) => ({ rateQps: j.rateQps, metrics: loadMetrics(runOf(j.key)!, PAPER_TBT_DEADLINE_S * scale) })),
    }));
    const artifacts = await drawFigure(metronFig6({ systems, timeScale: scale, tbtDeadlineS: PAPER_TBT_DEADLINE_S, ttftSlackS: PAPER_TTFT_SLACK_S, paper: figPaper, setup }));
    for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
    return { dir, status: 'completed', artifacts: [artifacts], runSeconds: state.runSeconds };
  }
  const probes = SYSTEMS.map((sys) => loadSystem(sys, runOf(sys.key)!, state));
  const artifacts = await drawFigure(metronFig3({ systems: probes, timeScale: scale, paper: figPaper, setup }));
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  return { dir, status: 'completed', artifacts: [artifacts], runSeconds: state.runSeconds };
}

// One system's probe: its timelines, the run's own prefill fit and TTFT slack.
function loadSystem(sys: (typeof SYSTEMS)[number], runDir: string, state: State): Fig3System {
  const data = loadRun(runDir);
  const probe = data.probes.at(-1);
  if (!probe) throw new UserError(`${runDir}: the run has no probe`);
  const found = findProbeDir(runDir, { index: probe.index, qps: probe.qps });
  if (!found || !existsSync(found.timelines)) throw new UserError(`${runDir}: the timelines of the probe at ${probe.qps} QPS are missing`);
  const records = readJsonLines(found.timelines).filter(isTimelineRecord);
  const ttftSlackS = data.capacity.slo.fluidity?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS;
  const scale = state.onHosts ? 1 : state.timeScale;
  const clientErrorS = probe.recvMinusEmit?.p99S ?? probe.clientErrorS;
  return { key: sys.key, label: sys.label, rateQps: probe.qps * scale, records, fit: data.fit, ttftSlackS, clientErrorS };
}

// The evaluated requests of a run's (only) probe, judged with its prefill fit and TTFT slack.
function loadMetrics(runDir: string, tbtDeadlineS: number) {
  const data = loadRun(runDir);
  const probe = data.probes.at(-1);
  if (!probe) throw new UserError(`${runDir}: the run has no probe`);
  const found = findProbeDir(runDir, { index: probe.index, qps: probe.qps });
  if (!found || !existsSync(found.timelines)) throw new UserError(`${runDir}: the timelines of the probe at ${probe.qps} QPS are missing`);
  const slackS = data.capacity.slo.fluidity?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS;
  return readJsonLines(found.timelines)
    .filter(isTimelineRecord)
    .filter((r) => r.warmup !== true)
    .map((r) => {
      const prefillS = data.fit ? predictPrefillS(data.fit, r.promptTokens) : undefined;
      return computeRequestMetrics(r, { dpS: (prefillS ?? 0) + slackS, tbtDeadlineS, prefillS });
    });
}
