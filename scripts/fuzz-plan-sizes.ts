// Fuzzes every field a plan derives a size from (probe rate, duration and request count, profile
// repeats, lengths and warm-ups, matrix shape, tensorParallel), from 10^-3 to 10^308, through the
// planners the CLI uses. Each case must end in a plan within the bounds of util/sizeBounds.ts or a
// UserError; anything else (a RangeError, a V8 fatal, a heap exhausted) is a failure. Prints the
// slowest case and the peak resident memory. `tsx scripts/fuzz-plan-sizes.ts [cases] [seed]`; the
// test suite runs it at a smaller count.
import { resolve } from 'node:path';
import { createRng, type Rng } from '../harness/util/rng.ts';
import { UserError } from '../harness/util/errors.ts';
import { SIZE_BOUNDS } from '../harness/util/sizeBounds.ts';
import { planProbe } from '../harness/load/plan.ts';
import { workloadSchema } from '../harness/load/workloadSpec.ts';
import { planProfile } from '../harness/capacity/profilePlan.ts';
import { expandMatrix } from '../harness/sweep/expand.ts';
import { planRun } from '../harness/capacity/runPlan.ts';
import type { Recipe } from '../harness/recipe/parse.ts';
import { findModel } from '../harness/catalog/models.ts';

export interface PlanFuzzResult {
  cases: number;
  refused: number;
  accepted: number;
  failures: string[];
  slowestMs: number;
  slowestCase: string;
  peakRssMiB: number;
}

/** 10^x for x uniform in [lo, hi]: sizes spread over every order of magnitude. */
const logUniform = (rng: Rng, lo: number, hi: number) => 10 ** (lo + (hi - lo) * rng.next());
const int = (rng: Rng, lo: number, hi: number) => Math.floor(logUniform(rng, lo, hi));

