// The nightly gate's decision, from evidence rather than one number per run. A capacity search
// does not measure a capacity, it brackets one: the SLO held at the pass end and failed at the
// fail end, so the true capacity lies in [pass, fail). A candidate has regressed only when even
// the most favourable reading of both brackets shows a drop beyond the allowed one, the drop is
// outside the noise measured over earlier nights of the same configuration (when there are
// enough), and the probes the claim rests on are confident enough (when they carry confidences).
// A run whose search did not converge is refused with its reason, never compared. Pure.

/** What the gate needs to know about one finished run. */
export interface RunEvidence {
  runDir: string;
  runId: string;
  /** Same configuration across nights (index.jsonl's key). */
  config: string;
  labels: { recipe: string | null; engine: string | null; model: string | null; gpu: string | null; image: string | null };
  /** manifest.json's status (null when the run has no manifest). */
  status: string | null;
  /** capacity.json's search outcome and its sentence (null in runs that predate them). */
  outcome: string | null;
  reason: string | null;
  capacityQps: number;
  /** The SLO held at lowQps (0 when it held nowhere) and failed at highQps (Infinity when it failed nowhere). */
  lowQps: number;
  highQps: number;
  tolerance: number | null;
  /** Confidence of the decided verdicts at the bracket's ends, when the probes carry one. */
  lowConfidence: number | null;
  highConfidence: number | null;
  qpsPerUsdPerHour: number | null;
  usdPerMillionOutputTokens: number | null;
  startedAt: string | null;
}

export interface GateOptions {
  /** Largest allowed capacity drop, as a fraction (0.05 = 5%). */
  maxDrop: number;
  /** A regression claim resting on verdicts less confident than this is inconclusive. */
  minConfidence: number;
  /** A drop within this many robust standard deviations of earlier nights is noise. */
  noiseSigmas: number;
  /** Earlier nights needed before their spread counts as the measured noise. */
  minHistory: number;
}

export const DEFAULT_GATE: GateOptions = { maxDrop: 0.05, minConfidence: 0.9, noiseSigmas: 3, minHistory: 3 };

/** Search outcomes whose bracket is a measurement; the others did not converge. */
const MEASURED = new Set(['converged', 'below-min', 'at-least-max']);

/** Why a run cannot be compared, or null when it can. */
export function refusalOf(run: RunEvidence): string | null {
  if (run.status !== null && run.status !== 'completed') return `run ${run.runId} did not complete (status ${run.status}${run.reason ? `: ${run.reason}` : ''})`;
  if (run.outcome !== null && !MEASURED.has(run.outcome)) {
    return `the search of ${run.runId} did not converge (${run.outcome}${run.reason ? `: ${run.reason}` : ''})`;
  }
  if (!(run.lowQps <= run.capacityQps && run.lowQps < run.highQps)) return `run ${run.runId} has no usable bracket (pass ${run.lowQps}, fail ${run.highQps} QPS)`;
  return null;
}

