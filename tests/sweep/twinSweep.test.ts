// `fluidcap sweep --twin`: a small matrix (two models × two schedulers, the 70B one at tensor
// parallelism 1 so it cannot fit) evaluated on the twin. Checks the ranking against an independent
// twin search of each configuration's recipe, the money columns against the GPU profile's price,
// the infeasible rows, the files and their provenance line, and that the top-N file is a sweep file
// the real `fluidcap sweep` parses and expands to exactly those configurations. Bad input exits 2.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { memoryFit, runTwinSweep, prepareTwinSweep, TWIN_SWEEP_FILES, topSweepFileName } from '../../harness/twin/twinSweep.ts';
import { rankTwinRows, moneyOf, TWIN_PROVENANCE, type TwinConfigRow } from '../../harness/twin/twinSweepRank.ts';
import { rehearse } from '../../harness/twin/rehearse.ts';
import { prepareSweep } from '../../harness/sweep/runSweep.ts';
import { loadGpuProfile } from '../../harness/catalog/gpus.ts';
import { findModel } from '../../harness/catalog/models.ts';
import { UserError } from '../../harness/util/errors.ts';
import { fluidcap } from '../pipeline/support.ts';
import { twinBaseYaml } from './pageFixtures.ts';

const BASE = twinBaseYaml(64);

const SWEEP = `name: tw
recipe: base.yaml
matrix:
  model: [llama-3-8b, llama-2-70b]
  scheduler: [vllm, sarathi]
`;

function fixture(sweepText = SWEEP): { dir: string; sweep: string; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-twin-sweep-'));
  writeFileSync(join(dir, 'base.yaml'), BASE);
  writeFileSync(join(dir, 'sweep.yaml'), sweepText);
  const out = join(dir, 'out');
  mkdirSync(out);
  return { dir, sweep: join(dir, 'sweep.yaml'), out };
}

test('ranks the feasible configurations by QPS per $/hour, reports the 70B ones infeasible, and writes the files', async () => {
  const f = fixture();
  const outcome = await runTwinSweep({ sweepFile: f.sweep, outDir: f.out, top: 1, log: () => {} });
  assert.is(outcome.rows.length, 4);
  assert.is(outcome.failed, 0);
  const infeasible = outcome.rows.filter((r) => r.status === 'infeasible');
  assert.equal(infeasible.map((r) => r.values.model), ['llama-2-70b', 'llama-2-70b']);
  for (const r of infeasible) {
    assert.match(r.reason, /llama-2-70b does not fit: \d+\.\d GiB of bf16 weights per GPU at tensor parallelism 1/);
    assert.is(r.rank, null);
    assert.is(r.capacityQps, null);
  }
  const ranked = outcome.rows.filter((r) => r.rank !== null);
  assert.equal(ranked.map((r) => r.rank), [1, 2]);
  assert.ok(ranked[0].qpsPerUsdPerHour! >= ranked[1].qpsPerUsdPerHour!);

  // Each capacity is the one an independent twin search of the same configuration's recipe finds.
  const { runs } = await prepareTwinSweep(f.sweep);
  const price = loadGpuProfile('h100-sxm-80gb').price!.usdPerGpuHour;
  for (const r of ranked) {
    const run = runs.find((x) => x.config.id === r.id)!;
    const alone = rehearse(run.recipe);
    assert.is(r.capacityQps, alone.capacityQps, r.id);
    assert.ok(r.capacityQps! > 0);
    assert.is(r.gpuCount, 1);
    assert.ok(Math.abs(r.qpsPerUsdPerHour! - r.capacityQps! / price) < 1e-12);
    const tokensPerS = r.capacityQps! * (r.meanPromptTokens! + r.meanOutputTokens!);
    assert.ok(Math.abs(r.usdPerMillionTokens! - (price / 3600 / tokensPerS) * 1e6) < 1e-9);
    // Uniform 256..1024 prompts and 32..96 outputs.
    assert.ok(r.meanPromptTokens! > 256 && r.meanPromptTokens! < 1024, String(r.meanPromptTokens));
    assert.ok(r.meanOutputTokens! > 32 && r.meanOutputTokens! < 96, String(r.meanOutputTokens));
    assert.ok(r.ttftP90S! > 0 && r.ttftP90S! <= 2, `TTFT P90 at capacity within the SLO: ${r.ttftP90S}`);
    assert.ok(r.tbtP99S! > 0 && r.tbtP99S! <= 0.2, `TBT P99 at capacity within the SLO: ${r.tbtP99S}`);
  }

  for (const name of Object.values(TWIN_SWEEP_FILES)) assert.ok(existsSync(join(outcome.dir, name)), name);
  const md = readFileSync(join(outcome.dir, TWIN_SWEEP_FILES.rankingMd), 'utf8');
  assert.ok(md.includes(TWIN_PROVENANCE));
  assert.match(md, /Wall time of the whole twin sweep: \d+\.\d s/);
  const csv = readFileSync(join(outcome.dir, TWIN_SWEEP_FILES.rankingCsv), 'utf8').trim().split('\n');
  assert.is(csv.length, 5);
  assert.ok(csv.slice(1).every((l) => l.startsWith('twin,')), 'every CSV row says it came from the twin');
  assert.equal(csv.slice(1, 3).map((l) => l.split(',')[2]), ranked.map((r) => r.id));
  const json = JSON.parse(readFileSync(join(outcome.dir, TWIN_SWEEP_FILES.rankingJson), 'utf8'));
  assert.is(json.source, 'twin');
  assert.is(json.configurations.length, 4);

  // The top-1 file: a sweep file the real sweep expands to exactly the best configuration.
  const top = join(outcome.dir, topSweepFileName(1));
  const { plan } = await prepareSweep(top, undefined);
  assert.is(plan.runs.length, 1);
  assert.equal(plan.runs[0].config.values, ranked[0].values);
  assert.is(plan.runs[0].recipe.target.sim?.scheduler, ranked[0].scheduler);
  assert.is((parse(readFileSync(top, 'utf8')) as { recipe: string }).recipe, 'base.yaml');
});

