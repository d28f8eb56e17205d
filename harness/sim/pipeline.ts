// Pipeline parallelism (PP) as vLLM's V0 engine runs it: the model's layers split evenly over S
// stages, S micro-batches in flight, one scheduler ("virtual engine") per micro-batch with 1/S of
// the KV blocks, each request placed on the micro-batch with the fewest unfinished requests and
// kept there. The batch cap is divided among the micro-batches, as Vidur's search space divides it.
//
// The model's one assumption: the stages are balanced and never wait for one another, so each
// micro-batch's iteration lasts the whole model's time for its own batch (the stages in turn) plus
// S − 1 activation hops between stages (costModel.ts), and the S micro-batches run at once. That
// is PP at its best (no pipeline bubbles when micro-batches differ); with S = 1 it is SimEngine.
import type { SimRequest } from './request.ts';
import { SimEngine, type EngineConfig, type EngineDeps, type IterationTrace, type TokenSink } from './engine.ts';

/** What the server and the twin read of an engine's scheduler(s). */
export interface SchedulerView {
  readonly running: { length: number };
  readonly waiting: { length: number };
  readonly kv: { usedFraction: number };
  readonly preemptionsTotal: number;
  readonly idle: boolean;
}

/** The engine as its users drive it: one SimEngine, or S of them for S pipeline stages. */
export interface Engine {
  submit(req: SimRequest): void;
  abort(req: SimRequest): void;
  stop(): void;
  readonly iterations: number;
  readonly scheduler: SchedulerView;
}

/** The micro-batch engine's config: 1/S of the batch cap and of the KV blocks. */
export function microBatchConfig(config: EngineConfig): EngineConfig {
  const s = config.pipelineParallel ?? 1;
  if (s === 1) return config;
  return {
    ...config,
    limits: { ...config.limits, maxNumSeqs: Math.max(1, Math.floor(config.limits.maxNumSeqs / s)) },
    totalKvBlocks: Math.floor(config.totalKvBlocks / s),
  };
}

class PipelinedEngine implements Engine {
  private readonly lanes: SimEngine[];
  private readonly laneOf = new Map<SimRequest, SimEngine>();
  private readonly unfinished: number[];
  readonly scheduler: SchedulerView;

  constructor(config: EngineConfig, deps: EngineDeps, sink: TokenSink, onIteration?: (trace: IterationTrace) => void) {
    const lane = microBatchConfig(config);
    const s = config.pipelineParallel ?? 1;
    this.unfinished = new Array<number>(s).fill(0);
    this.lanes = Array.from({ length: s }, (_, i) =>
      new SimEngine(lane, deps, (events, batch, startNs) => {
        for (const e of events) if (e.finished) this.finish(e.req, i);
        return sink(events, batch, startNs);
      }, onIteration),
    );
    const lanes = this.lanes;
    const sum = (f: (e: SimEngine) => number) => lanes.reduce((t, e) => t + f(e), 0);
    this.scheduler = {
      get running() { return { length: sum((e) => e.scheduler.running.length) }; },
      get waiting() { return { length: sum((e) => e.scheduler.waiting.length) }; },
      get kv() { return { usedFraction: sum((e) => e.scheduler.kv.usedFraction) / lanes.length }; },
      get preemptionsTotal() { return sum((e) => e.scheduler.preemptionsTotal); },
      get idle() { return lanes.every((e) => e.scheduler.idle); },
    };
  }

  get iterations(): number {
    return this.lanes.reduce((t, e) => t + e.iterations, 0);
  }

  submit(req: SimRequest): void {
    // vLLM V0 places a request on the virtual engine with the fewest unfinished requests (lowest index on ties).
    let best = 0;
    for (let i = 1; i < this.lanes.length; i++) if (this.unfinished[i] < this.unfinished[best]) best = i;
    this.unfinished[best] += 1;
    this.laneOf.set(req, this.lanes[best]);
    this.lanes[best].submit(req);
  }

  abort(req: SimRequest): void {
    const lane = this.laneOf.get(req);
    if (!lane) return;
    lane.abort(req);
    this.finish(req, this.lanes.indexOf(lane));
  }

  stop(): void {
    for (const e of this.lanes) e.stop();
  }

  private finish(req: SimRequest, lane: number): void {
    if (!this.laneOf.delete(req)) return;
    this.unfinished[lane] -= 1;
  }
}

/** The engine for a config: SimEngine for one stage, the micro-batch engines for several. */
export function createEngine(config: EngineConfig, deps: EngineDeps, sink: TokenSink, onIteration?: (trace: IterationTrace) => void): Engine {
  return (config.pipelineParallel ?? 1) === 1 ? new SimEngine(config, deps, sink, onIteration) : new PipelinedEngine(config, deps, sink, onIteration);
}
