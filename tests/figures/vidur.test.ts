// `fluidcap figure vidur-fig5` / `vidur-fig6` on a reduced matrix (A100 and H100 × TP 1 and 8 ×
// vLLM and Sarathi: eight configurations, the four at TP 1 infeasible), built through runFigure as
// the CLI calls it. Checks that every ranked configuration is one mark in the SVG, that the CSV
// rows follow the twin's ranking, that the files say the numbers came from the twin, and that
// claims.csv judges the paper's best configuration and orderings on the twin's own numbers.
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

const fieldRows = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => [...l.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));

test('vidur-fig5 (the paper\u2019s Fig. 5(a)): Chat-1M, QPS per $/hour against TTFT P90 and TBT P99 at capacity, the best configuration judged', async () => {
  const f = reducedSweep();
  const outcome = await runFigure({ ...base, name: 'vidur-fig5', outDir: f.out, sweepFile: f.sweep });
  assert.is(outcome.status, 'completed');
  // The paper's Fig. 5(a) is LLaMA2-70B on LMSys-Chat-1M: the sweep's base recipe runs with that preset.
  assert.match(readFileSync(join(outcome.dir, 'inputs', 'chat-1m', 'base.yaml'), 'utf8'), /preset: chat-1m/);
  const twinDir = readdirSync(outcome.dir).find((n) => n.startsWith('vidur-reduced-chat-1m-twin-'))!;
  const twin = JSON.parse(readFileSync(join(outcome.dir, twinDir, TWIN_SWEEP_FILES.rankingJson), 'utf8')) as { source: string; configurations: { id: string; rank: number | null; status: string; gpuProfile: string; scheduler: string; tensorParallel: number; qpsPerUsdPerHour: number | null }[] };
  assert.is(twin.source, 'twin');
  const ranked = twin.configurations.filter((c) => c.rank !== null);
  assert.is(ranked.length, 4);
  for (const [file, bound] of [['qps-per-dollar-vs-ttft', 'SLO 2 s'], ['qps-per-dollar-vs-tbt', 'SLO 200 ms']]) {
    const svg = readFileSync(join(outcome.dir, `${file}.svg`), 'utf8');
    assert.is(svgPoints(svg).length, 4, file);
    assert.ok(svg.includes(bound), `${file}: ${bound}`);
    const points = csvRows(readFileSync(join(outcome.dir, `${file}.csv`), 'utf8'));
    // Every configuration passed its SLO at capacity, so each point sits left of the bound.
    const limit = file.endsWith('ttft') ? 2 : 200;
    assert.ok(points.every((p) => Number(p[1]) > 0 && Number(p[1]) <= limit), `${file}: ${points.map((p) => p[1]).join(' ')}`);
  }
  const rows = csvRows(readFileSync(join(outcome.dir, 'ranking.csv'), 'utf8'));
  assert.equal(rows.map((r) => [r[0], r[1], r[2]]), ranked.map((c) => ['twin', String(c.rank), c.id]));
  const readme = readFileSync(join(outcome.dir, 'README.md'), 'utf8');
  assert.match(readme, /came from fluidcap’s simulated twin/);
  // claims.csv: the paper's best configuration (V-07) against the twin's rank 1, judged on Chat-1M.
  const claims = fieldRows(readFileSync(join(outcome.dir, 'claims.csv'), 'utf8'));
  const tp = claims.find((r) => r[2] === 'best.tensorParallel')!;
  assert.is(tp[0], 'V-07');
  assert.is(tp[4], '2 GPUs');
  assert.is(Number(tp[6]), ranked[0].tensorParallel);
  assert.is(tp[8], ranked[0].tensorParallel === 2 ? 'holds' : 'does not hold');
  const gpu = claims.find((r) => r[2] === 'best.gpu')!;
  assert.is(gpu[7], ranked[0].gpuProfile.split('-')[0]);
  const wall = claims.find((r) => r[2] === 'search.wallHours')!;
  assert.equal([wall[0], wall[8]], ['V-01', 'not comparable here']);
  assert.match(wall[9], /^scope: /);
  assert.ok(claims.some((r) => r[0] === 'V-S2' && r[8] === 'setup' && /scheduling delay/.test(r[4])), 'the paper\u2019s capacity criterion beside ours');
  assert.ok(outcome.artifacts[0].summary.some((l) => /twin sweep wall time \d+\.\d s/.test(l)));
});

test('vidur-fig6 (the paper\u2019s Fig. 6): the best QPS per $/hour for each trace, and the paper\u2019s orderings judged on them', async () => {
  const f = reducedSweep();
  const outcome = await runFigure({ ...base, name: 'vidur-fig6', outDir: f.out, sweepFile: f.sweep });
  const best = fieldRows(readFileSync(join(outcome.dir, 'best-by-trace.csv'), 'utf8'));
  assert.equal(best.map((r) => r[1]), ['chat-1m', 'arxiv-4k', 'bwb-4k']);
  for (const r of best) {
    const ranking = fieldRows(readFileSync(join(outcome.dir, `ranking-${r[1]}.csv`), 'utf8'));
    assert.is(r[2], ranking[0][2], `${r[1]}: the best is rank 1`);
    assert.ok(Math.abs(Number(r[3]) - Number(ranking[0][9])) < 1e-12);
  }
  const svg = readFileSync(join(outcome.dir, 'best-by-trace.svg'), 'utf8');
  assert.is(svgPoints(svg, 'best').length, 3, 'one best mark per trace');
  const claims = fieldRows(readFileSync(join(outcome.dir, 'claims.csv'), 'utf8'));
  const q = (t: string) => Number(best.find((r) => r[1] === t)![3]);
  const order = claims.find((r) => r[2] === 'qpsPerUsd.chatAboveArxiv')!;
  assert.is(order[0], 'V-15');
  assert.is(order[8], q('chat-1m') > q('arxiv-4k') ? 'holds' : 'does not hold');
  assert.is(claims.find((r) => r[2] === 'qpsPerUsd.arxivAboveBwb')![8], q('arxiv-4k') > q('bwb-4k') ? 'holds' : 'does not hold');
});

test('vidur figures refuse --hosts and --resume with what to do instead', async () => {
  const err = await runFigure({ ...base, name: 'vidur-fig5', outDir: '/nonexistent', inventory: { hosts: [], groups: {} } as never }).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof UserError);
  assert.match((err as Error).message, /--hosts: vidur-fig5 is evaluated on the twin; .*--top N/);
  const again = await runFigure({ ...base, name: 'vidur-fig6', outDir: '/nonexistent', resumeDir: '/nonexistent' }).then(() => null, (e: unknown) => e);
  assert.ok(again instanceof UserError);
});

test.run();
