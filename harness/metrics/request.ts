// Per-request metrics of SPEC §5, derived from one raw timeline record in one pass over its chunks.
// Definitions agree with vLLM's benchmark (benchmarks/lib/endpoint_request_func.py and
// benchmark_serving.py): ITL = gaps between streamed chunks, excluding TTFT; TPOT = (E2E − TTFT) /
// (outputTokens − 1). TTFT here starts at the planned arrival (scheduledS) so client lag is never
// hidden; ttftFromSentS is vLLM's TTFT (from the moment the request was sent).
import { arrivalChunks, type RequestStatus, type TimelineRecord, type TokenArrivals } from '../timeline/record.ts';
import { fluidityOfRange, type TieRule } from './fluidity.ts';

// The recipe's search.probe.tokenArrivals names one of these: which arrival the metrics measure.
export { TOKEN_ARRIVALS, type TokenArrivals } from '../timeline/record.ts';

/** Everything analyze, the probe summary and early stop need about one request. */
export interface RequestMetrics {
  id: string;
  status: RequestStatus;
  /** False when the request did not end ok or streamed no token: it fails every SLO. */
  succeeded: boolean;
  promptTokens: number;
  outputTokens: number;
  /** Tokens actually seen in chunks (can differ from outputTokens when usage disagrees). */
  receivedTokens: number;
  scheduledS: number;
  sentS: number;
  dispatchLagS: number;
  ttftS: number | null;
  ttftFromSentS: number | null;
  /** Null for one-token requests (undefined, as in vLLM) and for requests without tokens. */
  tpotS: number | null;
  e2eS: number | null;
  e2eFromSentS: number | null;
  normalizedLatencyS: number | null;
  /** Inter-chunk gaps after the first chunk (vLLM's ITL). */
  itlS: number[];
  /** Time between consecutive tokens: each chunk of k tokens gives its gap and k − 1 zeros. */
  tbtSamplesS: number[];
  tbtMaxS: number | null;
  /** Deadline of the first token used here: predicted prefill + TTFT slack, or --ttft-deadline. */
  dpS: number;
  tbtDeadlineS: number;
  /** 0 for a failed request, whatever it streamed before failing. */
  fluidity: number;
  deadlinesTotal: number;
  deadlinesMissed: number;
  /** TTFT − predicted prefill D_p(P) (without slack); null without a prefill prediction. */
  schedulingDelayS: number | null;
  /** Time the request ended, from probe start: last chunk, else when it was sent. */
  endS: number;
  httpStatus: number | null;
  error: string | null;
}

/** Deadlines used for one request. prefillS (D_p(P) without slack) enables scheduling delay. */
export interface RequestMetricsOptions {
  dpS: number;
  tbtDeadlineS: number;
  prefillS?: number;
  /** Which arrival of each token is measured (record.ts); default engine. */
  arrivals?: TokenArrivals;
  /** How a token exactly on its deadline counts (fluidity.ts); default met, as Metron's code. */
  tieRule?: TieRule;
}

/** Computes every per-request metric of one timeline record; O(chunks). */
export function computeRequestMetrics(record: TimelineRecord, opts: RequestMetricsOptions): RequestMetrics {
  const { scheduledS, sentS } = record;
  const itlS: number[] = [];
  const tbtSamplesS: number[] = [];
  let firstS = NaN;
  let lastS = NaN;
  let received = 0;
  let tbtMaxS: number | null = null;
  for (const [t, k] of arrivalChunks(record, opts.arrivals ?? 'engine')) {
    // A chunk without tokens (a usage-only chunk) is not a token arrival.
    if (k <= 0) continue;
    if (received === 0) {
      firstS = t;
    } else {
      const gap = t - lastS;
      itlS.push(gap);
      tbtSamplesS.push(gap);
      if (tbtMaxS === null || gap > tbtMaxS) tbtMaxS = gap;
    }
    for (let z = 1; z < k; z++) tbtSamplesS.push(0);
    if (k > 1 && tbtMaxS === null) tbtMaxS = 0;
    received += k;
    lastS = t;
  }
  const hasTokens = received > 0;
  const succeeded = record.status === 'ok' && hasTokens;
  const outputTokens = record.outputTokens > 0 ? record.outputTokens : received;
  const ttftS = hasTokens ? firstS - scheduledS : null;
  const e2eS = hasTokens ? lastS - scheduledS : null;
  const tpotS = ttftS !== null && e2eS !== null && outputTokens > 1 ? (e2eS - ttftS) / (outputTokens - 1) : null;
  const deadlines = fluidityOfRange(
    hasTokens ? (ttftS as number) : NaN,
    tbtSamplesS,
    0,
    tbtSamplesS.length,
    opts.dpS,
    opts.tbtDeadlineS,
    opts.tieRule,
  );
  return {
    id: record.id,
    status: record.status,
    succeeded,
    promptTokens: record.promptTokens,
    outputTokens,
    receivedTokens: received,
    scheduledS,
    sentS,
    dispatchLagS: sentS - scheduledS,
    ttftS,
    ttftFromSentS: hasTokens ? firstS - sentS : null,
    tpotS,
    e2eS,
    e2eFromSentS: hasTokens ? lastS - sentS : null,
    normalizedLatencyS: e2eS !== null && outputTokens > 0 ? e2eS / outputTokens : null,
    itlS,
    tbtSamplesS,
    tbtMaxS,
    dpS: opts.dpS,
    tbtDeadlineS: opts.tbtDeadlineS,
    fluidity: succeeded ? deadlines.fluidity : 0,
    deadlinesTotal: deadlines.total,
    deadlinesMissed: deadlines.missed,
    schedulingDelayS: ttftS !== null && opts.prefillS !== undefined ? ttftS - opts.prefillS : null,
    endS: hasTokens ? lastS : sentS,
    httpStatus: record.httpStatus,
    error: record.error,
  };
}
