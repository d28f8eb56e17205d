// The state of one generation request inside the engine (one prompt of an HTTP request).
// Phases: waiting → prefill → decode → finished; a preempted request goes back to waiting and
// recomputes its prompt plus the tokens generated so far.

export type RequestPhase = 'waiting' | 'prefill' | 'decode' | 'finished';
export type FinishReason = 'length' | 'stop' | 'abort';

// Engine-side request; mutated only by the scheduler.
export interface SimRequest {
  /** Arrival order; lower ids have priority (FIFO admission, latest arrival preempted first). */
  seq: number;
  promptTokens: number;
  /** Output length at which the request ends (max_tokens, or the EOS position when not ignore_eos). */
  targetOutputTokens: number;
  /** Why it ends at that length: `length` at max_tokens, `stop` at EOS. */
  endReason: 'length' | 'stop';
  phase: RequestPhase;
  generatedTokens: number;
  /** Tokens whose KV entries are computed and cached. */
  kvTokens: number;
  /** Tokens this (re)prefill must compute in total (prompt + tokens generated before preemption). */
  prefillTargetTokens: number;
  blocks: number;
  preemptions: number;
}

// A fresh request in the waiting phase.
export function newSimRequest(seq: number, promptTokens: number, targetOutputTokens: number, endReason: 'length' | 'stop'): SimRequest {
  return {
    seq, promptTokens, targetOutputTokens, endReason,
    phase: 'waiting', generatedTokens: 0, kvTokens: 0, prefillTargetTokens: promptTokens, blocks: 0, preemptions: 0,
  };
}
