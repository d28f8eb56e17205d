// metron-fig5d on the endpoints of an endpoints file (endpointsFile.ts): one fixed-rate probe per
// endpoint, each an ordinary `engine: endpoint` run directory under the figure's directory (so
// `fluidcap report` works on it), every request run to its end, then the miss-rate curves drawn
// from the archived timelines. Every recipe is checked (API keys set in the environment included)
// before the first run starts. figure.json names each endpoint's run, so --resume reuses finished
// runs and resumes the interrupted one.
import { existsSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { runCapacity } from '../capacity/runCapacity.ts';
import { loadRecipe, readYamlFile } from '../recipe/load.ts';
import { loadRun } from '../report/loadRun.ts';
import { isTimelineRecord } from '../report/probeDetail.ts';
import { computeRequestMetrics } from '../metrics/request.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { DEFAULT_FLUIDITY } from '../metrics/slo.ts';
import { readJsonFile, readJsonLines, writeJsonFile } from '../runDir/jsonFiles.ts';
import { findProbeDir } from '../runDir/read.ts';
import { runPaths } from '../runDir/layout.ts';
import { makeDirIn, writeFileIn } from '../util/confinedFs.ts';
import { UserError, describeValue } from '../util/errors.ts';
import { FIGURE_STATE_FILE, checkFigureRuns, figureRunDir } from './figureRuns.ts';
import { ENDPOINT_PROFILE, PAPER_ENDPOINT_WORKLOAD, parseEndpointsFile, shownUrl, type EndpointsFile } from './endpointsFile.ts';
import { figurePaper, parsePaperNumbers } from './paperNumbers.ts';
import { metronFig5d, type EndpointProbe } from './metronFig5d.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';

const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');
/** The paper's TBT deadline: the SLO each run states (the figure re-judges every target TBT). */
const PAPER_TBT_DEADLINE_S = 0.025;

export interface EndpointFigureOptions {
  /** The endpoints file (new figures). */
  endpointsFile?: string;
  outDir: string;
  resumeDir?: string;
  rateQps: number;
  requests: number;
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
}

interface State {
  name: 'metron-fig5d';
  mode: 'endpoints';
  /** The endpoints file as parsed (names of key variables, never keys). */
  endpoints: EndpointsFile;
  endpointsFile: string;
  rateQps: number;
  requests: number;
  runs: Record<string, string | null>;
  runSeconds: Record<string, number>;
}

/** Whether this module draws the figure: metron-fig5d, or the resume of one it drew. */
export function endpointFigureOwns(o: { name: string; resumeDir?: string }): boolean {
  if (o.resumeDir) {
    const file = join(o.resumeDir, FIGURE_STATE_FILE);
    return existsSync(file) && (readJsonFile(file) as { mode?: unknown } | null)?.mode === 'endpoints';
  }
  return o.name === 'metron-fig5d';
}

const secondsText = (s: number) => `${+s.toPrecision(6)}s`;

// One endpoint's recipe: one Poisson probe at the figure's rate, every request run to its end.
function endpointRecipe(s: State, e: EndpointsFile['endpoints'][number]): Record<string, unknown> {
  return {
    name: `metron-fig5d-${e.name}`,
    description: `Written by fluidcap figure metron-fig5d from ${s.endpointsFile}: one probe at ${s.rateQps} QPS, ${s.requests} requests, against ${shownUrl(e.url)}.`,
    target: { engine: 'endpoint', ...(e.model ? { model: e.model } : {}), endpoint: { url: e.url, ...(e.apiKeyEnv ? { apiKeyEnv: e.apiKeyEnv } : {}) } },
    workload: s.endpoints.workload ?? PAPER_ENDPOINT_WORKLOAD,
    profile: s.endpoints.profile ?? ENDPOINT_PROFILE,
    search: {
      qps: { start: s.rateQps, min: s.rateQps / 2, max: s.rateQps },
      tolerance: 0.5,
      maxProbes: 1,
      earlyStop: false,
      // The client's error is measured where the endpoint stamps its chunks and every deadline at
      // or below it is left off the charts, so the probe's own check only needs to be loose.
      probe: { requests: s.requests, minDuration: '0s', duration: '30m', warmup: '10%', clientTolerance: secondsText(0.4 * PAPER_TBT_DEADLINE_S) },
    },
    slo: { fluidity: { tbtDeadline: secondsText(PAPER_TBT_DEADLINE_S), ttftSlack: secondsText(DEFAULT_FLUIDITY.ttftSlackS), minFluidity: 0.9, percentile: 99 } },
  };
}

/** Runs (or reuses) every endpoint's probe, then writes the figure's files. */
export async function runEndpointFigure(o: EndpointFigureOptions): Promise<{ dir: string; status: 'completed' | 'interrupted'; artifacts: FigureArtifacts[]; runSeconds: Record<string, number> }> {
  const now = o.now ?? (() => new Date());
  let dir: string;
  let state: State;
  if (o.resumeDir) {
    dir = o.resumeDir;
    const file = join(dir, FIGURE_STATE_FILE);
    const raw = readJsonFile(file) as State;
    checkFigureRuns(dir, raw?.runs);
    // figure.json may have travelled: its endpoints are checked as an endpoints file is.
    state = { ...raw, endpoints: parseEndpointsFile(raw.endpoints, `${file}: endpoints`), runSeconds: raw.runSeconds ?? {} };
  } else {
    if (!o.endpointsFile) {
      throw new UserError('metron-fig5d measures OpenAI-compatible endpoints, as the paper measured Groq, Fireworks and Anyscale: give --endpoints <file.yaml> (see `fluidcap figure --help` and the README)');
    }
    if (!(o.rateQps > 0 && Number.isFinite(o.rateQps))) throw new UserError(`--qps must be a rate > 0, got ${describeValue(o.rateQps)}`);
    if (!(Number.isInteger(o.requests) && o.requests >= 4)) throw new UserError(`--requests must be a whole number >= 4, got ${describeValue(o.requests)}`);
    const endpoints = parseEndpointsFile((await readYamlFile(o.endpointsFile)).raw, o.endpointsFile);
    const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
    dir = join(o.outDir, `metron-fig5d-${stamp}`);
    state = { name: 'metron-fig5d', mode: 'endpoints', endpoints, endpointsFile: o.endpointsFile, rateQps: o.rateQps, requests: o.requests, runs: {}, runSeconds: {} };
  }
  makeDirIn(dir, join(dir, 'recipes'));
  makeDirIn(dir, join(dir, 'runs'));
  const save = () => writeJsonFile(dir, join(dir, FIGURE_STATE_FILE), state);
  const runOf = (key: string) => figureRunDir(dir, state.runs, key);
  const recipeOf = (name: string) => join(dir, 'recipes', `${name}.yaml`);
  for (const e of state.endpoints.endpoints) {
    if (!runOf(e.name)) writeFileIn(dir, recipeOf(e.name), `# Written by fluidcap figure metron-fig5d from ${state.endpointsFile}\n${stringify(endpointRecipe(state, e))}`);
  }
  // Every endpoint's recipe checked before the first run, so a missing key stops nothing half-way.
  const problems: string[] = [];
  state.endpoints.endpoints.forEach((e, i) => {
    // A run would send no key at all, and a hosted API answers every request 401.
    if (e.apiKeyEnv && !process.env[e.apiKeyEnv]) problems.push(`endpoints[${i}].apiKeyEnv names ${e.apiKeyEnv}, which is not set in the environment`);
  });
  for (const e of state.endpoints.endpoints) {
    if (runOf(e.name)) continue;
    await loadRecipe(recipeOf(e.name), { env: process.env }).catch((err: Error) => {
      if (!(err instanceof UserError)) throw err;
      problems.push(err.message);
    });
  }
  if (problems.length) throw new UserError(`${state.endpointsFile}: an endpoint's recipe cannot run:\n${problems.join('\n')}`);
  save();

  for (const e of state.endpoints.endpoints) {
    const runDir = runOf(e.name);
    if (runDir && existsSync(runPaths(runDir).capacity)) {
      o.log(`${e.name}: reusing ${runDir}`);
      continue;
    }
    o.log(`${e.name}: ${runDir ? `resuming ${runDir}` : `running ${recipeOf(e.name)}`}`);
    const t0 = performance.now();
    const outcome = await runCapacity({ recipeFile: recipeOf(e.name), outDir: join(dir, 'runs'), resumeDir: runDir ?? undefined, signal: o.signal, log: (line) => o.log(`  ${e.name}: ${line}`), earlyStop: false, now });
    state.runs[e.name] = relative(dir, outcome.runDir);
    state.runSeconds[e.name] = (performance.now() - t0) / 1000;
    save();
    if (outcome.status === 'interrupted') return { dir, status: 'interrupted', artifacts: [], runSeconds: state.runSeconds };
    if (outcome.status !== 'completed') throw new Error(`${e.name} run ${outcome.runDir} ended ${outcome.status}: ${outcome.reason}`);
  }

  const endpoints: EndpointProbe[] = state.endpoints.endpoints.map((e) => ({
    key: e.name,
    label: e.label ?? e.name,
    model: e.model ?? null,
    url: shownUrl(e.url),
    ...loadProbe(runOf(e.name)!),
  }));
  const w = state.endpoints.workload;
  const setup = [
    `Workload: ${w ? `the endpoints file\u2019s (${JSON.stringify(w)})` : 'the paper\u2019s (M-API): prompts of 256 to 8192 tokens and 32 to 256 output tokens, uniform (the paper prints the ranges, not the distributions, and no lower bound on outputs), text prompts in chat form'}; one Poisson probe per endpoint at ${state.rateQps} QPS with ${state.requests} requests (first 10% warm-up); the paper ran one every hour for 24 hours.`,
    `First-token deadlines: each endpoint's own prefill profile (${state.endpoints.profile ? 'the endpoints file\u2019s profile section' : `prompt lengths ${ENDPOINT_PROFILE.promptLengths.join(', ')}, ${ENDPOINT_PROFILE.repeats} repeats, fit bounds off: a shared server is noisy and the fit only sets D_p`}) plus a TTFT slack of ${DEFAULT_FLUIDITY.ttftSlackS} s.`,
    `Run time here: ${state.endpoints.endpoints.map((e) => `${e.name} ${(state.runSeconds[e.name] ?? 0).toFixed(0)} s`).join(', ')} (what the last invocation ran; a run reused by --resume keeps its time). Runs (relative to this directory): ${state.endpoints.endpoints.map((e) => state.runs[e.name]).join(', ')}.`,
    `API keys are read from the environment variables the endpoints file names (${state.endpoints.endpoints.filter((e) => e.apiKeyEnv).map((e) => `${e.name}: ${e.apiKeyEnv}`).join(', ') || 'none named'}) and never written.`,
  ];
  const paper = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
  const figPaper = figurePaper(paper, 'metron-fig5d', { trace: 'endpoints', onHosts: true }, { readAtMissRate: 0.1, systems: endpoints.map((e) => e.label).join(', ') });
  const artifacts = await drawFigure(metronFig5d({ endpoints, percentile: 99, minFluidity: 0.9, paper: figPaper, setup }));
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  return { dir, status: 'completed', artifacts: [artifacts], runSeconds: state.runSeconds };
}

// An endpoint's (only) probe: its evaluated requests judged with the run's prefill fit and SLO.
function loadProbe(runDir: string): Pick<EndpointProbe, 'rateQps' | 'metrics' | 'clientErrorS' | 'clientErrorFrom'> {
  const data = loadRun(runDir);
  const probe = data.probes.at(-1);
  if (!probe) throw new UserError(`${runDir}: the run has no probe`);
  const found = findProbeDir(runDir, { index: probe.index, qps: probe.qps });
  if (!found || !existsSync(found.timelines)) throw new UserError(`${runDir}: the timelines of the probe at ${probe.qps} QPS are missing`);
  const f = data.capacity.slo.fluidity;
  const slackS = f?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS;
  const tbtDeadlineS = f?.tbtDeadlineS ?? DEFAULT_FLUIDITY.tbtDeadlineS;
  const metrics = readJsonLines(found.timelines)
    .filter(isTimelineRecord)
    .filter((r) => r.warmup !== true)
    .map((r) => {
      const prefillS = data.fit ? predictPrefillS(data.fit, r.promptTokens) : undefined;
      return computeRequestMetrics(r, { dpS: (prefillS ?? 0) + slackS, tbtDeadlineS, prefillS, tieRule: f?.tieRule });
    });
  const stamped = probe.recvMinusEmit?.p99S ?? null;
  return { rateQps: probe.qps, metrics, clientErrorS: stamped ?? probe.clientErrorS ?? null, clientErrorFrom: stamped !== null ? 'receive \u2212 emit' : 'client' };
}
