// npx tsx scripts/verdict-proof.ts [--recipes a.yaml,b.yaml] [--gt-seeds 3] [--gt-requests 12000] [--searches 5]
//                                  [--knee-probes 24] [--alpha 0.05] [--beta 0.05] [--indifference 0.5] [--max-extension 4]
//                                  [--warmup stationary|fixed|none] [--warmup-s S] [--knee-qps lo,hi]
// Are the search's verdicts trustworthy, and what do they cost? For each recipe (default: the
// quickstart, Sarathi on the same model, Llama-2-70B on 4×A100), on the simulated engine's own
// scheduler and cost model driven on a virtual clock (the twin's probe, twin/virtualProbe.ts):
//  - ground truth: long fixed-rate probes, several seeds pooled, on a rate grid of 1% around the
//    knee; the capacity is the highest grid rate whose long-run miss fraction is within every SLO
//    entry's allowance, with every lower grid rate too (on a flat knee that can read well below the
//    long-run curve's crossing, which scripts/ground-truth.ts reads with its spread: 0.3277 on the 70B
//    against a crossing of 0.3323);
//  - five searches with different seeds for each method: the decision search (sequential test,
//    early stop both ways, extension), the nearest-rank search with the recipe's probes and exact
//    early stop, and a Metron-style search (1000 requests per probe, no early stop);
//  - how far the ground truth itself moves with the workload's sample: each of `--spread-seeds`
//    seeds alone, `--spread-requests` requests at every grid rate, its own long-run capacity. No
//    search can be surer of the capacity than these oracles, which each spend far more load;
//  - over `--knee-probes` seeded probes at the grid rates just outside the indifference zone (or at
//    `--knee-qps`), the fraction of wrong decisions next to the configured alpha and beta, by the
//    decision probe and by the run's probe (twin/twinSearch.ts runTwinProbe: nearest-rank verdict,
//    its statistical decision beside). Probes near the knee start with runs' knee warm-up: arrivals
//    at the probe's rate, not judged, until the engine's backlog is stationary (`--warmup
//    stationary`, load/kneeWarmup.ts), for the whole bound (`fixed`), or none; the bound is the
//    recipe's search.kneeWarmupMax unless `--warmup-s` says (`--warmup-s` alone: fixed, as before).
//    In the searches, the probes after the first fail get it, as in runs.
// The virtual clock leaves out HTTP and the client's timing error; real runs (`npm run quickstart`,
// scripts/capacity-vs-sweep.ts) are the check on that.
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import type { Recipe } from '../harness/recipe/parse.ts';
import { evaluateSlo } from '../harness/metrics/sloCheck.ts';
import { bracketOf, nextProbe, type ProbeVerdict } from '../harness/capacity/search.ts';
import type { ProbeStatistics } from '../harness/runDir/schema.ts';
import { makeDecisionStop, makeProbeStop } from '../harness/capacity/earlyStop.ts';
import { decideSlo, probeDecision, sloSeries, statisticsOfDecision } from '../harness/capacity/sloDecision.ts';
import { DEFAULT_DECISION, indifferenceZone, type DecisionParams, type Verdict } from '../harness/capacity/decision.ts';
import { kneeMeasureS, kneeWarmupS, nearKnee, plannedRequests, type ProbeLoad } from '../harness/capacity/runPlan.ts';
import { runTwinProbe } from '../harness/twin/twinSearch.ts';
import type { KneeWarmupRecord } from '../harness/load/kneeWarmup.ts';
import { configOf, evaluated, groundTruth, groundTruthSpread, kneeBoundS, kneePlanOf, kneeRuleOf, plan, runPlanned, warmupModeOf, type Config } from './proofSupport.ts';

