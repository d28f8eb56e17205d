// `fluidcap figure vidur-fig5 | vidur-fig6`: the Vidur-Search setting evaluated on the twin, then
// drawn. The paper's Fig. 5(a) searches LLaMA2-70B on LMSys-Chat-1M and its Fig. 6 compares the
// best configuration across Chat-1M, Arxiv-4K and BWB-4K, so the figure writes, per trace, a copy
// of the sweep file and its base recipe with that trace's length preset (inputs/<trace>/) and runs
// the twin sweep on it. Each twin sweep's own directory (its ranking, the sweep file and base
// recipe) sits inside the figure's directory, so every mark can be traced to its configuration. No
// engine runs, so there is nothing to resume and no host to use.
import { readFileSync } from 'node:fs';
import { writeFileIn } from '../util/confinedFs.ts';
import { dirname, join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse, stringify } from 'yaml';
import { runTwinSweep, type TwinSweepOutcome } from '../twin/twinSweep.ts';
import type { CapacityRule } from '../twin/twinSearch.ts';
import { UserError } from '../util/errors.ts';
import { figurePaper, parsePaperNumbers } from './paperNumbers.ts';
import { vidurFig5, vidurFig6 } from './vidurFigs.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';
import { makeDirs } from '../util/makeDirs.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');
/** The sweep file the Vidur figures evaluate unless told otherwise. */
export const VIDUR_SWEEP = join(ROOT, 'sweeps', 'vidur-fig5.yaml');
/** The trace of the paper's Fig. 5(a) (LLaMA2-70B). */
export const FIG5_TRACE = 'chat-1m';
/** The traces of the paper's Fig. 6 (Table 1's 4K-capped traces), in its order. */
export const FIG6_TRACES = ['chat-1m', 'arxiv-4k', 'bwb-4k'] as const;

export interface VidurFigureOptions {
  name: 'vidur-fig5' | 'vidur-fig6';
  outDir: string;
  /** A sweep file in vidur-fig5.yaml's form (e.g. a reduced matrix); default VIDUR_SWEEP. */
  sweepFile?: string;
  /** The length presets to evaluate (default: FIG5_TRACE for Fig. 5, FIG6_TRACES for Fig. 6). */
  traces?: readonly string[];
  /** What a configuration's capacity is: the SLOs holding (default) or Vidur's P99 scheduling delay under 5 s. */
  capacity?: CapacityRule;
  log: (line: string) => void;
  now?: () => Date;
}

// The sweep file and its base recipe, copied under dir/inputs/<trace>/ with the workload's lengths set to the trace's preset.
function sweepForTrace(dir: string, sweepFile: string, trace: string): string {
  const sweep = parse(readFileSync(sweepFile, 'utf8')) as Record<string, unknown>;
  if (typeof sweep.recipe !== 'string') throw new UserError(`${sweepFile}: recipe must name the base recipe file, got ${JSON.stringify(sweep.recipe)}`);
  const baseFile = resolve(dirname(sweepFile), sweep.recipe);
  const base = parse(readFileSync(baseFile, 'utf8')) as Record<string, unknown>;
  const workload = { ...(base.workload as Record<string, unknown>), lengths: { preset: trace } };
  const into = join(dir, 'inputs', trace);
  makeDirs(into);
  writeFileIn(dir, join(into, 'base.yaml'), `# ${baseFile} with the ${trace} length preset (fluidcap figure)\n${stringify({ ...base, workload })}`);
  const out = join(into, 'sweep.yaml');
  writeFileIn(dir, out, `# ${sweepFile} on the ${trace} length preset (fluidcap figure)\n${stringify({ ...sweep, name: `${String(sweep.name ?? 'sweep')}-${trace}`, recipe: 'base.yaml' })}`);
  return out;
}

