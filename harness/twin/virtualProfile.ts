// Prefill profiling in virtual time: the profile plan's isolated requests, each alone on an idle
// engine, first-token time = prefill; then the same quadratic D_p fit the real profile makes. Pure.
import type { EngineConfig } from '../sim/engine.ts';
import { createEngine } from '../sim/pipeline.ts';
import { VirtualClock } from '../sim/virtualClock.ts';
import { newSimRequest } from '../sim/request.ts';
import type { ProfilePlan } from '../capacity/profilePlan.ts';
import { fitPrefill, type FitBounds, type PrefillPoint } from '../capacity/fit.ts';
import type { PrefillFitResult } from '../runDir/schema.ts';

export interface VirtualProfile {
  fit: PrefillFitResult;
  points: PrefillPoint[];
  /** Virtual seconds the isolated requests took end to end (what the real profile spends). */
  durationS: number;
}

/** One isolated request's first-token time in seconds, modelled send delay included. */
export function isolatedPrefillS(engineConfig: EngineConfig, promptTokens: number, maxTokens = 1, sendDelayS = 0): { prefillS: number; e2eS: number } {
  const clock = new VirtualClock(0n);
  let firstNs: bigint | null = null;
  let lastNs = 0n;
  const engine = createEngine(engineConfig, clock, (events) => {
    for (const ev of events) {
      if (ev.tokenIndex === 0) firstNs = clock.nowNs();
      lastNs = clock.nowNs();
    }
  });
  engine.submit(newSimRequest(0, promptTokens, maxTokens, 'length'));
  clock.run();
  if (firstNs === null) throw new Error(`virtual profile: no token for a ${promptTokens}-token prompt`);
  return { prefillS: Number(firstNs) / 1e9 + sendDelayS, e2eS: Number(lastNs) / 1e9 + sendDelayS };
}

/** Runs the profile plan (warm-ups excluded from the fit, as in the real profile) and fits D_p. */
export function runVirtualProfile(plan: ProfilePlan, engineConfig: EngineConfig, opts: { fitBounds?: Partial<FitBounds>; sendDelayS?: number } = {}): VirtualProfile {
  const points: PrefillPoint[] = [];
  let durationS = 0;
  for (const req of plan.requests) {
    const { prefillS, e2eS } = isolatedPrefillS(engineConfig, req.promptTokens, req.maxTokens, opts.sendDelayS ?? 0);
    durationS += e2eS;
    if (!req.warmup) points.push({ promptTokens: req.promptTokens, prefillS });
  }
  return { fit: fitPrefill(points, opts.fitBounds), points, durationS };
}
