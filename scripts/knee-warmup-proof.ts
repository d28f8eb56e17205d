// How often a probe near the knee passes on the twin of the quickstart, by knee warm-up: none, a
// fixed 10 s (the stationary rule never ends it), or until the queue is stationary (at most 10 s);
// judged as runs judge a probe (nearest-rank verdict, early stop). docs/verdicts.md quotes it.
// Usage: npx tsx scripts/knee-warmup-proof.ts <qps> none|fixed|stationary [seeds=100]
import { loadRecipe } from '../harness/recipe/load.ts';
import { planOf, rehearse } from '../harness/twin/rehearse.ts';
import { simConfigOf } from '../harness/twin/simTarget.ts';
import { engineConfigOf } from '../harness/sim/engine.ts';
import { planProbe } from '../harness/load/plan.ts';
import { runVirtualProbe } from '../harness/twin/virtualProbe.ts';
import { judgeProbe } from '../harness/twin/judge.ts';
import { makeEarlyStop } from '../harness/capacity/earlyStop.ts';
import { kneeWarmupPlanOf, probeLoad, probeSeed, warmupRequestsOf } from '../harness/capacity/runPlan.ts';
const recipe = await loadRecipe('recipes/quickstart.yaml');
const base = planOf(recipe);
const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
const fit = rehearse(recipe).fit;
const [qps, mode, n] = [Number(process.argv[2]), process.argv[3], Number(process.argv[4] ?? 100)];
let passes = 0, loadS = 0; const ends: number[] = [];
const t0 = performance.now();
for (let s = 0; s < n; s++) {
  const plan = { ...base, seed: 1000 + s };
  const warmupS = mode === 'none' ? 0 : 10;
  const load = probeLoad(plan.probe, qps, warmupS);
  const pp = planProbe({ workload: recipe.workload, rateQps: qps, requests: load.requests, durationS: load.durationS, seed: probeSeed(plan, qps), maxContextTokens: plan.maxContextTokens });
  let knee = kneeWarmupPlanOf(load, pp.requests.length, warmupS, plan.probe.warmupFraction);
  if (knee && mode === 'fixed') knee = { ...knee, rule: { ...knee.rule, minWindows: Infinity } };
  const warmupRequests = warmupRequestsOf(pp.requests.length, load.kneeRequests, plan.probe.warmupFraction);
  const stopFor = (requests: typeof pp.requests, skipped: number) => makeEarlyStop(plan.slo, { requests, warmupRequests: skipped, rateQps: qps, fit });
  let early = knee ? undefined : stopFor(pp.requests, warmupRequests);
  const run = runVirtualProbe(pp, engine, { warmupRequests, ...(knee ? { kneeWarmup: knee, onKneeWarmupEnd: (k) => void (early = stopFor(pp.requests.slice(0, k.planned), k.warmupRequests)) } : {}), shouldStop: (p) => (early ? early(p) : null) });
  const v = judgeProbe(run.records, plan.slo, fit, run.earlyStop);
  if (v.passed) passes++;
  loadS += run.durationS;
  if (run.kneeWarmup) ends.push(run.kneeWarmup.endS);
}
ends.sort((a, b) => a - b);
console.log(`${qps} QPS, warm-up ${mode}: ${passes}/${n} pass; load ${loadS.toFixed(0)} s; warm-up end median ${ends.length ? ends[ends.length >> 1].toFixed(2) : '-'} s, ${ends.filter((e) => e < 9.5).length} ended before 9.5 s; ${((performance.now() - t0) / 1000).toFixed(0)} s wall`);
