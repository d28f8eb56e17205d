// Sizes a plan derives from its inputs are bounded before anything of that size is allocated:
// each case here used to end in a V8 fatal ("invalid size") or an out-of-memory abort. In-process
// through the planners, plus the two CLI paths that reached V8's limits (exit 2, no run directory).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SIZE_BOUNDS, checkSize } from '../../harness/util/sizeBounds.ts';
import { expandMatrix } from '../../harness/sweep/expand.ts';
import { planProfile } from '../../harness/capacity/profilePlan.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { resolveRun } from '../../harness/capacity/resolveRun.ts';
import { parseSweep } from '../../harness/sweep/sweepFile.ts';
import { BIN, FAST_RECIPE, childEnv } from '../pipeline/support.ts';
import { refused } from '../support/refused.ts';

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sizes-'));

test('the bound check: at the bound passes; above, NaN and Infinity are refused naming the source and the bound', () => {
  checkSize('probeRequests', SIZE_BOUNDS.probeRequests.max, 'x');
  refused(() => checkSize('probeRequests', SIZE_BOUNDS.probeRequests.max + 1, 'search.qps.max (1e7) × 3 s'), /^search\.qps\.max \(1e7\) × 3 s gives 1,000,001 requests in one probe, above the bound of 1,000,000$/);
  refused(() => checkSize('gpus', NaN, 'target.tensorParallel'), /gives NaN GPUs/);
  refused(() => checkSize('sweepConfigurations', Infinity, 'matrix'), /gives Infinity configurations/);
});

test('a sweep matrix of 10 fields × 10 values (10^10 configurations) is refused before it is expanded', () => {
  const matrix = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`target.engineArgs.x${i}`, Array.from({ length: 10 }, (_, j) => j)]));
  refused(() => expandMatrix({ matrix, exclude: [], file: 'big.yaml' }), /^big\.yaml: matrix \(target\.engineArgs\.x0: 10 × .* values\) gives 10,000,000,000 configurations, above the bound of 10,000$/);
  assert.is(expandMatrix({ matrix: { a: [1, 2], b: [1, 2, 3] }, exclude: [] }).length, 6);
});

test('profile.repeats: 1e9 is a problem of the plan, not a heap exhausted building it', () => {
  const plan = planProfile({ repeats: 1e9, warmup: 2 }, { maxContextTokens: 4096 });
  assert.equal(plan.requests, []);
  assert.match(plan.problems.join('\n'), /profile\.repeats \(1000000000\) × \d+ prompt lengths \+ profile\.warmup \(2\) gives [\d,]+ profiling requests, above the bound of 100,000/);
});

test('gpusPerHost: 1e9 is refused by the sweep file check', () => {
  const r = parseSweep({ recipe: 'base.yaml', gpusPerHost: 1e9 }, '/s/sweep.yaml');
  assert.not.ok(r.ok);
  if (!r.ok) assert.match(r.problems.join('\n'), /gpusPerHost must be <= 4096, got 1000000000/);
});

test('a probe at 1e300 QPS for 10 s: the planner stops one past the bound instead of allocating the plan', async () => {
  const recipe = await loadRecipe(FAST_RECIPE);
  const run = resolveRun(recipe, 'sizes');
  for (const [rateQps, durationS] of [
    [1e300, 10],
    [1e7, 3],
    [100, 596 * 3600],
  ]) {
    refused(() => planProbe({ workload: run.workload, rateQps, durationS, maxContextTokens: 4096 }), /^a probe at .* QPS for \d+ s gives \S+ requests in one probe, above the bound of 1,000,000$/);
  }
});

test('search.qps.max: 1e308 is refused when the plan is resolved, naming the fields', async () => {
  const file = join(dir, 'qps-max.yaml');
  writeFileSync(file, readFileSync(FAST_RECIPE, 'utf8').replace('max: 128 }', 'max: 1e308 }'));
  const recipe = await loadRecipe(file);
  refused(() => resolveRun(recipe, 'sizes'), /qps-max\.yaml: search\.probe\.requests \(64\), or search\.qps\.max \(1e\+308\) × search\.probe\.minDuration \(3 s\), gives Infinity requests in one probe/);
});

function fluidcap(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [BIN, ...args], { cwd: dir, env: childEnv(), timeout: 60_000 }, (err, _stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? null) : 0, stderr }),
    );
  });
}

test('CLI: probe --qps 1e300 --dry-run and a run with search.qps.max 1e308 exit 2 with one message; the run leaves no directory or lock', async () => {
  const probe = await fluidcap(['probe', FAST_RECIPE, '--qps', '1e300', '--url', 'http://127.0.0.1:9', '--dry-run']);
  assert.is(probe.code, 2, probe.stderr);
  assert.match(probe.stderr, /^fluidcap: --qps \(1e\+300\) × .*search\.probe\.minDuration \(3 s\) gives 3e\+300 requests in one probe, above the bound of 1,000,000\n$/);
  const run = await fluidcap(['run', join(dir, 'qps-max.yaml'), '--out', join(dir, 'out')]);
  assert.is(run.code, 2, run.stderr);
  assert.match(run.stderr, /search\.qps\.max \(1e\+308\)/);
  assert.not.ok(existsSync(join(dir, 'out')), 'the results directory (and a run.lock) was created');
});

test.run();
