// A probe sent by load agents: the orchestrator's side. Each agent gets its round-robin share of
// the plan (partition.ts), boots its workers and says ready; all are told to go at once, and each
// then times its share on its own clock from that instant. The orchestrator writes each record as
// it arrives (a crash keeps what was received), decides the knee warm-up's end and the early stop
// from the records of all agents (control decisions, not measurements: no time of theirs is
// recorded), and at the end rewrites the timeline merged, ordered by arrival, each record naming
// its agent. An agent that dies or whose connection drops makes the probe interrupted: no verdict.
import { renameSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { TimelineWriter, formatTimelineLine } from '../timeline/writer.ts';
import type { RequestStatus, TimelineRecord } from '../timeline/record.ts';
import type { ProbePlan } from '../load/plan.ts';
import type { ProbeProgress, ProbeResult } from '../load/runProbe.ts';
import { KneeWarmupWatch, type KneeWarmupPlan, type KneeWarmupRecord } from '../load/kneeWarmup.ts';
import { judgeClientHealth, judgeTokenDrift, type ClientHealth } from '../load/health.ts';
import { outputPinned } from '../load/dialect.ts';
import { InfraError } from '../util/errors.ts';
import type { AgentLink } from './link.ts';
import type { AgentProbeOptions, AgentResult, FromAgent } from './protocol.ts';
import { mergeClientHealth, mergeCounts, mergeTimelines, partitionPlan, type AgentRecord } from './partition.ts';
import { versionProblem } from './version.ts';

/** One agent of the probe: its link and the engine URL as seen from where it runs. */
export interface ProbeAgent {
  link: AgentLink;
  baseUrl: string;
  host: string;
}

export interface AgentProbeInput {
  plan: ProbePlan;
  /** Every agent's options but the engine URL (each agent's own). */
  options: Omit<AgentProbeOptions, 'baseUrl'>;
  agents: ProbeAgent[];
  /** The version every agent must report (version.ts). */
  version: string;
  timelinesFile: string;
  serverMetricsFile: string;
  warmupRequests?: number;
  kneeWarmup?: KneeWarmupPlan;
  onKneeWarmupEnd?: (record: KneeWarmupRecord) => void;
  shouldStop?: (progress: ProbeProgress) => string | null;
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** Longest wait for an agent's hello and for its workers to boot (default 120 s). */
  bootTimeoutS?: number;
}

/** Where a probe's load came from, as its summary records it. */
export interface LoadSource {
  from: 'agent' | 'client';
  agents: { host: string; version: string; planned: number; sent: number; clientErrorS: number | null }[];
}

export type AgentProbeResult = ProbeResult & {
  /** Why an agent was lost mid-probe (the probe is then interrupted); null when all finished. */
  agentLost: string | null;
  load: LoadSource;
};

/** Runs the plan on the agents; throws only when no agent could start (nothing was sent). */
export async function runAgentProbe(input: AgentProbeInput): Promise<AgentProbeResult> {
  const { plan, agents } = input;
  const log = input.log ?? (() => {});
  const n = agents.length;
  const shares = partitionPlan(plan, n);
  const bootMs = (input.bootTimeoutS ?? 120) * 1000;
  const writer = new TimelineWriter(input.timelinesFile);
  const knee = input.kneeWarmup ? new KneeWarmupWatch(input.kneeWarmup, plan.requests.map((r) => r.scheduledS)) : null;
  let planned = plan.requests.length;
  let warmupCount = knee ? planned : input.warmupRequests ?? 0;
  const received: AgentRecord[] = [];
  const records: TimelineRecord[] = [];
  const endedIds = new Set<string>();
  const sentBy = new Array<number>(n).fill(0);
  const results: (AgentResult | null)[] = new Array(n).fill(null);
  const serverMetrics: (string | null)[] = new Array(n).fill(null);
  let agentLost: string | null = null;
  let earlyStop: string | null = null;
  let cancelled = false;
  let goAt = 0;
  const elapsedS = () => (goAt === 0 ? 0 : (performance.now() - goAt) / 1000);
  const sendAll = (m: Parameters<AgentLink['send']>[0]) => agents.forEach((a) => a.link.send(m));
  let scheduledCount = 0;
  const scheduledBy = (nowS: number) => {
    while (scheduledCount < plan.requests.length && plan.requests[scheduledCount].scheduledS <= nowS) scheduledCount++;
    return Math.min(scheduledCount, planned);
  };

  const accept = (agent: number, index: number, record: TimelineRecord, sent: number) => {
    if (endedIds.has(record.id)) return;
    sentBy[agent] = Math.max(sentBy[agent], sent);
    if (knee && knee.record === null) {
      const now = elapsedS();
      const ended = knee.observe(now, scheduledBy(now), records.length + 1);
      if (ended) {
        planned = ended.planned;
        warmupCount = ended.warmupRequests;
        sendAll({ type: 'limit', planned });
        input.onKneeWarmupEnd?.(ended);
      }
    }
    // The agents do not know the warm-up's end: the orchestrator marks it, as the runner would.
    delete record.warmup;
    if (index < warmupCount) record.warmup = true;
    const withAgent = { ...record, agent };
    writer.append(withAgent);
    received.push({ agent, index, record });
    records.push(withAgent);
    endedIds.add(record.id);
    if (earlyStop === null && !cancelled && input.shouldStop && (knee === null || knee.record !== null)) {
      const now = elapsedS();
      const sentNow = sentBy.reduce((s, x) => s + x, 0);
      const reason = input.shouldStop({ records, planned, scheduled: scheduledBy(now), sent: sentNow, inFlight: sentNow - records.length, ended: records.length, elapsedS: now });
      if (reason) {
        earlyStop = reason;
        log(`probe: early stop after ${records.length} requests: ${reason}`);
        sendAll({ type: 'stop', reason });
      }
    }
  };

  // Each agent's messages, in order; `phase` resolves as the agent reaches hello, ready and its end.
  const hellos: Promise<string>[] = [];
  const readies: Promise<void>[] = [];
  const ends: Promise<void>[] = [];
  agents.forEach((a, k) => {
    let hello!: (v: string) => void;
    let ready!: () => void;
    let done!: () => void;
    hellos.push(new Promise((r) => (hello = r)));
    readies.push(new Promise((r) => (ready = r)));
    ends.push(new Promise((r) => (done = r)));
    const lose = (why: string) => {
      if (results[k] !== null) return done();
      if (agentLost === null && !cancelled) {
        const tail = a.link.stderrTail();
        agentLost = `${why}${tail.length > 0 ? ` (its last words: ${tail.slice(-3).join(' | ')})` : ''}`;
        log(`probe: ${agentLost}; cancelling the other agents`);
        agents.forEach((o) => o !== a && o.link.send({ type: 'cancel' }));
      }
      done();
    };
    a.link.onMessage((m: FromAgent) => {
      if (m.type === 'hello') hello(m.version);
      else if (m.type === 'ready') ready();
      else if (m.type === 'record') accept(k, m.index, m.record, m.sent);
      else if (m.type === 'log') log(`${a.link.name}: ${m.line}`);
      else if (m.type === 'result') {
        results[k] = m.result;
        serverMetrics[k] = m.serverMetrics;
        sentBy[k] = m.result.sent;
        done();
      } else if (m.type === 'failed') lose(`${a.link.name} failed: ${m.message}`);
    });
    void a.link.gone.then((why) => lose(why));
  });

  const onAbort = () => {
    cancelled = true;
    earlyStop ??= 'cancelled: interrupted by the user';
    sendAll({ type: 'cancel' });
  };
  if (input.signal?.aborted) onAbort();
  input.signal?.addEventListener('abort', onAbort, { once: true });
  const anyGone = Promise.race(agents.map((a) => a.link.gone));
  const within = <T>(p: Promise<T>, what: string): Promise<T> =>
    Promise.race([
      p,
      anyGone.then((why) => Promise.reject(new InfraError(`${what}: ${why}`))),
      new Promise<T>((_, reject) => setTimeout(() => reject(new InfraError(`${what}: no answer within ${bootMs / 1000} s`)), bootMs).unref()),
    ]);
  let refused: Error | null = null;
  try {
    const versions = await within(Promise.all(hellos), 'a load agent did not start');
    versions.forEach((v, k) => {
      const problem = versionProblem(input.version, v, agents[k].link.name);
      if (problem) refused ??= new InfraError(problem);
    });
    if (refused) throw refused;
    agents.forEach((a, k) =>
      a.link.send({ type: 'probe', plan: shares[k], options: { ...input.options, baseUrl: a.baseUrl, ...(k > 0 ? { metricsUrl: false } : {}) } }),
    );
    await within(Promise.all(readies), 'a load agent did not get ready');
  } catch (err) {
    // An agent of another version is refused outright; one lost while starting interrupts the
    // probe like one lost later (nothing was sent), so the run can be resumed.
    if (err === refused) {
      input.signal?.removeEventListener('abort', onAbort);
      agents.forEach((a) => a.link.close());
      writer.close();
      throw err;
    }
    agentLost ??= (err as Error).message;
    log(`probe: ${agentLost}`);
    sendAll({ type: 'cancel' });
  }
  try {
    if (agentLost === null) {
      goAt = performance.now();
      sendAll({ type: 'go' });
      log(`probe: ${n} load agent${n === 1 ? '' : 's'} started (${agents.map((a) => a.link.name).join(', ')})`);
      await Promise.all(ends);
    }
  } finally {
    input.signal?.removeEventListener('abort', onAbort);
    agents.forEach((a) => a.link.close());
    writer.close();
  }

  // The archive, merged: ordered by planned arrival, each record naming its agent.
  const merged = mergeTimelines(received);
  writeFileSync(`${input.timelinesFile}.merging`, merged.map((r) => formatTimelineLine(r) + '\n').join(''));
  renameSync(`${input.timelinesFile}.merging`, input.timelinesFile);
  const finished = results.filter((r): r is AgentResult => r !== null);
  const scraped = serverMetrics[0];
  if (scraped !== null) writeFileSync(input.serverMetricsFile, scraped);
  const counts = mergeCounts(finished);
  const byStatus: Record<RequestStatus, number> = { ok: 0, error: 0, timeout: 0, cancelled: 0 };
  for (const r of merged) byStatus[r.status]++;
  const health: ClientHealth =
    finished.length > 0
      ? mergeClientHealth(finished.map((r) => r.clientHealth))
      : { ...judgeClientHealth({ eldP99Ns: [], eldMaxNs: [], dispatchLagS: [], recvMinusEmitNs: [], toleranceS: input.options.clientToleranceS ?? 0.002 }), verdict: 'invalid', reason: 'no load agent finished' };
  const kneeRecord = knee ? knee.record ?? knee.finish() : null;
  const tokenDrift = judgeTokenDrift(merged, input.options.tokenDriftTolerance ?? plan.tokenDriftTolerance, {
    outputPinned: outputPinned(input.options.content?.omitFields as Parameters<typeof outputPinned>[0]),
  });
  const first = finished[0];
  return {
    rateQps: plan.rateQps,
    seed: plan.seed,
    planned: kneeRecord?.planned ?? planned,
    sent: sentBy.reduce((s, x) => s + x, 0),
    notSent: counts.notSent,
    byStatus,
    retried: counts.retried,
    warmupRequests: kneeRecord?.warmupRequests ?? warmupCount,
    kneeWarmup: kneeRecord,
    startedAt: first?.startedAt ?? new Date().toISOString(),
    durationS: counts.durationS,
    earlyStop: earlyStop ?? counts.earlyStop ?? (agentLost ? `interrupted: ${agentLost}` : null),
    cancelled: cancelled || counts.cancelled,
    workers: counts.workers,
    clientHealth: health,
    tokenDrift,
    serverMetrics: {
      available: first?.serverMetrics.available ?? false,
      scrapes: first?.serverMetrics.scrapes ?? 0,
      file: scraped !== null ? input.serverMetricsFile : null,
      note: first?.serverMetrics.note ?? 'no load agent finished',
    },
    timelinesFile: input.timelinesFile,
    agentLost,
    load: {
      from: 'agent',
      agents: agents.map((a, k) => ({ host: a.host, version: input.version, planned: shares[k].requests.length, sent: sentBy[k], clientErrorS: results[k]?.clientHealth.clientErrorS ?? null })),
    },
  };
}
