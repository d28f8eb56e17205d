// The capacity search on the twin: the quickstart brackets the knee, then narrows its interval
// within the recipe's load budget (the same bracketing with early stopping off: the early stop only
// cuts probes whose verdict is settled), a rate well below passes and well above fails, and the same answer every time; each
// probe's workload sample is seeded from the recipe's seed and its rate, as the run's probe step does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { planOf, rehearse } from '../../harness/twin/rehearse.ts';
import { runTwinProbe } from '../../harness/twin/twinSearch.ts';
import { KNEE_PROBE_SHARE, KNEE_WARMUP_S, kneeMeasureS, kneeWarmupS, plannedRequests, probeSeed, warmupRequestsOf } from '../../harness/capacity/runPlan.ts';
import { simConfigOf } from '../../harness/twin/simTarget.ts';
import { capacityInterval } from '../../harness/capacity/interval.ts';
import { engineConfigOf } from '../../harness/sim/engine.ts';

const recipe = await loadRecipe('recipes/quickstart.yaml');

test('quickstart on the twin: brackets, then narrows the interval until the budget or the tolerance ends it; early stop off brackets alike; deterministic', () => {
  const on = rehearse(recipe);
  assert.ok(on.outcome === 'converged' || on.outcome === 'budget', `${on.outcome}: ${on.reason}`);
  const { passQps, failQps } = on.bracket;
  assert.ok(passQps !== null && failQps !== null);
  assert.is(on.capacityQps, passQps);
  // The budget bounds the load: no probe starts unless one as long as the one before fits.
  assert.ok(on.probeTimeS <= recipe.search.budget!, `${on.probeTimeS} s of load`);
  assert.ok(on.interval !== null && on.interval.loQps !== null && on.interval.hiQps !== null, JSON.stringify(on.interval));
  // The interval overlaps the bracket: not wholly above its fail end nor below its pass end. The
  // bracket is in planned rates and the interval reads each probe at the rate it realized, so read
  // at the planned rates for the fail end (a sure pass may lift the low end past the pass end).
  const planned = capacityInterval(on.probes.map((p) => ({ qps: p.qps, durationS: p.durationS, parts: p.parts })), { rateAxis: 'planned' });
  assert.ok(planned.loQps! <= failQps! && passQps! <= planned.hiQps!, `${passQps}–${failQps} outside ${JSON.stringify(planned)}`);
  assert.ok(passQps! <= on.interval!.hiQps!, `${passQps} above ${JSON.stringify(on.interval)}`);
  for (const p of on.probes) assert.ok(p.qps >= recipe.search.qps.minQps && p.qps <= recipe.search.qps.maxQps, `${p.qps}`);
  assert.ok(on.probes.every((p) => p.parts.length === 1 && p.parts[0].name === 'fluidity'), 'every probe carries its counts');
  // And the rate its Poisson draw realized, which the interval reads it at: near the planned one, never exactly it.
  for (const p of on.probes) assert.ok(p.arrivalQps !== null && Math.abs(p.arrivalQps / p.qps - 1) < 0.3 && p.arrivalQps !== p.qps, `${p.qps} QPS realized ${p.arrivalQps}`);
  // And the rate its bursts put it at, where the interval reads the fluidity entry: near it, different from both.
  for (const p of on.probes) assert.ok(p.burstQps !== null && Math.abs(p.burstQps / p.qps - 1) < 0.5 && p.burstQps !== p.qps && p.burstQps !== p.arrivalQps, `${p.qps} QPS bursts at ${p.burstQps}`);
  assert.ok(on.probes.some((p) => p.earlyStop !== null), 'some probe above capacity stopped early');
  // Early stopping changes a probe's counts (so the interval's next rate), not the bracketing verdicts.
  const off = rehearse(recipe, undefined, { earlyStop: false });
  const firstFail = on.probes.findIndex((p) => !p.passed);
  assert.equal(off.probes.slice(0, firstFail + 1).map((p) => [p.qps, p.passed]), on.probes.slice(0, firstFail + 1).map((p) => [p.qps, p.passed]));
  const again = rehearse(recipe);
  assert.equal(again.probes, on.probes);
  assert.equal(again.fit, on.fit);
  assert.equal(again.interval, on.interval);
});

