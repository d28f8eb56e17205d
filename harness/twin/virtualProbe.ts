// A load probe in virtual time: the probe plan's arrivals are submitted to the simulated engine
// core (the same SimEngine, scheduler, KV cache and cost model the real-time server runs) on a
// discrete-event clock, and every token becomes a timeline chunk at the virtual instant the engine
// emits it. The result is the same TimelineRecord[] a real probe archives, so the same metrics,
// early stop and search judge it. Pure: no I/O, no real clock.
import type { EngineConfig } from '../sim/engine.ts';
import { createEngine } from '../sim/pipeline.ts';
import { VirtualClock } from '../sim/virtualClock.ts';
import { newSimRequest, type SimRequest } from '../sim/request.ts';
import type { ScheduledBatch, TokenEvent } from '../sim/scheduler.ts';
import type { ProbePlan, PlannedRequest } from '../load/plan.ts';
import type { Chunk, TimelineRecord } from '../timeline/record.ts';
import type { ShouldStop } from '../capacity/earlyStop.ts';
import { KneeWarmupWatch, type KneeWarmupPlan, type KneeWarmupRecord } from '../load/kneeWarmup.ts';

export interface VirtualProbeOptions {
  /** Fraction of planned requests (by index) marked `warmup: true`, as the real runner does. */
  warmupFraction?: number;
  /** Overrides warmupFraction: this many planned requests (by index) are marked `warmup: true`. */
  warmupRequests?: number;
  /** The plan opens with a knee warm-up, ended by the same rule as the real runner's (load/runProbe.ts). */
  kneeWarmup?: KneeWarmupPlan;
  /** Called once when the knee warm-up ends. */
  onKneeWarmupEnd?: (record: KneeWarmupRecord) => void;
  /** The early-stop hook, called as each request ends (after the knee warm-up, if any), with counts like the real runner. */
  shouldStop?: ShouldStop;
  /** Modelled client → engine delay of a request (s); the real client's dispatch and HTTP parse. */
  sendDelayS?: number;
  /** Modelled engine → client delay of a chunk (s). */
  receiveDelayS?: number;
  /**
   * The plan's last this many requests are a cool-down: arrivals that keep the engine loaded while
   * the measured requests end. They are sent open-loop like the rest, never judged and not in
   * `records`; the probe ends (and cancels them) once every measured request has ended.
   */
  coolDownRequests?: number;
}

export interface VirtualProbeResult {
  records: TimelineRecord[];
  planned: number;
  sent: number;
  notSent: number;
  warmupRequests: number;
  kneeWarmup: KneeWarmupRecord | null;
  /** Virtual seconds from the probe's start to its last request's end (or the early stop). */
  durationS: number;
  earlyStop: string | null;
  iterations: number;
  preemptions: number;
  /** Each sent request's scheduling delay (s), by id: from its arrival at the engine to the start of the iteration that first schedules it (Vidur's). */
  schedulingDelayS: Record<string, number>;
}

interface Live {
  planned: PlannedRequest;
  chunks: Chunk[];
  sentS: number;
  index: number;
}

const NS = 1e9;
// Timelines are archived at microsecond resolution; the twin's records carry the same rounding.
const roundUs = (s: number) => Math.round(s * 1e6) / 1e6;

