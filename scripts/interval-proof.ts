// npx tsx scripts/interval-proof.ts [--recipes a.yaml,b.yaml] [--seeds 20] [--truth 43.39,6.788,Q] [--truth-sd 0.0053,0.005,S]
//                                   [--gt-seeds 3] [--gt-requests 12000] [--warmup stationary|fixed|none] [--warmup-s S]
//                                   [--cool-down 0.1] [--rate-axis realized|planned|realized-estimate]
// Does the capacity's 95% interval mean what it says? For each recipe (default: the quickstart,
// Sarathi on the same model, Llama-2-70B on 4×A100), on the simulated engine driven on a virtual
// clock (the twin's probe, twin/virtualProbe.ts), `--seeds` searches with workload seeds 7, 8, … (each
// probe draws its own sample from the search's seed and its rate, as runs do; `--same-seed` replays one):
//  - the run's search (the recipe's probes, near the knee at least a tenth of the budget as runs
//    plan them (capacity/runPlan.ts kneeMeasureS), nearest-rank verdicts, decided early stops where the
//    recipe's search.earlyStop has them (`--early-stop`, `--no-early-stop` override it), and after the
//    first fail the knee warm-up: `--warmup stationary`, until the engine's backlog is stationary as
//    runs do, `fixed` for its whole bound, `none`; the bound is the recipe's search.kneeWarmupMax
//    unless `--warmup-s` says), probed by the twin's runTwinProbe, and the interval
//    capacity/interval.ts draws from its probes, as capacity.json carries it;
//  - a Metron-style search (1000 requests per probe, no early stop) for comparison, with the
//    interval from its probes too;
//  - the bracket-then-bisect search runs made before the interval steered them ('old'), and the
//    interval search with the recipe's budget ('run'), with Metron's median load-seconds as its
//    budget ('run@metron') and with a third of it ('run@metron/3'): the goals are at most half
//    Metron's median error at equal load, and no worse at a third of it;
//  - with `--methods …,oracle@metron:0.05` (after metron-1000), no search: Metron's median load in
//    whole probes alternating at the truth × (1 ∓ 0.05), the floor a search that knew the capacity
//    would reach with these probes and this estimator; `oracle@metron/3:0.05` with a third of it.
// Printed per method: the share of intervals containing the pooled ground truth (goal ≥ 90%), how
// many had an open end, the median and worst error of the estimate, the median interval width and
// the load-seconds used. `--truth` skips the ground-truth computation with known values (same
// order as --recipes), which scripts/verdict-proof.ts computes the same way (scripts/proofSupport.ts):
// the highest rate of a 1% grid whose pooled sample passes. On a flat knee that can read low (the
// 70B's 0.3277 against a crossing of 0.3323), so the proofs take their truths from
// scripts/ground-truth.ts (the crossing of the long-run curve, and its standard error over seeds,
// which `--truth-sd` takes). Each goal's ratio is printed with its 95% range over the seeds
// resampled (and the truth redrawn from `--truth-sd`): how far the medians of this many searches
// can be trusted.
//
// `--scatter 0.29,0.3277,0.36 [--scatter-probes 60] [--warmup-s S]` instead checks the evidence one
// probe brings, on the first recipe: at each rate, that many whole probes as runs plan them (knee
// warm-up included, no early stop, each its own workload seed) against the long-run miss fraction
// (`--gt-seeds` × `--gt-requests`). Per SLO entry it prints the probes' mean miss fraction (an empty
// start reads low by the difference) and the variance of their fractions over the variance their
// effective counts n/τ claim (above 1, the interval counts a probe as surer than it is), and the
// share of that scatter the arrival rate each probe's Poisson draw realized explains (R²), and the
// same for the rate its bursts put it at (the mean backlog its planned arrivals find on a virtual
// server loaded to `--backlog-utilization` by the planned rate, metrics/virtualBacklog.ts).
// `--rate-axis` says where the run's intervals read each probe: at the rate its bursts put it at
// (as runs do, capacity/burstRate.ts; TBT and TPOT entries at the realized rate), at the arrival
// rate its judged requests realized (metrics/arrivalRate.ts), at its planned rate, or the planned
// searches read back with only their final interval at the realized rates (the estimator alone).
// `--cool-down F` sends F × a probe's requests after its measured ones, never judged, until they
// have ended (twin/twinSearch.ts coolDownShare), in the run's searches and the scatter alike:
// without it a probe's last requests end on a draining engine (scripts/probe-tail.ts).
// With `--read-load L` (load-seconds, e.g. the Metron search's median) the probes are as long as a
// run's knee probes with that budget (`--scatter-measure S`: S seconds of arrivals), and with three
// rates or more it then prints how far a direct read gets with that load: all L spent at the middle
// rate with the curve's slope known exactly (the long-run fractions at the outer rates), the
// crossing read off the probes' pooled fraction errs by its deviation over the slope. Its median
// absolute error as a share of the middle rate, from the probes resampled (k of them, 4000 times;
// beside it the normal value, 0.674 standard errors, which skewed fractions overstate). The scale
// of the noise for any search of such probes, not a floor: a search whose estimate stays between
// rates it placed well can do better (docs/verdicts.md). Printed for the SLO entries that bind
// there (a long-run fraction within a factor 2 of the allowance).
import { parseArgs } from 'node:util';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { evaluateSlo } from '../harness/metrics/sloCheck.ts';
import { nextProbe, type ProbeVerdict } from '../harness/capacity/search.ts';
import { probeDecision, sloSeries } from '../harness/capacity/sloDecision.ts';
import { DEFAULT_DECISION } from '../harness/capacity/decision.ts';
import { capacityInterval, type CapacityInterval } from '../harness/capacity/interval.ts';
import type { ProbeStatistics } from '../harness/runDir/schema.ts';
import { KNEE_PROBE_SHARE, kneeMeasureS, kneeWarmupS, nearKnee, probeSeed } from '../harness/capacity/runPlan.ts';
import { runTwinProbe } from '../harness/twin/twinSearch.ts';
import { createRng, standardNormal } from '../harness/util/rng.ts';
import { drainTokensPerS, meanBacklogS, type PlannedArrival } from '../harness/metrics/virtualBacklog.ts';
import type { KneeWarmupRecord } from '../harness/load/kneeWarmup.ts';
import { configOf, evaluated, groundTruth, kneeBoundS, kneeRuleOf, plan, runPlanned, warmupModeOf, type Config } from './proofSupport.ts';