const { values } = parseArgs({
  options: {
    recipes: { type: 'string', default: 'recipes/quickstart.yaml,recipes/papers/llama3-8b-h100-sarathi-sim.yaml,recipes/papers/llama2-70b-a100-tp4-sim.yaml' },
    'gt-seeds': { type: 'string', default: '3' },
    'gt-requests': { type: 'string', default: '12000' },
    searches: { type: 'string', default: '5' },
    'knee-probes': { type: 'string', default: '24' },
    'spread-seeds': { type: 'string', default: '10' },
    'spread-requests': { type: 'string', default: '20000' },
    alpha: { type: 'string' },
    beta: { type: 'string' },
    indifference: { type: 'string' },
    'max-extension': { type: 'string' },
    // The knee warm-up (see above) and its bound in seconds of arrivals at the probe's rate.
    warmup: { type: 'string' },
    'warmup-s': { type: 'string' },
    // The wrong-decision probes' rates (pass side, fail side) instead of the grid's.
    'knee-qps': { type: 'string' },
    // Constants of the rule that ends the knee warm-up, replacing load/kneeWarmup.ts's (JSON, e.g. '{"z":2}').
    'knee-rule': { type: 'string' },
  },
});
const warmupMode = warmupModeOf(values.warmup ?? (values['warmup-s'] !== undefined ? 'fixed' : 'stationary'));
const kneeRule = kneeRuleOf(warmupMode, values['knee-rule']);
// The decision's defaults, with any flag given overriding them (runs do not decide this way yet:
// this script measures the method before it replaces the nearest-rank verdict).
const paramsFor = (_recipe: Recipe): DecisionParams => ({
  alpha: Number(values.alpha ?? DEFAULT_DECISION.alpha),
  beta: Number(values.beta ?? DEFAULT_DECISION.beta),
  indifference: Number(values.indifference ?? DEFAULT_DECISION.indifference),
  maxExtension: Number(values['max-extension'] ?? DEFAULT_DECISION.maxExtension),
});
let params: DecisionParams = DEFAULT_DECISION;
const log = (line: string) => process.stderr.write(`${line}\n`);
const fmtQ = (q: number | null) => (q === null ? '—' : String(+q.toPrecision(4)));
const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;

// ---- searches ------------------------------------------------------------------------------
type Method = 'decision' | 'nearest-rank' | 'metron-1000';
interface SearchRun {
  capacity: number;
  loadS: number;
  probes: { qps: number; verdict: Verdict; requests: number; durationS: number; statistics?: Pick<ProbeStatistics, 'decision'>; kneeWarmup?: KneeWarmupRecord | null }[];
  /** Nearest-rank searches: the bracket of the probes' statistical decisions alone (what a run reports as decidedBracket). */
  decided?: { passQps: number | null; failQps: number | null };
  outcome: string;
  bracket: { passQps: number | null; failQps: number | null };
  confidence: { passQps: number | null; failQps: number | null };
}

function probeOnce(c: Config, method: Method, qps: number, seed: number, kneeS: number, measureS = c.runPlan.probe.minDurationS): SearchRun['probes'][number] {
  if (method === 'metron-1000') {
    const planned = plan(c, qps, 1000, seed, 1e9);
    const warmup = Math.floor(planned.length * c.probe.warmupFraction);
    const { records, durationS } = runPlanned(c, planned);
    const passed = evaluateSlo(evaluated(c, planned, records, warmup), c.slo).passed;
    return { qps, verdict: passed ? 'pass' : 'fail', requests: records.length, durationS };
  }
  if (method === 'nearest-rank') {
    // As runs probe (the twin's probe): the nearest-rank verdict, an early stop only on a certain
    // fail that the sequential test has also decided, the statistical decision recorded beside it.
    const p = runTwinProbe({ plan: { ...c.runPlan, seed, probeSeeds: 'workload' }, workload: c.recipe.workload, engine: c.engine, fit: c.fit, earlyStop: true, kneeRule }, 1, qps, kneeS, 0, measureS);
    if (process.env.DEBUG_STATS) log(`    ${qps} QPS ${p.passed ? 'pass' : 'fail'}${p.earlyStop ? ' (stopped)' : ''} ${p.durationS.toFixed(1)} s: ${p.decision}`);
    return { qps, verdict: p.passed ? 'pass' : 'fail', requests: p.requests, durationS: p.durationS, statistics: { decision: p.decision }, kneeWarmup: p.kneeWarmup };
  }
  // The decision probe: up to maxExtension × the recipe's requests after the knee warm-up, stopped once decided.
  const base = plannedRequests(c.probe, qps);
  const skip = Math.floor(base * c.probe.warmupFraction);
  const kneeRequests = kneeS > 0 ? Math.ceil(qps * kneeS) : 0;
  const load: ProbeLoad = { requests: Math.ceil(base * params.maxExtension) + kneeRequests, durationS: c.probe.durationLimitS + kneeS, kneeRequests };
  const planned = plan(c, qps, load.requests, seed, load.durationS);
  const knee = kneePlanOf(warmupMode, kneeRule, load, planned.length, kneeS, c.probe.warmupFraction);
  const minRequests = Math.min(base, planned.length - Math.min(planned.length, kneeRequests)) - skip;
  const hookFor = (requests: typeof planned, warmup: number) => makeDecisionStop(c.slo, { requests, warmupRequests: warmup, rateQps: qps, fit: c.fit, minRequests }, params);
  // Without a knee warm-up the hook judges from the start; with one, from the requests after it.
  let measured = planned;
  let warmup = skip;
  let hook = knee ? null : hookFor(planned, skip);
  const onKneeWarmupEnd = (k: KneeWarmupRecord) => {
    measured = planned.slice(0, k.planned);
    warmup = k.requests + skip;
    hook = hookFor(measured, warmup);
  };
  const run = runPlanned(c, planned, { warmupRequests: skip, ...(knee ? { kneeWarmup: knee, onKneeWarmupEnd } : {}), shouldStop: (p) => (hook ? hook(p) : null) });
  if (knee && hook === null) onKneeWarmupEnd(run.kneeWarmup!);
  const d = run.earlyStop !== null ? hook!.current()! : decideSlo(evaluated(c, measured, run.records, warmup), c.slo, params, { passFromRequests: minRequests });
  return { qps, verdict: d.decision, requests: run.records.length, durationS: run.durationS, confidence: d.confidence, kneeWarmup: run.kneeWarmup } as SearchRun['probes'][number];
}

