// The per-request token timeline of SPEC §4: the raw record every metric is derived from.
// Times are seconds from the probe's start (microsecond resolution when written).

export type RequestStatus = 'ok' | 'error' | 'timeout' | 'cancelled';

/** One streamed chunk: [receive time in s from probe start, number of tokens in the chunk]. */
export type Chunk = [receivedS: number, tokens: number];

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
  [extra: string]: unknown;
}

export const REQUEST_STATUSES: readonly RequestStatus[] = ['ok', 'error', 'timeout', 'cancelled'];