const { values } = parseArgs({
  options: {
    recipes: { type: 'string', default: 'recipes/quickstart.yaml,recipes/papers/llama3-8b-h100-sarathi-sim.yaml,recipes/papers/llama2-70b-a100-tp4-sim.yaml' },
    seeds: { type: 'string', default: '20' },
    truth: { type: 'string' },
    // The truths' own standard errors, relative (same order; scripts/ground-truth.ts prints them):
    // the goals' ratios are then also resampled over the truth.
    'truth-sd': { type: 'string' },
    'gt-seeds': { type: 'string', default: '3' },
    'gt-requests': { type: 'string', default: '12000' },
    methods: { type: 'string', default: 'metron-1000,old,run,run@metron,run@metron/3' },
    // The run's search's warm-up near the knee (after its first fail): until the engine's backlog is
    // stationary, as runs do; for its whole bound; or none.
    warmup: { type: 'string', default: 'stationary' },
    // The warm-up's bound in seconds of arrivals at the probe's rate (default: the recipe's search.kneeWarmupMax).
    'warmup-s': { type: 'string' },
    // Write every search's probes (with their evidence) to this JSON file, or read them back from
    // it instead of probing: the estimator can then be re-judged without the CPU time.
    save: { type: 'string' },
    tau: { type: 'string', default: 'running-max' },
    // The interval's overdispersion (capacity/interval.ts): 'deviance' or 'none', and its floor.
    dispersion: { type: 'string', default: 'none' },
    'min-dispersion': { type: 'string' },
    // Share of the gap between probed rates each end moves out (default: capacity/interval.ts SHAPE_MARGIN).
    'shape-margin': { type: 'string' },
    // Relative rate difference within which probes pool as one point (default: capacity/interval.ts POOL_WITHIN;
    // 0 keeps every rate apart, as before). Re-judges saved searches; a fresh one also places its probes by it.
    'pool-within': { type: 'string' },
    // The curve's shapes the interval is drawn from: 'both' (the monotone fit and the knee's log-odds
    // line, as runs do) or 'monotone' (the fit alone, as before); and the line's window in odds.
    shape: { type: 'string', default: 'both' },
    'knee-odds-window': { type: 'string' },
    // Every probe of a search replays the search's one workload sample, as runs did before each probe
    // drew its own (seeded from the search's seed and the rate, capacity/runPlan.ts probeSeed).
    'same-seed': { type: 'boolean', default: false },
    // Where the interval reads each probe: at the arrival rate its judged requests realized, as runs
    // do; at its planned rate, as runs did before; or 'realized-estimate': searches steered at the
    // planned rates (the same searches as 'planned', read back from --from) with only their final
    // interval read at the realized rates, so the two differ by the estimator alone.
    'rate-axis': { type: 'string', default: 'bursts' },
    // The run's search without its warm-up near the knee: --warmup none.
    'no-knee-warmup': { type: 'boolean', default: false },
    // A rate probed again replays its first sample, as runs did before each repeat drew its own.
    'replay-repeats': { type: 'boolean', default: false },
    // Constants of the rule that ends the knee warm-up, replacing load/kneeWarmup.ts's (JSON, e.g. '{"z":2}').
    'knee-rule': { type: 'string' },
    from: { type: 'string' },
    scatter: { type: 'string' },
    // The run's searches follow the recipe's search.earlyStop; these override it: without the
    // decided early stop (every probe runs to its planned end), or with it.
    'no-early-stop': { type: 'boolean', default: false },
    'early-stop': { type: 'boolean', default: false },
    'scatter-probes': { type: 'string', default: '60' },
    'read-load': { type: 'string' },
    'scatter-measure': { type: 'string' },
    // The scatter's virtual server for each probe's bursts (metrics/virtualBacklog.ts): the share of
    // its drain the planned rate loads it to.
    'backlog-utilization': { type: 'string', default: '0.8' },
    // A cool-down after every probe's measured requests, as a share of them (twin/twinSearch.ts
    // coolDownShare): arrivals that keep the engine loaded while the measured requests end, never
    // judged. Runs have none; this measures what the drain at a probe's end does to the estimates.
    'cool-down': { type: 'string', default: '0' },
  },
});
const log = (line: string) => process.stderr.write(`${line}\n`);
const fmtQ = (q: number | null) => (q === null ? '—' : String(+q.toPrecision(4)));
const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// 'old': the bracket-then-bisect search runs made before the interval steered it (verdicts only, no
// budget); 'run': the interval search with the recipe's budget; 'run@metron', 'run@metron/3': the
// interval search with a budget of the Metron search's median load-seconds, and of a third of it.
// 'oracle@metron:S': no search, a floor for one: Metron's median load spent in whole probes (no early
// stop) alternating at the truth × (1 − S) and × (1 + S), as if a search knew the capacity;
// 'oracle@metron/3:S' the same with a third of that load.
type Method = 'old' | 'run' | 'run@metron' | 'run@metron/3' | 'metron-1000' | `oracle@metron:${string}` | `oracle@metron/3:${string}`;
interface Probe {
  qps: number;
  passed: boolean;
  durationS: number;
  statistics: Pick<ProbeStatistics, 'parts'>;
  /** How the probe's knee warm-up ended (run searches; null without one). */
  kneeWarmup?: KneeWarmupRecord | null;
  /** The arrival rate its judged requests realized (the twin's probes: run searches and the oracle's). */
  arrivalQps?: number | null;
  /** The rate its judged requests' bursts put it at (the twin's probes). */
  burstQps?: number | null;
}

