// A run's evidence for the gate, from what its run directory holds (capacity.json, manifest.json)
// or from its line of the results index. Runs of any version: a bracket missing from an older
// capacity.json is rebuilt from the capacity and the search tolerance. Pure: parsed data in.
import type { RunCore } from '../report/loadRun.ts';
import type { IndexEntry } from '../runDir/resultsIndex.ts';
import type { RunEvidence } from './decide.ts';

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const obj = (v: unknown): Record<string, unknown> => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The bracket [low, high) a run's figures imply. */
export function bracketOf(f: {
  capacityQps: number;
  passQps: number | null;
  failQps: number | null;
  tolerance: number | null;
  outcome: string | null;
}): { lowQps: number; highQps: number } {
  if (f.passQps !== null || f.failQps !== null) {
    return { lowQps: f.passQps ?? 0, highQps: f.failQps ?? Infinity };
  }
  // Older runs without a bracket: the capacity passed, and the search stopped within its tolerance.
  if (f.outcome === 'at-least-max') return { lowQps: f.capacityQps, highQps: Infinity };
  const width = f.tolerance ?? 0;
  return { lowQps: f.capacityQps, highQps: f.capacityQps > 0 ? f.capacityQps * (1 + width) || Infinity : Infinity };
}

/**
 * How sure the probes at the bracket's ends are of their side: capacity.json's
 * `bracketStatistics` when present (an end's statistical decision, or the confidence of its
 * leaning, taken as 1 − that when it leans the other way), else `bracketConfidence`, else the
 * `confidence` of a probe row at that rate that carries a statistical `decision`. Null for an end
 * without any.
 */
export function bracketConfidenceOf(rawCapacity: unknown, lowQps: number, highQps: number): { low: number | null; high: number | null } {
  const c = obj(rawCapacity);
  const given = obj(c.bracketConfidence);
  const stats = obj(c.bracketStatistics);
  const probes = Array.isArray(c.probes) ? c.probes.map(obj) : [];
  const at = (qps: number, decision: string): number | null => {
    const hit = probes.find((p) => num(p.qps) !== null && Math.abs((p.qps as number) - qps) <= 1e-9 * qps && p.decision === decision);
    return hit ? num(hit.confidence) : null;
  };
  const sure = (raw: unknown, side: 'pass' | 'fail'): number | null => {
    const s = obj(raw);
    const confidence = num(s.confidence);
    if (confidence === null) return null;
    const towards = s.decision === 'undecided' ? s.leaning : s.decision;
    return towards === side ? confidence : 1 - confidence;
  };
  return {
    low: sure(stats.passQps, 'pass') ?? num(given.passQps) ?? (lowQps > 0 ? at(lowQps, 'pass') : null),
    high: sure(stats.failQps, 'fail') ?? num(given.failQps) ?? (Number.isFinite(highQps) ? at(highQps, 'fail') : null),
  };
}

/**
 * A run's evidence from its capacity.json and manifest (as read by readRunCore), capacity.json as
 * parsed, and its configuration key as the results index spells it (one owner for that key).
 */
export function evidenceOfRun(core: RunCore, rawCapacity: unknown, config: string): RunEvidence {
  const c = core.capacity;
  const m = core.manifest;
  const target = m?.target;
  const gpuCount = c.gpuCount ?? null;
  const recipe = target?.recipeName ?? null;
  const engine = target?.engine ?? null;
  const model = target?.model ?? null;
  const { lowQps, highQps } = bracketOf({ capacityQps: c.capacityQps, passQps: c.bracket.passQps, failQps: c.bracket.failQps, tolerance: c.tolerance, outcome: c.outcome });
  const conf = bracketConfidenceOf(rawCapacity, lowQps, highQps);
  return {
    runDir: core.runDir,
    runId: core.runId,
    config,
    labels: { recipe, engine, model, gpu: c.gpuProfile ? `${c.gpuProfile}×${gpuCount ?? '?'}` : null, image: m?.host?.imageDigest ?? m?.host?.image ?? null },
    status: m?.status ?? null,
    outcome: c.outcome,
    reason: c.reason,
    capacityQps: c.capacityQps,
    lowQps,
    highQps,
    tolerance: c.tolerance,
    lowConfidence: conf.low,
    highConfidence: conf.high,
    qpsPerUsdPerHour: c.cost?.qpsPerUsdPerHour ?? null,
    usdPerMillionOutputTokens: c.cost?.usdPerMillionOutputTokens ?? null,
    startedAt: m?.startedAt ?? null,
  };
}

/** A run's evidence from its index line (earlier nights: no probe confidences). */
export function evidenceOfEntry(e: IndexEntry, runDir: string): RunEvidence {
  const { lowQps, highQps } = bracketOf({ capacityQps: e.capacityQps, passQps: e.bracket.passQps, failQps: e.bracket.failQps, tolerance: e.tolerance, outcome: e.outcome });
  return {
    runDir,
    runId: e.runId,
    config: e.config,
    labels: { recipe: e.recipeName, engine: e.engine, model: e.model, gpu: e.gpuProfile ? `${e.gpuProfile}×${e.gpuCount ?? '?'}` : null, image: e.imageDigest ?? e.image },
    status: e.status,
    outcome: e.outcome,
    reason: null,
    capacityQps: e.capacityQps,
    lowQps,
    highQps,
    tolerance: e.tolerance,
    lowConfidence: null,
    highConfidence: null,
    qpsPerUsdPerHour: e.qpsPerUsdPerHour,
    usdPerMillionOutputTokens: e.usdPerMillionOutputTokens,
    startedAt: e.startedAt,
  };
}
