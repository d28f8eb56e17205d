// Capacity per SLO definition: when a recipe names several SLO entries (fluidity, ttft, tbt, tpot,
// e2e, schedulingDelay), each gets its own search (search.ts: a bracket, then the interval drawn
// from that entry's own counts) over the same probes, beside the
// combined search (all entries together) that stays the run's headline. Every probe is judged
// against each definition separately, and it counts for a definition only when its data decides
// that definition:
//  - an invalid probe is evidence for none (its numbers are not trusted);
//  - an early-stopped probe is a fail for the definition its stop names and no evidence for the
//    others: they were judged on the requests before the stop, not on a complete sample;
//  - a probe whose client check failed is evidence for a definition only where its verdict holds
//    with every deadline moved against it by the client's error: a fail that persists loosened, a
//    pass that persists tightened (clientError.ts); it is no evidence for the others.
// The next rate is the one the unfinished search with the widest bracket needs (the combined one
// first on ties), so the choice is deterministic and `--resume` replays it. The probe's early stop
// may only fire for definitions whose bracket strictly contains its rate: a stop for any other
// would teach nothing, and it guarantees progress, since each early stop closes the bracket of the
// definition it names at that rate. maxProbes and the load budget are the run's: once either is
// spent, every definition still open ends with that outcome.
//
// Pure: probe verdicts in, decisions out (the search itself is search.ts's nextProbe).
import type { Slo } from '../metrics/slo.ts';
import { SLO_NAMES } from '../metrics/slo.ts';
import type { Verdict } from './decision.ts';
import type { ProbeEvidence } from './interval.ts';
import { nextProbe, type Bracket, type ProbeVerdict, type SearchBounds, type SearchDecision, type SearchPhase } from './search.ts';

/** One SLO definition searched on its own: a name, the one-entry SLO, the user's text. */
export interface SloDefinition {
  name: string;
  slo: Slo;
  source: string;
}

/** The recipe's SLO entries as separate definitions, in the recipe's canonical order. */
export function sloDefinitions(slo: Slo): SloDefinition[] {
  const out: SloDefinition[] = [];
  for (const name of SLO_NAMES) {
    const entry = slo[name];
    if (entry) out.push({ name, slo: { [name]: entry } as Slo, source: entry.source });
  }
  return out;
}

/** What one finished probe says about every definition (null: no evidence for that one). */
export interface PerSloProbe {
  qps: number;
  /** The probe's number (its directory's prefix); its position in the list when absent. */
  index?: number;
  verdicts: Record<string, Verdict | null>;
  /** true when the probe's data cannot be trusted for the definitions it gives no verdict (invalid, interrupted, client error). */
  untrusted: boolean;
  /** Why definitions got no evidence from it (invalid, stopped early by another one). */
  note: string | null;
  /** Its load and counts (every SLO entry's; each definition reads its own), as the search reads them. */
  evidence?: ProbeEvidence;
}

/** The fields of a finished probe its per-definition evidence is read from (a subset of summary.json). */
export interface ProbeFacts {
  index?: number;
  qps: number;
  valid: boolean;
  validity?: string | null;
  interrupted?: boolean;
  earlyStop: string | null;
  /** Each SLO entry's verdict on the probe's requests (summary.slo.results). */
  results: readonly { name: string; passed: boolean }[];
  /** The client check said the probe's timing was not trustworthy (summary.client.verdict). */
  clientInvalid?: boolean;
  /** With clientInvalid: the entries whose fail persists with deadlines loosened by the client's error. */
  trustedFails?: readonly string[];
  /** With clientInvalid: the entries whose pass holds with deadlines tightened by the client's error. */
  trustedPasses?: readonly string[];
}

/** A probe's summary.json (the fields read) as the facts its evidence is judged from. */
export function summaryFacts(s: {
  index: number;
  qps: number;
  valid: boolean;
  validity?: string | null;
  interrupted?: boolean;
  earlyStop: string | null;
  slo: { results: readonly { name: string; passed: boolean }[] };
  client?: { verdict: string } | null;
  clientTrustedFails?: readonly string[];
  clientTrustedPasses?: readonly string[];
}): ProbeFacts {
  return {
    index: s.index,
    qps: s.qps,
    valid: s.valid,
    validity: s.validity ?? null,
    interrupted: s.interrupted ?? false,
    earlyStop: s.earlyStop,
    results: s.slo.results,
    clientInvalid: s.client ? s.client.verdict !== 'valid' : false,
    trustedFails: s.clientTrustedFails ?? [],
    trustedPasses: s.clientTrustedPasses ?? [],
  };
}

/** The SLO source an early-stop reason quotes (`SLO "<source>" can no longer pass` or `... allows`). */
export function stoppingSloSource(reason: string): string | null {
  const m = /SLO "(.*?)" (?:can no longer pass|allows)/.exec(reason);
  return m ? m[1] : null;
}