// Whether the run's searches stop probes early: as the recipe says, unless an option overrides it.
const stopsEarly = (c: Config) => (values['no-early-stop'] ? false : values['early-stop'] ? true : c.runPlan.probe.earlyStop);

const warmupMode = values['no-knee-warmup'] ? 'none' : warmupModeOf(values.warmup);
const kneeRule = kneeRuleOf(warmupMode, values['knee-rule']);
const coolDownShare = Number(values['cool-down']);
const rateAxis = values['rate-axis'] as 'bursts' | 'realized' | 'planned' | 'realized-estimate';
if (!['bursts', 'realized', 'planned', 'realized-estimate'].includes(rateAxis)) throw new Error(`--rate-axis: expected bursts, realized, planned or realized-estimate, got ${JSON.stringify(rateAxis)}`);
if (!(coolDownShare >= 0)) throw new Error(`--cool-down: expected a share of the measured requests (0 or more), got ${JSON.stringify(values['cool-down'])}`);

function probeOnce(c: Config, method: Method, qps: number, seed: number, kneeS: number, earlyStop = stopsEarly(c), measureS = c.runPlan.probe.minDurationS): Probe {
  if (method === 'metron-1000') {
    const planned = plan(c, qps, 1000, seed, 1e9);
    const warmup = Math.floor(1000 * c.probe.warmupFraction);
    const { records, durationS } = runPlanned(c, planned);
    const judged = evaluated(c, planned, records, warmup);
    return { qps, passed: evaluateSlo(judged, c.slo).passed, durationS, statistics: probeDecision(judged, c.slo, DEFAULT_DECISION, judged.length) };
  }
  // As runs probe, by the twin's probe (capacity/probeStep.ts's plan, knee warm-up, decided early stop and judgement).
  const p = runTwinProbe({ plan: { ...c.runPlan, seed, probeSeeds: 'workload' }, workload: c.recipe.workload, engine: c.engine, fit: c.fit, earlyStop, kneeRule, coolDownShare }, 1, qps, kneeS, 0, measureS);
  return { qps, passed: p.passed, durationS: p.durationS, statistics: { parts: p.parts }, kneeWarmup: p.kneeWarmup, arrivalQps: p.arrivalQps, burstQps: p.burstQps };
}

interface SearchResult {
  capacity: number;
  loadS: number;
  probes: Probe[];
  interval: CapacityInterval;
}

