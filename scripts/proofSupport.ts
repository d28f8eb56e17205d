// What the proofs on the virtual clock share (scripts/verdict-proof.ts, scripts/interval-proof.ts):
// a recipe resolved to the simulated engine's configuration with its prefill fit and SLO, probe
// plans, evaluated metrics, and the long-run ground truth on a 1% grid around the knee.
import { loadRecipe } from '../harness/recipe/load.ts';
import type { Recipe } from '../harness/recipe/parse.ts';
import type { SimConfig } from '../harness/sim/config.ts';
import { engineConfigOf, type EngineConfig } from '../harness/sim/engine.ts';
import { planProbe, type PlannedRequest, type ProbePlan } from '../harness/load/plan.ts';
import { fitPrefill } from '../harness/capacity/fit.ts';
import { predictPrefillS, type PrefillFit } from '../harness/metrics/prefill.ts';
import { computeRequestMetrics, type RequestMetrics } from '../harness/metrics/request.ts';
import type { Slo } from '../harness/metrics/slo.ts';
import { KNEE_WARMUP_S, kneeWarmupPlanOf, sloWithSources, type ProbeLoad, type RunPlan } from '../harness/capacity/runPlan.ts';
import { stationaryRule, type KneeWarmupPlan, type KneeWarmupRecord, type StationaryRule } from '../harness/load/kneeWarmup.ts';
import type { SearchBounds } from '../harness/capacity/search.ts';
import { sloSeries } from '../harness/capacity/sloDecision.ts';
import type { TimelineRecord } from '../harness/timeline/record.ts';
import { runVirtualProbe, type VirtualProbeOptions, type VirtualProbeResult } from '../harness/twin/virtualProbe.ts';
import { planOf } from '../harness/twin/rehearse.ts';
import { simConfigOf } from '../harness/twin/simTarget.ts';
export interface Config {
  recipe: Recipe;
  /** The run's plan of the recipe, what the twin probes with (twin/twinSearch.ts runTwinProbe). */
  runPlan: RunPlan;
  sim: SimConfig;
  /** The twin's engine of the recipe's target: the simulated engine's scheduler and cost model. */
  engine: EngineConfig;
  slo: Slo;
  fit: PrefillFit;
  bounds: SearchBounds;
  probe: Recipe['search']['probe'];
  maxContext: number;
}

export async function configOf(file: string): Promise<Config> {
  const recipe = await loadRecipe(file);
  // The twin's model of the target (twin/simTarget.ts), so the proofs probe the engine runs rehearse on.
  const sim = simConfigOf(recipe.target, file);
  const engine = engineConfigOf(sim);
  // The profile step: isolated prefills, quadratic fit (deterministic here, so one repeat).
  const lengths = recipe.profile.promptLengths ?? [128, 256, 512, 1024, 2048, 3072];
  const fit = fitPrefill(lengths.filter((p) => p < sim.maxModelLen).map((p) => ({ promptTokens: p, prefillS: virtualPrefillS(engine, p) })));
  const runPlan = planOf(recipe);
  return {
    recipe,
    runPlan,
    sim,
    engine,
    slo: sloWithSources(recipe.slo as Slo, recipe.source.sloText),
    fit,
    bounds: runPlan.search,
    probe: recipe.search.probe,
    maxContext: sim.maxModelLen,
  };
}

export const metricsOf = (c: Config, r: TimelineRecord): RequestMetrics => {
  const pre = predictPrefillS(c.fit, r.promptTokens);
  return computeRequestMetrics(r, { dpS: pre + (c.slo.fluidity?.ttftSlackS ?? 0.3), tbtDeadlineS: c.slo.fluidity?.tbtDeadlineS ?? 0.025, prefillS: pre });
};

export function probePlan(c: Config, rateQps: number, requests: number, seed: number, durationS: number): ProbePlan {
  return planProbe({ workload: c.recipe.workload, rateQps, requests, durationS, maxContextTokens: c.maxContext, seed });
}

export function plan(c: Config, rateQps: number, requests: number, seed: number, durationS: number): PlannedRequest[] {
  return probePlan(c, rateQps, requests, seed, durationS).requests;
}

/** Runs planned requests on a fresh twin engine (twin/virtualProbe.ts), as a probe runs them. */
export function runPlanned(c: Config, requests: PlannedRequest[], options: VirtualProbeOptions = {}): VirtualProbeResult {
  return runVirtualProbe({ requests } as ProbePlan, c.engine, options);
}

/** Isolated prefill on an idle twin engine: the TTFT of a one-token request of `promptTokens`. */
function virtualPrefillS(engine: EngineConfig, promptTokens: number): number {
  const { records } = runVirtualProbe({ requests: [{ id: 'p', index: 0, scheduledS: 0, promptTokens, maxTokens: 1 }] } as ProbePlan, engine);
  return records[0].chunks[0][0];
}

/**
 * How a probe near the knee is warmed up: 'stationary' as runs and the twin do (load/kneeWarmup.ts:
 * until the engine's backlog is stationary, at most the bound), 'fixed' for the whole bound, 'none'.
 */
export type WarmupMode = 'stationary' | 'fixed' | 'none';

export function warmupModeOf(text: string | undefined, flag = '--warmup'): WarmupMode {
  if (text === 'stationary' || text === 'fixed' || text === 'none') return text;
  throw new Error(`${flag}: expected stationary, fixed or none, got ${JSON.stringify(text)}`);
}

/**
 * The rule that ends a knee warm-up in `mode`: runs' (load/kneeWarmup.ts) with any of its constants
 * replaced by `overrides` (a JSON object, the proofs' `--knee-rule`), or one never stationary for 'fixed'.
 */
