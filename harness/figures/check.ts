// `fluidcap figure --check`: every figure drawn once, at sizes that fit a short run, and one table
// of the papers' printed values and claims beside ours (holds / does not hold / not comparable
// here, with the reason). Each figure keeps its own directory under the check's directory, so its
// README, charts and claims.csv are there to read; check.csv and check.md gather the claims.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { writeFileIn } from '../util/confinedFs.ts';
import { makeDirs } from '../util/makeDirs.ts';
import { toCsv } from '../report/csv.ts';
import type { Inventory } from '../provision/inventory.ts';
import { CLAIMS_COLUMNS, checkTable, verdictCounts } from './claimsTable.ts';
import { figurePaper, judgeFigure, parsePaperNumbers, type ClaimRow } from './paperNumbers.ts';
import { FIGURES, runFigure, type FigureName, type FigureOptions } from './runFigure.ts';

// metron-fig5d's entries judged with no endpoint measured: the paper's are public endpoints, not comparable here either way.
function endpointClaimsWithoutRun(): ClaimRow[] {
  const file = join(import.meta.dirname, 'paperNumbers.json');
  const paper = parsePaperNumbers(JSON.parse(readFileSync(file, 'utf8')), file);
  return judgeFigure(figurePaper(paper, 'metron-fig5d', { trace: 'endpoints', onHosts: true }, { readAtMissRate: 0.1, systems: 'none measured (no --endpoints)' }), {});
}

/** The reduced Vidur matrix --check evaluates on each trace. */
export const CHECK_SWEEP = resolve(import.meta.dirname, '..', '..', 'sweeps', 'vidur-check.yaml');

/**
 * The sizes --check runs each figure at: the figures' defaults made smaller where a run is long.
 * metron-fig6 runs the full Arxiv-Summarization trace on a doubling grid with the paper's 0.6 QPS
 * in its middle (a capacity, and so each ratio of capacities, is only as fine as the grid: factors
 * of 2), 40 requests a probe (P99 of 36 is the worst request, as it is of the 54 of 60); the Vidur figures on a
 * 16-configuration matrix that holds the paper's best configurations.
 */
export const CHECK_SIZES: Record<FigureName, Pick<FigureOptions, 'requests' | 'rateQps' | 'grid' | 'sweepFile'>> = {
  'metron-fig5d': { requests: 100, rateQps: 6 },
  'metron-fig3': { requests: 100, rateQps: 6 },
  'metron-fig6': { requests: 40, rateQps: 0.6, grid: [0.3, 0.6, 1.2] },
  'vidur-fig5': { requests: 200, rateQps: 6, sweepFile: CHECK_SWEEP },
  'vidur-fig6': { requests: 200, rateQps: 6, sweepFile: CHECK_SWEEP },
  'deepspeed-throughput': { requests: 200, rateQps: 6 },
};

export interface CheckOptions {
  outDir: string;
  timeScale: number;
  inventory?: Inventory;
  /** metron-fig5d's endpoints file; without one its claims (all on public endpoints) are listed without a run. */
  endpointsFile?: string;
  /** The figures to run (default all, in FIGURES' order). */
  figures?: readonly FigureName[];
  signal?: AbortSignal;
  log: (line: string) => void;
  now?: () => Date;
}

export interface CheckFigure {
  figure: FigureName;
  /** Its directory; null when it failed before making one. */
  dir: string | null;
  wallS: number;
  rows: ClaimRow[];
  /** Why the figure did not finish (its claims are then absent from the table), or null. */
  error: string | null;
}

export interface CheckOutcome {
  dir: string;
  status: 'completed' | 'interrupted';
  figures: CheckFigure[];
  wallS: number;
  /** The table printed at the end (figures that finished). */
  table: string;
}

/** Runs every figure in turn and writes check.csv and check.md beside their directories. */
export async function runFigureCheck(o: CheckOptions): Promise<CheckOutcome> {
  const t0 = performance.now();
  const now = o.now ?? (() => new Date());
  const stamp = now().toISOString().replace(/[-:]/g, '').replace(/\..*$/, '');
  const dir = join(o.outDir, `check-${stamp}`);
  makeDirs(dir);
  const figures: CheckFigure[] = [];
  let status: CheckOutcome['status'] = 'completed';
  for (const name of o.figures ?? FIGURES) {
    o.log(`— ${name}`);
    const t = performance.now();
    if (name === 'metron-fig5d' && !o.endpointsFile) {
      const rows = endpointClaimsWithoutRun();
      figures.push({ figure: name, dir: null, wallS: 0, rows, error: null });
      o.log(`  ${name}: no --endpoints, so no run: ${verdictCounts(rows)}`);
      continue;
    }
    let outcome: Awaited<ReturnType<typeof runFigure>>;
    try {
      outcome = await runFigure({ name, outDir: dir, inventory: name === 'metron-fig5d' ? undefined : o.inventory, endpointsFile: o.endpointsFile, timeScale: o.timeScale, ...CHECK_SIZES[name], signal: o.signal, log: (l) => o.log(`  ${l}`), now });
    } catch (err) {
      // One figure that cannot be drawn here (e.g. a prefill fit refused on a noisy machine) leaves the others to run.
      const wallS = (performance.now() - t) / 1000;
      figures.push({ figure: name, dir: null, wallS, rows: [], error: (err as Error).message.split('\n')[0] });
      o.log(`  ${name}: failed after ${wallS.toFixed(0)} s: ${figures.at(-1)!.error}`);
      continue;
    }
    if (outcome.status === 'interrupted') {
      status = 'interrupted';
      break;
    }
    const wallS = (performance.now() - t) / 1000;
    figures.push({ figure: name, dir: outcome.dir, wallS, rows: outcome.artifacts.flatMap((a) => a.claims), error: null });
    o.log(`  ${name}: ${verdictCounts(figures.at(-1)!.rows)} (${wallS.toFixed(0)} s)`);
  }
  const wallS = (performance.now() - t0) / 1000;
  const failed = figures.filter((f) => f.error !== null);
  const table = checkTable(figures) + failed.map((f) => `${f.figure}: not drawn (${f.error}); its claims are not in this table\n`).join('');
  writeFileIn(dir, join(dir, 'check.csv'), toCsv(['figure', ...CLAIMS_COLUMNS], figures.flatMap((f) => f.rows.map((r) => [f.figure, ...CLAIMS_COLUMNS.map((c) => r[c])]))));
  writeFileIn(
    dir,
    join(dir, 'check.md'),
    [
      '# The papers\u2019 printed values and claims beside ours',
      '',
      `${figures.length - failed.length} of ${figures.length} figures drawn in ${wallS.toFixed(0)} s (${figures.map((f) => `${f.figure} ${f.wallS.toFixed(0)} s`).join(', ')}); ${verdictCounts(figures.flatMap((f) => f.rows))}.${status === 'interrupted' ? ' Interrupted: the figures after the last one listed did not run.' : ''}`,
      '',
      'Each figure\u2019s README and claims.csv (in its directory here) give every row with its source and the setup facts.',
      '',
      '```',
      table.trimEnd(),
      '```',
      '',
    ].join('\n'),
  );
  return { dir, status, figures, wallS, table };
}
