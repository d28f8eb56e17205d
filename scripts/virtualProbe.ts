// The simulated engine's scheduler and cost model driven on a virtual clock: a probe plan in,
// token timelines out, as fast as the CPU computes iterations instead of in real time. What the
// verdict proof needs to run thousands of probes on two shared cores. It leaves out what only a
// real run has (HTTP, the client's timing error, event-loop lateness); the proof says so and
// compares with real runs where it can.
import { SimEngine } from '../harness/sim/engine.ts';
import type { SimConfig } from '../harness/sim/config.ts';
import { newSimRequest, type SimRequest } from '../harness/sim/request.ts';
import type { PreciseTimerHandle } from '../harness/sim/preciseTimer.ts';
import type { TimelineRecord } from '../harness/timeline/record.ts';
import type { ProbeProgress } from '../harness/capacity/earlyStop.ts';

export interface VirtualRequest {
  id: string;
  scheduledS: number;
  promptTokens: number;
  maxTokens: number;
}

export interface VirtualProbeResult {
  records: TimelineRecord[];
  /** Probe time: from the start to the stop, or to the last request's end. */
  durationS: number;
  stoppedEarly: string | null;
}

/**
 * Runs the plan against a fresh engine on a virtual clock. `shouldStop` is called as each request
 * ends, with the progress a probe runner would report (per-request in-flight detail).
 */
export function runVirtualProbe(config: SimConfig, plan: readonly VirtualRequest[], shouldStop?: (p: ProbeProgress) => string | null): VirtualProbeResult {
  let nowNs = 0n;
  let timer: { atNs: bigint; fn: () => void; cancelled: boolean } | null = null;
  const deferred: (() => void)[] = [];
  const records: TimelineRecord[] = [];
  const live = new Map<SimRequest, { rec: TimelineRecord; firstTokenS: number | null }>();
  const inFlight = new Map<string, { id: string; firstTokenS: number | null }>();
  let stopped: string | null = null;
  let scheduled = 0;
  const toS = (ns: bigint) => Number(ns) / 1e9;

  const engine = new SimEngine(
    {
      model: config.model,
      gpu: config.gpu,
      tensorParallel: config.tensorParallel,
      timeScale: 1,
      limits: { policy: config.scheduler, maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, chunkSize: config.chunkSize },
      totalKvBlocks: config.totalKvBlocks,
    },
    {
      nowNs: () => nowNs,
      fireAt: (atNs, fn): PreciseTimerHandle => {
        const t = { atNs, fn, cancelled: false };
        timer = t;
        return { cancel: () => void (t.cancelled = true) } as PreciseTimerHandle;
      },
      defer: (fn) => deferred.push(fn),
    },
    (events) => {
      const t = toS(nowNs);
      for (const ev of events) {
        const entry = live.get(ev.req);
        if (!entry) continue;
        entry.rec.chunks.push([t, 1]);
        entry.rec.outputTokens += 1;
        if (entry.firstTokenS === null) {
          entry.firstTokenS = t;
          inFlight.get(entry.rec.id)!.firstTokenS = t;
        }
        if (ev.finished) {
          live.delete(ev.req);
          inFlight.delete(entry.rec.id);
          records.push(entry.rec);
          if (shouldStop && stopped === null) {
            stopped = shouldStop({ elapsedS: t, scheduled, sent: scheduled, inFlight: [...inFlight.values()], records });
          }
        }
      }
    },
  );

  const drain = () => {
    while (deferred.length) deferred.shift()!();
  };
  let next = 0;
  let seq = 0;
  while (stopped === null) {
    const arrivalNs = next < plan.length ? BigInt(Math.round(plan[next].scheduledS * 1e9)) : null;
    const t = timer as { atNs: bigint; fn: () => void; cancelled: boolean } | null;
    const timerNs = t && !t.cancelled ? t.atNs : null;
    if (arrivalNs === null && timerNs === null) break;
    if (arrivalNs !== null && (timerNs === null || arrivalNs <= timerNs)) {
      nowNs = arrivalNs;
      const p = plan[next++];
      scheduled = next;
      const rec: TimelineRecord = {
        id: p.id, scheduledS: p.scheduledS, sentS: p.scheduledS, promptTokens: p.promptTokens, maxTokens: p.maxTokens,
        outputTokens: 0, chunks: [], status: 'ok', httpStatus: 200, error: null,
      };
      const req = newSimRequest(seq++, p.promptTokens, p.maxTokens, 'length');
      live.set(req, { rec, firstTokenS: null });
      inFlight.set(p.id, { id: p.id, firstTokenS: null });
      engine.submit(req);
    } else {
      nowNs = timerNs!;
      timer = null;
      t!.fn();
    }
    drain();
  }
  engine.stop();
  const endS = records.reduce((m, r) => Math.max(m, r.chunks.length ? r.chunks[r.chunks.length - 1][0] : r.sentS), 0);
  return { records, durationS: stopped !== null ? toS(nowNs) : endS, stoppedEarly: stopped };
}

/** Isolated prefills on an idle virtual engine: TTFT of a one-token request per prompt length. */
export function virtualPrefillS(config: SimConfig, promptTokens: number): number {
  const { records } = runVirtualProbe(config, [{ id: 'p', scheduledS: 0, promptTokens, maxTokens: 1 }]);
  return records[0].chunks[0][0];
}
