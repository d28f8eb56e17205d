// The two batching policies of the papers, over the same queues and KV pool. Pure: the engine
// loop calls next() at each iteration boundary and complete() when the iteration's time is up.
//  - vllm: prefill-prioritizing. Whole prompts are admitted FIFO up to the token budget; an
//    iteration with prefills runs no decodes (the stalls Metron measures).
//  - sarathi: every iteration runs all decodes, then fills the chunk budget with prefill chunks.
//  - llamacpp: llama.cpp's server, `--parallel` fixed slots. A request waits for a free slot (no
//    KV preemption: each slot owns ctx/parallel tokens of context). Each server step batches one
//    token per generating slot, then prompt tokens of prompt-phase slots, in slot order, until the
//    batch holds n_batch tokens; a prompt longer than what is left is split across steps.
//    (llama.cpp b10573, tools/server/server-context.cpp: update_slots() → pre_decode() adds the
//    generating slots' sampled tokens first, then "batch any pending prompts without exceeding
//    n_batch"; a task with no free slot is deferred by get_available_slot() returning none.)
import type { BatchShape } from './costModel.ts';
import { blocksFor, type KvBlockPool } from './kvCache.ts';
import type { SimRequest } from './request.ts';

export type SchedulerPolicy = 'vllm' | 'sarathi' | 'llamacpp';

// Limits shared by both policies.
export interface SchedulerLimits {
  policy: SchedulerPolicy;
  maxNumSeqs: number;
  /** vllm: prompt tokens per prefill iteration. */
  maxNumBatchedTokens: number;
  /** sarathi: tokens (decodes + prefill chunks) per iteration. */
  chunkSize: number;
  /** llamacpp: the slots are maxNumSeqs, n_batch is maxNumBatchedTokens, and each slot holds this many tokens (ctx / parallel). */
  slotContextTokens?: number;
}

// One prefill chunk of a scheduled batch.
export interface ScheduledPrefill {
  req: SimRequest;
  chunkTokens: number;
  contextTokens: number;
  completes: boolean;
}

// What one iteration runs.
export interface ScheduledBatch {
  prefills: ScheduledPrefill[];
  decodes: SimRequest[];
  /** Requests preempted while forming this batch (their KV was freed). */
  preempted: SimRequest[];
  /** Requests scheduled for the first time ever in this batch (queue time ends now). */
  firstScheduled: SimRequest[];
}

// One token produced by an iteration.
export interface TokenEvent {
  req: SimRequest;
  /** 0-based index of the token in the request's output. */
  tokenIndex: number;
  finished: boolean;
}

// The batch's shape for the cost model.
export function batchShape(batch: ScheduledBatch): BatchShape {
  return {
    prefills: batch.prefills.map((p) => ({ chunkTokens: p.chunkTokens, contextTokens: p.contextTokens, completes: p.completes })),
    decodeKvTokens: batch.decodes.map((r) => r.kvTokens + 1),
  };
}

// Queues, KV pool and the policy; counts preemptions.
export class Scheduler {
  readonly waiting: SimRequest[] = [];
  readonly running: SimRequest[] = [];
  preemptionsTotal = 0;

  constructor(
    private readonly limits: SchedulerLimits,
    readonly kv: KvBlockPool,
  ) {}

  add(req: SimRequest): void {
    req.phase = 'waiting';
    this.waiting.push(req);
  }

  /** Drops a request (client went away); frees its blocks. */
  abort(req: SimRequest): void {
    const w = this.waiting.indexOf(req);
    if (w >= 0) this.waiting.splice(w, 1);
    const r = this.running.indexOf(req);
    if (r >= 0) this.running.splice(r, 1);
    this.kv.release(req.blocks);
    req.blocks = 0;
    req.phase = 'finished';
  }

  get idle(): boolean {
    return this.waiting.length === 0 && this.running.length === 0;
  }

  /** Forms the next iteration's batch, or null when there is nothing to run. */
  next(): ScheduledBatch | null {
    const batch: ScheduledBatch = { prefills: [], decodes: [], preempted: [], firstScheduled: [] };
    if (this.limits.policy === 'llamacpp') this.fillSlots(batch);
    else if (this.limits.policy === 'vllm') {
      this.admitPrefills(batch, this.limits.maxNumBatchedTokens, false);
      if (batch.prefills.length === 0) this.scheduleDecodes(batch);
    } else {
      this.scheduleDecodes(batch);
      const budget = this.continuePrefills(batch, this.limits.chunkSize - batch.decodes.length);
      if (budget > 0) this.admitPrefills(batch, budget, true);
    }
    if (batch.prefills.length === 0 && batch.decodes.length === 0) return null;
    return batch;
  }

  /** Applies a finished iteration: advances KV and output counts, finishes requests. */
  complete(batch: ScheduledBatch): TokenEvent[] {
    const events: TokenEvent[] = [];
    for (const p of batch.prefills) {
      const r = p.req;
      if (r.phase !== 'prefill') continue; // aborted meanwhile
      r.kvTokens += p.chunkTokens;
      if (p.completes) {
        r.phase = 'decode';
        events.push(this.emit(r));
      }
    }
    for (const r of batch.decodes) {
      if (r.phase !== 'decode') continue;
      r.kvTokens += 1;
      events.push(this.emit(r));
    }
    return events;
  }

