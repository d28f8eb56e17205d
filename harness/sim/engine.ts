// The engine loop: forms a batch, waits the batch's modelled time (scaled by --time-scale), then
// hands out its tokens and starts the next one. Iteration k ends at anchor + Σ modelled durations
// (one clock, no chained sleeps), so lateness never accumulates into drift.
import type { GpuProfile } from '../catalog/gpuProfile.ts';
import type { SimConfig } from './config.ts';
import type { ModelSpec } from '../catalog/models.ts';
import { iterationCost, linearIterationS, pipelineHopS, type BatchShape, type LinearCostModel } from './costModel.ts';
import { KvBlockPool } from './kvCache.ts';
import type { PreciseTimerHandle } from './preciseTimer.ts';
import type { SimRequest } from './request.ts';
import { batchShape, Scheduler, type ScheduledBatch, type SchedulerLimits, type TokenEvent } from './scheduler.ts';

// Clock and timer come in from outside so scheduling can be tested on a fake clock.
export interface EngineDeps {
  nowNs(): bigint;
  fireAt(targetNs: bigint, fn: () => void): PreciseTimerHandle;
  defer(fn: () => void): void;
}

// Everything the loop needs to price and schedule iterations.
export interface EngineConfig {
  model: ModelSpec;
  gpu: GpuProfile;
  tensorParallel: number;
  timeScale: number;
  limits: SchedulerLimits;
  totalKvBlocks: number;
  /** A calibrated iteration-time model (harness/twin/calibrate.ts) used instead of the roofline. */
  iterationModel?: LinearCostModel;
  /** Pipeline stages (pipeline.ts): each micro-batch's iteration adds the hops between them. */
  pipelineParallel?: number;
}

// The engine's part of a resolved config: what the real-time server and the virtual-time twin
// both hand SimEngine, so the two clocks drive one engine.
export function engineConfigOf(config: SimConfig): EngineConfig {
  return {
    model: config.model,
    gpu: config.gpu,
    tensorParallel: config.tensorParallel,
    pipelineParallel: config.pipelineParallel,
    timeScale: config.timeScale,
    limits: { policy: config.scheduler, maxNumSeqs: config.maxNumSeqs, maxNumBatchedTokens: config.maxNumBatchedTokens, chunkSize: config.chunkSize, slotContextTokens: config.maxModelLen },
    totalKvBlocks: config.totalKvBlocks,
  };
}

/** Modelled seconds of a batch shape under the config's model: the calibrated one when there is one, else the roofline. */
export function modelledIterationS(config: EngineConfig, shape: BatchShape): number {
  if (config.iterationModel) return linearIterationS(config.iterationModel, shape);
  const hops = (config.pipelineParallel ?? 1) - 1;
  const tokens = shape.prefills.reduce((s, p) => s + p.chunkTokens, 0) + shape.decodeKvTokens.length;
  return iterationCost(config.model, config.gpu, shape, config.tensorParallel).totalS + (hops > 0 ? hops * pipelineHopS(config.model, config.gpu, tokens) : 0);
}

// Receives each iteration's tokens (and when the iteration started); returns the first and last write times when it wrote anything.
export type TokenSink = (events: TokenEvent[], batch: ScheduledBatch, startNs: bigint) => { firstWriteNs: bigint; lastWriteNs: bigint } | void;

// One iteration as it was planned and as it ran (for --trace-iterations and the benchmark).
export interface IterationTrace {
  index: number;
  plannedStartNs: bigint;
  actualStartNs: bigint;
  durationNs: bigint;
  prefillTokens: number;
  prefills: number;
  decodes: number;
  preempted: number;
  /** Filled in when the iteration ends. */
  actualEndNs?: bigint;
  firstWriteNs?: bigint;
  lastWriteNs?: bigint;
}

// Behind schedule by more than this (e.g. the process was suspended), the loop re-anchors instead of bursting.
const RESYNC_AFTER_NS = 1_000_000_000n;

// The running engine: submit() requests, get tokens through the sink at each iteration end.
export class SimEngine {
  readonly scheduler: Scheduler;
  iterations = 0;
  resyncs = 0;
  private timer: PreciseTimerHandle | null = null;
  private kickPending = false;
  private stopped = false;
  private busy = false;

  constructor(
    private readonly config: EngineConfig,
    private readonly deps: EngineDeps,
    private readonly sink: TokenSink,
    private readonly onIteration?: (trace: IterationTrace) => void,
  ) {
    this.scheduler = new Scheduler(config.limits, new KvBlockPool(config.totalKvBlocks));
  }

  submit(req: SimRequest): void {
    if (this.stopped) return;
    this.scheduler.add(req);
    if (!this.busy && !this.kickPending) {
      // Requests arriving in the same event-loop turn join the same first batch.
      this.kickPending = true;
      this.deps.defer(() => {
        this.kickPending = false;
        if (!this.busy && !this.stopped) {
          const now = this.deps.nowNs();
          this.runIteration(now, now);
        }
      });
    }
  }

  abort(req: SimRequest): void {
    if (req.phase !== 'finished') this.scheduler.abort(req);
  }

  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.timer = null;
  }

  /** Modelled seconds (before time scaling) of a batch. */
  batchSeconds(batch: ScheduledBatch): number {
    return modelledIterationS(this.config, batchShape(batch));
  }

  private runIteration(plannedStartNs: bigint, actualStartNs: bigint): void {
    const batch = this.scheduler.next();
    if (!batch) {
      this.busy = false;
      return;
    }
    this.busy = true;
    const durationNs = BigInt(Math.max(1, Math.round(this.batchSeconds(batch) * this.config.timeScale * 1e9)));
    const trace: IterationTrace = {
      index: this.iterations++,
      plannedStartNs,
      actualStartNs,
      durationNs,
      prefillTokens: batch.prefills.reduce((s, p) => s + p.chunkTokens, 0),
      prefills: batch.prefills.length,
      decodes: batch.decodes.length,
      preempted: batch.preempted.length,
    };
    const plannedEndNs = plannedStartNs + durationNs;
    this.timer = this.deps.fireAt(plannedEndNs, () => {
      this.timer = null;
      if (this.stopped) return;
      const firedNs = this.deps.nowNs();
      trace.actualEndNs = firedNs;
      const events = this.scheduler.complete(batch);
      const writes = this.sink(events, batch, actualStartNs);
      if (writes) {
        trace.firstWriteNs = writes.firstWriteNs;
        trace.lastWriteNs = writes.lastWriteNs;
      }
      this.onIteration?.(trace);
      if (this.stopped) return;
      let nextPlannedNs = plannedEndNs;
      if (firedNs - plannedEndNs > RESYNC_AFTER_NS) {
        this.resyncs += 1;
        nextPlannedNs = firedNs;
      }
      this.runIteration(nextPlannedNs, firedNs);
    });
  }
}
