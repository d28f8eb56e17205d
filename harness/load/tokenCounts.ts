// How many tokens each streamed chunk carried, reconciled with what the server said in `usage`
// (or llama.cpp's `timings.predicted_n`). Servers report counts in incompatible ways: a final total
// only, cumulative counts on every chunk (vLLM continuous_usage_stats), per-chunk deltas, or a
// `completion_tokens: 0` placeholder in the first chunk; some stream chunks of several tokens.
// Pure: chunk text lengths and the counts seen, in stream order, in; per-chunk counts out.
//
// A token arrives when the engine emits it, with or without text: vLLM streams `text: ""` (an
// empty delta) for a token whose text is not ready (half a UTF-8 character held back by its
// detokenizer) or never shown (a special token dropped by skip_special_tokens). Such an event is an
// arrival when the server says so: its running count grew, or it lists the token ids it carries.
import { MAX_OUTPUT_TOKENS } from '../timeline/validate.ts';

/** One decoded SSE event of a stream, as engineArrivals() needs it. */
export interface StreamEvent {
  /** Characters of text (content, reasoning) the event carried. */
  chars: number;
  /** Token ids listed in its choices (`token_ids`), or null when the server lists none. */
  tokenIds: number | null;
  /** The running completion-token count it stated (usage or llama.cpp's timings), or null. */
  count: number | null;
  /** It carried at least one choice (a usage-only event with `choices: []` carries no token). */
  hasChoices: boolean;
  /** A choice in it carried a finish_reason. */
  finish: boolean;
}

/** Which events were token arrivals, and each arrival's token count reconciled with the server's counts. */
export interface Arrivals extends Reconciled {
  /** Indices into the events of the token arrivals, in order. */
  events: number[];
  /** Positions (into `events`) of the arrivals that carried no text. */
  textless: number[];
}

/** A completion-token count seen in an event, after `contentBefore` arrival chunks (this event's own included). */
export interface CountObservation {
  contentBefore: number;
  completionTokens: number;
  /** The event carrying the count was itself an arrival chunk. */
  onContent: boolean;
}

export interface Reconciled {
  /** Tokens of each content chunk (every chunk at least 1). */
  perChunk: number[];
  /** exact: every chunk's count was stated by the server; inferred: the total was spread by text length, or assumed 1 per chunk. */
  counts: 'exact' | 'inferred';
  /** How the server reported: not at all, a total, cumulative counts, or per-chunk deltas. */
  reporting: 'none' | 'total' | 'cumulative' | 'delta';
  /** The server's total (null without usage); may differ from the sum of perChunk only with a problem. */
  reportedTotal: number | null;
  /** Why the server's counts could not be reconciled with the stream (a drift), or null. */
  problem: string | null;
}

/** Counts above this many times max_tokens, or above what a timeline may hold, are not believed (and never allocated). */
export const PLAUSIBLE_FACTOR = 100;
export const PLAUSIBLE_MAX = MAX_OUTPUT_TOKENS;

/**
 * The token arrivals of a stream. An event arrives with tokens when it carries text, lists token
 * ids, or advances the running count while counts come on every arrival so far (vLLM's
 * continuous_usage_stats, llama.cpp's timings_per_token); once an arrival came without a count, a
 * later count is a total, not the mark of a new token. A reply whose only token had no text
 * (max_tokens 1 without continuous counts) arrives with its finish event when usage counts a token.
 */
export function engineArrivals(events: readonly StreamEvent[], maxTokens: number): Arrivals {
  const arrivals: number[] = [];
  let highest = 0;
  let everyArrivalCounted = true;
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    const advances = e.count !== null && e.count > highest;
    const arrives = e.chars > 0 || (e.tokenIds ?? 0) > 0 || (e.hasChoices && advances && everyArrivalCounted);
    if (arrives) {
      arrivals.push(i);
      if (e.count === null && e.tokenIds === null) everyArrivalCounted = false;
    }
    if (e.count !== null && e.count > highest) highest = e.count;
  }
  if (arrivals.length === 0 && highest > 0) {
    const finish = events.findIndex((e) => e.hasChoices && e.finish);
    if (finish >= 0) arrivals.push(finish);
  }
  const chunkChars = arrivals.map((i) => events[i].chars);
  const textless: number[] = [];
  chunkChars.forEach((c, j) => c === 0 && textless.push(j));

  // Token ids on every arrival state each one's count outright.
  if (arrivals.length > 0 && arrivals.every((i) => events[i].tokenIds !== null)) {
    const perChunk = arrivals.map((i) => Math.max(1, events[i].tokenIds!));
    const sum = perChunk.reduce((s, k) => s + k, 0);
    const reportedTotal = highest > 0 ? highest : null;
    const problem = reportedTotal === null || reportedTotal === sum ? null : `usage says ${reportedTotal} completion tokens but the token ids streamed add up to ${sum}`;
    return { perChunk, counts: problem === null ? 'exact' : 'inferred', reporting: reportedTotal === null ? 'none' : 'cumulative', reportedTotal, problem, events: arrivals, textless };
  }

  const observed: CountObservation[] = [];
  let seen = 0;
  const isArrival = new Set(arrivals);
  for (let i = 0; i < events.length; i++) {
    if (isArrival.has(i)) seen++;
    const c = events[i].count;
    if (c !== null) observed.push({ contentBefore: seen, completionTokens: c, onContent: isArrival.has(i) });
  }
  return { ...reconcileTokenCounts(chunkChars, observed, maxTokens), events: arrivals, textless };
}

