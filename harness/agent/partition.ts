// How a probe is shared among load agents and put back together. Pure.
//
// Arrivals are dealt round-robin in plan order: agent k sends the planned requests k, k+N, k+2N, …
// at their planned times, so the union of what the agents send is exactly the planned process (a
// Poisson plan stays Poisson at the total rate; thinning by a random coin would be too, but would
// make the shares differ from run to run). Every request keeps its plan id and index.
import type { ProbePlan } from '../load/plan.ts';
import type { ClientHealth } from '../load/health.ts';
import type { RequestStatus, TimelineRecord } from '../timeline/record.ts';
import type { AgentResult } from './protocol.ts';

/** The plan of each of `agents` agents: the same plan with its round-robin share of the requests. */
export function partitionPlan(plan: ProbePlan, agents: number): ProbePlan[] {
  if (!Number.isInteger(agents) || agents < 1) throw new Error(`partitionPlan: agents must be a positive integer, not ${agents}`);
  return Array.from({ length: agents }, (_, k) => ({ ...plan, requests: plan.requests.filter((_, i) => i % agents === k) }));
}

/** A record as one agent returned it, with that agent's number (0-based). */
export interface AgentRecord {
  agent: number;
  index: number;
  record: TimelineRecord;
}

/** One timeline of every agent's records: ordered by planned arrival (then plan index), each naming its agent. */
export function mergeTimelines(records: readonly AgentRecord[]): TimelineRecord[] {
  return [...records]
    .sort((a, b) => a.record.scheduledS - b.record.scheduledS || a.index - b.index)
    .map((r) => ({ ...r.record, agent: r.agent }));
}

/**
 * The probe's client health from each agent's: the worst agent's figures (its error is the
 * probe's), invalid when any agent's is; the reason names that agent.
 */
export function mergeClientHealth(healths: readonly ClientHealth[]): ClientHealth {
  if (healths.length === 0) throw new Error('mergeClientHealth: no agent reported');
  if (healths.length === 1) return healths[0];
  const invalid = healths.map((h, k) => ({ h, k })).filter(({ h }) => h.verdict === 'invalid');
  const pool = invalid.length > 0 ? invalid : healths.map((h, k) => ({ h, k }));
  const worst = pool.reduce((a, b) => (b.h.clientErrorS > a.h.clientErrorS ? b : a));
  return { ...worst.h, reason: `agent ${worst.k} (the worst of ${healths.length}): ${worst.h.reason}` };
}

/** Counts over every agent's result: sums, the longest duration, the first early stop. */
export function mergeCounts(results: readonly AgentResult[]): {
  sent: number;
  notSent: number;
  byStatus: Record<RequestStatus, number>;
  retried: number;
  durationS: number;
  earlyStop: string | null;
  cancelled: boolean;
  workers: number;
} {
  const byStatus: Record<RequestStatus, number> = { ok: 0, error: 0, timeout: 0, cancelled: 0 };
  for (const r of results) for (const s of Object.keys(byStatus) as RequestStatus[]) byStatus[s] += r.byStatus[s];
  return {
    sent: results.reduce((s, r) => s + r.sent, 0),
    notSent: results.reduce((s, r) => s + r.notSent, 0),
    byStatus,
    retried: results.reduce((s, r) => s + r.retried, 0),
    durationS: Math.max(0, ...results.map((r) => r.durationS)),
    earlyStop: results.find((r) => r.earlyStop !== null)?.earlyStop ?? null,
    cancelled: results.some((r) => r.cancelled),
    workers: results.reduce((s, r) => s + r.workers, 0),
  };
}
