// npx tsx scripts/capacity-vs-sweep.ts [--recipe tests/fixtures/recipes/sweep-check.yaml] [--step 0.025] [--points 4]
//                                      [--length 4] [--extra 10] [--out results/capacity-vs-sweep]
// Is the search's capacity the capacity? Runs the recipe's search (`fluidcap run`, in process), then
// a brute-force sweep of fixed rates on a grid around the found capacity (capacity × (1 + k·step),
// k = −points..points) with probes `length` times longer (requests and time limit), early stopping
// off, judged by the same prefill fit and SLO. The sweep's capacity is the highest grid rate below
// the first failing one; when the whole grid fails (or passes) it extends down (or up) by the same
// step, at most --extra more rates. Prints both capacities and their relative difference (target ≤ 5%).
import { parseArgs } from 'node:util';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runCapacity } from '../harness/capacity/runCapacity.ts';
import { loadRecipe } from '../harness/recipe/load.ts';
import type { RunPlan } from '../harness/capacity/runPlan.ts';
import { resolveRun } from '../harness/capacity/resolveRun.ts';
import { startEngineSession } from '../harness/capacity/engineSession.ts';
import { runProbeStep } from '../harness/capacity/probeStep.ts';
import { runPaths } from '../harness/runDir/layout.ts';
import { readFit } from '../harness/runDir/read.ts';

const { values } = parseArgs({
  options: {
    recipe: { type: 'string', default: 'tests/fixtures/recipes/sweep-check.yaml' },
    step: { type: 'string', default: '0.025' },
    points: { type: 'string', default: '4' },
    length: { type: 'string', default: '4' },
    extra: { type: 'string', default: '10' },
    out: { type: 'string', default: 'results/capacity-vs-sweep' },
  },
});
const step = Number(values.step);
const points = Number(values.points);
const lengthFactor = Number(values.length);
const log = (line: string) => process.stderr.write(`  ${line}\n`);
const t0 = performance.now();

// 1. The search, exactly as `fluidcap run` does it.
process.stderr.write(`search: fluidcap run ${values.recipe}\n`);
const outcome = await runCapacity({ recipeFile: values.recipe, outDir: values.out, log });
if (outcome.status !== 'completed' || !outcome.capacity) throw new Error(`the search did not complete: ${outcome.reason}`);
const found = outcome.capacity;
if (!(found.capacityQps > 0)) throw new Error(`the search found no capacity to sweep around: ${found.reason}`);
process.stderr.write(`search: ${found.capacityQps} QPS (${found.reason}) in ${((performance.now() - t0) / 1000).toFixed(0)} s\n`);

// 2. The sweep: fixed rates, long probes, no early stop, same fit, same SLO, a fresh engine.
const recipe = await loadRecipe(values.recipe);
const basePlan = resolveRun(recipe, `${found.runId}-sweep`);
const plan: RunPlan = {
  ...basePlan,
  probe: {
    ...basePlan.probe,
    requests: Math.round(basePlan.probe.requests * lengthFactor),
    minDurationS: basePlan.probe.minDurationS * lengthFactor,
    durationLimitS: basePlan.probe.durationLimitS * lengthFactor,
    earlyStop: false,
  },
};
const fit = readFit(runPaths(outcome.runDir).fit)!;
const sweepDir = join(outcome.runDir, 'sweep');
mkdirSync(sweepDir, { recursive: true });
const rateAt = (k: number) => +(found.capacityQps * (1 + k * step)).toPrecision(4);
const session = await startEngineSession(plan, { runDir: sweepDir, log });
const verdicts: { qps: number; passed: boolean; valid: boolean; requests: number; durationS: number; sloValue: number | null }[] = [];
const probeAt = async (qps: number) => {
  const s = await runProbeStep({ index: verdicts.length + 1, qps, plan, fit, session, runDir: sweepDir, earlyStop: false, log });
  verdicts.push({ qps, passed: s.passed, valid: s.valid, requests: s.requests, durationS: s.durationS, sloValue: s.sloValue });
  process.stderr.write(
    `sweep: ${qps} QPS ${s.valid ? (s.passed ? 'PASS' : 'FAIL') : 'INVALID'} (${s.requests} requests, ${s.durationS.toFixed(1)} s, SLO value ${s.sloValue?.toFixed(4) ?? '-'})\n`,
  );
};
try {
  for (let k = -points; k <= points; k++) await probeAt(rateAt(k));
  // The grid missed the knee: walk on in the same steps until the verdict changes.
  const anyValid = (passed: boolean) => verdicts.some((v) => v.valid && v.passed === passed);
  for (let k = -points - 1, n = 0; !anyValid(true) && n < Number(values.extra) && rateAt(k) > 0; k--, n++) await probeAt(rateAt(k));
  for (let k = points + 1, n = 0; !anyValid(false) && n < Number(values.extra); k++, n++) await probeAt(rateAt(k));
} finally {
  await session.stop();
}

// Highest valid passing rate below the first valid failing one.
verdicts.sort((a, b) => a.qps - b.qps);
const rates = verdicts.map((v) => v.qps);
let sweepQps: number | null = null;
for (const v of verdicts.filter((x) => x.valid)) {
  if (!v.passed) break;
  sweepQps = v.qps;
}
const searchProbeS = found.probeTimeS;
const sweepProbeS = verdicts.reduce((t, v) => t + v.durationS, 0);
const diff = sweepQps === null ? null : (found.capacityQps - sweepQps) / sweepQps;
const gridNote =
  sweepQps === null
    ? 'every sweep rate failed (the grid lies above the capacity)'
    : sweepQps === rates[rates.length - 1]
      ? 'every sweep rate passed (the grid lies below the capacity)'
      : `grid resolution ${(step * 100).toFixed(1)}%`;
console.log(`recipe:            ${resolve(values.recipe)}`);
console.log(`run:               ${outcome.runDir}`);
console.log(`search capacity:   ${found.capacityQps} QPS (bracket pass ${found.bracket.passQps} / fail ${found.bracket.failQps}, ${found.probes.length} probes, ${searchProbeS.toFixed(0)} s of load)`);
console.log(`sweep capacity:    ${sweepQps ?? 'none'} QPS (${rates.length} rates × ≥${plan.probe.requests} requests and ≥${plan.probe.minDurationS} s each, ${sweepProbeS.toFixed(0)} s of load; ${gridNote})`);
console.log(`sweep verdicts:    ${verdicts.map((v) => `${v.qps}:${v.valid ? (v.passed ? 'pass' : 'fail') : 'invalid'}`).join(' ')}`);
console.log(`relative difference: ${diff === null ? 'n/a' : `${(diff * 100).toFixed(2)}% (target within ±5%)`} ${diff !== null && Math.abs(diff) <= 0.05 ? 'OK' : 'NOT MET'}`);
console.log(`wall time:         ${((performance.now() - t0) / 1000).toFixed(0)} s`);
