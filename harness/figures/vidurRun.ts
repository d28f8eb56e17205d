// `fluidcap figure vidur-fig5 | vidur-fig6`: the Vidur-Search setting evaluated on the twin (a
// sweep file, by default sweeps/vidur-fig5.yaml), then drawn. The twin sweep's own directory (its
// ranking, the sweep file and base recipe) sits inside the figure's directory, so every mark can be
// traced to its configuration. No engine runs, so there is nothing to resume and no host to use.
import { readFileSync } from 'node:fs';
import { writeFileIn } from '../util/confinedFs.ts';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runTwinSweep } from '../twin/twinSweep.ts';
import { UserError } from '../util/errors.ts';
import { parsePaperNumbers } from './paperNumbers.ts';
import { vidurFig5, vidurFig6 } from './vidurFigs.ts';
import { drawFigure, type FigureArtifacts } from './output.ts';
import { makeDirs } from '../util/makeDirs.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const PAPER_NUMBERS = join(import.meta.dirname, 'paperNumbers.json');
/** The sweep file the Vidur figures evaluate unless told otherwise. */
export const VIDUR_SWEEP = join(ROOT, 'sweeps', 'vidur-fig5.yaml');

export interface VidurFigureOptions {
  name: 'vidur-fig5' | 'vidur-fig6';
  outDir: string;
  /** A sweep file in vidur-fig5.yaml's form (e.g. a reduced matrix); default VIDUR_SWEEP. */
  sweepFile?: string;
  log: (line: string) => void;
  now?: () => Date;
}

export async function runVidurFigure(o: VidurFigureOptions): Promise<{ dir: string; artifacts: FigureArtifacts; twinWallS: number; figureS: number }> {
  const t0 = performance.now();
  const now = o.now ?? (() => new Date());
  const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const dir = join(o.outDir, `${o.name}-${stamp}`);
  makeDirs(dir);
  const sweepFile = o.sweepFile ?? VIDUR_SWEEP;
  const twin = await runTwinSweep({ sweepFile, outDir: dir, log: o.log, now });
  const slo = twin.firstRecipe.slo;
  if (!slo.ttft || !slo.tbt) {
    throw new UserError(`${sweepFile}: the Vidur figures need a recipe SLO with ttft and tbt percentiles (Vidur's TTFT P90 < 2 s and TBT P99 < 200 ms), got ${Object.keys(slo).join(', ') || 'none'}`);
  }
  const paper = parsePaperNumbers(JSON.parse(readFileSync(PAPER_NUMBERS, 'utf8')), PAPER_NUMBERS);
  const fig = paper.figures[o.name];
  const p = paper.papers[fig.paper];
  const setup = [
    `Configurations: ${relative(process.cwd(), resolve(sweepFile)) || sweepFile} (its base recipe: ${twin.firstRecipe.name.replace(/-c\d+.*$/, '')}), evaluated by \`fluidcap sweep --twin\`; its ranking, sweep file and recipe are in ${relative(dir, twin.dir)}/.`,
    `SLO: ${[slo.ttft.source, slo.tbt.source].join(' and ')}; model ${twin.rows[0]?.model ?? '—'}.`,
    `Workload: ${twin.firstRecipe.workload.lengths.kind === 'preset' ? `the ${(twin.firstRecipe.workload.lengths as { preset: string }).preset} preset (synthetic lengths with the trace's median and p90; no trace file)` : 'the recipe\u2019s lengths'}, ${twin.firstRecipe.workload.arrivals.process} arrivals, seed ${twin.firstRecipe.workload.seed}.`,
  ];
  const input = {
    rows: twin.rows,
    ttftP90MaxS: slo.ttft.maxS,
    tbtP99MaxS: slo.tbt.maxS,
    twinWallS: twin.wallS,
    paperNumbers: fig.numbers,
    paperName: `${p.authors.split(',')[0]} et al. ${p.year}`,
    setup,
  };
  const artifacts = await drawFigure(o.name === 'vidur-fig5' ? vidurFig5(input) : vidurFig6(input));
  for (const f of artifacts.files) writeFileIn(dir, join(dir, f.file), f.text);
  const figureS = (performance.now() - t0) / 1000;
  artifacts.summary.push(`figure written in ${figureS.toFixed(1)} s (twin sweep included)`);
  return { dir, artifacts, twinWallS: twin.wallS, figureS };
}