export async function runVidurFigure(o: VidurFigureOptions): Promise<{ dir: string; artifacts: FigureArtifacts; twinWallS: number; figureS: number }> {
  const t0 = performance.now();
  const now = o.now ?? (() => new Date());
  const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const dir = join(o.outDir, `${o.name}-${stamp}`);
  makeDirs(dir);
  const sweepFile = resolve(o.sweepFile ?? VIDUR_SWEEP);
  const traces = o.traces ?? (o.name === 'vidur-fig5' ? [FIG5_TRACE] : [...FIG6_TRACES]);
  const sweeps: { trace: string; twin: TwinSweepOutcome }[] = [];
  for (const trace of traces) {
    o.log(`twin sweep on ${trace}`);
    sweeps.push({ trace, twin: await runTwinSweep({ sweepFile: sweepForTrace(dir, sweepFile, trace), outDir: dir, capacity: o.capacity, log: o.log, now }) });
  }
  const first = sweeps[0].twin;
  const slo = first.firstRecipe.slo;
  if (!slo.ttft || !slo.tbt) {
    throw new UserError(`${sweepFile}: the Vidur figures need a recipe SLO with ttft and tbt percentiles (Vidur's TTFT P90 < 2 s and TBT P99 < 200 ms), got ${Object.keys(slo).join(', ') || 'none'}`);
  }
  const data = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
  const vidurRule = o.capacity?.kind === 'scheduling-delay';
  const axes = Object.keys((parse(readFileSync(sweepFile, 'utf8')) as { matrix?: Record<string, unknown> }).matrix ?? {}).join(', ');
  const twinWallS = sweeps.reduce((t, s) => t + s.twin.wallS, 0);
  const setup = [
    `Configurations: ${relative(process.cwd(), sweepFile) || sweepFile}, evaluated by \`fluidcap sweep --twin\` once per trace (${traces.join(', ')}) with its base recipe's lengths set to that trace's preset (inputs/<trace>/ here); each twin sweep's ranking, sweep file and recipe are in ${sweeps.map((s) => relative(dir, s.twin.dir)).join(', ')}/.`,
    `SLO: ${[slo.ttft.source, slo.tbt.source].join(' and ')}; model ${first.rows[0]?.model ?? '—'}. ${vidurRule ? 'Capacity is Vidur\u2019s: the highest rate with P99 scheduling delay (arrival to first scheduled) under 5 s, the probes run to their end; the SLOs are only reported (the TTFT P90 and TBT P99 at that capacity).' : 'Capacity is the highest rate at which these SLOs hold (fluidcap\u2019s criterion), not Vidur\u2019s highest rate with P99 scheduling delay under 5 s (`--capacity scheduling-delay`).'}`,
    `Workload: synthetic lengths with each preset's median and p90 (no trace file), ${first.firstRecipe.workload.arrivals.process} arrivals, seed ${first.firstRecipe.workload.seed}.`,
    `Search space: the sweep file\u2019s matrix (${axes}); no Orca+, which Vidur also searches.${axes.includes('pipelineParallel') ? ' Pipeline parallelism is modelled as vLLM\u2019s V0 engine runs it (the simulated engine\u2019s pipeline.ts): stages of equal layers, one micro-batch per stage in flight, each with its own scheduler and 1/stages of the KV cache and batch cap, stages never waiting on one another (PP at its best).' : ''}`,
  ];
  const searchSpace = `the sweep file\u2019s matrix: ${axes}; no Orca+`;
  let artifacts: FigureArtifacts;
  if (o.name === 'vidur-fig5') {
    const paper = figurePaper(data, 'vidur-fig5', { trace: sweeps[0].trace, onHosts: false }, {
      slo: `${slo.ttft.source}, ${slo.tbt.source}`,
      capacityCriterion: vidurRule ? 'P99 scheduling delay < 5 s' : 'the TTFT and TBT SLOs hold',
      trace: sweeps[0].trace,
      searchSpace,
      pricePer: 'capacity ÷ hourly rent of one replica\u2019s GPUs (gpu-profiles prices)',
    });
    artifacts = await drawFigure(vidurFig5({ rows: first.rows, ttftP90MaxS: slo.ttft.maxS, tbtP99MaxS: slo.tbt.maxS, twinWallS, paper, setup }));
  } else {
    const paper = figurePaper(data, 'vidur-fig6', { trace: traces.join(', '), onHosts: false }, { traces: traces.join(', ') });
    artifacts = await drawFigure(vidurFig6({ traces: sweeps.map((s) => ({ trace: s.trace, rows: s.twin.rows, twinWallS: s.twin.wallS })), paper, setup }));
  }
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  const figureS = (performance.now() - t0) / 1000;
  artifacts.summary.push(`figure written in ${figureS.toFixed(1)} s (twin sweeps included)`);
  return { dir, artifacts, twinWallS, figureS };
}
