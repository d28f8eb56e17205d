// Turns a raw exchange into its timeline record after the request has ended (never on the hot
// path): SSE framing, JSON of each event, token arrivals (tokenCounts.ts: with or without text),
// tokens per chunk, usage, the engine's emit times and the final status. Pure. Works for any OpenAI-compatible server (SPEC §8): usage in the finish chunk
// or a trailing `choices: []` chunk, continuous usage, non-streamed JSON answers, error events.
import { SseParser } from './sse.ts';
import type { RawExchange } from './exchange.ts';
import { engineArrivals, type StreamEvent } from './tokenCounts.ts';
import type { Chunk, RequestStatus, TimelineRecord } from '../timeline/record.ts';

/** The record plus what only the client-health check needs (receive − emit per chunk and each such chunk's receive time, ns). */
export interface Decoded {
  record: TimelineRecord;
  recvMinusEmitNs: number[];
  recvNs: number[];
}

interface ChoiceLike {
  text?: unknown;
  /** The ids of the tokens this chunk carries, where the server lists them (vLLM's return_token_ids). */
  token_ids?: unknown;
  delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown } | null;
  message?: { content?: unknown } | null;
  finish_reason?: unknown;
}

interface Usage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
}

const textLength = (v: unknown) => (typeof v === 'string' ? v.length : 0);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Decodes the exchange; `startNs` is the probe start on the engine's clock (for receive − emit). */
export function decodeExchange(raw: RawExchange, startNs: bigint): Decoded {
  // Every event with choices or a count, as it arrives: receive time, the engine's emit stamp if
  // any, and what engineArrivals() needs to tell which carried tokens.
  const events: StreamEvent[] = [];
  const eventNs: number[] = [];
  const eventEmit: (string | null)[] = [];
  let usagePrompt: number | null = null;
  let sawDone = false;
  let sawFinish = false;
  let streamError: string | null = null;
  let malformed: string | null = null;
  let eventCount = 0;

  const onJson = (obj: Record<string, unknown>, tNs: number) => {
    if (obj.error !== undefined && obj.error !== null) {
      streamError ??= errorText(obj.error);
      return;
    }
    const usage = (obj.usage ?? null) as Usage | null;
    const choices = Array.isArray(obj.choices) ? (obj.choices as ChoiceLike[]) : [];
    let chars = 0;
    let tokenIds: number | null = null;
    let finish = false;
    for (const c of choices) {
      chars += textLength(c.text) + textLength(c.delta?.content) + textLength(c.delta?.reasoning_content) + textLength(c.delta?.reasoning) + textLength(c.message?.content);
      if (Array.isArray(c.token_ids)) tokenIds = (tokenIds ?? 0) + c.token_ids.length;
      if (c.finish_reason !== null && c.finish_reason !== undefined) finish = true;
    }
    if (finish) sawFinish = true;
    if (usage) usagePrompt = num(usage.prompt_tokens) ?? usagePrompt;
    // llama.cpp states its running count in `timings.predicted_n` (every chunk with timings_per_token).
    const count = (usage ? num(usage.completion_tokens) : null) ?? num((obj.timings as { predicted_n?: unknown } | undefined)?.predicted_n);
    if (choices.length === 0 && count === null) return;
    events.push({ chars, tokenIds, count, hasChoices: choices.length > 0, finish });
    eventNs.push(tNs);
    const e = obj.fluidcap_emit_ns;
    eventEmit.push((typeof e === 'string' && /^\d+$/.test(e)) || (typeof e === 'number' && Number.isSafeInteger(e)) ? String(e) : null);
  };

  const contentType = raw.contentType?.toLowerCase() ?? null;
  const isStream = contentType === null || contentType.includes('text/event-stream');
  const ok2xx = raw.httpStatus !== null && raw.httpStatus >= 200 && raw.httpStatus < 300;
  let bodyText = '';
  let afterDone = 0;
  if (ok2xx && isStream) {
    const parser = new SseParser();
    const decoder = new TextDecoder();
    let from = 0;
    for (let r = 0; r < raw.readNs.length; r++) {
      const tNs = raw.readNs[r];
      const text = decoder.decode(raw.bytes.subarray(from, raw.readEnd[r]), { stream: true });
      from = raw.readEnd[r];
      parser.feed(text, (ev) => {
        const data = ev.data.trim();
        // Some proxies keep a stream alive with an empty `data:` line: no content, no answer, no fault.
        if (data === '' && ev.event !== 'error') return;
        // [DONE] ends the stream: anything a server sends after it is not part of the answer.
        if (sawDone) {
          afterDone++;
          return;
        }
        eventCount++;
        if (data === '[DONE]') {
          sawDone = true;
          return;
        }
        if (ev.event === 'error') {
          streamError ??= data.slice(0, 300);
          return;
        }
        let obj: unknown;
        try {
          obj = JSON.parse(data);
        } catch {
          malformed ??= `malformed SSE data in event ${eventCount}: ${JSON.stringify(data.slice(0, 80))}`;
          return;
        }
        if (obj !== null && typeof obj === 'object') onJson(obj as Record<string, unknown>, tNs);
        else malformed ??= `SSE data in event ${eventCount} is not a JSON object: ${JSON.stringify(data.slice(0, 80))}`;
      });
    }
  } else {
    bodyText = new TextDecoder().decode(raw.bytes);
    if (ok2xx && raw.endReason === 'end') {
      // A server that ignored `stream: true` answers with one JSON body: one chunk at the last read.
      try {
        const obj = JSON.parse(bodyText) as Record<string, unknown>;
        const lastNs = raw.readNs.length > 0 ? raw.readNs[raw.readNs.length - 1] : raw.endNs;
        onJson({ ...obj, choices: obj.choices ?? [] }, lastNs);
        sawDone = true;
      } catch {
        malformed = `2xx answer is neither an event stream nor JSON: ${JSON.stringify(bodyText.slice(0, 80))}`;
      }
    }
  }

  const reconciled = engineArrivals(events, raw.maxTokens);
  const chunks: Chunk[] = reconciled.events.map((ev, j) => [eventNs[ev] / 1e9, reconciled.perChunk[j]]);
  const emitNs: string[] = [];
  const recvMinusEmitNs: number[] = [];
  const recvNs: number[] = [];
  for (const ev of reconciled.events) {
    const e = eventEmit[ev];
    if (e === null) continue;
    emitNs.push(e);
    recvMinusEmitNs.push(Number(startNs + BigInt(eventNs[ev]) - BigInt(e)));
    recvNs.push(eventNs[ev]);
  }

  let status: RequestStatus;
  let error: string | null = null;
  switch (raw.endReason) {
    case 'cancelled':
      status = 'cancelled';
      error = raw.error ?? 'cancelled';
      break;
    case 'timeout':
    case 'stall':
      status = 'timeout';
      error = raw.error ?? raw.endReason;
      break;
    case 'error':
      status = 'error';
      error = raw.error ?? 'transport error';
      break;
    default:
      if (!ok2xx) {
        status = 'error';
        error = `HTTP ${raw.httpStatus}: ${errorBody(bodyText)}`;
      } else if (streamError !== null) {
        status = 'error';
        error = `server error event: ${streamError}`;
      } else if (malformed !== null) {
        status = 'error';
        error = malformed;
      } else if (!sawDone && !sawFinish) {
        status = 'error';
        error = 'stream ended before [DONE] or a finish_reason';
      } else {
        status = 'ok';
      }
  }

  const record: TimelineRecord = {
    id: raw.id,
    scheduledS: raw.scheduledNs / 1e9,
    sentS: (raw.sentNs ?? raw.endNs) / 1e9,
    promptTokens: raw.promptTokens,
    maxTokens: raw.maxTokens,
    outputTokens: chunks.reduce((s, c) => s + c[1], 0),
    chunks,
    status,
    httpStatus: raw.httpStatus,
    error,
    usagePromptTokens: usagePrompt,
    usageOutputTokens: reconciled.reportedTotal,
    tokenCounts: reconciled.counts,
  };
  if (reconciled.problem !== null) record.tokenCountProblem = reconciled.problem;
  if (reconciled.textless.length > 0) record.textlessChunks = reconciled.textless;
  if (afterDone > 0) record.eventsAfterDone = afterDone;
  if (raw.retried) record.retried = true;
  if (emitNs.length === chunks.length && emitNs.length > 0) record.emitNs = emitNs;
  if (raw.slotWaitNs > 0) record.slotWaitS = raw.slotWaitNs / 1e9;
  return { record, recvMinusEmitNs, recvNs };
}

function errorText(e: unknown): string {
  if (typeof e === 'string') return e.slice(0, 300);
  const m = (e as { message?: unknown }).message;
  return typeof m === 'string' ? m.slice(0, 300) : JSON.stringify(e).slice(0, 300);
}

/** The message of an OpenAI-style JSON error body, or the body's first characters. */
function errorBody(text: string): string {
  try {
    const obj = JSON.parse(text) as { error?: unknown; message?: unknown; detail?: unknown };
    if (obj.error !== undefined) return errorText(obj.error);
    if (typeof obj.message === 'string') return obj.message.slice(0, 300);
    if (obj.detail !== undefined) return errorText(obj.detail);
  } catch {
    // not JSON: fall through to the raw text
  }
  return text.trim().slice(0, 300) || '(empty body)';
}