const ivOptions = {
  tau: values.tau as 'own',
  dispersion: values.dispersion as 'none',
  ...(values['min-dispersion'] ? { minDispersion: Number(values['min-dispersion']) } : {}),
  ...(values['shape-margin'] ? { shapeMargin: Number(values['shape-margin']) } : {}),
  ...(values['pool-within'] ? { poolWithin: Number(values['pool-within']) } : {}),
  shape: values.shape as 'both',
  rateAxis: rateAxis === 'planned' ? ('planned' as const) : rateAxis === 'bursts' ? ('bursts' as const) : ('realized' as const),
  ...(values['knee-odds-window'] ? { kneeOddsWindow: Number(values['knee-odds-window']) } : {}),
};
// A search's result from its probes: the interval capacity/interval.ts draws from them, as capacity.json carries it.
function resultOf(capacity: number, probes: Probe[]): SearchResult {
  const interval = capacityInterval(probes.map((p) => ({ qps: p.qps, arrivalQps: p.arrivalQps, burstQps: p.burstQps, durationS: p.durationS, parts: p.statistics.parts ?? [] })), ivOptions);
  return { capacity, loadS: probes.reduce((t, p) => t + p.durationS, 0), probes, interval };
}

const saved: Record<string, { capacity: number; probes: Probe[] }> = values.from && existsSync(values.from) ? JSON.parse(readFileSync(values.from, 'utf8')) : {};
const toSave: typeof saved = {};

function search(c: Config, method: Method, seed: number, truth: number): SearchResult {
  // Files saved before the stationary warm-up keyed a fixed 10 s one as ':0…:knee'; they read back so.
  const bound = values['warmup-s'] ?? 0;
  const knee = warmupMode === 'none' ? '' : warmupMode === 'fixed' ? ':knee' : ':knee-stationary';
  const repeats = values['replay-repeats'] || !method.startsWith('run') ? '' : ':repeats';
  // The run's and the old search's probes stop early as stopsEarly says; Metron's and the oracle's never do.
  const stops = !stopsEarly(c) && (method === 'old' || method.startsWith('run')) ? ':no-early-stop' : '';
  const key = `${c.recipe.name}:${method}${method.startsWith('run') ? `:budget-${budgetOf(c, method)}` : ''}${method.startsWith('run') || method.startsWith('oracle@') ? `:knee-probe-${KNEE_PROBE_SHARE}` : ''}:${seed}:${bound}${values['same-seed'] ? '' : ':per-probe'}${knee}${repeats}${stops}${method.startsWith('oracle@') ? `:truth-${truth}` : ''}${coolDownShare > 0 && method !== 'metron-1000' ? `:cool-down-${coolDownShare}` : ''}${method === 'metron-1000' ? '' : values['rate-axis'] === 'realized' ? ':realized-axis' : values['rate-axis'] === 'bursts' ? ':bursts-axis' : ''}`;
  const hit = saved[key];
  if (hit) return resultOf(hit.capacity, hit.probes);
  const r = method.startsWith('oracle@') ? oracle(c, method, seed, truth) : searchNow(c, method, seed);
  toSave[key] = { capacity: r.capacity, probes: r.probes };
  if (values.save) writeFileSync(values.save, JSON.stringify({ ...saved, ...toSave }));
  return r;
}

// The Metron search's median load-seconds per recipe, once its searches have run (methods list it first).
const metronMedianLoad = new Map<string, number>();
function budgetOf(c: Config, method: Method): number | null {
  if (method === 'old' || method === 'metron-1000') return null;
  if (method === 'run') return c.bounds.budgetS ?? null;
  const m = metronMedianLoad.get(c.recipe.name);
  if (m === undefined) throw new Error(`${method} needs the metron-1000 searches first (--methods metron-1000,…)`);
  return method === 'run@metron/3' || method.startsWith('oracle@metron/3:') ? m / 3 : m;
}

// Probes placed as if the capacity were known (see Method): what the probes and the estimator
// could reach with Metron's load and no search to spend it on.
function oracle(c: Config, method: Method, seed: number, truth: number): SearchResult {
  const spread = Number(method.split(':')[1]);
  if (!(spread > 0 && spread < 1)) throw new Error(`${method}: the spread after ':' must lie between 0 and 1`);
  const budget = budgetOf(c, method)!;
  const probes: Probe[] = [];
  for (let load = 0; load < budget; ) {
    const qps = +(truth * (probes.length % 2 === 0 ? 1 - spread : 1 + spread)).toPrecision(4);
    const repeat = probes.filter((p) => p.qps === qps).length;
    const p = probeOnce(c, method, qps, probeSeed({ seed, probeSeeds: 'per-rate' }, qps, repeat), kneeBoundS(c, warmupMode, values['warmup-s']), false, kneeMeasureS(c.runPlan.probe, true, budget));
    probes.push(p);
    load += p.durationS;
  }
  return resultOf(Math.max(0, ...probes.filter((p) => p.passed).map((p) => p.qps)), probes);
}