/** Runs the plan on a fresh engine (what a real probe meets: idle, every KV block free). */
export function runVirtualProbe(plan: ProbePlan, engineConfig: EngineConfig, options: VirtualProbeOptions = {}): VirtualProbeResult {
  const clock = new VirtualClock(0n);
  const coolDown = options.coolDownRequests ?? 0;
  let planned = plan.requests.length - coolDown;
  const knee = options.kneeWarmup ? new KneeWarmupWatch(options.kneeWarmup, plan.requests.map((r) => r.scheduledS)) : null;
  // Until the knee warm-up ends, every request that ends is one of its own.
  let warmupRequests = knee ? planned : options.warmupRequests ?? Math.floor((options.warmupFraction ?? 0) * planned);
  const sendDelayNs = BigInt(Math.round((options.sendDelayS ?? 0) * NS));
  const receiveDelayS = options.receiveDelayS ?? 0;
  const live = new Map<SimRequest, Live>();
  const records: TimelineRecord[] = [];
  let sent = 0;
  let earlyStop: string | null = null;
  let endS = 0;
  // Arrivals in plan order; `scheduled` counts those whose planned time has come.
  const order = plan.requests.map((_, i) => i).sort((x, y) => plan.requests[x].scheduledS - plan.requests[y].scheduledS);
  let scheduledCount = 0;
  let measuredEnded = 0;

  const finish = (state: Live, status: TimelineRecord['status'], error: string | null) => {
    if (state.index >= planned) return;
    measuredEnded += 1;
    const r = state.planned;
    const outputTokens = state.chunks.reduce((s, [, k]) => s + k, 0);
    const record: TimelineRecord = {
      id: r.id,
      scheduledS: roundUs(r.scheduledS),
      sentS: roundUs(state.sentS),
      promptTokens: r.promptTokens,
      maxTokens: r.maxTokens,
      outputTokens,
      chunks: state.chunks,
      status,
      httpStatus: 200,
      error,
      usagePromptTokens: status === 'ok' ? r.promptTokens : null,
      usageOutputTokens: status === 'ok' ? outputTokens : null,
      tokenCounts: 'exact',
    };
    if (state.index < warmupRequests) record.warmup = true;
    records.push(record);
  };

  const schedulingDelayS: Record<string, number> = {};
  const sink = (events: TokenEvent[], batch: ScheduledBatch, startNs: bigint) => {
    for (const r of batch.firstScheduled) {
      const state = live.get(r);
      if (state) schedulingDelayS[state.planned.id] = Number(startNs) / NS - state.sentS;
    }
    const nowS = Number(clock.nowNs()) / NS;
    const atS = roundUs(nowS + receiveDelayS);
    for (const ev of events) {
      const state = live.get(ev.req);
      if (!state) continue;
      state.chunks.push([atS, 1]);
      if (!ev.finished) continue;
      live.delete(ev.req);
      while (scheduledCount < planned && plan.requests[order[scheduledCount]].scheduledS <= atS) scheduledCount++;
      if (knee && knee.record === null) {
        const ended = knee.observe(atS, scheduledCount, records.length + 1);
        if (ended) {
          planned = ended.planned;
          warmupRequests = ended.warmupRequests;
          scheduledCount = Math.min(scheduledCount, planned);
          options.onKneeWarmupEnd?.(ended);
        }
      }
      finish(state, 'ok', null);
      endS = Math.max(endS, atS);
      if (earlyStop === null && options.shouldStop && (knee === null || knee.record !== null)) {
        const reason = options.shouldStop({ records, scheduled: scheduledCount, sent, inFlight: sent - records.length, elapsedS: atS });
        if (reason) earlyStop = reason;
      }
    }
  };

  const engine = createEngine(engineConfig, clock, sink);
  // Engine ids in arrival order, as the server numbers requests when they reach it.
  let seq = 0;
  plan.requests.forEach((r, index) => {
    const atNs = BigInt(Math.round(r.scheduledS * NS)) + sendDelayNs;
    clock.at(atNs, () => {
      // Past the cut the knee warm-up made, and past the cool-down after it: the plan's unsent tail is dropped.
      if (index >= planned + coolDown) return;
      const req = newSimRequest(seq++, r.promptTokens, r.maxTokens, 'length');
      live.set(req, { planned: r, chunks: [], sentS: Number(atNs) / NS, index });
      if (index < planned) sent += 1;
      engine.submit(req);
    });
  });
  clock.run(() => earlyStop !== null || (coolDown > 0 && measuredEnded >= planned));
  engine.stop();

  // An early stop cancels what is in flight (keeping its chunks) and sends nothing more.
  if (earlyStop !== null) {
    endS = Number(clock.nowNs()) / NS + receiveDelayS;
    for (const state of [...live.values()].sort((a, b) => a.index - b.index)) finish(state, 'cancelled', `early stop: ${earlyStop}`);
  }
  const kneeRecord = knee ? knee.record ?? knee.finish() : null;
  if (kneeRecord) {
    planned = kneeRecord.planned;
    warmupRequests = kneeRecord.warmupRequests;
  }
  return {
    records,
    planned,
    sent,
    notSent: planned - sent,
    warmupRequests,
    kneeWarmup: kneeRecord,
    durationS: roundUs(endS),
    earlyStop,
    iterations: engine.iterations,
    preemptions: engine.scheduler.preemptionsTotal,
    schedulingDelayS,
  };
}