test('well below the twin capacity a probe passes, well above it fails', () => {
  const r = rehearse(recipe);
  const plan = planOf(recipe);
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const input = { plan, workload: recipe.workload, engine, fit: r.fit, earlyStop: false };
  assert.ok(runTwinProbe(input, 1, r.capacityQps * 0.7).passed);
  assert.not.ok(runTwinProbe(input, 2, r.bracket.failQps! * 1.3).passed);
});

test('near the knee a probe spans a tenth of a large load budget, within its duration limit; the recipe\'s length before the first fail and with its own budget', () => {
  const plan = planOf(recipe);
  // The quickstart's 120 s budget: a tenth is below its 15-s minimum, so its probes keep their length.
  assert.is(kneeMeasureS(plan.probe, true, plan.search.budgetS), plan.probe.minDurationS);
  assert.is(kneeMeasureS(plan.probe, false, 1000), plan.probe.minDurationS);
  assert.is(kneeMeasureS(plan.probe, true, null), plan.probe.minDurationS);
  assert.is(kneeMeasureS(plan.probe, true, 400), KNEE_PROBE_SHARE * 400);
  // Never past 80% of the probe's duration limit (60 s): the rest holds the arrivals' tail.
  assert.is(kneeMeasureS(plan.probe, true, 10_000), 0.8 * plan.probe.durationLimitS);
  assert.is(plannedRequests(plan.probe, 40, 40), 1600);
  assert.is(plannedRequests(plan.probe, 40), 600);
  // A search with a budget of 400 load-seconds: every probe after the first fail plans 40 s of
  // arrivals (after its knee warm-up), and a pass there is judged only on all of them.
  const long = { ...recipe, search: { ...recipe.search, budget: 400, maxProbes: 20 } };
  const r = rehearse(long);
  const firstFail = r.probes.findIndex((p) => !p.passed);
  assert.ok(firstFail >= 0 && firstFail < r.probes.length - 1, 'the search had probes after its first fail');
  r.probes.forEach((p, i) => {
    const measured = p.planned - (p.kneeWarmup?.requests ?? 0);
    const expected = plannedRequests(plan.probe, p.qps, i <= firstFail ? plan.probe.minDurationS : 40);
    assert.is(measured, expected, `probe ${p.index} at ${p.qps} QPS`);
    if (i > firstFail && p.passed) assert.ok(p.durationS >= 0.9 * 40, `a pass at ${p.qps} QPS ended after ${p.durationS} s`);
  });
});

test('each twin probe draws its own sample, seeded from the recipe seed and its rate as the run seeds it', () => {
  const plan = planOf(recipe);
  assert.is(plan.probeSeeds, 'per-rate');
  assert.is.not(probeSeed(plan, 30), probeSeed(plan, 31));
  assert.is(probeSeed(plan, 30), probeSeed(planOf(recipe), 30));
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const fit = rehearse(recipe).fit;
  const at = (p: typeof plan) => runTwinProbe({ plan: p, workload: recipe.workload, engine, fit, earlyStop: false }, 1, 30);
  const own = at(plan);
  assert.equal(own, at({ ...plan, probeSeeds: 'workload', seed: probeSeed(plan, 30) }));
  assert.not.equal(own.ttftS, at({ ...plan, probeSeeds: 'workload' }).ttftS, 'the probe replayed the workload seed');
  // A rate probed again draws a new sample; its first probe keeps the seed runs always gave it.
  assert.is.not(probeSeed(plan, 30, 1), probeSeed(plan, 30));
  assert.is.not(probeSeed(plan, 30, 2), probeSeed(plan, 30, 1));
  const again = runTwinProbe({ plan, workload: recipe.workload, engine, fit, earlyStop: false }, 2, 30, 0, 1);
  assert.not.equal(again.ttftS, own.ttftS, 'the repeat replayed the first sample');
});

test('a proof\'s cool-down keeps a twin probe\'s measured requests and warm-ups; what follows them and when the probe ends change', () => {
  const plan = planOf(recipe);
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const base = { plan, workload: recipe.workload, engine, fit: rehearse(recipe).fit, earlyStop: false };
  for (const kneeS of [0, KNEE_WARMUP_S]) {
    const plain = runTwinProbe(base, 1, 44, kneeS);
    const cooled = runTwinProbe({ ...base, coolDownShare: 0.1 }, 1, 44, kneeS);
    assert.is(cooled.planned, plain.planned, `knee ${kneeS} s`);
    assert.is(cooled.requests, plain.requests);
    assert.equal(cooled.kneeWarmup, plain.kneeWarmup);
    assert.is(cooled.parts[0].observed, plain.parts[0].observed);
    // The measured requests end under load, not on a draining engine.
    assert.ok(cooled.durationS >= plain.durationS, `${cooled.durationS} < ${plain.durationS}`);
    assert.not.equal(cooled.tbtS, plain.tbtS);
  }
});

