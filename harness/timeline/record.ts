// The per-request token timeline of SPEC §4: the raw record every metric is derived from.
// Times are seconds from the probe's start (microsecond resolution when written).

export type RequestStatus = 'ok' | 'error' | 'timeout' | 'cancelled';

/**
 * One token arrival: [receive time in s from probe start, number of tokens in the chunk]. A chunk
 * is an event in which the engine emitted tokens, with or without text (see textlessChunks).
 */
export type Chunk = [receivedS: number, tokens: number];

/**
 * Which arrival of a token the metrics measure: `engine`, when the engine emitted it (every chunk);
 * `visible`, when its text reached the reader (a textless chunk's tokens count with the next chunk
 * that carries text).
 */
export type TokenArrivals = 'engine' | 'visible';
export const TOKEN_ARRIVALS: readonly TokenArrivals[] = ['engine', 'visible'];

export interface TimelineRecord {
  id: string;
  /** Planned arrival time; TTFT is measured from here so client lag is never hidden. */
  scheduledS: number;
  /** When the request was actually written to the socket. */
  sentS: number;
  promptTokens: number;
  maxTokens: number;
  outputTokens: number;
  chunks: Chunk[];
  status: RequestStatus;
  httpStatus: number | null;
  error: string | null;
  /** Optional extras (kept when present, never required by readers). */
  /** Prompt/output token counts the server reported in `usage`, next to the requested ones. */
  usagePromptTokens?: number | null;
  usageOutputTokens?: number | null;
  /** Engine emit time of each chunk (CLOCK_MONOTONIC ns as decimal string) when the engine sends one. */
  emitNs?: string[];
  /** Time spent waiting for a concurrency slot before sending (counts in TTFT). */
  slotWaitS?: number;
  /**
   * exact: the server stated every chunk's token count (or the total equals the chunk count);
   * inferred: counts were spread over chunks by text length, or one token per chunk was assumed.
   * Absent in older timelines: read as inferred.
   */
  tokenCounts?: 'exact' | 'inferred';
  /** Why the server's usage could not be reconciled with the streamed chunks (a token-count drift). */
  tokenCountProblem?: string;
  /** The request was sent again on a fresh connection: its reused keep-alive connection closed before the server read it. */
  retried?: boolean;
  /** Events the server sent after `data: [DONE]` (ignored). */
  eventsAfterDone?: number;
  /**
   * Indices (ascending) of the chunks whose tokens carried no text: vLLM's empty `text: ""` chunks
   * for half a UTF-8 character held back or a special token not shown. Absent when every chunk had
   * text, and in timelines written before engine arrivals were recorded (whose chunks are the
   * text-carrying ones): both arrival views are then the same.
   */
  textlessChunks?: number[];
  [extra: string]: unknown;
}

export const REQUEST_STATUSES: readonly RequestStatus[] = ['ok', 'error', 'timeout', 'cancelled'];

/**
 * The arrivals metrics read: every chunk for `engine`; for `visible`, the chunks that carried
 * text, each with the tokens of the textless chunks before it (tokens after the last text count
 * with that last text chunk, as they end with it). Pure; returns `chunks` itself when they agree.
 */
export function arrivalChunks(r: Pick<TimelineRecord, 'chunks' | 'textlessChunks'>, arrivals: TokenArrivals): Chunk[] {
  const textless = r.textlessChunks;
  if (arrivals === 'engine' || textless === undefined || textless.length === 0) return r.chunks;
  const hidden = new Set(textless);
  const out: Chunk[] = [];
  let pending = 0;
  r.chunks.forEach(([t, k], i) => {
    if (hidden.has(i)) pending += k;
    else {
      out.push([t, k + pending]);
      pending = 0;
    }
  });
  if (pending > 0 && out.length > 0) out[out.length - 1] = [out[out.length - 1][0], out[out.length - 1][1] + pending];
  return out;
}