function search(c: Config, method: Method, seed: number): SearchRun {
  const probes: (ProbeVerdict & { requests: number; durationS: number; verdict: Verdict; statistics?: Pick<ProbeStatistics, 'decision'> })[] = [];
  for (;;) {
    const d = nextProbe(c.bounds, probes);
    if (d.done) {
      return {
        capacity: d.capacityQps,
        loadS: probes.reduce((t, p) => t + p.durationS, 0),
        probes: probes.map(({ qps, verdict, requests, durationS }) => ({ qps, verdict, requests, durationS })),
        ...(method === 'nearest-rank'
          ? { decided: bracketOf(probes.map((p) => ({ qps: p.qps, passed: p.statistics?.decision === 'pass', decision: p.statistics?.decision ?? 'undecided', valid: true }))) }
          : {}),
        outcome: d.outcome,
        bracket: d.bracket,
        confidence: d.confidence,
      };
    }
    const kneeS = method === 'metron-1000' ? 0 : kneeWarmupS(probes, kneeBoundS(c, warmupMode, values['warmup-s']));
    // Near the knee the run's probe spans a share of the budget (capacity/runPlan.ts kneeMeasureS).
    const measureS = method === 'nearest-rank' ? kneeMeasureS(c.runPlan.probe, nearKnee(probes), c.bounds.budgetS) : c.runPlan.probe.minDurationS;
    const p = probeOnce(c, method, d.qps, seed, kneeS, measureS) as SearchRun['probes'][number] & { confidence?: number };
    probes.push({ qps: p.qps, passed: p.verdict === 'pass', decision: p.verdict, confidence: p.confidence ?? null, valid: true, requests: p.requests, durationS: p.durationS, verdict: p.verdict, statistics: p.statistics });
  }
}