test('rankTwinRows: QPS per $/hour first, then capacity, then matrix order; unpriced and unranked rows follow', () => {
  const row = (id: string, capacityQps: number | null, gpuCount: number, usdPerGpuHour: number | null, status: TwinConfigRow['status'] = 'ranked'): TwinConfigRow => ({
    id, values: {}, status, reason: '', model: 'm', gpuProfile: 'g', scheduler: 'vllm', tensorParallel: gpuCount, gpuCount, usdPerGpuHour, capacityQps,
    bracket: null, outcome: null, probes: 0, meanPromptTokens: 100, meanOutputTokens: 100, ttftP90S: null, tbtP99S: null, virtualS: 0, wallS: 0,
  });
  const ranked = rankTwinRows([
    row('a', 2, 1, 2), // 1 QPS per $/h
    row('b', 8, 2, 2), // 2
    row('c', 4, 1, 2), // 2, less capacity than b
    row('d', 5, 1, null), // no price
    row('e', null, 1, 2, 'infeasible'),
  ]);
  assert.equal(ranked.map((r) => [r.id, r.rank]), [['b', 1], ['c', 2], ['a', 3], ['d', null], ['e', null]]);
  assert.equal(moneyOf(row('x', 3, 4, 2.5)), { usdPerHour: 10, qpsPerUsdPerHour: 0.3, usdPerMillionTokens: (10 / 3600 / 600) * 1e6 });
});

test('bad input: a matrix value the recipe refuses exits 2 naming the file, configuration, field and value', async () => {
  const f = fixture('name: tw\nrecipe: base.yaml\nmatrix:\n  tensorParallel: [0]\n');
  const err = await prepareTwinSweep(f.sweep).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof UserError, String(err));
  assert.match((err as Error).message, /sweep\.yaml \[c01-tensorParallel0: tensorParallel=0\]: target\.tensorParallel must be > 0, got 0 \(number\)/);
  const r = await fluidcap(['sweep', '--twin', f.sweep, '--out', f.out], { timeoutMs: 60_000 });
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /target\.tensorParallel/);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  const top = await fluidcap(['sweep', f.sweep, '--top', '2'], { timeoutMs: 60_000 });
  assert.is(top.code, 2);
  assert.match(top.stderr, /--top needs --twin/);
});

test('sweeps/vidur-fig5.yaml expands to Vidur\'s 360 configurations (less Orca+), of which the 40 on one GPU (TP 1 × PP 1) cannot hold the 70B weights', async () => {
  const { runs } = await prepareTwinSweep('sweeps/vidur-fig5.yaml');
  // 2 GPU types × 3 TP × 3 PP × 5 batch sizes × (vLLM + Sarathi-Serve at 3 chunk sizes).
  assert.is(runs.length, 360);
  const infeasible = runs.filter((r) => {
    const t = r.recipe.target;
    return !memoryFit({ model: findModel(t.model!)!, gpu: loadGpuProfile(t.gpuProfile!), tensorParallel: t.tensorParallel * t.pipelineParallel, gpuMemoryUtilization: t.engineArgs.gpuMemoryUtilization, maxModelLen: 4096 }).fits;
  });
  assert.is(infeasible.length, 40);
  assert.ok(infeasible.every((r) => r.recipe.target.tensorParallel === 1 && r.recipe.target.pipelineParallel === 1));
});

test.run();
