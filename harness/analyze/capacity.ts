// Capacity under a new SLO from archived probes (`fluidcap analyze --capacity`): which probes are
// evidence for it, the capacity and bracket they support, and which rates would need probing.
// A probe is evidence only when its verdict under the new SLO is known from its data:
//  - invalid or interrupted probes never are (their numbers are not trusted, or they have no end);
//  - an early-stopped probe holds only the requests before its stop. It proves a fail only for an
//    SLO at least as strict as the one that stopped it (every request's value can only be worse
//    and the allowed failures no more), and never proves a pass.
// Capacity follows the search's rule (capacity/perSloSearch.ts, search.ts): the highest pass below the lowest fail.
// Pure: probe verdicts and statuses in, the answer out.
import type { Slo } from '../metrics/slo.ts';
import { perSloResults, sloDefinitions, stoppingSloSource, type SloDefinition } from '../capacity/perSloSearch.ts';
import { briefValidity } from '../capacity/consoleLines.ts';
import { nameSlos } from '../metrics/sloBrief.ts';
import { capacityInterval, describeInterval, type CapacityInterval, type EntryEvidence } from '../capacity/interval.ts';

export { stoppingSloSource };

/** One archived probe as analyze re-judged it. */
export interface ProbeVerdictInput {
  probe: string;
  qps: number | null;
  /** Under the new SLO; null when nothing was evaluated. */
  passed: boolean | null;
  /** Each entry of the new SLO on its own (by name); absent: only the combined verdict is known. */
  passedBy?: Record<string, boolean>;
  valid: boolean | null;
  validity: string | null;
  earlyStop: string | null;
  interrupted: boolean;
  /** Each SLO entry's counts under the new SLO and the probe's load time: evidence for the interval. */
  parts?: readonly EntryEvidence[];
  /** The arrival rate its judged requests realized, where the interval reads it (absent: the planned rate). */
  arrivalQps?: number | null;
  /** The rate its judged requests' bursts put it at (its summary.json's), where the interval reads its other entries. */
  burstQps?: number | null;
  durationS?: number | null;
}

export interface ArchiveCapacityInputs {
  probes: readonly ProbeVerdictInput[];
  /** The SLO the probes were run (and stopped) under; null when unknown. */
  runSlo: Slo | null;
  slo: Slo;
  /** --ttft-deadline replaced the first-token deadline the run used, so no strictness can be compared. */
  firstTokenDeadlineChanged: boolean;
  tolerance: number | null;
}

export type Evidence = 'pass' | 'fail' | 'none';

export interface ProbeEvidence {
  probe: string;
  qps: number;
  evidence: Evidence;
  why: string;
}

export interface NeededProbe {
  /** A rate to probe again, or null for a range. */
  qps: number | null;
  range: [number | null, number | null] | null;
  reason: string;
}

export interface ArchiveCapacity {
  /** null when no probe is evidence; 0 when every evidence failed (the capacity is below the lowest). */
  capacityQps: number | null;
  /** exact: bracketed within tolerance by evidence alone; the others say which side is open. */
  bound: 'exact' | 'at-least' | 'below' | 'bracketed' | 'unknown';
  bracket: { passQps: number | null; failQps: number | null };
  gap: number | null;
  tolerance: number | null;
  probes: ProbeEvidence[];
  needsProbing: NeededProbe[];
  /** The estimate and 95% interval from every trusted probe's evidence (capacity/interval.ts); null when no probe has counts. */
  interval: CapacityInterval | null;
}

/** One SLO entry's own capacity from the archive (the run's per-SLO search, redone on the probes). */
export interface ArchivePerSlo extends ArchiveCapacity {
  name: string;
  source: string;
}

/**
 * Capacity under each entry of `slo` on its own, when it has several (capacity/perSloSearch.ts's
 * definitions): each is judged as a new SLO of its own, so an early-stopped probe is a fail only for
 * an entry at least as strict as the one that stopped it, and no evidence for the others.
 */
export function perSloFromArchive(i: ArchiveCapacityInputs): ArchivePerSlo[] {
  const defs = sloDefinitions(i.slo);
  if (defs.length < 2) return [];
  return defs.map((d) => ({
    name: d.name,
    source: d.source,
    ...capacityFromArchive({
      ...i,
      slo: d.slo,
      probes: i.probes.map((p) => ({ ...p, passed: p.passedBy?.[d.name] ?? (p.passed === null ? null : p.passed ? true : null), parts: p.parts?.filter((e) => e.name === d.name) })),
    }),
  }));
}


// Whether `next` fails whenever `prev` failed on the same requests (see the header).
function atLeastAsStrict(prev: Slo, next: Slo, name: keyof Slo, dpChanged: boolean): boolean {
  if (name === 'fluidity') {
    const a = prev.fluidity;
    const b = next.fluidity;
    return Boolean(a && b && !dpChanged && b.tbtDeadlineS <= a.tbtDeadlineS && b.ttftSlackS <= a.ttftSlackS && b.minFluidity >= a.minFluidity && b.percentile >= a.percentile);
  }
  const a = prev[name];
  const b = next[name];
  if (!a || !b || !('maxS' in a) || !('maxS' in b)) return false;
  if (name === 'schedulingDelay' && dpChanged) return false;
  return b.maxS <= a.maxS && b.percentile >= a.percentile;
}