// ---- main ----------------------------------------------------------------------------------
const t0 = performance.now();
const gtSeeds = Number(values['gt-seeds']);
const gtRequests = Number(values['gt-requests']);
const nSearches = Number(values.searches);
const kneeProbes = Number(values['knee-probes']);
const spreadSeeds = Number(values['spread-seeds']);
const spreadRequests = Number(values['spread-requests']);
const spreadRows: string[] = [];
const rows: string[] = [];
const details: string[] = [];
for (const file of values.recipes!.split(',')) {
  const tc = performance.now();
  const c = await configOf(file);
  params = paramsFor(c.recipe);
  log(`${c.recipe.name}: ground truth (${gtSeeds} seeds × ${gtRequests} requests per rate)…`);
  const gt = groundTruth(c, gtSeeds, gtRequests);
  log(`  grid ${gt.grid.map((g) => `${g.qps}:${g.ratio.toFixed(2)}`).join(' ')} → ${gt.capacity}`);
  if (spreadSeeds > 0 && gt.capacity !== null && gt.grid.length > 0) {
    log(`  ground-truth spread: ${spreadSeeds} seeds alone × ${spreadRequests} requests per grid rate…`);
    const spread = groundTruthSpread(c, gt.grid, spreadSeeds, spreadRequests);
    const errs = spread.capacities.map((x) => (x === null ? -1 : (x - gt.capacity!) / gt.capacity!));
    spreadRows.push(
      `| ${c.recipe.name} | ${fmtQ(gt.capacity)} | ${spread.capacities.map(fmtQ).join(', ')} | ${errs.filter((e) => Math.abs(e) <= 0.025).length}/${spreadSeeds} | ${pct(Math.max(...errs.map(Math.abs)))} | ${spread.loadS.toFixed(0)} |`,
    );
  }
  const summaries: Record<Method, SearchRun[]> = { decision: [], 'nearest-rank': [], 'metron-1000': [] };
  for (const method of ['decision', 'nearest-rank', 'metron-1000'] as Method[]) {
    for (let i = 0; i < nSearches; i++) {
      const run = search(c, method, c.recipe.workload.seed + i);
      summaries[method].push(run);
      log(`  ${method} seed ${c.recipe.workload.seed + i}: ${fmtQ(run.capacity)} QPS, ${run.loadS.toFixed(0)} s of load, ${run.outcome}; ` +
        run.probes.map((p) => `${fmtQ(p.qps)}:${p.verdict}${p.durationS ? `(${p.durationS.toFixed(0)}s)` : ''}`).join(' '));
    }
  }
  // Wrong decisions just outside the indifference zone, where they are wrong by definition.
  const [zoneLo, zoneHi] = (() => {
    const parts = sloSeries([], c.slo);
    const z = parts.map((s) => indifferenceZone(s.allowedFraction, params.indifference).map((x) => x / s.allowedFraction));
    return [Math.min(...z.map((x) => x[0])), Math.max(...z.map((x) => x[1]))];
  })();
  const kneeQps = values['knee-qps']?.split(',').map(Number);
  // 0 for a side skips it.
  const passSide = kneeQps ? (kneeQps[0] > 0 ? { qps: kneeQps[0], ratio: NaN } : null) : ([...gt.grid].reverse().find((g) => g.ratio <= zoneLo) ?? null);
  const failSide = kneeQps ? (kneeQps[1] > 0 ? { qps: kneeQps[1], ratio: NaN } : null) : (gt.grid.find((g) => g.ratio >= zoneHi) ?? null);
  // Each seed's probe at the rate as the decision probe and as the run's probe, both with the knee warm-up.
  const kneeS = kneeBoundS(c, warmupMode, values['warmup-s']);
  const tally = (qps: number) => {
    const t: Record<Verdict, number> = { pass: 0, fail: 0, undecided: 0 };
    const run = { pass: 0, decidedPass: 0, decidedFail: 0 };
    const ends: number[] = [];
    let stationary = 0;
    let loadS = 0;
    let runLoadS = 0;
    const tt = performance.now();
    for (let s = 0; s < kneeProbes; s++) {
      const p = probeOnce(c, 'decision', qps, 5000 + s, kneeS);
      t[p.verdict] += 1;
      loadS += p.durationS;
      if (p.kneeWarmup) ends.push(p.kneeWarmup.endS);
      if (p.kneeWarmup?.reason === 'stationary') stationary += 1;
      const r = probeOnce(c, 'nearest-rank', qps, 5000 + s, kneeS);
      run.pass += r.verdict === 'pass' ? 1 : 0;
      run.decidedPass += r.statistics?.decision === 'pass' ? 1 : 0;
      run.decidedFail += r.statistics?.decision === 'fail' ? 1 : 0;
      runLoadS += r.durationS;
    }
    ends.sort((a, b) => a - b);
    const warm = ends.length ? `knee warm-up (${warmupMode}, bound ${kneeS} s) median ${ends[ends.length >> 1].toFixed(2)} s (shortest ${ends[0].toFixed(2)} s, tenth ${ends[Math.floor(ends.length / 10)].toFixed(2)} s), ${stationary}/${ends.length} ended stationary` : 'no knee warm-up';
    log(`  ${qps} QPS: decision ${t.pass} pass / ${t.fail} fail / ${t.undecided} undecided; run's probe ${run.pass} pass (decided ${run.decidedPass} pass, ${run.decidedFail} fail); ${warm}; ${((performance.now() - tt) / 1000).toFixed(0)} s wall`);
    return { ...t, run, warm, loadS, runLoadS };
  };
  const atPass = passSide && kneeProbes > 0 ? tally(passSide.qps) : null;
  const atFail = failSide && kneeProbes > 0 ? tally(failSide.qps) : null;
  const sideLine = (side: { qps: number; ratio: number }, t: NonNullable<typeof atPass>, wrong: 'pass' | 'fail') =>
    `; the run's probe: ${t.run.pass} pass by nearest rank, decided ${t.run.decidedPass} pass / ${t.run.decidedFail} fail (wrong decided ${wrong === 'pass' ? t.run.decidedPass : t.run.decidedFail}/${kneeProbes}); ` +
    `${t.warm}; load-s ${t.loadS.toFixed(0)} (decision probes), ${t.runLoadS.toFixed(0)} (run's probes) at ${side.qps} QPS`;
  const stats = (runs: SearchRun[]) => {
    const caps = runs.map((r) => r.capacity);
    const mean = caps.reduce((a, b) => a + b, 0) / caps.length;
    const err = gt.capacity ? caps.map((x) => (x - gt.capacity!) / gt.capacity!) : [];
    return {
      mean,
      spread: `${fmtQ(Math.min(...caps))}–${fmtQ(Math.max(...caps))}`,
      within: gt.capacity ? err.filter((e) => Math.abs(e) <= 0.025).length : 0,
      worst: err.length ? Math.max(...err.map(Math.abs)) : NaN,
      loadS: runs.reduce((t, r) => t + r.loadS, 0) / runs.length,
    };
  };
  const metron = stats(summaries['metron-1000']);
  for (const method of ['decision', 'nearest-rank', 'metron-1000'] as Method[]) {
    const s = stats(summaries[method]);
    rows.push(
      `| ${c.recipe.name} | ${method} | ${fmtQ(gt.capacity)} | ${fmtQ(s.mean)} | ${s.spread} | ${s.within}/${nSearches} | ${pct(s.worst)} | ${s.loadS.toFixed(0)} | ${(s.loadS / metron.loadS).toFixed(2)} |`,
    );
  }
  const dec = summaries.decision;
  const nr = summaries['nearest-rank'];
  details.push(
    `${c.recipe.name}: wall ${((performance.now() - tc) / 1000).toFixed(0)} s; ground-truth grid (rate:miss fraction ÷ allowed) ${gt.grid.map((g) => `${g.qps}:${g.ratio.toFixed(2)}`).join(' ')}\n` +
      `  decision parameters: alpha ${params.alpha}, beta ${params.beta}, indifference ${params.indifference}, max extension ×${params.maxExtension}\n` +
      `  nearest-rank searches, the bracket of their probes' statistical decisions (a run's decidedBracket): ${nr.map((r) => `${fmtQ(r.capacity)} in [${fmtQ(r.decided?.passQps ?? null)}, ${fmtQ(r.decided?.failQps ?? null)}]`).join(', ')}\n` +
      `  decision searches: ${dec.map((r) => `${fmtQ(r.capacity)} [pass ${fmtQ(r.bracket.passQps)} @${r.confidence.passQps === null ? '—' : pct(r.confidence.passQps)}, fail ${fmtQ(r.bracket.failQps)} @${r.confidence.failQps === null ? '—' : pct(r.confidence.failQps)}; ${r.outcome}]`).join(', ')}\n` +
      `  wrong decisions over ${kneeProbes} seeded probes: ` +
      (atPass ? `at ${passSide!.qps} QPS (miss ratio ${passSide!.ratio.toFixed(2)} ≤ zone low end ${zoneLo.toFixed(2)}): ${atPass.fail} fail / ${atPass.pass} pass / ${atPass.undecided} undecided → wrong ${pct(atPass.fail / kneeProbes)} (beta ${pct(params.beta)})${sideLine(passSide!, atPass, 'fail')}` : 'no grid rate below the zone') +
      '; ' +
      (atFail ? `at ${failSide!.qps} QPS (ratio ${failSide!.ratio.toFixed(2)} ≥ zone high end ${zoneHi.toFixed(2)}): ${atFail.pass} pass / ${atFail.fail} fail / ${atFail.undecided} undecided → wrong ${pct(atFail.pass / kneeProbes)} (alpha ${pct(params.alpha)})${sideLine(failSide!, atFail, 'pass')}` : 'no grid rate above the zone'),
  );
}
console.log('| recipe | method | ground truth QPS | mean capacity | spread (5 seeds) | within ±2.5% | worst error | load-s per search | load vs Metron |');
console.log('|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
console.log('');
if (spreadRows.length > 0) {
  console.log('');
  console.log(`Ground truth by seed: each seed alone, ${spreadRequests} requests at every rate of the 1% grid (below the knee's first failing rate).`);
  console.log('| recipe | pooled ground truth QPS | each seed alone | within ±2.5% | worst error | load-s per seed |');
  console.log('|---|---|---|---|---|---|');
  for (const r of spreadRows) console.log(r);
}
console.log('');
for (const d of details) console.log(d);
console.log(`wall time: ${((performance.now() - t0) / 1000).toFixed(0)} s (virtual clock; no HTTP, no client timing error)`);
