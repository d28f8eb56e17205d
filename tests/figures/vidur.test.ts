// `fluidcap figure vidur-fig5` / `vidur-fig6` on a reduced matrix (A100 and H100 × TP 1 and 8 ×
// vLLM and Sarathi: eight configurations, the four at TP 1 infeasible), built through runFigure as
// the CLI calls it. Checks that every ranked configuration is one mark in the SVG, that the CSV
// rows follow the twin's ranking, that the files say the numbers came from the twin, and that the
// paper table divides only by the numbers the paper printed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFigure } from '../../harness/figures/runFigure.ts';
import { TWIN_SWEEP_FILES } from '../../harness/twin/twinSweep.ts';
import { UserError } from '../../harness/util/errors.ts';
import { ROOT } from '../pipeline/support.ts';
import { svgPoints } from '../support/svgMarks.ts';

function reducedSweep(): { sweep: string; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-vidur-fig-'));
  copyFileSync(join(ROOT, 'sweeps', 'vidur-base.yaml'), join(dir, 'vidur-base.yaml'));
  const sweep = join(dir, 'reduced.yaml');
  writeFileSync(sweep, 'name: vidur-reduced\nrecipe: vidur-base.yaml\nmatrix:\n  gpuProfile: [a100-sxm-80gb, h100-sxm-80gb]\n  tensorParallel: [1, 8]\n  scheduler: [vllm, sarathi]\n');
  return { sweep, out: join(dir, 'out') };
}

const base = { timeScale: 0.5, rateQps: 6, requests: 200, log: () => {} };
const csvRows = (text: string) => text.trim().split('\n').slice(1).map((l) => l.split(','));

test('vidur-fig5: one mark per ranked configuration, ranking.csv in the twin\u2019s order, every file says twin', async () => {
  const f = reducedSweep();
  const outcome = await runFigure({ ...base, name: 'vidur-fig5', outDir: f.out, sweepFile: f.sweep });
  assert.is(outcome.status, 'completed');
  const twinDir = readdirSync(outcome.dir).find((n) => n.startsWith('vidur-reduced-twin-'))!;
  const twin = JSON.parse(readFileSync(join(outcome.dir, twinDir, TWIN_SWEEP_FILES.rankingJson), 'utf8')) as { source: string; configurations: { id: string; rank: number | null; status: string; gpuProfile: string; scheduler: string; qpsPerUsdPerHour: number | null }[] };
  assert.is(twin.source, 'twin');
  const ranked = twin.configurations.filter((c) => c.rank !== null);
  assert.is(ranked.length, 4);
  assert.is(twin.configurations.filter((c) => c.status === 'infeasible').length, 4);

  const svg = readFileSync(join(outcome.dir, 'qps-per-dollar.svg'), 'utf8');
  assert.is(svgPoints(svg).length, 4, 'one mark per ranked configuration');
  // Tensor parallelism is drawn (a shape legend) and the best configurations are labelled with their rank.
  assert.match(svg, /aria-label="Symbol legend titled 'tensor parallelism'/);
  assert.match(svg, />#1 TP\d+<\/text>/);

  const rows = csvRows(readFileSync(join(outcome.dir, 'ranking.csv'), 'utf8'));
  assert.equal(rows.map((r) => [r[0], r[1], r[2]]), ranked.map((c) => ['twin', String(c.rank), c.id]));
  const chart = csvRows(readFileSync(join(outcome.dir, 'qps-per-dollar.csv'), 'utf8'));
  // Each chart point is (rank, QPS per $/h) of the configuration of that rank, in its GPU × scheduler series.
  for (const [series, x, y] of chart) {
    const c = ranked[Number(x) - 1];
    assert.is(`${c.gpuProfile} ${c.scheduler}`, series);
    assert.ok(Math.abs(Number(y) - c.qpsPerUsdPerHour!) < 1e-12);
  }
  assert.is(chart.length, 4);
  const byRank = [...chart].sort((a, b) => Number(a[1]) - Number(b[1])).map((r) => Number(r[2]));
  assert.ok(byRank.every((y, i) => i === 0 || y <= byRank[i - 1]), `QPS per $/h falls with rank: ${byRank.join(' ')}`);

  const readme = readFileSync(join(outcome.dir, 'README.md'), 'utf8');
  assert.match(readme, /came from fluidcap’s simulated twin/);
  assert.match(readme, /Twin sweep wall time here: \d+\.\d s/);
  const paper = csvRows(readFileSync(join(outcome.dir, 'paper-vs-ours.csv'), 'utf8'));
  const wall = paper.find((r) => r[0] === 'search.wallHours')!;
  assert.is(wall[3], '1', 'the abstract prints one hour');
  assert.ok(Number(wall[6]) > 0, 'ours / paper where the paper printed a number');
  const best = paper.find((r) => r[0] === 'best.qpsPerUsdPerHour')!;
  assert.is(best[3], '', 'no paper value where none was printed');
  assert.is(best[6], '', 'and no ratio');
  assert.ok(Math.abs(Number(best[5]) - ranked[0].qpsPerUsdPerHour!) < 1e-12);
  assert.ok(outcome.artifacts[0].summary.some((l) => /twin sweep wall time \d+\.\d s/.test(l)));
});

test('vidur-fig6: QPS per $/hour against TTFT P90 and TBT P99 at capacity, with the SLO bounds drawn', async () => {
  const f = reducedSweep();
  const outcome = await runFigure({ ...base, name: 'vidur-fig6', outDir: f.out, sweepFile: f.sweep });
  for (const [file, bound] of [['qps-per-dollar-vs-ttft', 'SLO 2 s'], ['qps-per-dollar-vs-tbt', 'SLO 200 ms']]) {
    const svg = readFileSync(join(outcome.dir, `${file}.svg`), 'utf8');
    assert.is(svgPoints(svg).length, 4, file);
    assert.ok(svg.includes(bound), `${file}: ${bound}`);
    const points = csvRows(readFileSync(join(outcome.dir, `${file}.csv`), 'utf8'));
    // Every configuration passed its SLO at capacity, so each point sits left of the bound.
    const limit = file.endsWith('ttft') ? 2 : 200;
    assert.ok(points.every((p) => Number(p[1]) > 0 && Number(p[1]) <= limit), `${file}: ${points.map((p) => p[1]).join(' ')}`);
  }
});

test('vidur figures refuse --hosts and --resume with what to do instead', async () => {
  const err = await runFigure({ ...base, name: 'vidur-fig5', outDir: '/nonexistent', inventory: { hosts: [], groups: {} } as never }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof UserError);
  assert.match((err as Error).message, /--hosts: vidur-fig5 is evaluated on the twin; .*--top N/);
  const again = await runFigure({ ...base, name: 'vidur-fig6', outDir: '/nonexistent', resumeDir: '/nonexistent' }).then(() => null, (e: unknown) => e);
  assert.ok(again instanceof UserError);
});

test.run();
