// What the proofs on the virtual clock share (scripts/verdict-proof.ts, scripts/interval-proof.ts):
// a recipe resolved to the simulated engine's configuration with its prefill fit and SLO, probe
// plans, evaluated metrics, and the long-run ground truth on a 1% grid around the knee.
import { loadRecipe } from '../harness/recipe/load.ts';
import type { Recipe } from '../harness/recipe/parse.ts';
import { resolveSimConfig, type SimConfig } from '../harness/sim/config.ts';
import { planProbe } from '../harness/load/plan.ts';
import { fitPrefill } from '../harness/capacity/fit.ts';
import { predictPrefillS, type PrefillFit } from '../harness/metrics/prefill.ts';
import { computeRequestMetrics, type RequestMetrics } from '../harness/metrics/request.ts';
import type { Slo } from '../harness/metrics/slo.ts';
import { sloWithSources } from '../harness/capacity/runPlan.ts';
import type { SearchBounds } from '../harness/capacity/search.ts';
import { sloSeries } from '../harness/capacity/sloDecision.ts';
import type { TimelineRecord } from '../harness/timeline/record.ts';
import { runVirtualProbe, virtualPrefillS } from './virtualProbe.ts';
export interface Config {
  recipe: Recipe;
  sim: SimConfig;
  slo: Slo;
  fit: PrefillFit;
  bounds: SearchBounds;
  probe: Recipe['search']['probe'];
  maxContext: number;
}

export async function configOf(file: string): Promise<Config> {
  const recipe = await loadRecipe(file);
  const t = recipe.target;
  const sim = resolveSimConfig({
    model: t.model,
    gpu: t.gpuProfile,
    scheduler: t.sim?.scheduler ?? (t.engine === 'sarathi' ? 'sarathi' : 'vllm'),
    tensorParallel: t.tensorParallel,
    ...(t.engineArgs.maxNumSeqs !== undefined ? { maxNumSeqs: t.engineArgs.maxNumSeqs } : {}),
    ...(t.engineArgs.maxModelLen !== undefined ? { maxModelLen: t.engineArgs.maxModelLen } : {}),
    ...(t.engineArgs.maxNumBatchedTokens !== undefined ? { maxNumBatchedTokens: t.engineArgs.maxNumBatchedTokens } : {}),
    ...(t.engineArgs.chunkSize !== undefined ? { chunkSize: t.engineArgs.chunkSize } : {}),
    ...(t.engineArgs.gpuMemoryUtilization !== undefined ? { gpuMemoryUtilization: t.engineArgs.gpuMemoryUtilization } : {}),
  });
  // The profile step: isolated prefills, quadratic fit (deterministic here, so one repeat).
  const lengths = recipe.profile.promptLengths ?? [128, 256, 512, 1024, 2048, 3072];
  const fit = fitPrefill(lengths.filter((p) => p < sim.maxModelLen).map((p) => ({ promptTokens: p, prefillS: virtualPrefillS(sim, p) })));
  return {
    recipe,
    sim,
    slo: sloWithSources(recipe.slo as Slo, recipe.source.sloText),
    fit,
    bounds: { qps: recipe.search.qps, tolerance: recipe.search.tolerance, maxProbes: recipe.search.maxProbes, budgetS: recipe.search.budget ?? null },
    probe: recipe.search.probe,
    maxContext: sim.maxModelLen,
  };
}

export const metricsOf = (c: Config, r: TimelineRecord): RequestMetrics => {
  const pre = predictPrefillS(c.fit, r.promptTokens);
  return computeRequestMetrics(r, { dpS: pre + (c.slo.fluidity?.ttftSlackS ?? 0.3), tbtDeadlineS: c.slo.fluidity?.tbtDeadlineS ?? 0.025, prefillS: pre });
};

export function plan(c: Config, rateQps: number, requests: number, seed: number, durationS: number) {
  return planProbe({ workload: c.recipe.workload, rateQps, requests, durationS, maxContextTokens: c.maxContext, seed }).requests;
}

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
    const { records } = runVirtualProbe(c.sim, planned);
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
  const { records } = runVirtualProbe(c.sim, planned);
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