/** Reconciles the chunks' token counts with the observed counts; see the file comment. */
export function reconcileTokenCounts(chunkChars: readonly number[], observed: readonly CountObservation[], maxTokens: number): Reconciled {
  const n = chunkChars.length;
  const ones = () => new Array<number>(n).fill(1);
  const limit = Math.min(PLAUSIBLE_MAX, PLAUSIBLE_FACTOR * Math.max(1, maxTokens));
  for (const o of observed) {
    const v = o.completionTokens;
    if (!Number.isInteger(v) || v < 0) {
      return { perChunk: ones(), counts: 'inferred', reporting: 'none', reportedTotal: null, problem: `usage.completion_tokens ${v} is not a token count` };
    }
    if (v > limit) {
      return { perChunk: ones(), counts: 'inferred', reporting: 'none', reportedTotal: v, problem: `usage says ${v} completion tokens, beyond any plausible count for max_tokens ${maxTokens} (limit ${limit}); ${n} chunks were streamed` };
    }
  }
  // A zero says nothing about tokens (a placeholder before any output, or an event without any).
  const obs = observed.filter((o) => o.completionTokens > 0);
  if (obs.length === 0) return { perChunk: ones(), counts: 'inferred', reporting: 'none', reportedTotal: null, problem: null };

  let nonDecreasing = true;
  let sum = 0;
  for (let i = 0; i < obs.length; i++) {
    sum += obs[i].completionTokens;
    if (i > 0 && obs[i].completionTokens < obs[i - 1].completionTokens) nonDecreasing = false;
  }
  const last = obs[obs.length - 1].completionTokens;
  // Cumulative counts never fall and end at least at one token per chunk; per-chunk deltas fall
  // back (1, 1, 2, 1) or stay below the chunk count. Ambiguous short runs (1, 2) read as cumulative, as vLLM sends.
  if (!(nonDecreasing && last >= n) && obs.length >= 2 && sum >= n) return fromDeltas(chunkChars, obs);
  return fromCumulative(chunkChars, obs, last);
}

function fromCumulative(chunkChars: readonly number[], obs: readonly CountObservation[], total: number): Reconciled {
  const n = chunkChars.length;
  const perChunk = new Array<number>(n).fill(1);
  const reporting = obs.length === 1 ? 'total' : 'cumulative';
  let exact = true;
  let pos = 0;
  let value = 0;
  for (const o of obs) {
    const k = o.contentBefore - pos;
    const d = o.completionTokens - value;
    // A count below one token per chunk so far cannot be cumulative through this event: skip it.
    if (d < k) continue;
    // A count on an event that is no arrival (a total after uncounted chunks, a repeat): the
    // next count covers its tokens.
    if (k === 0) continue;
    if (d > k) {
      spread(perChunk, chunkChars, pos, o.contentBefore, d - k);
      if (k > 1) exact = false;
    }
    pos = o.contentBefore;
    value = o.completionTokens;
  }
  if (pos < n) exact = false;
  if (pos === n && n > 0 && total > value) {
    // Tokens after the last text (a stop token, say): they end with the last chunk.
    perChunk[n - 1] += total - value;
    exact = false;
  }
  const counted = perChunk.reduce((s, k) => s + k, 0);
  const problem = counted === total ? null : `usage says ${total} completion tokens but ${n} chunks${counted !== n ? ` (${counted} tokens with the counts placed)` : ''} were streamed`;
  return { perChunk, counts: exact && problem === null ? 'exact' : 'inferred', reporting, reportedTotal: total, problem };
}

function fromDeltas(chunkChars: readonly number[], obs: readonly CountObservation[]): Reconciled {
  const n = chunkChars.length;
  const perChunk = new Array<number>(n).fill(1);
  const stated = new Array<boolean>(n).fill(false);
  let total = 0;
  let exact = true;
  for (const o of obs) {
    total += o.completionTokens;
    const i = o.contentBefore - 1;
    if (i < 0) {
      exact = false;
      continue;
    }
    if (o.onContent && !stated[i]) {
      perChunk[i] = o.completionTokens;
      stated[i] = true;
    } else {
      perChunk[i] += o.completionTokens;
      exact = false;
    }
  }
  if (stated.includes(false)) exact = false;
  const counted = perChunk.reduce((s, k) => s + k, 0);
  const problem = counted === total ? null : `usage deltas add up to ${total} completion tokens but ${n} chunks (${counted} tokens) were streamed`;
  return { perChunk, counts: exact && problem === null ? 'exact' : 'inferred', reporting: 'delta', reportedTotal: total, problem };
}

/**
 * Adds `extra` tokens over chunks [from, to): where a chunk's text is longer than a typical
 * chunk's, that is where the extra tokens were; without such a difference they go evenly, the
 * latest chunks first. Largest-remainder rounding, so the sum is exact.
 */
function spread(perChunk: number[], chunkChars: readonly number[], from: number, to: number, extra: number): void {
  const typical = median(chunkChars);
  const weights: number[] = [];
  let total = 0;
  for (let i = from; i < to; i++) {
    const w = Math.max(0, chunkChars[i] - typical);
    weights.push(w);
    total += w;
  }
  if (total === 0) {
    weights.fill(1);
    total = weights.length;
  }
  const share = weights.map((w) => (extra * w) / total);
  let given = 0;
  for (let j = 0; j < share.length; j++) {
    const whole = Math.floor(share[j]);
    perChunk[from + j] += whole;
    given += whole;
  }
  const order = share.map((s, j) => j).sort((a, b) => share[b] - Math.floor(share[b]) - (share[a] - Math.floor(share[a])) || b - a);
  for (let r = 0; r < extra - given; r++) perChunk[from + order[r]] += 1;
}

function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor((s.length - 1) / 2)];
}
