// The nightly gate's decision, from evidence rather than one number per run. A capacity is an
// estimate with an interval: capacity.json's `interval` when the run has one, else the bracket
// its decided probes support (`decidedBracket`), else, in the oldest runs, the search bracket
// [pass, fail). A candidate has regressed when even the most favourable reading of both
// intervals shows a drop beyond the allowed one (outside the noise of earlier nights when there
// are enough, resting on confident verdicts when probes carry confidences), or when its point
// estimate fell by more than three times the allowed drop, whatever the confidence. It passes
// when its interval's low end holds the pass line: within the allowed drop of the reference's
// estimate and within twice it of the reference's high end. Earlier nights are one reference,
// their probes pooled. Anything between is undecided: the decision names the rates whose
// confirming probes on the candidate would settle it, and an answer still undecided after them is
// its own verdict (exit 6), never a pass. Runs
// measured under different SLOs are never compared; a run whose search did not converge is
// refused with its reason. Pure.

export type IntervalSource = 'interval' | 'decided-bracket' | 'bracket';

/** One probe's counts per SLO entry (capacity.json's statistics.parts): what pooling needs. */
export interface ProbeCounts {
  qps: number;
  /** The arrival rate its judged requests realized (statistics.arrivalQps), when archived. */
  arrivalQps?: number;
  /** The rate its judged requests' bursts put it at (statistics.burstQps), when archived. */
  burstQps?: number;
  durationS: number;
  parts: { name: string; observed: number; misses: number; tau: number; allowedFraction: number }[];
}

/** An estimate and 95% interval from earlier nights' probes pooled (capacity/interval.ts on all of them). */
export interface PooledInterval {
  estimateQps: number;
  lowQps: number;
  highQps: number;
  probes: number;
  /** How many of the earlier nights were pooled (see poolableNights). */
  nights: number;
}

/** A confirming probe's statistical decision at one rate. */
export interface Confirmation {
  qps: number;
  /** 'invalid': the probe's client could not keep time; its numbers are not evidence. */
  decision: 'pass' | 'fail' | 'undecided' | 'invalid';
  confidence: number | null;
  runDir: string;
}