function judge(p: ProbeVerdictInput & { qps: number }, i: ArchiveCapacityInputs): ProbeEvidence {
  const base = { probe: p.probe, qps: p.qps };
  if (p.interrupted) return { ...base, evidence: 'none', why: 'interrupted: the probe has no end, so no verdict' };
  if (p.valid === false) return { ...base, evidence: 'none', why: `invalid: ${p.validity ?? 'its client check failed'}` };
  if (p.passed === null) return { ...base, evidence: 'none', why: 'no evaluated request' };
  if (p.earlyStop) {
    const src = stoppingSloSource(p.earlyStop);
    const name = src && i.runSlo ? (Object.keys(i.runSlo) as (keyof Slo)[]).find((k) => i.runSlo![k]?.source === src) : undefined;
    if (!p.passed && name && atLeastAsStrict(i.runSlo!, i.slo, name, i.firstTokenDeadlineChanged)) {
      return { ...base, evidence: 'fail', why: `stopped early under ${name} "${src}"; this SLO is at least as strict, so it fails too` };
    }
    const under = src ? `under "${src}"` : `(${p.earlyStop})`;
    if (!p.passed && name && i.slo[name] === undefined) {
      return { ...base, evidence: 'none', why: `early-stopped ${under}, which this SLO does not judge: the requests it never sent could still decide it` };
    }
    return {
      ...base,
      evidence: 'none',
      why: p.passed
        ? `early-stopped ${under}: the requests it never sent could fail this SLO, so its pass here proves nothing`
        : `early-stopped ${under}; this SLO is looser in some respect, so the requests it never sent could still decide it`,
    };
  }
  return { ...base, evidence: p.passed ? 'pass' : 'fail', why: p.passed ? 'passes' : 'fails' };
}

/** Capacity, bracket and the rates that would need probing under `slo`. */
export function capacityFromArchive(i: ArchiveCapacityInputs): ArchiveCapacity {
  const probes = i.probes.filter((p): p is ProbeVerdictInput & { qps: number } => p.qps !== null).map((p) => judge(p, i));
  // The last evidence at a rate stands for it (a probe repeated after an invalid one, say).
  const byRate = new Map<number, ProbeEvidence>();
  for (const p of probes) if (p.evidence !== 'none') byRate.set(p.qps, p);
  const evidence = [...byRate.values()].sort((a, b) => a.qps - b.qps);
  // The bracket by the run's own rule (search.ts via the per-SLO search): the lowest fail, and the
  // highest pass below it; every probe that is evidence counts, a repeated rate's fail included.
  const [judged] = perSloResults(
    { qps: { startQps: 1, minQps: 0, maxQps: Infinity }, tolerance: i.tolerance ?? 0 },
    [{ name: 'slo', slo: i.slo, source: '' }],
    probes.filter((p) => p.evidence !== 'none').map((p) => ({ qps: p.qps, verdicts: { slo: p.evidence === 'pass' ? 'pass' : 'fail' }, untrusted: false, note: null })),
  );
  const { passQps, failQps } = judged.bracket;
  for (const e of evidence) {
    if (failQps !== null && e.qps > failQps && e.evidence === 'pass') e.why = `passes, but above the fail at ${failQps} QPS, so it does not raise the capacity`;
  }
  const needs: NeededProbe[] = [];
  for (const p of probes) {
    if (p.evidence !== 'none' || byRate.has(p.qps)) continue;
    const inside = (passQps === null || p.qps > passQps) && (failQps === null || p.qps < failQps);
    // One line per rate: the last probe run there says why it is still open.
    if (inside) {
      const at = needs.findIndex((n) => n.qps === p.qps);
      if (at >= 0) needs.splice(at, 1);
      needs.push({ qps: p.qps, range: null, reason: `${p.probe} is ${p.why}` });
    }
  }
  needs.sort((a, b) => (a.qps ?? Infinity) - (b.qps ?? Infinity));
  const gap = passQps !== null && failQps !== null && passQps > 0 ? (failQps - passQps) / passQps : null;
  if (evidence.length === 0) needs.push({ qps: null, range: [null, null], reason: 'no probe is evidence for this SLO' });
  else if (failQps === null) needs.push({ qps: null, range: [passQps, null], reason: `never probed above ${passQps} QPS, and no probed rate failed this SLO` });
  else if (passQps === null) needs.push({ qps: null, range: [null, failQps], reason: `never probed below ${failQps} QPS, and every probed rate failed this SLO` });
  else if (i.tolerance !== null && gap !== null && gap > i.tolerance + 1e-12) {
    needs.push({ qps: null, range: [passQps, failQps], reason: `never probed between ${passQps} and ${failQps} QPS: the gap is ${+(gap * 100).toPrecision(3)}% of the passing rate, wider than the tolerance of ${+(i.tolerance * 100).toPrecision(3)}%` });
  }
  // The interval pools every trusted probe's requests; an open side is never settled.
  const counted = i.probes.filter((p) => p.qps !== null && p.valid === true && !p.interrupted && p.parts && p.parts.length > 0);
  const interval = counted.length > 0 ? capacityInterval(counted.map((p) => ({ qps: p.qps!, arrivalQps: p.arrivalQps, burstQps: p.burstQps, durationS: p.durationS ?? 0, parts: p.parts! }))) : null;
  if (interval && interval.open !== 'none' && evidence.length > 0 && failQps !== null && passQps !== null) {
    const side = interval.open === 'hi' ? 'above' : interval.open === 'lo' ? 'below' : 'either way';
    needs.push({ qps: null, range: [interval.loQps, interval.hiQps], reason: `the 95% interval is open ${side}: no probe's evidence bounds that side surely enough` });
  } else if (interval && interval.open === 'none' && i.tolerance !== null && interval.estimateQps) {
    const width = (interval.hiQps! - interval.loQps!) / interval.estimateQps;
    if (width > i.tolerance + 1e-12) {
      const f = (q: number) => +q.toPrecision(3);
      needs.push({ qps: null, range: [f(interval.loQps!), f(interval.hiQps!)], reason: `the 95% interval is ${+(width * 100).toPrecision(3)}% of the estimate wide, wider than the tolerance of ${+(i.tolerance * 100).toPrecision(3)}%` });
    }
  }
  const bound: ArchiveCapacity['bound'] =
    evidence.length === 0 ? 'unknown' : failQps === null ? 'at-least' : passQps === null ? 'below' : needs.length === 0 ? 'exact' : 'bracketed';
  return {
    capacityQps: evidence.length === 0 ? null : (passQps ?? 0),
    bound,
    bracket: { passQps, failQps },
    gap,
    tolerance: i.tolerance,
    probes,
    needsProbing: needs,
    interval,
  };
}