/** What the candidate is compared with: one baseline run, or earlier nights of the configuration. */
export interface Reference {
  kind: 'run' | 'history';
  runIds: string[];
  capacityQps: number;
  lowQps: number;
  highQps: number;
  lowConfidence: number | null;
  /** Robust relative spread (1.4826·MAD / median) of the earlier nights' capacities; null without enough of them. */
  noiseFrac: number | null;
  nights: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** A reference from one baseline run. */
export function referenceOfRun(run: RunEvidence): Reference {
  return { kind: 'run', runIds: [run.runId], capacityQps: run.capacityQps, lowQps: run.lowQps, highQps: run.highQps, lowConfidence: run.lowConfidence, noiseFrac: null, nights: 1 };
}

/**
 * A reference from earlier nights (refused runs already left out): the medians of their capacities
 * and bracket ends, and their spread as the noise once there are `minHistory` of them. Null when empty.
 */
export function referenceOfHistory(runs: RunEvidence[], minHistory: number): Reference | null {
  if (runs.length === 0) return null;
  if (runs.length === 1) return referenceOfRun(runs[0]);
  const caps = runs.map((r) => r.capacityQps);
  const m = median(caps);
  const mad = median(caps.map((c) => Math.abs(c - m)));
  return {
    kind: 'history',
    runIds: runs.map((r) => r.runId),
    capacityQps: m,
    lowQps: median(runs.map((r) => r.lowQps)),
    highQps: median(runs.map((r) => r.highQps)),
    lowConfidence: null,
    noiseFrac: runs.length >= minHistory && m > 0 ? (1.4826 * mad) / m : null,
    nights: runs.length,
  };
}

export type GateVerdict = 'pass' | 'regression' | 'inconclusive' | 'refused' | 'new';

/** The gate's decision for one configuration. */
export interface ConfigDecision {
  config: string;
  candidate: RunEvidence;
  reference: Reference | null;
  verdict: GateVerdict;
  /** One sentence: what was decided and on which figures. */
  reason: string;
  /** 1 − candidate/reference capacity (positive = a drop); null without a reference. */
  pointDrop: number | null;
  /** The smallest and largest drop both brackets allow. */
  minDrop: number | null;
  maxDrop: number | null;
  /** The drop the decision allowed: the gate's, widened to the measured noise. */
  allowedDrop: number | null;
  /** Confidence that the candidate failed below the reference's pass (product of the two ends' confidences), when known. */
  claimConfidence: number | null;
}

const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
const q = (x: number) => (Number.isFinite(x) ? `${+x.toPrecision(4)}` : '∞');

/** Decides one configuration: the candidate against its reference (null: nothing earlier to compare with). */
export function decideConfig(candidate: RunEvidence, reference: Reference | null, opts: GateOptions, baselineRefusal: string | null = null): ConfigDecision {
  const base = { config: candidate.config, candidate, reference, pointDrop: null, minDrop: null, maxDrop: null, allowedDrop: null, claimConfidence: null };
  const refused = refusalOf(candidate);
  if (refused) return { ...base, verdict: 'refused', reason: refused };
  if (baselineRefusal) return { ...base, verdict: 'refused', reason: `baseline refused: ${baselineRefusal}` };
  if (!reference) return { ...base, verdict: 'new', reason: 'no earlier run of this configuration to compare with' };

  const ref = reference;
  const pointDrop = ref.capacityQps > 0 ? 1 - candidate.capacityQps / ref.capacityQps : null;
  // Smallest drop: candidate at the top of its bracket, reference at the bottom of its own.
  const minDrop = ref.lowQps > 0 ? 1 - candidate.highQps / ref.lowQps : null;
  const maxDrop = Number.isFinite(ref.highQps) && ref.highQps > 0 ? 1 - candidate.lowQps / ref.highQps : null;
  const noiseDrop = ref.noiseFrac !== null ? opts.noiseSigmas * ref.noiseFrac : 0;
  const allowedDrop = Math.max(opts.maxDrop, noiseDrop);
  const claimConfidence = candidate.highConfidence !== null || ref.lowConfidence !== null ? (candidate.highConfidence ?? 1) * (ref.lowConfidence ?? 1) : null;
  const figures = { pointDrop, minDrop, maxDrop, allowedDrop, claimConfidence };
  const cand = `${candidate.runId} [${q(candidate.lowQps)}, ${q(candidate.highQps)}) QPS`;
  const against = ref.kind === 'run' ? `baseline ${ref.runIds[0]} [${q(ref.lowQps)}, ${q(ref.highQps)}) QPS` : `the median of ${ref.nights} earlier nights [${q(ref.lowQps)}, ${q(ref.highQps)}) QPS`;
  const widened = allowedDrop > opts.maxDrop ? ` (the allowed ${pct(opts.maxDrop)} widened to ${pct(allowedDrop)}: ${opts.noiseSigmas}× the ${pct(ref.noiseFrac!)} spread of earlier nights)` : '';

  if (ref.lowQps <= 0) return { ...base, ...figures, verdict: 'pass', reason: `${against} passed at no rate (capacity below its search minimum): no drop below it can be measured` };
  if (minDrop !== null && minDrop > allowedDrop + 1e-9) {
    if (claimConfidence !== null && claimConfidence < opts.minConfidence) {
      return {
        ...base,
        ...figures,
        verdict: 'inconclusive',
        reason: `${cand} lies at least ${pct(minDrop)} below ${against}, but the verdicts it rests on are only ${pct(claimConfidence)} confident (< ${pct(opts.minConfidence)}): confirm with a longer probe at ${q(ref.lowQps)} QPS`,
      };
    }
    return {
      ...base,
      ...figures,
      verdict: 'regression',
      reason: `${cand} lies at least ${pct(minDrop)} below ${against}, more than the allowed ${pct(allowedDrop)}${widened}`,
    };
  }
  if (maxDrop === null) {
    // The reference held at its search maximum: its capacity has no upper bound, so no drop can be bounded.
    if (candidate.lowQps >= ref.lowQps) return { ...base, ...figures, verdict: 'pass', reason: `${cand} held at every rate ${against} held at (its search maximum)` };
    return { ...base, ...figures, verdict: 'inconclusive', reason: `${against} held at its search maximum, so its capacity is unbounded above; raise search.qps.max to compare ${cand} with it` };
  }
  if (maxDrop <= allowedDrop + 1e-9) {
    const most = maxDrop <= 0 ? 'no drop' : `at most ${pct(maxDrop)} drop`;
    return { ...base, ...figures, verdict: 'pass', reason: `${cand} against ${against}: ${most}, within the allowed ${pct(allowedDrop)}${widened}` };
  }
  const why =
    minDrop !== null && minDrop > opts.maxDrop + 1e-9
      ? `a drop of at least ${pct(minDrop)} is within the measured noise${widened}`
      : `the brackets allow a drop from ${pct(Math.max(0, minDrop ?? 0))} to ${pct(maxDrop)} around the allowed ${pct(allowedDrop)}${widened}`;
  return { ...base, ...figures, verdict: 'inconclusive', reason: `${cand} against ${against}: ${why}; confirm with a longer probe at ${q(ref.lowQps)} QPS` };
}

/**
 * The earlier nights a candidate is judged against: runs of its configuration in the index (run
 * directories absolute, as the candidate's), not the candidate itself, started before it (when both start times are known), whose search
 * converged; the last `nights` of them.
 */
export function historyFor(candidate: RunEvidence, indexRuns: RunEvidence[], nights: number): RunEvidence[] {
  return indexRuns
    .filter((r) => r.config === candidate.config && r.runDir !== candidate.runDir && r.runId !== candidate.runId)
    .filter((r) => candidate.startedAt === null || r.startedAt === null || r.startedAt < candidate.startedAt)
    .filter((r) => refusalOf(r) === null)
    .sort((a, b) => (a.startedAt ?? '').localeCompare(b.startedAt ?? ''))
    .slice(-nights);
}

// How strongly a verdict says "worse": a configuration measured more than once gets the mildest.
const SEVERITY: Record<GateVerdict, number> = { new: 0, pass: 0, inconclusive: 1, regression: 2, refused: -1 };

/**
 * One decision for a configuration measured by several candidate runs (a night's run and its
 * confirming rerun): a regression only when every run that could be compared shows one, since a
 * single run on a busy host can fail probes it would pass on a quiet one. Refused runs are left
 * out unless every run was refused. The decision shown is the mildest run's, its reason naming the others.
 */
export function combineRuns(decisions: ConfigDecision[]): ConfigDecision {
  if (decisions.length === 1) return decisions[0];
  const compared = decisions.filter((d) => d.verdict !== 'refused');
  if (compared.length === 0) return { ...decisions[decisions.length - 1], reason: decisions.map((d) => d.reason).join('; ') };
  const mildest = compared.reduce((a, b) => (SEVERITY[b.verdict] < SEVERITY[a.verdict] ? b : a));
  const others = decisions.filter((d) => d !== mildest).map((d) => `${d.candidate.runId}: ${d.verdict}`);
  const lead = mildest.verdict === 'regression' ? `confirmed by ${compared.length} runs` : compared.some((d) => d.verdict === 'regression') ? 'a regression not confirmed by every run' : `${decisions.length} runs`;
  return { ...mildest, reason: `${mildest.reason} (${lead}; ${others.join(', ')})` };
}

/** Decisions per candidate run grouped by configuration (first-seen order), each group combined. */
export function combineByConfig(decisions: ConfigDecision[]): ConfigDecision[] {
  const groups = new Map<string, ConfigDecision[]>();
  for (const d of decisions) groups.set(d.config, [...(groups.get(d.config) ?? []), d]);
  return [...groups.values()].map(combineRuns);
}

/** Every configuration's decision and the exit the gate implies. */
export interface GateResult {
  options: GateOptions;
  decisions: ConfigDecision[];
  counts: Record<GateVerdict, number>;
  /** 4 when any configuration regressed, else 5 when any run was refused, else 0. */
  exitCode: 0 | 4 | 5;
}

/** Sums up decisions into counts and the exit code (a regression outranks a refusal). */
export function gateResult(decisions: ConfigDecision[], options: GateOptions): GateResult {
  const counts: Record<GateVerdict, number> = { pass: 0, regression: 0, inconclusive: 0, refused: 0, new: 0 };
  for (const d of decisions) counts[d.verdict]++;
  return { options, decisions, counts, exitCode: counts.regression > 0 ? 4 : counts.refused > 0 ? 5 : 0 };
}
