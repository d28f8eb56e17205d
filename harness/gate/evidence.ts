// A run's evidence for the gate, from what its run directory holds (capacity.json, manifest.json)
// or from its line of the results index. Runs of any version: the capacity's interval is
// capacity.json's `interval` when present, else its decided bracket, else its search bracket (a
// bracket missing from an older capacity.json is rebuilt from the capacity and the search
// tolerance). Confirming probes narrow a candidate's interval. Pure: parsed data in.
import type { RunCore } from '../report/loadRun.ts';
import type { IndexEntry } from '../runDir/resultsIndex.ts';
import { sloKey } from '../runDir/configKey.ts';
import type { Confirmation, IntervalSource, ProbeCounts, RunEvidence } from './decide.ts';

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
 * The capacity's interval and point estimate: capacity.json's `interval` (an end left open is 0
 * or Infinity), else `decidedBracket` (the bracket the statistical decisions alone support), else
 * the search bracket. The estimate is the interval's, else the capacity, kept inside the interval.
 */
export function intervalOf(rawCapacity: unknown, capacityQps: number, bracket: { lowQps: number; highQps: number }): { estimateQps: number; lowQps: number; highQps: number; source: IntervalSource } {
  const c = obj(rawCapacity);
  const clamp = (x: number, lo: number, hi: number) => Math.min(Math.max(x, lo), hi);
  if (c.interval !== undefined && c.interval !== null) {
    const i = obj(c.interval);
    const lowQps = num(i.loQps) ?? 0;
    const highQps = num(i.hiQps) ?? Infinity;
    if (lowQps <= highQps) return { estimateQps: clamp(num(i.estimateQps) ?? capacityQps, lowQps, highQps), lowQps, highQps, source: 'interval' };
  }
  if (c.decidedBracket !== undefined && c.decidedBracket !== null) {
    const d = obj(c.decidedBracket);
    const lowQps = num(d.passQps) ?? 0;
    const highQps = num(d.failQps) ?? Infinity;
    // The decided bracket contains the search bracket; when it does not, it is not trusted.
    if (lowQps <= bracket.lowQps && highQps >= bracket.highQps) return { estimateQps: clamp(capacityQps, lowQps, highQps), lowQps, highQps, source: 'decided-bracket' };
  }
  return { estimateQps: clamp(capacityQps, bracket.lowQps, bracket.highQps), lowQps: bracket.lowQps, highQps: bracket.highQps, source: 'bracket' };
}

/**
 * The candidate's evidence with confirming probes folded in: a pass decided at `minConfidence` or
 * more lifts the interval's low end to its rate, a decided fail drops the high end to it (and an
 * end that rested on an unconfident search verdict is replaced by a confident one, even a wider
 * one); an undecided probe, or one less confident, is listed and changes nothing. Decided probes
 * that contradict each other (a fail below a pass) leave the span between them.
 */
export function withConfirmations(e: RunEvidence, probes: Confirmation[], minConfidence: number): RunEvidence {
  let { lowQps, highQps, lowConfidence, highConfidence } = e;
  const unsure = (c: number | null) => e.intervalSource === 'bracket' && c !== null && c < minConfidence;
  for (const p of probes) {
    if (p.confidence === null || p.confidence < minConfidence) continue;
    if (p.decision === 'pass' && (p.qps > lowQps || unsure(lowConfidence))) [lowQps, lowConfidence] = [p.qps, p.confidence];
    if (p.decision === 'fail' && (p.qps < highQps || unsure(highConfidence))) [highQps, highConfidence] = [p.qps, p.confidence];
  }
  if (lowQps > highQps) [lowQps, highQps] = [highQps, lowQps];
  const estimateQps = Math.min(Math.max(e.estimateQps, lowQps), highQps);
  return { ...e, lowQps, highQps, lowConfidence, highConfidence, estimateQps, confirmations: [...(e.confirmations ?? []), ...probes] };
}

/**
 * The statistical decision of each probe of a (confirming) run's capacity.json at its rate
 * ('invalid' for a probe whose client could not keep time: listed, never evidence).
 */
export function probeDecisionsOf(rawCapacity: unknown, runDir: string): Confirmation[] {
  const c = obj(rawCapacity);
  const probes = Array.isArray(c.probes) ? c.probes.map(obj) : [];
  return probes.flatMap((p): Confirmation[] => {
    const qps = num(p.qps);
    if (qps === null) return [];
    if (p.valid === false) return [{ qps, decision: 'invalid', confidence: null, runDir }];
    const stats = obj(p.statistics);
    const decision = p.decision ?? stats.decision;
    if (decision !== 'pass' && decision !== 'fail' && decision !== 'undecided') return [];
    return [{ qps, decision, confidence: num(p.confidence) ?? num(stats.confidence), runDir }];
  });
}

