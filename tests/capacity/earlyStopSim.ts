// Test helper (not a test): a deterministic FCFS queue of `servers` slots that turns a probe plan
// into token timelines, and a replay that hands the early-stop hook the progress a probe runner
// would see as each request ends. Lets early-stop rules be checked against the full-run verdict.
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import type { ProbeProgress, ShouldStop } from '../../harness/capacity/earlyStop.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { evaluateSlo } from '../../harness/metrics/sloCheck.ts';
import type { Slo } from '../../harness/metrics/slo.ts';

export interface QueueOptions {
  rateQps: number;
  requests: number;
  servers: number;
  seed: number;
  poisson?: boolean;
  prefillS?: number;
  decodeS?: number;
  outputTokens?: number;
  /** Request indices that end with status error after their first token. */
  errorAt?: Set<number>;
}

export interface PlannedLike {
  id: string;
  scheduledS: number;
  promptTokens: number;
  maxTokens: number;
}

export function lcg(seed: number) {
  let s = seed % 2147483647 || 1;
  return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

/** Plans arrivals and serves them FCFS on `servers` slots (prefill, then one token per decodeS). */
export function simulateQueue(o: QueueOptions): { plan: PlannedLike[]; records: TimelineRecord[] } {
  const rand = lcg(o.seed);
  const prefillS = o.prefillS ?? 0.05;
  const decodeS = o.decodeS ?? 0.02;
  const outputTokens = o.outputTokens ?? 20;
  const freeAt = new Array<number>(o.servers).fill(0);
  const plan: PlannedLike[] = [];
  const records: TimelineRecord[] = [];
  let t = 0;
  for (let i = 0; i < o.requests; i++) {
    t += o.poisson === false ? 1 / o.rateQps : -Math.log(1 - rand()) / o.rateQps;
    const id = `00-${String(i).padStart(4, '0')}`;
    plan.push({ id, scheduledS: t, promptTokens: 512, maxTokens: outputTokens });
    const slot = freeAt.indexOf(Math.min(...freeAt));
    const start = Math.max(t, freeAt[slot]);
    const firstS = start + prefillS;
    const chunks: [number, number][] = [];
    for (let k = 0; k < outputTokens; k++) chunks.push([firstS + k * decodeS, 1]);
    freeAt[slot] = chunks[chunks.length - 1][0];
    const failed = o.errorAt?.has(i) ?? false;
    records.push({
      id,
      scheduledS: t,
      sentS: t,
      promptTokens: 512,
      maxTokens: outputTokens,
      outputTokens: failed ? 1 : outputTokens,
      chunks: failed ? chunks.slice(0, 1) : chunks,
      status: failed ? 'error' : 'ok',
      httpStatus: failed ? 500 : 200,
      error: failed ? 'server error' : null,
    });
  }
  return { plan, records };
}

const endOf = (r: TimelineRecord) => (r.chunks.length ? r.chunks[r.chunks.length - 1][0] : r.sentS);

/**
 * Calls the hook as each request ends, like the probe runner (load/runProbe passes an in-flight
 * count; `detail` passes each in-flight request with its first-token time instead).
 */
export function replay(records: TimelineRecord[], hook: ShouldStop, detail = false): { reason: string; atS: number; finished: number } | null {
  const byEnd = [...records].sort((a, b) => endOf(a) - endOf(b));
  const finished: TimelineRecord[] = [];
  for (const r of byEnd) {
    finished.push(r);
    const now = endOf(r);
    const arrived = records.filter((x) => x.scheduledS <= now);
    const progress: ProbeProgress = {
      elapsedS: now,
      scheduled: arrived.length,
      sent: arrived.length,
      inFlight: detail
        ? arrived.filter((x) => endOf(x) > now).map((x) => ({ id: x.id, firstTokenS: x.chunks[0][0] <= now ? x.chunks[0][0] : null }))
        : arrived.length - finished.length,
      records: finished,
    };
    const reason = hook(progress);
    if (reason) return { reason, atS: now, finished: finished.length };
  }
  return null;
}

/** The verdict of the whole probe (every evaluated request), as the probe summary computes it. */
export function fullVerdict(records: TimelineRecord[], slo: Slo, warmup: number, fit: { a: number; b: number; c: number }): boolean {
  const evaluated = records.slice(warmup);
  const metrics = evaluated.map((r) => {
    const prefillS = fit.a + fit.b * r.promptTokens + fit.c * r.promptTokens ** 2;
    return computeRequestMetrics(r, { dpS: prefillS + (slo.fluidity?.ttftSlackS ?? 0.3), tbtDeadlineS: slo.fluidity?.tbtDeadlineS ?? 0.025, prefillS });
  });
  return evaluateSlo(metrics, slo).passed;
}
