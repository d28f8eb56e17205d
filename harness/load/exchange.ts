// What the receiving side of a request hands over: the bytes exactly as read, each read's receive
// time, and how the exchange ended. Plain data (typed arrays) so it crosses thread boundaries.

/** How the transport saw the exchange end; decodeExchange() turns it into a timeline status. */
export type EndReason = 'end' | 'timeout' | 'stall' | 'cancelled' | 'error';

/** One request's raw exchange; times are ns from the probe's start (exact in a float64 for 104 days). */
export interface RawExchange {
  id: string;
  index: number;
  scheduledNs: number;
  /** When the request was handed to the socket (null when it never was). */
  sentNs: number | null;
  /** Time spent waiting for a concurrency slot after `scheduledNs`. */
  slotWaitNs: number;
  httpStatus: number | null;
  contentType: string | null;
  /** Receive time of each read (taken before anything looks at the bytes) and where it ends in `bytes`. */
  readNs: Float64Array;
  readEnd: Int32Array;
  bytes: Uint8Array;
  endNs: number;
  endReason: EndReason;
  /** Transport-level error text (connection refused, reset, timeout detail). */
  error: string | null;
  promptTokens: number;
  maxTokens: number;
  /** Sent a second time on a fresh connection after its reused connection closed unread. */
  retried?: boolean;
}