function searchNow(c: Config, method: Method, seed: number): SearchResult {
  const probes: Probe[] = [];
  const verdicts: ProbeVerdict[] = [];
  // With Metron's load as the budget, the budget alone ends the search (not the recipe's maxProbes).
  const bounds = { ...c.bounds, budgetS: budgetOf(c, method), ...(method.startsWith('run@') ? { maxProbes: 1000 } : {}) };
  for (;;) {
    const d = nextProbe(bounds, verdicts);
    if (d.done) return resultOf(d.capacityQps, probes);
    const kneeS = method !== 'metron-1000' ? kneeWarmupS(verdicts, kneeBoundS(c, warmupMode, values['warmup-s'])) : 0;
    const repeat = values['replay-repeats'] ? 0 : probes.filter((p) => p.qps === d.qps).length;
    // Near the knee a probe spans a share of the budget, as runs plan it (capacity/runPlan.ts kneeMeasureS).
    const measureS = method.startsWith('run') ? kneeMeasureS(c.runPlan.probe, nearKnee(verdicts), bounds.budgetS) : c.runPlan.probe.minDurationS;
    const p = probeOnce(c, method, d.qps, probeSeed({ seed, probeSeeds: values['same-seed'] ? 'workload' : 'per-rate' }, d.qps, repeat), kneeS, stopsEarly(c), measureS);
    probes.push(p);
    // The old search and Metron's bracket on verdicts alone; the interval search reads the evidence too.
    const evidence = method.startsWith('run') ? { evidence: { qps: p.qps, arrivalQps: rateAxis === 'planned' ? null : p.arrivalQps, burstQps: rateAxis === 'bursts' ? p.burstQps : null, durationS: p.durationS, parts: p.statistics.parts ?? [] } } : {};
    verdicts.push({ qps: p.qps, passed: p.passed, decision: p.passed ? 'pass' : 'fail', valid: true, ...evidence });
  }
}