/** Each definition's evidence from one probe (see the header for the rules). */
export function probeEvidence(defs: readonly SloDefinition[], p: ProbeFacts): PerSloProbe {
  const verdicts: Record<string, Verdict | null> = {};
  const none = (note: string): PerSloProbe => {
    for (const d of defs) verdicts[d.name] = null;
    return { index: p.index, qps: p.qps, verdicts, untrusted: true, note };
  };
  if (p.interrupted) return none('interrupted: no verdict');
  if (!p.valid) return none(`invalid: ${p.validity ?? 'its client check failed'}`);
  if (p.earlyStop !== null) {
    const src = stoppingSloSource(p.earlyStop);
    const stopper = src === null ? undefined : defs.find((d) => d.source === src);
    if (!stopper) return none(`stopped early (${p.earlyStop}) naming no SLO definition, so it decides none`);
    for (const d of defs) verdicts[d.name] = d === stopper ? 'fail' : null;
    return { index: p.index, qps: p.qps, verdicts, untrusted: false, note: `stopped early by ${stopper.name}: no complete sample for the others` };
  }
  const byName = new Map(p.results.map((r) => [r.name, r.passed]));
  for (const d of defs) {
    const passed = byName.get(d.name);
    if (passed === undefined) verdicts[d.name] = null;
    else if (p.clientInvalid) {
      const holds = (passed ? p.trustedPasses ?? [] : p.trustedFails ?? []).includes(d.name);
      verdicts[d.name] = holds ? (passed ? 'pass' : 'fail') : null;
    }
    else verdicts[d.name] = passed ? 'pass' : 'fail';
  }
  return { index: p.index, qps: p.qps, verdicts, untrusted: Boolean(p.clientInvalid), note: p.clientInvalid ? `client check failed (${p.validity ?? 'no detail'}): only verdicts that hold against its error count` : null };
}

/** Why a definition's search ended (search.ts's outcomes) or that it has not. */
export type PerSloOutcome = Extract<SearchDecision, { done: true }>['outcome'] | 'running';

/** One definition's search as it stands: capacity.json's `perSlo` entry. */
export interface PerSloResult {
  name: string;
  source: string;
  /** Highest passing rate below every failing one; 0 when nothing passed. */
  capacityQps: number;
  bracket: Bracket;
  outcome: PerSloOutcome;
  reason: string;
  /** The probes (their numbers, else positions in the list) that were evidence for this definition. */
  probesUsed: number[];
}

/** The next step of the whole search: a rate and whom it serves, or done. */
export type PerSloStep =
  | {
      done: false;
      qps: number;
      phase: SearchPhase;
      /** The searches that asked for this rate: 'combined' and/or definition names. */
      forSearches: string[];
      /** The SLO entries the probe's early stop may fire for (empty: run it to its end). */
      earlyStopSlo: Slo;
      perSlo: PerSloResult[];
    }
  | { done: true; perSlo: PerSloResult[] };

interface Want {
  who: string;
  qps: number;
  phase: SearchPhase;
  width: number;
}

/**
 * Decides the next probe from the combined search's decision (nextProbe or the warm start over
 * every probe) and the per-definition evidence of every finished probe, in order. maxProbes counts
 * all probes: when it is spent, each unfinished definition ends with outcome 'max-probes'.
 */
export function nextPerSloProbe(bounds: SearchBounds, combined: SearchDecision, defs: readonly SloDefinition[], probes: readonly PerSloProbe[]): PerSloStep {
  const loadS = probes.reduce((t, p) => t + (p.evidence?.durationS ?? 0), 0);
  const spent =
    probes.length >= bounds.maxProbes ? { outcome: 'max-probes' as const, text: `search.maxProbes (${bounds.maxProbes}) probes run in all` }
    : bounds.budgetS != null && probes.length > 0 && loadS + (probes.at(-1)!.evidence?.durationS ?? 0) > bounds.budgetS
      ? { outcome: 'budget' as const, text: `the load budget search.budget (${+bounds.budgetS.toPrecision(4)} s) spent in all (${+loadS.toPrecision(4)} s; another probe as long as the last would exceed it)` }
    : null;
  const judged = judgeDefinitions(bounds, defs, probes, spent);
  const wants: Want[] = [...(combined.done ? [] : [{ who: 'combined', qps: combined.qps, phase: combined.phase, width: widthOf(combined.bracket) }]), ...judged.wants];
  const perSlo = judged.perSlo;
  if (wants.length === 0) return { done: true, perSlo };
  // The widest bracket first; the combined search (listed first) wins ties.
  let pick = wants[0];
  for (const w of wants) if (w.width > pick.width) pick = w;
  const forSearches = wants.filter((w) => w.qps === pick.qps).map((w) => w.who);
  const earlyStopSlo: Slo = {};
  for (const d of defs) if (strictlyInside(judged.brackets.get(d.name)!, pick.qps)) Object.assign(earlyStopSlo, d.slo);
  return { done: false, qps: pick.qps, phase: pick.phase, forSearches, earlyStopSlo, perSlo };
}

