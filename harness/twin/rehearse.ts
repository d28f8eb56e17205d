// `fluidcap run --rehearse`: the recipe's whole search on the twin first (seconds), so the real
// search can start from the twin's bracket (see warmStart.ts). Reads the recipe's trace file, if
// any; everything else is the pure twin search.
import { performance } from 'node:perf_hooks';
import type { Recipe } from '../recipe/parse.ts';
import type { RunPlan } from '../capacity/runPlan.ts';
import { resolveRun } from '../capacity/resolveRun.ts';
import { loadWorkloadTrace } from '../load/traceFile.ts';
import { engineConfigOf, type EngineConfig } from '../sim/engine.ts';
import type { Bracket } from '../capacity/search.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import type { CalibrationFile, RehearsalJson } from '../runDir/schema.ts';
import { llamacppEngineOf, llamacppSlotsOf, simConfigOf } from './simTarget.ts';
import { UserError } from '../util/errors.ts';
import { calibratedEngine } from './calibrate.ts';
import { runTwinSearch, type TwinProbe, type TwinSearchResult } from './twinSearch.ts';

export interface Rehearsal extends TwinSearchResult {
  /** Wall seconds the twin took (profile and search). */
  wallS: number;
  /** (virtual profile + probe seconds) / wall seconds: how much faster than running it for real. */
  speedup: number;
}

export interface RehearseOptions {
  /** A D_p fit to judge with instead of the twin's own profile (e.g. the real run's). */
  fit?: PrefillFit;
  earlyStop?: boolean;
  onProbe?: (p: TwinProbe) => void;
  /** The iteration model fitted to the real run (twin-calibration.json) instead of the roofline. */
  calibration?: Pick<CalibrationFile, 'model'>;
}

/** The recipe's run plan as the real run resolves it. */
export function planOf(recipe: Recipe, runId = `${recipe.name}-twin`): RunPlan {
  return resolveRun(recipe, runId);
}

/** The target has no twin before its engine has been measured (llama.cpp on a CPU). */
export class UncalibratedTwin extends UserError {}

/** The engine the twin runs for the recipe's target: its roofline model, or the calibrated one. */
export function twinEngineOf(recipe: Recipe, calibration?: Pick<CalibrationFile, 'model'>): EngineConfig {
  if (recipe.target.engine === 'llamacpp') {
    if (!calibration) throw new UncalibratedTwin(`${recipe.source.file}: the twin has no model of llama.cpp's iteration time until a run has measured one (its profile and a probe)`);
    return llamacppEngineOf(llamacppSlotsOf(recipe.target), calibration.model);
  }
  const engine = engineConfigOf(simConfigOf(recipe.target, recipe.source.file));
  return calibration ? calibratedEngine(engine, calibration) : engine;
}

/** Runs the recipe's search on the twin and returns its bracket (the warm start) with the figures. */
export function rehearse(recipe: Recipe, plan: RunPlan = planOf(recipe), options: RehearseOptions = {}): Rehearsal {
  const t0 = performance.now();
  const trace = loadWorkloadTrace(recipe.workload, recipe.source.dir, recipe.source.file);
  const result = runTwinSearch({
    plan,
    workload: recipe.workload,
    trace,
    engine: twinEngineOf(recipe, options.calibration),
    fitBounds: recipe.profile.fitBounds,
    fit: options.fit,
    earlyStop: options.earlyStop,
    onProbe: options.onProbe,
  });
  const wallS = (performance.now() - t0) / 1000;
  return { ...result, wallS, speedup: (result.probeTimeS + result.profileTimeS) / wallS };
}

/** What a rehearsal proposed, as capacity.json records it (the run adds how far it moved from it). */
export function rehearsalRecord(r: TwinSearchResult, twin: RehearsalJson['twin']): RehearsalJson {
  const iv = r.interval;
  return {
    twin,
    probes: r.probes.map((p) => ({ qps: p.qps, passed: p.passed, durationS: +p.durationS.toFixed(3) })),
    loadSeconds: +r.probeTimeS.toFixed(3),
    capacityQps: r.capacityQps,
    bracket: r.bracket,
    outcome: r.outcome,
    reason: r.reason,
    interval: iv ? { estimateQps: iv.estimateQps, loQps: iv.loQps, hiQps: iv.hiQps, open: iv.open } : null,
  };
}

/** Just the bracket, for callers that only warm-start. */
export function rehearsedBracket(recipe: Recipe, plan?: RunPlan): Bracket {
  return rehearse(recipe, plan).bracket;
}