// The evidence of single probes at fixed rates: mean against the long run, scatter against n/τ.
async function scatter(file: string, rates: number[], probes: number): Promise<void> {
  const c = await configOf(file);
  const gtSeeds = Number(values['gt-seeds']);
  const gtRequests = Number(values['gt-requests']);
  console.log(`| recipe | QPS | SLO entry | long-run miss fraction | probes' mean | probes' sd | variance ÷ n/τ binomial's | ÷ n binomial's | median τ | probes within the allowance | realized arrival rate's sd | share of the fractions' variance it explains | bursts' rate's sd | share it explains |`);
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  // With a load to spend, probes as long as a run plans its knee probes with that budget (as the oracle's).
  const readLoad = Number(values['read-load']);
  const measureS = values['scatter-measure'] ? Number(values['scatter-measure']) : readLoad > 0 ? kneeMeasureS(c.runPlan.probe, true, readLoad) : c.runPlan.probe.minDurationS;
  console.log(`probes of ${measureS} s of arrivals after the warm-up`);
  const seen: { qps: number; name: string; longRun: number; allowed: number; variance: number; probeLoadS: number; counts: { m: number; n: number; x: number; xb: number }[]; fractions: number[]; rates: number[]; backlogRates: number[] }[] = [];
  for (const qps of rates) {
    const longRun = new Map<string, { m: number; n: number }>();
    for (let s = 1; s <= gtSeeds; s++) {
      const planned = plan(c, qps, gtRequests, 1000 + s, 1e9);
      const { records } = runPlanned(c, planned);
      for (const series of sloSeries(evaluated(c, planned, records, Math.floor(gtRequests * 0.1)), c.slo)) {
        const e = longRun.get(series.name) ?? { m: 0, n: 0 };
        e.m += series.misses.reduce((a, b) => a + b, 0);
        e.n += series.misses.length;
        longRun.set(series.name, e);
      }
    }
    const kneeS = kneeBoundS(c, warmupMode, values['warmup-s']);
    const runs = Array.from({ length: probes }, (_, i) =>
      runTwinProbe({ plan: { ...c.runPlan, seed: 9000 + i, probeSeeds: 'workload' }, workload: c.recipe.workload, engine: c.engine, fit: c.fit, earlyStop: false, kneeRule, coolDownShare, keepArrivals: true }, 1, qps, kneeS, 0, measureS),
    );
    const parts = runs.map((r) => r.parts);
    const rates = runs.map((r) => r.arrivalQps ?? qps);
    const backlogRates = backlogRatesOf(qps, runs.map((r) => r.arrivals ?? []), Number(values['backlog-utilization']));
    const probeLoadS = runs.reduce((t, r) => t + r.durationS, 0) / runs.length;
    for (const name of [...longRun.keys()]) {
      const own = parts.map((ps) => ps.find((e) => e.name === name)).filter((e) => e !== undefined && e.observed > 0);
      const fractions = own.map((e) => e!.misses / e!.observed);
      const ownRates = parts.flatMap((ps, i) => (ps.some((e) => e.name === name && e.observed > 0) ? [rates[i]] : []));
      const ownBacklog = parts.flatMap((ps, i) => (ps.some((e) => e.name === name && e.observed > 0) ? [backlogRates[i]] : []));
      const mean = fractions.reduce((a, b) => a + b, 0) / fractions.length;
      const variance = fractions.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, fractions.length - 1);
      const claimed = (tau: (t: number) => number) => own.reduce((a, e) => a + (mean * (1 - mean) * tau(e!.tau)) / e!.observed, 0) / own.length;
      const lr = longRun.get(name)!;
      const allowed = own[0]?.allowedFraction ?? 0;
      seen.push({ qps, name, longRun: lr.m / lr.n, allowed, variance, probeLoadS, counts: own.map((e, i) => ({ m: e!.misses, n: e!.observed, x: ownRates[i], xb: ownBacklog[i] })), fractions, rates: ownRates, backlogRates: ownBacklog });
      console.log(
        `| ${c.recipe.name} | ${qps} | ${name} | ${pct(lr.m / lr.n)} | ${pct(mean)} | ${pct(Math.sqrt(variance))} | ${(variance / claimed((t) => Math.max(1, t))).toFixed(2)} | ${(variance / claimed(() => 1)).toFixed(2)} | ${median(own.map((e) => e!.tau)).toFixed(2)} | ${fractions.filter((f) => f <= allowed).length}/${own.length} | ${pct(sd(ownRates) / qps)} | ${(correlation(fractions, ownRates) ** 2).toFixed(2)} | ${pct(sd(ownBacklog) / qps)} | ${(correlation(fractions, ownBacklog) ** 2).toFixed(2)} |`,
      );
    }
  }
  if (!(readLoad > 0) || rates.length < 3) return;
  const middle = rates[Math.floor(rates.length / 2)];
  console.log(`\n| SLO entry | slope (miss fraction per QPS, ${rates[0]}–${rates.at(-1)}) | probe sd at ${middle} | load per probe | probes in ${readLoad} s | direct read: median error (normal) | direct read: median error (probes resampled) | the same, each probe at its realized rate | probes' slope on their realized rate ÷ the long run's | each probe at its bursts' rate | slope on the bursts' rate ÷ the long run's |`);
  console.log('|---|---|---|---|---|---|---|---|---|---|---|');
  // Only the entries that bind near the middle rate: a long-run fraction within a factor 2 of the allowance.
  const binding = seen.filter((r) => r.qps === middle && r.longRun >= r.allowed / 2 && r.longRun <= r.allowed * 2);
  const rng = createRng(0xf100);
  for (const name of binding.map((r) => r.name)) {
    const at = (q: number) => seen.find((r) => r.name === name && r.qps === q)!;
    const slope = (at(rates.at(-1)!).longRun - at(rates[0]).longRun) / (rates.at(-1)! - rates[0]);
    const mid = at(middle);
    const k = readLoad / mid.probeLoadS;
    const sdCrossing = Math.sqrt(mid.variance / k) / slope;
    // The probes' fractions are skewed (a few hold a long cluster of misses), so the normal value
    // overstates the median error; resampling k of the probes (with replacement) keeps their shape.
    // The pooled fraction is centred on all the probes' own, so a bias of short probes is left out.
    // Read at the realized rates, as the interval reads runs: each probe's misses moved along the
    // long-run slope from the rate it drew to the middle one.
    type Axis = 'planned' | 'realized' | 'backlog';
    const atMiddle = (c: { m: number; n: number; x: number; xb: number }, axis: Axis) => (axis === 'planned' ? c.m : c.m - slope * ((axis === 'realized' ? c.x : c.xb) - middle) * c.n);
    const wholeAt = (axis: Axis) => mid.counts.reduce((t, c) => t + atMiddle(c, axis), 0) / mid.counts.reduce((t, c) => t + c.n, 0);
    const errorsOf = (axis: Axis) => {
      const centre = wholeAt(axis);
      return Array.from({ length: 4000 }, () => {
        let m = 0;
        let n = 0;
        for (let j = 0; j < Math.max(1, Math.round(k)); j++) {
          const c = mid.counts[Math.floor(rng.next() * mid.counts.length)];
          m += atMiddle(c, axis);
          n += c.n;
        }
        return Math.abs(m / n - centre) / slope / middle;
      });
    };
    const errors = errorsOf('planned');
    const errorsRealized = errorsOf('realized');
    const errorsBacklog = errorsOf('backlog');
    // How steeply a probe's fraction follows the rate it drew (least squares), against the long-run curve.
    const drawnSlope = (correlation(mid.fractions, mid.rates) * sd(mid.fractions)) / sd(mid.rates);
    const backlogSlope = (correlation(mid.fractions, mid.backlogRates) * sd(mid.fractions)) / sd(mid.backlogRates);
    console.log(`| ${name} | ${slope.toPrecision(3)} | ${pct(Math.sqrt(mid.variance))} | ${mid.probeLoadS.toFixed(0)} s | ${k.toFixed(1)} | ${pct((0.674 * sdCrossing) / middle)} | ${pct(median(errors))} | ${pct(median(errorsRealized))} | ${(drawnSlope / slope).toFixed(2)} | ${pct(median(errorsBacklog))} | ${(backlogSlope / slope).toFixed(2)} |`);
  }
}