function rangeText(r: NeededProbe['range']): string {
  if (!r || (r[0] === null && r[1] === null)) return 'any rate';
  if (r[0] !== null && r[1] !== null) return `between ${r[0]} and ${r[1]} QPS`;
  return r[0] !== null ? `above ${r[0]} QPS` : `below ${r[1]} QPS`;
}

/**
 * The answer in lines for the terminal: the capacity and its bracket, the interval, what would need
 * probing. The SLO entries are named by their short names (`defs`); each probe's evidence is a
 * column of the probe table, so it is listed here only with `probes` (a definition's own section).
 */
export function formatArchiveCapacity(c: ArchiveCapacity, defs: readonly SloDefinition[] = [], opts: { under?: string; probes?: boolean } = {}): string[] {
  const q = (v: number | null) => (v === null ? '-' : `${v}`);
  const under = `capacity under ${opts.under ?? 'this SLO'}`;
  let head: string;
  if (c.capacityQps === null) head = `${under}: unknown (no probe is evidence for it)`;
  else if (c.bound === 'below') head = `${under}: below ${c.bracket.failQps} QPS (every evidence failed)`;
  else if (c.bound === 'at-least') head = `${under}: at least ${c.capacityQps} QPS (no evidence failed)`;
  else head = `${under}: ${c.capacityQps} QPS${c.bound === 'exact' ? '' : ' (not final: see below)'}`;
  const gap = c.gap === null ? '' : `; gap ${+(c.gap * 100).toPrecision(3)}%${c.tolerance !== null ? `, tolerance ${+(c.tolerance * 100).toPrecision(3)}%` : ''}`;
  const out = [`${head} — bracket: pass ${q(c.bracket.passQps)} / fail ${q(c.bracket.failQps)} QPS${gap}`];
  if (c.interval) out.push(`  estimate from every probe's requests: ${describeInterval(c.interval)}`);
  if (opts.probes) for (const p of c.probes) if (p.why !== 'passes' && p.why !== 'fails') out.push(`  ${p.probe}: ${p.evidence === 'none' ? 'not evidence' : p.evidence} — ${brief(p.why, defs)}`);
  if (c.needsProbing.length === 0 && c.bound === 'exact') out.push('  nothing needs probing: the archived probes settle it');
  else if (c.needsProbing.length === 0) out.push('  nothing needs probing within the tolerance, but the capacity is not settled: see the interval');
  else {
    out.push('  would need probing:');
    for (const n of c.needsProbing) out.push(`    ${n.qps !== null ? `${n.qps} QPS again` : rangeText(n.range)}: ${brief(n.reason, defs)}`);
  }
  return out;
}

/** A reason with the SLO named and a probe's validity details left to its summary.json. */
function brief(reason: string, defs: readonly SloDefinition[]): string {
  const invalid = /^(.*?\binvalid: )(.*)$/.exec(reason);
  return nameSlos(invalid ? `${invalid[1]}${briefValidity(invalid[2], { fix: false })}` : reason, defs);
}