/**
 * Each valid probe's counts per SLO entry (what capacity/interval.ts pools), from a capacity.json's
 * probe rows; probes archived without counts, and invalid ones, give none.
 */
export function probeCountsOf(rawCapacity: unknown): ProbeCounts[] {
  const c = obj(rawCapacity);
  const probes = Array.isArray(c.probes) ? c.probes.map(obj) : [];
  return probes.flatMap((p): ProbeCounts[] => {
    const qps = num(p.qps);
    const parts = obj(p.statistics).parts;
    if (qps === null || p.valid === false || !Array.isArray(parts)) return [];
    const counts = parts.map(obj).flatMap((e) => {
      const [observed, misses, tau, allowedFraction] = [num(e.observed), num(e.misses), num(e.tau), num(e.allowedFraction)];
      if (typeof e.name !== 'string' || observed === null || misses === null || tau === null || allowedFraction === null) return [];
      return [{ name: e.name, observed, misses, tau, allowedFraction }];
    });
    const positive = (v: unknown) => (num(v) ?? 0) > 0;
    const { arrivalQps, burstQps } = obj(p.statistics);
    return counts.length ? [{ qps, ...(positive(arrivalQps) ? { arrivalQps: num(arrivalQps)! } : {}), ...(positive(burstQps) ? { burstQps: num(burstQps)! } : {}), durationS: num(p.durationS) ?? 0, parts: counts }] : [];
  });
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
  const bracket = bracketOf({ capacityQps: c.capacityQps, passQps: c.bracket.passQps, failQps: c.bracket.failQps, tolerance: c.tolerance, outcome: c.outcome });
  const interval = intervalOf(rawCapacity, c.capacityQps, bracket);
  const { lowQps, highQps } = interval;
  const conf = bracketConfidenceOf(rawCapacity, bracket.lowQps, bracket.highQps);
  const decided = obj(obj(rawCapacity).decidedBracket);
  return {
    runDir: core.runDir,
    runId: core.runId,
    config,
    slo: sloKey(obj(rawCapacity).slo),
    labels: { recipe, engine, model, gpu: c.gpuProfile ? `${c.gpuProfile}×${gpuCount ?? '?'}` : null, image: m?.host?.imageDigest ?? m?.host?.image ?? null },
    status: m?.status ?? null,
    outcome: c.outcome,
    reason: c.reason,
    capacityQps: c.capacityQps,
    estimateQps: interval.estimateQps,
    lowQps,
    highQps,
    intervalSource: interval.source,
    tolerance: c.tolerance,
    lowConfidence: interval.source === 'decided-bracket' ? (num(decided.passConfidence) ?? conf.low) : conf.low,
    highConfidence: interval.source === 'decided-bracket' ? (num(decided.failConfidence) ?? conf.high) : conf.high,
    qpsPerUsdPerHour: c.cost?.qpsPerUsdPerHour ?? null,
    usdPerMillionOutputTokens: c.cost?.usdPerMillionOutputTokens ?? null,
    startedAt: m?.startedAt ?? null,
    probes: probeCountsOf(rawCapacity),
  };
}

/** A run's evidence from its index line (earlier nights: no probe confidences). */
export function evidenceOfEntry(e: IndexEntry, runDir: string): RunEvidence {
  const { lowQps, highQps } = bracketOf({ capacityQps: e.capacityQps, passQps: e.bracket.passQps, failQps: e.bracket.failQps, tolerance: e.tolerance, outcome: e.outcome });
  return {
    runDir,
    runId: e.runId,
    config: e.config,
    slo: e.slo ?? null,
    labels: { recipe: e.recipeName, engine: e.engine, model: e.model, gpu: e.gpuProfile ? `${e.gpuProfile}×${e.gpuCount ?? '?'}` : null, image: e.imageDigest ?? e.image },
    status: e.status,
    outcome: e.outcome,
    reason: null,
    capacityQps: e.capacityQps,
    estimateQps: Math.min(Math.max(e.capacityQps, lowQps), highQps),
    lowQps,
    highQps,
    intervalSource: 'bracket',
    tolerance: e.tolerance,
    lowConfidence: null,
    highConfidence: null,
    qpsPerUsdPerHour: e.qpsPerUsdPerHour,
    usdPerMillionOutputTokens: e.usdPerMillionOutputTokens,
    startedAt: e.startedAt,
  };
}