/**
 * Each probe's rate as its bursts put it: the planned rate moved by how far the mean backlog its
 * arrivals find (metrics/virtualBacklog.ts, on a server the planned rate loads to `utilization`)
 * strays from the probes' mean, over the backlog's slope in the rate (the same draws replayed 2%
 * faster). The probes' mean stands in for the mean over the planner's draws, which a run would take.
 */
function backlogRatesOf(qps: number, draws: PlannedArrival[][], utilization: number): number[] {
  const all = draws.flat();
  const drain = drainTokensPerS(qps, all.reduce((a, x) => a + x.tokens, 0) / all.length, utilization);
  const mean = (compress: number) => draws.reduce((a, d) => a + meanBacklogS(d, drain, compress), 0) / draws.length;
  const perQps = (mean(1.02) - mean(1)) / (0.02 * qps);
  const at = mean(1);
  return draws.map((d) => qps + (meanBacklogS(d, drain) - at) / perQps);
}

const sd = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / Math.max(1, xs.length - 1));
};
function correlation(xs: number[], ys: number[]): number {
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length;
  const my = ys.reduce((a, b) => a + b, 0) / ys.length;
  const cov = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0);
  return cov / Math.sqrt(xs.reduce((a, x) => a + (x - mx) ** 2, 0) * ys.reduce((a, y) => a + (y - my) ** 2, 0));
}