export function fuzzPlanSizes(opts: { cases: number; seed: number; recipe: Recipe }): PlanFuzzResult {
  const rng = createRng(opts.seed);
  const r: PlanFuzzResult = { cases: 0, refused: 0, accepted: 0, failures: [], slowestMs: 0, slowestCase: '', peakRssMiB: 0 };
  const workloads = (['poisson', 'gamma', 'constant'] as const).map((process) =>
    workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: 4 }, arrivals: process === 'gamma' ? { process, burstiness: 0.5 } : { process }, seed: 3 }),
  );
  const kinds: { name: string; run: () => { what: string; size: number; bound: number } | null; describe: () => string }[] = [];
  let label = '';
  kinds.push({
    name: 'probe',
    describe: () => label,
    run: () => {
      const rateQps = logUniform(rng, -3, 308);
      const durationS = rng.next() < 0.2 ? undefined : logUniform(rng, -3, 7);
      const requests = durationS === undefined || rng.next() < 0.5 ? int(rng, 0, 12) + 1 : undefined;
      const workload = workloads[Math.floor(rng.next() * workloads.length)];
      label = `planProbe rate ${rateQps} duration ${durationS} requests ${requests} ${workload.arrivals.process}`;
      const plan = planProbe({ workload, rateQps, durationS, requests, maxContextTokens: 4096 });
      return { what: 'requests', size: plan.requests.length, bound: SIZE_BOUNDS.probeRequests.max };
    },
  });
  kinds.push({
    name: 'profile',
    describe: () => label,
    run: () => {
      const repeats = int(rng, 0, 12);
      const warmup = int(rng, 0, 10) - 1;
      const promptLengths = rng.next() < 0.3 ? undefined : Array.from({ length: Math.floor(rng.next() * 20) }, () => int(rng, 0, 9));
      label = `planProfile repeats ${repeats} warmup ${warmup} lengths ${promptLengths?.length}`;
      const plan = planProfile({ repeats, warmup, promptLengths }, { maxContextTokens: 4096 });
      if (plan.problems.length > 0) throw new UserError(plan.problems.join('; '));
      return { what: 'profile requests', size: plan.requests.length, bound: SIZE_BOUNDS.profileRequests.max };
    },
  });
  kinds.push({
    name: 'matrix',
    describe: () => label,
    run: () => {
      const fields = Math.floor(rng.next() * 13);
      const widths = Array.from({ length: fields }, () => 1 + Math.floor(rng.next() * 12));
      label = `expandMatrix ${widths.join(' × ') || 'empty'}`;
      const matrix = Object.fromEntries(widths.map((w, i) => [`target.engineArgs.f${i}`, Array.from({ length: w }, (_, j) => j)]));
      return { what: 'configurations', size: expandMatrix({ matrix, exclude: [] }).length, bound: SIZE_BOUNDS.sweepConfigurations.max };
    },
  });
  kinds.push({
    name: 'run',
    describe: () => label,
    run: () => {
      const recipe = structuredClone(opts.recipe);
      recipe.search.qps.maxQps = logUniform(rng, -3, 308);
      recipe.search.qps.minQps = Math.min(recipe.search.qps.minQps, recipe.search.qps.maxQps / 2);
      recipe.search.probe.requests = int(rng, 0, 12) + 1;
      recipe.search.probe.minDurationS = logUniform(rng, -3, 7);
      recipe.profile.repeats = int(rng, 0, 12) + 1;
      recipe.target.tensorParallel = int(rng, 0, 12) + 1;
      label = `planRun qps.max ${recipe.search.qps.maxQps} requests ${recipe.search.probe.requests} minDuration ${recipe.search.probe.minDurationS} repeats ${recipe.profile.repeats} tensorParallel ${recipe.target.tensorParallel}`;
      const plan = planRun(recipe, { runId: 'fuzz', modelContext: (m) => findModel(m)?.maxContextTokens ?? null, trace: null });
      return { what: 'profile requests', size: plan.profile.requests.length, bound: SIZE_BOUNDS.profileRequests.max };
    },
  });
  for (let i = 0; i < opts.cases; i++) {
    const kind = kinds[i % kinds.length];
    const t0 = performance.now();
    try {
      const out = kind.run();
      if (out && !(out.size <= out.bound)) r.failures.push(`${kind.describe()}: ${out.size} ${out.what}, above ${out.bound}`);
      else r.accepted += 1;
    } catch (err) {
      if (err instanceof UserError) r.refused += 1;
      else r.failures.push(`${kind.describe()}: ${(err as Error).stack?.split('\n').slice(0, 3).join(' | ')}`);
    }
    const ms = performance.now() - t0;
    if (ms > r.slowestMs) [r.slowestMs, r.slowestCase] = [ms, kind.describe()];
    if (i % 64 === 0) r.peakRssMiB = Math.max(r.peakRssMiB, process.memoryUsage().rss / 2 ** 20);
    r.cases += 1;
  }
  r.peakRssMiB = Math.max(r.peakRssMiB, process.memoryUsage().rss / 2 ** 20);
  return r;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const { loadRecipe } = await import('../harness/recipe/load.ts');
  const recipe = await loadRecipe(resolve(import.meta.dirname, '..', 'tests', 'fixtures', 'recipes', 'fast.yaml'));
  const cases = Number(process.argv[2] ?? 10_000);
  const seed = Number(process.argv[3] ?? 1);
  const t0 = performance.now();
  const r = fuzzPlanSizes({ cases, seed, recipe });
  console.log(`${r.cases} cases (seed ${seed}) in ${((performance.now() - t0) / 1000).toFixed(1)} s: ${r.accepted} planned within bounds, ${r.refused} refused with a UserError, ${r.failures.length} failures`);
  console.log(`slowest case ${r.slowestMs.toFixed(0)} ms (${r.slowestCase}); peak RSS ${r.peakRssMiB.toFixed(0)} MiB`);
  for (const f of r.failures.slice(0, 10)) console.log(`  ${f}`);
  process.exitCode = r.failures.length > 0 ? 1 : 0;
}