/** What the gate needs to know about one finished run. */
export interface RunEvidence {
  runDir: string;
  runId: string;
  /** Same configuration across nights (index.jsonl's key, which includes the SLO). */
  config: string;
  /** The SLO the capacity was measured under (resultsIndex.ts's sloKey), null when unknown. */
  slo: string | null;
  labels: { recipe: string | null; engine: string | null; model: string | null; gpu: string | null; image: string | null };
  /** manifest.json's status (null when the run has no manifest). */
  status: string | null;
  /** capacity.json's search outcome and its sentence (null in runs that predate them). */
  outcome: string | null;
  reason: string | null;
  capacityQps: number;
  /** The point estimate the drop is measured on (the interval's, else capacityQps). */
  estimateQps: number;
  /** The capacity's interval [lowQps, highQps]: 0 when open below, Infinity when open above. */
  lowQps: number;
  highQps: number;
  /** Where the interval comes from: capacity.json's interval, the decided bracket, or the search bracket. */
  intervalSource: IntervalSource;
  /** Confirming probes folded into the interval (rate, decision, confidence), in the order run. */
  confirmations?: Confirmation[];
  tolerance: number | null;
  /** Confidence of the decided verdicts at the bracket's ends, when the probes carry one. */
  lowConfidence: number | null;
  highConfidence: number | null;
  qpsPerUsdPerHour: number | null;
  usdPerMillionOutputTokens: number | null;
  startedAt: string | null;
  /** Each valid probe's counts (absent or empty in runs that predate them): earlier nights are pooled from them. */
  probes?: ProbeCounts[];
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
/** Outcomes of a search that stopped before its tolerance (load budget or probe count spent): a
 *  measurement when the run states its interval, which carries how unsure the capacity still is. */
const MEASURED_WITH_INTERVAL = new Set(['budget', 'max-probes']);

/** Why a run cannot be compared, or null when it can. */
export function refusalOf(run: RunEvidence): string | null {
  if (run.status !== null && run.status !== 'completed') return `run ${run.runId} did not complete (status ${run.status}${run.reason ? `: ${run.reason}` : ''})`;
  if (run.outcome !== null && !MEASURED.has(run.outcome) && !(MEASURED_WITH_INTERVAL.has(run.outcome) && run.intervalSource === 'interval')) {
    return `the search of ${run.runId} did not converge (${run.outcome}${run.reason ? `: ${run.reason}` : ''})`;
  }
  // A search bracket must hold the capacity it reports; an interval its estimate (confirming probes may move both ends).
  const point = run.intervalSource === 'bracket' && !run.confirmations?.length ? run.capacityQps : run.estimateQps;
  if (!(run.lowQps <= point && run.lowQps < run.highQps)) return `run ${run.runId} has no usable interval (low ${run.lowQps}, high ${run.highQps} QPS, capacity ${point} QPS)`;
  return null;
}

/** What the candidate is compared with: one baseline run, or earlier nights of the configuration. */
export interface Reference {
  kind: 'run' | 'history';
  runIds: string[];
  /** The SLO the reference was measured under (every night of a history shares its key). */
  slo: string | null;
  capacityQps: number;
  lowQps: number;
  highQps: number;
  lowConfidence: number | null;
  /** Robust relative spread (1.4826·MAD / median) of the earlier nights' capacities; null without enough of them. */
  noiseFrac: number | null;
  nights: number;
  /** Open above because the search held at its maximum (not because no fail was decided). */
  heldAtSearchMax: boolean;
  /** How capacity and interval were obtained: one run's, the medians of nights', or the nights' probes pooled. */
  basis: 'run' | 'median' | 'pooled';
  /** With basis 'pooled': how many of the nights were pooled. */
  pooledNights?: number;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

/** A reference from one baseline run. */
export function referenceOfRun(run: RunEvidence): Reference {
  return { kind: 'run', runIds: [run.runId], slo: run.slo, capacityQps: run.estimateQps, lowQps: run.lowQps, highQps: run.highQps, lowConfidence: run.lowConfidence, noiseFrac: null, nights: 1, heldAtSearchMax: run.outcome === 'at-least-max', basis: 'run' };
}

/**
 * A reference from earlier nights (refused runs already left out), and their spread as the noise
 * once there are `minHistory` of them. Its capacity and interval are those of every night's probes
 * pooled (`pooled`, computed by the caller with capacity/interval.ts) when that interval is closed:
 * several nights of requests pin the unchanged engine's capacity far closer than one night does.
 * Otherwise the medians of the nights' estimates and interval ends. Null when empty.
 */
export function referenceOfHistory(runs: RunEvidence[], minHistory: number, pooled: PooledInterval | null = null): Reference | null {
  if (runs.length === 0) return null;
  if (runs.length === 1 && pooled === null) return referenceOfRun(runs[0]);
  const caps = runs.map((r) => r.estimateQps);
  const m = median(caps);
  const mad = median(caps.map((c) => Math.abs(c - m)));
  const closed = pooled !== null && pooled.lowQps > 0 && Number.isFinite(pooled.highQps) && pooled.lowQps <= pooled.estimateQps && pooled.estimateQps <= pooled.highQps;
  return {
    kind: 'history',
    runIds: runs.map((r) => r.runId),
    slo: runs[0].slo,
    capacityQps: closed ? pooled.estimateQps : m,
    lowQps: closed ? pooled.lowQps : median(runs.map((r) => r.lowQps)),
    highQps: closed ? pooled.highQps : median(runs.map((r) => r.highQps)),
    lowConfidence: null,
    noiseFrac: runs.length >= minHistory && m > 0 ? (1.4826 * mad) / m : null,
    nights: runs.length,
    heldAtSearchMax: runs.every((r) => r.outcome === 'at-least-max'),
    basis: closed ? 'pooled' : 'median',
    ...(closed ? { pooledNights: pooled.nights } : {}),
  };
}

/**
 * The earlier nights to pool and their probes: those whose own interval overlaps the intervals of
 * at least half of the other nights (a night the host spoiled measures a capacity far from the
 * others, and pooled it would drag the reference along), when two or more such nights kept their
 * probe counts. Null otherwise: the medians are used.
 */
export function poolableNights(runs: RunEvidence[]): { runs: RunEvidence[]; probes: ProbeCounts[] } | null {
  if (runs.length < 2) return null;
  const overlap = (a: RunEvidence, b: RunEvidence) => a.lowQps <= b.highQps && b.lowQps <= a.highQps;
  const agreeing = runs.filter((r) => 2 * runs.filter((o) => o !== r && overlap(r, o)).length >= runs.length - 1);
  if (agreeing.length < 2 || agreeing.some((r) => !r.probes?.length)) return null;
  return { runs: agreeing, probes: agreeing.flatMap((r) => r.probes!) };
}

export type GateVerdict = 'pass' | 'regression' | 'inconclusive' | 'refused' | 'new';

/** A rate whose confirming probe on the candidate would settle an undecided answer, and which way. */
export interface ConfirmRate {
  qps: number;
  /** What a decided verdict there settles: a pass there → 'pass'; a fail there → 'regression'. */
  settles: 'pass' | 'regression';
}

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
  /** For an undecided answer: the rates to probe on the candidate, the likelier side first. */
  confirm: ConfirmRate[];
}

const pct = (x: number) => `${+(x * 100).toPrecision(3)}%`;
const q = (x: number) => (Number.isFinite(x) ? `${+x.toPrecision(4)}` : '∞');

/** Which SLO differs, in one sentence naming both, or null when they match (unknown matches anything). */
export function sloMismatch(candidate: RunEvidence, ref: Reference): string | null {
  if (candidate.slo === null || ref.slo === null || candidate.slo === ref.slo) return null;
  const against = ref.kind === 'run' ? `baseline ${ref.runIds[0]}` : `the earlier nights`;
  return `${candidate.runId} was measured under SLO "${candidate.slo}" and ${against} under SLO "${ref.slo}": capacities under different SLOs are not comparable (measure the baseline under the same SLO)`;
}

// A confirming probe is placed just beyond the rate that settles the answer, on the side it settles.
const rateUp = (x: number) => Math.ceil(x * 100 - 1e-6) / 100;
const rateDown = (x: number) => Math.floor(x * 100 - 1e-6) / 100;

/** Decides one configuration: the candidate against its reference (null: nothing earlier to compare with). */
export function decideConfig(candidate: RunEvidence, reference: Reference | null, opts: GateOptions, baselineRefusal: string | null = null): ConfigDecision {
  const base = { config: candidate.config, candidate, reference, pointDrop: null, minDrop: null, maxDrop: null, allowedDrop: null, claimConfidence: null, confirm: [] as ConfirmRate[] };
  const refused = refusalOf(candidate);
  if (refused) return { ...base, verdict: 'refused', reason: refused };
  if (baselineRefusal) return { ...base, verdict: 'refused', reason: `baseline refused: ${baselineRefusal}` };
  if (!reference) return { ...base, verdict: 'new', reason: 'no earlier run of this configuration to compare with' };
  const otherSlo = sloMismatch(candidate, reference);
  if (otherSlo) return { ...base, verdict: 'refused', reason: otherSlo };

  const ref = reference;
  const pointDrop = ref.capacityQps > 0 ? 1 - candidate.estimateQps / ref.capacityQps : null;
  // Smallest drop: candidate at the top of its interval, reference at the bottom of its own.
  const minDrop = ref.lowQps > 0 ? 1 - candidate.highQps / ref.lowQps : null;
  const maxDrop = Number.isFinite(ref.highQps) && ref.highQps > 0 ? 1 - candidate.lowQps / ref.highQps : null;
  // The spread of earlier nights widens the allowed drop only for a candidate without an interval:
  // an interval already carries its night's sampling noise, which is most of that spread, and
  // counting it twice let a 10% drop through a 5% gate.
  const noiseDrop = ref.noiseFrac !== null && candidate.intervalSource !== 'interval' ? opts.noiseSigmas * ref.noiseFrac : 0;
  const allowedDrop = Math.max(opts.maxDrop, noiseDrop);
  const claimConfidence = candidate.highConfidence !== null || ref.lowConfidence !== null ? (candidate.highConfidence ?? 1) * (ref.lowConfidence ?? 1) : null;
  const figures = { pointDrop, minDrop, maxDrop, allowedDrop, claimConfidence };
  const cand = `${candidate.runId} ${q(candidate.estimateQps)} QPS [${q(candidate.lowQps)}, ${q(candidate.highQps)}]${sourceNote(candidate.intervalSource)}${confirmedNote(candidate)}`;
  const against =
    ref.kind === 'run'
      ? `baseline ${ref.runIds[0]} ${q(ref.capacityQps)} QPS [${q(ref.lowQps)}, ${q(ref.highQps)}]`
      : `${ref.basis === 'pooled' ? `the pooled probes of ${ref.pooledNights !== ref.nights ? `${ref.pooledNights} of ` : ''}${ref.nights} earlier nights` : `the median of ${ref.nights} earlier nights`} ${q(ref.capacityQps)} QPS [${q(ref.lowQps)}, ${q(ref.highQps)}]`;
  const widened = allowedDrop > opts.maxDrop ? ` (the allowed ${pct(opts.maxDrop)} widened to ${pct(allowedDrop)}: ${opts.noiseSigmas}× the ${pct(ref.noiseFrac!)} spread of earlier nights)` : '';

  if (ref.capacityQps <= 0 && ref.lowQps <= 0) return { ...base, ...figures, verdict: 'pass', reason: `${against} passed at no rate (capacity below its search minimum): no drop below it can be measured` };
  // However unsure the verdicts, a point estimate this far down is never a pass.
  if (pointDrop !== null && pointDrop > 3 * opts.maxDrop + 1e-9) {
    const sure = claimConfidence !== null && claimConfidence < opts.minConfidence ? ` (the verdicts it rests on are only ${pct(claimConfidence)} confident)` : '';
    return { ...base, ...figures, verdict: 'regression', reason: `${cand} is ${pct(pointDrop)} below ${against}, more than 3× the allowed ${pct(opts.maxDrop)}: never a pass${sure}` };
  }
  // The line a candidate passes at: it holds at (1 − allowed) × the reference's estimate (the
  // question the gate asks), and at (1 − 2·allowed) × the reference's high end (so the reference's
  // own uncertainty lets no drop of twice the allowed one or more through). Asking the candidate
  // to hold at (1 − allowed) × the high end instead is asking it to beat the unchanged engine
  // whenever the reference's interval is wider than the allowed drop: an unchanged night never passed.
  const passLine = Number.isFinite(ref.highQps) ? Math.max((1 - allowedDrop) * ref.capacityQps, (1 - 2 * allowedDrop) * ref.highQps) : null;
  // The rates that would settle an open answer: a decided pass at the first lifts the candidate's
  // low end to the pass line; a decided fail at the second drops its high end below where even
  // the reference's low end forbids it.
  const passAt = passLine !== null ? rateUp(passLine) : null;
  const failAt = ref.lowQps > 0 ? rateDown((1 - allowedDrop) * ref.lowQps) : null;
  const inside = (x: number | null): x is number => x !== null && x > candidate.lowQps && x < candidate.highQps;
  const confirmRates = (): ConfirmRate[] => {
    const rates: ConfirmRate[] = [];
    if (inside(passAt)) rates.push({ qps: passAt, settles: 'pass' });
    if (inside(failAt)) rates.push({ qps: failAt, settles: 'regression' });
    // The side the point estimate leans to first.
    return pointDrop !== null && pointDrop > allowedDrop ? rates.reverse() : rates;
  };
  const probeHint = (rates: ConfirmRate[]) =>
    rates.length ? `; confirm with a probe of the candidate at ${rates.map((r) => `${q(r.qps)} QPS (a decided ${r.settles === 'pass' ? 'pass' : 'fail'} there settles ${r.settles === 'pass' ? 'a pass' : 'a regression'})`).join(' or ')}` : '';

  if (minDrop !== null && minDrop > allowedDrop + 1e-9) {
    if (candidate.intervalSource === 'bracket' && claimConfidence !== null && claimConfidence < opts.minConfidence) {
      const confirm = failAt !== null ? [{ qps: failAt, settles: 'regression' as const }] : [];
      return {
        ...base,
        ...figures,
        confirm,
        verdict: 'inconclusive',
        reason: `${cand} lies at least ${pct(minDrop)} below ${against}, but the verdicts it rests on are only ${pct(claimConfidence)} confident (< ${pct(opts.minConfidence)})${probeHint(confirm)}`,
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
    // The reference is open above: no drop can be bounded. Where it held at its search maximum, a
    // candidate that held as high measured all there was to measure; where no fail of it was
    // decided, its capacity may lie anywhere above, and so may a drop.
    if (ref.heldAtSearchMax && candidate.lowQps >= ref.lowQps) return { ...base, ...figures, verdict: 'pass', reason: `${cand} held at every rate ${against} held at (its search maximum)` };
    const confirm = confirmRates();
    const open = ref.heldAtSearchMax ? `it held at its search maximum), so no drop can be bounded; raise search.qps.max to compare ${cand} with it` : `no fail of it was decided), so no drop can be bounded; measure it with longer probes to compare ${cand} with it`;
    return { ...base, ...figures, confirm, verdict: 'inconclusive', reason: `${against} is open above (${open}${probeHint(confirm)}` };
  }
  if (maxDrop <= allowedDrop + 1e-9) {
    const most = maxDrop <= 0 ? 'no drop' : `at most ${pct(maxDrop)} drop`;
    return { ...base, ...figures, verdict: 'pass', reason: `${cand} against ${against}: ${most}, within the allowed ${pct(allowedDrop)}${widened}` };
  }
  if (passLine !== null && candidate.lowQps >= passLine - 1e-9) {
    const belowEstimate = 1 - candidate.lowQps / ref.capacityQps;
    const most = belowEstimate <= 0 ? 'no drop from its estimate' : `at most ${pct(belowEstimate)} below its estimate`;
    return {
      ...base,
      ...figures,
      verdict: 'pass',
      reason: `${cand} holds at ${q(passLine)} QPS against ${against}: ${most} (allowed ${pct(allowedDrop)}) and at most ${pct(maxDrop)} below its high end (allowed ${pct(2 * allowedDrop)})${widened}`,
    };
  }
  const why =
    minDrop !== null && minDrop > opts.maxDrop + 1e-9
      ? `a drop of at least ${pct(minDrop)} is within the measured noise${widened}`
      : `the intervals allow a drop from ${pct(Math.max(0, minDrop ?? 0))} to ${pct(maxDrop)} around the allowed ${pct(allowedDrop)}${widened}`;
  const confirm = confirmRates();
  const stuck = confirm.length ? '' : '; no probe of the candidate alone can settle it (the reference\'s own interval is wider than the allowed drop: measure it with a larger budget)';
  return { ...base, ...figures, confirm, verdict: 'inconclusive', reason: `${cand} against ${against}: ${why}, undecided${probeHint(confirm)}${stuck}` };
}

const sourceNote = (s: IntervalSource) => (s === 'interval' ? '' : s === 'decided-bracket' ? ' (decided bracket)' : ' (search bracket)');
const confirmedNote = (e: RunEvidence) =>
  e.confirmations?.length ? ` after ${e.confirmations.length} confirming probe(s): ${e.confirmations.map((c) => `${q(c.qps)} QPS ${c.decision}${c.confidence !== null ? ` (${pct(c.confidence)})` : ''}`).join(', ')}` : '';

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
  /** Results-index lines not used as earlier nights, each with its reason. */
  rejectedIndexLines: string[];
  /** 4 when any configuration regressed, else 5 when any run was refused, else 6 when any answer stayed undecided, else 0. */
  exitCode: 0 | 4 | 5 | 6;
}

/** Sums up decisions into counts and the exit code (a regression outranks a refusal, a refusal an undecided answer). */
export function gateResult(decisions: ConfigDecision[], options: GateOptions, rejectedIndexLines: string[] = []): GateResult {
  const counts: Record<GateVerdict, number> = { pass: 0, regression: 0, inconclusive: 0, refused: 0, new: 0 };
  for (const d of decisions) counts[d.verdict]++;
  return { options, decisions, counts, rejectedIndexLines, exitCode: counts.regression > 0 ? 4 : counts.refused > 0 ? 5 : counts.inconclusive > 0 ? 6 : 0 };
}