export function kneeRuleOf(mode: WarmupMode, overrides?: string): StationaryRule {
  const rule: StationaryRule = { ...stationaryRule(), ...(overrides ? (JSON.parse(overrides) as Partial<StationaryRule>) : {}) };
  return mode === 'fixed' ? { ...rule, minWindows: Infinity } : rule;
}

/** The bound of a knee warm-up: `--warmup-s` when given, else the recipe's search.kneeWarmupMax; 0 for 'none'. */
export function kneeBoundS(c: Config, mode: WarmupMode, warmupS: string | undefined): number {
  return mode === 'none' ? 0 : warmupS !== undefined ? Number(warmupS) : c.runPlan.probe.kneeWarmupMaxS ?? KNEE_WARMUP_S;
}

/** The knee warm-up of a probe in `mode` (null without one), as capacity/runPlan.ts plans it for runs. */
export function kneePlanOf(mode: WarmupMode, rule: StationaryRule, load: ProbeLoad, plannedRequests: number, warmupS: number, warmupFraction: number): KneeWarmupPlan | null {
  return mode === 'none' ? null : kneeWarmupPlanOf(load, plannedRequests, warmupS, warmupFraction, rule);
}

export type { KneeWarmupRecord };

// Evaluated metrics in arrival order (warm-up left out).
export function evaluated(c: Config, planned: ReturnType<typeof plan>, records: TimelineRecord[], warmup: number): RequestMetrics[] {
  const byId = new Map(records.map((r) => [r.id, r]));
  return planned.slice(warmup).flatMap((p) => {
    const r = byId.get(p.id);
    return r ? [metricsOf(c, r)] : [];
  });
}

// ---- ground truth -------------------------------------------------------------------------
// Long-run miss fraction relative to its allowance, worst SLO entry, seeds pooled (> 1 = fails).
const gtCache = new Map<string, number>();
export function loadRatio(c: Config, rateQps: number, seeds: number, requests: number): number {
  const key = `${c.recipe.name}:${rateQps}`;
  const hit = gtCache.get(key);
  if (hit !== undefined) return hit;
  const pooled = new Map<string, { misses: number; n: number; allowed: number }>();
  for (let s = 1; s <= seeds; s++) {
    const planned = plan(c, rateQps, requests, 1000 + s, 1e9);
    const { records } = runPlanned(c, planned);
    for (const series of sloSeries(evaluated(c, planned, records, Math.floor(requests * 0.1)), c.slo)) {
      const e = pooled.get(series.name) ?? { misses: 0, n: 0, allowed: series.allowedFraction };
      e.misses += series.misses.reduce((a, b) => a + b, 0);
      e.n += series.misses.length;
      pooled.set(series.name, e);
    }
  }
  const ratio = Math.max(...[...pooled.values()].map((e) => (e.allowed > 0 ? e.misses / e.n / e.allowed : e.misses > 0 ? Infinity : 0)));
  gtCache.set(key, ratio);
  return ratio;
}

// Long-run miss fraction ÷ allowance of one seed alone (worst SLO entry).
export function seedRatio(c: Config, rateQps: number, seed: number, requests: number): number {
  const planned = plan(c, rateQps, requests, seed, 1e9);
  const { records } = runPlanned(c, planned);
  const series = sloSeries(evaluated(c, planned, records, Math.floor(requests * 0.1)), c.slo);
  return Math.max(...series.map((s) => {
    const misses = s.misses.reduce((a, b) => a + b, 0);
    return s.allowedFraction > 0 ? misses / s.misses.length / s.allowedFraction : misses > 0 ? Infinity : 0;
  }));
}

// Each seed's own ground truth on the grid: the highest rate passing with every lower one.
export function groundTruthSpread(c: Config, grid: readonly { qps: number }[], seeds: number, requests: number): { capacities: (number | null)[]; loadS: number } {
  const capacities: (number | null)[] = [];
  let loadS = 0;
  for (let s = 1; s <= seeds; s++) {
    let capacity: number | null = null;
    for (const g of grid) {
      loadS += requests / g.qps;
      if (seedRatio(c, g.qps, 7000 + s, requests) > 1) break;
      capacity = g.qps;
    }
    capacities.push(capacity);
  }
  return { capacities, loadS: loadS / Math.max(1, seeds) };
}

export function groundTruth(c: Config, seeds: number, requests: number): { capacity: number | null; grid: { qps: number; ratio: number }[] } {
  if (seeds === 0) return { capacity: null, grid: [] };
  // Bracket the knee on the long-run ratio, then walk a 1% grid across it.
  let lo = c.bounds.qps.minQps;
  let hi = c.bounds.qps.startQps;
  while (loadRatio(c, hi, seeds, requests) <= 1 && hi < c.bounds.qps.maxQps) [lo, hi] = [hi, Math.min(hi * 2, c.bounds.qps.maxQps)];
  while ((hi - lo) / lo > 0.02) {
    const mid = (lo + hi) / 2;
    if (loadRatio(c, mid, seeds, requests) <= 1) lo = mid;
    else hi = mid;
  }
  const grid: { qps: number; ratio: number }[] = [];
  for (let k = -6; k <= 6; k++) {
    const qps = +(lo * (1 + 0.01 * k)).toPrecision(5);
    grid.push({ qps, ratio: loadRatio(c, qps, seeds, requests) });
  }
  let capacity: number | null = null;
  for (const g of grid) {
    if (g.ratio > 1) break;
    capacity = g.qps;
  }
  return { capacity, grid };
}