/**
 * Each definition's result on a finished set of probes (an archive): no more probes will come, so
 * an open search ends with outcome 'max-probes' and says the probes ran out. What `analyze
 * --capacity` and the reports use.
 */
export function perSloResults(bounds: Omit<SearchBounds, 'maxProbes'>, defs: readonly SloDefinition[], probes: readonly PerSloProbe[]): PerSloResult[] {
  return judgeDefinitions({ ...bounds, maxProbes: probes.length }, defs, probes, { outcome: 'max-probes', text: `the ${probes.length} archived probes ran out` }).perSlo;
}

// Every definition's search on its own evidence; `spent` starts the reason when the budget ends one.
function judgeDefinitions(
  bounds: SearchBounds,
  defs: readonly SloDefinition[],
  probes: readonly PerSloProbe[],
  spent: { outcome: 'max-probes' | 'budget'; text: string } | null,
): { perSlo: PerSloResult[]; wants: Want[]; brackets: Map<string, Bracket> } {
  const budgetSpent = spent !== null;
  const perSlo: PerSloResult[] = [];
  const wants: Want[] = [];
  const brackets = new Map<string, Bracket>();
  for (const d of defs) {
    const used: number[] = [];
    const evidence: ProbeVerdict[] = [];
    probes.forEach((p, i) => {
      const v = p.verdicts[d.name];
      if (v === null || v === undefined) return;
      used.push(p.index ?? i);
      // This definition's own counts: its search narrows its own interval.
      const own = p.evidence && { ...p.evidence, parts: p.evidence.parts.filter((e) => e.name === d.name) };
      evidence.push({ qps: p.qps, passed: v === 'pass', decision: v, valid: true, ...(own ? { evidence: own } : {}) });
    });
    // The budget is the run's, not this definition's: unlimited here, ended below when spent.
    let decision = nextProbe({ ...bounds, maxProbes: budgetSpent ? evidence.length : Infinity, budgetS: null }, evidence);
    if (!decision.done) {
      const qps = decision.qps;
      // Untrusted twice at the rate it needs: the client cannot measure it there (search.ts's rule).
      const untrustedHere = probes.filter((p) => p.qps === qps && p.untrusted && p.verdicts[d.name] == null).length;
      if (untrustedHere >= 2) {
        decision = { ...finishOf(bounds, evidence), outcome: 'invalid-probes', reason: `${untrustedHere} probes at ${qps} QPS gave no trusted verdict for this SLO (last: ${lastNote(probes, qps)}): its search stops at the bracket ${fmtBracket(decision.bracket)}` };
      }
    }
    brackets.set(d.name, decision.bracket);
    if (decision.done) {
      const ranOut = decision.outcome === 'max-probes' && spent !== null;
      const reason = ranOut
        ? `${spent.text} (${evidence.length} of them evidence for this SLO) before its ${decision.interval ? 'interval' : `bracket ${fmtBracket(decision.bracket)}`} narrowed to the tolerance`
        : decision.reason;
      perSlo.push({ name: d.name, source: d.source, capacityQps: decision.capacityQps, bracket: decision.bracket, outcome: ranOut ? spent.outcome : decision.outcome, reason, probesUsed: used });
    } else {
      perSlo.push({ name: d.name, source: d.source, capacityQps: decision.bracket.passQps ?? 0, bracket: decision.bracket, outcome: 'running', reason: `next: ${decision.phase} at ${decision.qps} QPS`, probesUsed: used });
      wants.push({ who: d.name, qps: decision.qps, phase: decision.phase, width: widthOf(decision.bracket) });
    }
  }
  return { perSlo, wants, brackets };
}

// nextProbe's finished decision on the evidence (its max-probes branch, used for the bracket).
function finishOf(bounds: SearchBounds, evidence: ProbeVerdict[]): Extract<SearchDecision, { done: true }> {
  const d = nextProbe({ ...bounds, maxProbes: 0 }, evidence);
  if (!d.done) throw new Error('nextProbe with no budget must finish');
  return d;
}

function lastNote(probes: readonly PerSloProbe[], qps: number): string {
  for (let i = probes.length - 1; i >= 0; i--) if (probes[i].qps === qps && probes[i].note) return probes[i].note!;
  return 'no verdict';
}

// Relative width of a bracket; an open end is infinitely wide.
function widthOf(b: Bracket): number {
  if (b.passQps === null || b.failQps === null || b.passQps <= 0) return Infinity;
  return (b.failQps - b.passQps) / b.passQps;
}

function strictlyInside(b: Bracket, qps: number): boolean {
  return (b.passQps === null || qps > b.passQps) && (b.failQps === null || qps < b.failQps);
}

const fmtBracket = (b: Bracket) => `[pass ${b.passQps ?? 'none'}, fail ${b.failQps ?? 'none'}]`;