  private emit(r: SimRequest): TokenEvent {
    const tokenIndex = r.generatedTokens;
    r.generatedTokens += 1;
    const finished = r.generatedTokens >= r.targetOutputTokens;
    if (finished) {
      this.running.splice(this.running.indexOf(r), 1);
      this.kv.release(r.blocks);
      r.blocks = 0;
      r.phase = 'finished';
    }
    return { req: r, tokenIndex, finished };
  }

  /** Running requests still in prefill take their next chunks, oldest first, within `budget` tokens; returns what is left. */
  private continuePrefills(batch: ScheduledBatch, budget: number): number {
    for (const r of this.running) {
      if (budget <= 0) break;
      if (r.phase !== 'prefill') continue;
      const chunk = Math.min(r.prefillTargetTokens - r.kvTokens, budget);
      batch.prefills.push({ req: r, chunkTokens: chunk, contextTokens: r.kvTokens, completes: r.kvTokens + chunk === r.prefillTargetTokens });
      budget -= chunk;
    }
    return budget;
  }

  /** llama.cpp's step: every generating slot's next token, then prompt tokens up to n_batch. */
  private fillSlots(batch: ScheduledBatch): void {
    for (const r of this.running) if (r.phase === 'decode') batch.decodes.push(r);
    let budget = this.continuePrefills(batch, this.limits.maxNumBatchedTokens - batch.decodes.length);
    // A free slot takes the oldest waiting request; its prompt starts in this step if n_batch has room.
    while (this.waiting.length > 0 && this.running.length < this.limits.maxNumSeqs) {
      const r = this.waiting.shift()!;
      r.kvTokens = 0;
      r.prefillTargetTokens = r.promptTokens;
      // The slot's context ends generation (llama-server stops a request at n_ctx_slot without context shift).
      const slotTokens = this.limits.slotContextTokens ?? Infinity;
      r.targetOutputTokens = Math.max(1, Math.min(r.targetOutputTokens, slotTokens - r.promptTokens));
      r.phase = 'prefill';
      this.running.push(r);
      batch.firstScheduled.push(r);
      if (budget <= 0) continue;
      const chunk = Math.min(r.promptTokens, budget);
      batch.prefills.push({ req: r, chunkTokens: chunk, contextTokens: 0, completes: chunk === r.promptTokens });
      budget -= chunk;
    }
  }

  /** FIFO admission of waiting prompts within a token budget; chunked when `chunked`. */
  private admitPrefills(batch: ScheduledBatch, budgetTokens: number, chunked: boolean): void {
    let budget = budgetTokens;
    while (this.waiting.length > 0 && budget > 0 && this.running.length < this.limits.maxNumSeqs) {
      const r = this.waiting[0];
      const target = r.promptTokens + r.generatedTokens;
      if (!chunked && target > budget) break;
      const blocks = blocksFor(target);
      if (!this.kv.canAdmit(blocks)) break;
      this.waiting.shift();
      this.kv.allocate(blocks);
      r.blocks = blocks;
      r.kvTokens = 0;
      r.prefillTargetTokens = target;
      r.phase = 'prefill';
      this.insertRunning(r);
      if (r.generatedTokens === 0 && r.preemptions === 0) batch.firstScheduled.push(r);
      const chunk = Math.min(target, budget);
      batch.prefills.push({ req: r, chunkTokens: chunk, contextTokens: 0, completes: chunk === target });
      budget -= chunk;
    }
  }

  /** Every decoding request gets a KV slot for its next token; when blocks run out the latest
   *  arrival is preempted (recompute), possibly the requester itself. */
  private scheduleDecodes(batch: ScheduledBatch): void {
    const granted = new Set<SimRequest>();
    for (const r of [...this.running]) {
      if (r.phase !== 'decode') continue;
      const need = blocksFor(r.kvTokens + 1) - r.blocks;
      while (need > 0 && !this.kv.canAllocate(need)) {
        const victim = this.latestNotGranted(granted);
        this.preempt(victim);
        batch.preempted.push(victim);
        if (victim === r) break;
      }
      if (r.phase !== 'decode') continue;
      if (need > 0) {
        this.kv.allocate(need);
        r.blocks += need;
      }
      granted.add(r);
      batch.decodes.push(r);
    }
  }

  private latestNotGranted(granted: Set<SimRequest>): SimRequest {
    for (let i = this.running.length - 1; i >= 0; i--) {
      if (!granted.has(this.running[i])) return this.running[i];
    }
    throw new Error('scheduler: no request left to preempt');
  }

  private preempt(r: SimRequest): void {
    this.running.splice(this.running.indexOf(r), 1);
    this.kv.release(r.blocks);
    r.blocks = 0;
    r.kvTokens = 0;
    r.phase = 'waiting';
    r.preemptions += 1;
    this.preemptionsTotal += 1;
    let i = 0;
    while (i < this.waiting.length && this.waiting[i].seq < r.seq) i++;
    this.waiting.splice(i, 0, r);
  }

  private insertRunning(r: SimRequest): void {
    let i = this.running.length;
    while (i > 0 && this.running[i - 1].seq > r.seq) i--;
    this.running.splice(i, 0, r);
  }
}