const t0 = performance.now();
if (values.scatter) {
  await scatter(values.recipes!.split(',')[0], values.scatter.split(',').map(Number), Number(values['scatter-probes']));
  console.log(`wall time: ${((performance.now() - t0) / 1000).toFixed(0)} s (virtual clock)`);
  process.exit(0);
}
const files = values.recipes!.split(',');
const truths = values.truth ? values.truth.split(',').map(Number) : [];
const truthSds = values['truth-sd'] ? values['truth-sd'].split(',').map(Number) : [];
const nSeeds = Number(values.seeds);
const methods = values.methods!.split(',') as Method[];
const rows: string[] = [];
const comparisons: string[] = [];
for (const [k, file] of files.entries()) {
  const tc = performance.now();
  const c = await configOf(file);
  let truth = truths[k];
  if (!(truth > 0)) {
    log(`${c.recipe.name}: ground truth…`);
    const gt = groundTruth(c, Number(values['gt-seeds']), Number(values['gt-requests']));
    if (gt.capacity === null) throw new Error(`${file}: no ground truth on the grid`);
    truth = gt.capacity;
  }
  // Median errors by method: the estimate's for the interval searches, the search's capacity for
  // the old one and Metron's (what each reports), and Metron's estimate too.
  const medErr = new Map<Method, { estimate: number; search: number; load: number }>();
  // Each method's estimates and search capacities by seed, for the goals' resampled ratios.
  const bySeed = new Map<Method, { estimate: (number | null)[]; search: number[] }>();
  for (const method of methods) {
    const runs: SearchResult[] = [];
    for (let i = 0; i < nSeeds; i++) {
      const r = search(c, method, c.recipe.workload.seed + i, truth);
      runs.push(r);
      const iv = r.interval;
      log(`  ${c.recipe.name} ${method} seed ${c.recipe.workload.seed + i}: search ${fmtQ(r.capacity)}; estimate ${fmtQ(iv.estimateQps)} [${fmtQ(iv.loQps)}, ${fmtQ(iv.hiQps)}] open ${iv.open}; ${r.probes.length} probes, ${r.loadS.toFixed(0)} s; ` +
        r.probes.map((p) => `${fmtQ(p.qps)}:${p.passed ? 'P' : 'F'}`).join(' '));
    }
    const knees = runs.flatMap((r) => r.probes.flatMap((p) => (p.kneeWarmup ? [p.kneeWarmup] : [])));
    if (knees.length > 0) {
      comparisons.push(`${c.recipe.name} ${method}: ${knees.length} knee warm-ups (${warmupMode}), ${knees.filter((k) => k.reason === 'stationary').length} ended stationary; length median ${fmtQ(median(knees.map((k) => k.endS)))} s (bound ${knees[0].maxS} s)`);
    }
    const contains = runs.filter((r) => (r.interval.loQps ?? -Infinity) <= truth && truth <= (r.interval.hiQps ?? Infinity)).length;
    const open = runs.filter((r) => r.interval.open !== 'none').length;
    // A missing estimate (open side) counts at the end that bounds it, or as a 100% error.
    const estimate = (r: SearchResult) => r.interval.estimateQps ?? r.interval.loQps ?? r.interval.hiQps;
    const errs = runs.map((r) => {
      const e = estimate(r);
      return e === null ? 1 : Math.abs(e - truth) / truth;
    });
    const searchErrs = runs.map((r) => Math.abs(r.capacity - truth) / truth);
    const widths = runs.map((r) => (r.interval.loQps !== null && r.interval.hiQps !== null ? (r.interval.hiQps - r.interval.loQps) / truth : Infinity));
    const loads = runs.map((r) => r.loadS);
    if (method === 'metron-1000') metronMedianLoad.set(c.recipe.name, median(loads));
    medErr.set(method, { estimate: median(errs), search: median(searchErrs), load: median(loads) });
    bySeed.set(method, { estimate: runs.map(estimate), search: runs.map((r) => r.capacity) });
    rows.push(
      `| ${c.recipe.name} | ${method} | ${fmtQ(truth)} | ${contains}/${nSeeds} (${pct(contains / nSeeds)}) | ${open} | ${pct(median(errs))} | ${pct(Math.max(...errs))} | ${pct(median(widths))} | ${pct(median(searchErrs))} | ${pct(Math.max(...searchErrs))} | ${median(loads).toFixed(0)} |`,
    );
  }
  const metron = medErr.get('metron-1000');
  if (metron) {
    // The goals: at equal load, at most half Metron's median error; at a third of its load, no worse.
    for (const [method, goal] of [['run@metron', 0.5], ['run@metron/3', 1]] as const) {
      const m = medErr.get(method);
      if (!m) continue;
      const best = Math.min(metron.search, metron.estimate);
      const spread = ratioSpread(bySeed.get(method)!, bySeed.get('metron-1000')!, truth, truthSds[k] ?? 0);
      comparisons.push(
        `${c.recipe.name}: ${method} (${m.load.toFixed(0)} load-s, ${pct(m.load / metron.load)} of Metron's ${metron.load.toFixed(0)}): median error of the estimate ${pct(m.estimate)} ` +
          `against Metron's ${pct(metron.search)} (its search) / ${pct(metron.estimate)} (its estimate): ratio ${(m.estimate / best).toFixed(2)} to the better of them ` +
          `(seeds${truthSds[k] ? ' and the truth' : ''} resampled: 95% ${spread.best[0].toFixed(2)}–${spread.best[1].toFixed(2)}), ${(m.estimate / metron.search).toFixed(2)} to its search's ` +
          `(${spread.search[0].toFixed(2)}–${spread.search[1].toFixed(2)}); goal ≤ ${goal} → ${m.estimate <= goal * best ? 'met' : 'not met'}`,
      );
    }
  }
  log(`${c.recipe.name}: wall ${((performance.now() - tc) / 1000).toFixed(0)} s`);
  rows.push(`<!-- ${c.recipe.name}: wall ${((performance.now() - tc) / 1000).toFixed(0)} s -->`);
}
/**
 * How far a goal's ratio moves with the seeds: the seeds resampled with replacement (the same draw
 * for both methods; seed k's searches share its workload) and, with `truthSd`, the truth redrawn
 * from its standard error; the 95% range of the ratio to the better of Metron's two median errors,
 * and to its search's alone.
 */
function ratioSpread(ours: { estimate: (number | null)[] }, metron: { estimate: (number | null)[]; search: number[] }, truth: number, truthSd: number): { best: [number, number]; search: [number, number] } {
  const rng = createRng(0x2a71);
  const n = ours.estimate.length;
  const err = (x: number | null, t: number) => (x === null ? 1 : Math.abs(x - t) / t);
  const best: number[] = [];
  const search: number[] = [];
  for (let b = 0; b < 2000; b++) {
    const t = truth * (1 + truthSd * standardNormal(rng));
    const idx = Array.from({ length: n }, () => Math.floor(rng.next() * n));
    const o = median(idx.map((i) => err(ours.estimate[i], t)));
    const ms = median(idx.map((i) => err(metron.search[i], t)));
    const me = median(idx.map((i) => err(metron.estimate[i], t)));
    best.push(o / Math.min(ms, me));
    search.push(o / ms);
  }
  const q = (xs: number[]): [number, number] => {
    const s = [...xs].sort((a, b) => a - b);
    return [s[Math.floor(0.025 * s.length)], s[Math.floor(0.975 * s.length)]];
  };
  return { best: q(best), search: q(search) };
}

console.log(`| recipe | method | pooled ground truth QPS | intervals containing it | open end | median error of estimate | worst error of estimate | median width | median error of search's capacity | worst error of search's capacity | median load-s |`);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) console.log(r);
for (const line of comparisons) console.log(`- ${line}`);
console.log(`wall time: ${((performance.now() - t0) / 1000).toFixed(0)} s (virtual clock; no HTTP, no client timing error)`);