test('a search that probes a rate again gives each repeat its own sample', () => {
  // A tight tolerance and a long budget make the interval search come back to rates it probed.
  const r = rehearse({ ...recipe, search: { ...recipe.search, tolerance: 0.01, budget: 500, maxProbes: 20 } });
  const byRate = new Map<number, typeof r.probes>();
  for (const p of r.probes) byRate.set(p.qps, [...(byRate.get(p.qps) ?? []), p]);
  const repeated = [...byRate.values()].filter((ps) => ps.length > 1);
  assert.ok(repeated.length > 0, 'no rate was probed twice: the test needs a search that repeats one');
  for (const ps of repeated) assert.is(new Set(ps.map((p) => JSON.stringify(p.ttftS))).size, ps.length, `repeats at ${ps[0].qps} QPS replayed one sample`);
});

test('after the first fail, twin probes start with the knee warm-up at their rate; before it, none', () => {
  const r = rehearse(recipe);
  const plan = planOf(recipe);
  const firstFail = r.probes.findIndex((p) => !p.passed);
  assert.ok(firstFail >= 0 && firstFail < r.probes.length - 1, 'the search had probes after its first fail');
  r.probes.forEach((p, i) => {
    if (i <= firstFail) return assert.is(p.kneeWarmup, null, `probe ${p.index} at ${p.qps} QPS`);
    const k = p.kneeWarmup!;
    assert.ok(k, `probe ${p.index} at ${p.qps} QPS has no knee warm-up`);
    assert.is(k.maxS, KNEE_WARMUP_S);
    // The warm-up's requests, then the recipe's count, its share skipped.
    assert.is(p.planned, k.requests + plannedRequests(plan.probe, p.qps), `probe ${p.index} at ${p.qps} QPS`);
    assert.is(k.warmupRequests, k.requests + Math.floor(0.1 * plannedRequests(plan.probe, p.qps)));
    assert.ok(k.requests <= Math.ceil(p.qps * KNEE_WARMUP_S));
  });
  assert.is(kneeWarmupS([{ passed: true, valid: true }, { passed: false, valid: false }]), 0);
  assert.is(kneeWarmupS([{ passed: true, valid: true }, { passed: false, valid: true }]), KNEE_WARMUP_S);
  assert.is(kneeWarmupS([{ passed: false, valid: true }], 2.5), 2.5);
  // The knee's requests are skipped, then the recipe's share of the rest.
  assert.is(warmupRequestsOf(500, 400, 0.1), 410);
  assert.is(warmupRequestsOf(80, 0, 0.1), 8);
});

test('the knee warm-up ends once the queue is stationary below the knee, and runs to its bound well above it', () => {
  const r = rehearse(recipe);
  const plan = planOf(recipe);
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  const input = { plan, workload: recipe.workload, engine, fit: r.fit, earlyStop: true };
  const below = runTwinProbe(input, 1, r.capacityQps * 0.8, KNEE_WARMUP_S);
  assert.is(below.kneeWarmup!.reason, 'stationary');
  assert.ok(below.kneeWarmup!.endS < KNEE_WARMUP_S, `ended at ${below.kneeWarmup!.endS} s, not before its bound`);
  assert.is(below.planned, below.kneeWarmup!.requests + plannedRequests(plan.probe, r.capacityQps * 0.8));
  // Well above what the engine can serve at all (not only above the SLO's knee: a 30% overload of
  // the SLO can still be below the engine's throughput, where the queue is stationary, only long).
  const overload = r.bracket.failQps! * 1.7;
  const above = runTwinProbe(input, 2, overload, KNEE_WARMUP_S);
  assert.is(above.kneeWarmup!.reason, 'max');
  assert.is(above.kneeWarmup!.requests, Math.ceil(overload * KNEE_WARMUP_S));
  // Off: no warm-up, the recipe's count.
  assert.is(runTwinProbe(input, 3, r.capacityQps * 0.8, 0).kneeWarmup, null);
});

test.run();
