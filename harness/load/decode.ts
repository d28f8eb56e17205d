// Turns a raw exchange into its timeline record after the request has ended (never on the hot
// path): SSE framing, JSON of each event, tokens per chunk, usage, the engine's emit times and the
// final status. Pure. Works for any OpenAI-compatible server (SPEC §8): usage in the finish chunk
// or a trailing `choices: []` chunk, continuous usage, non-streamed JSON answers, error events.
import { SseParser } from './sse.ts';
import type { RawExchange } from './exchange.ts';
import type { Chunk, RequestStatus, TimelineRecord } from '../timeline/record.ts';

/** The record plus what only the client-health check needs (receive − emit per chunk, ns). */
export interface Decoded {
  record: TimelineRecord;
  recvMinusEmitNs: number[];
}

interface ChoiceLike {
  text?: unknown;
  delta?: { content?: unknown; reasoning_content?: unknown; reasoning?: unknown } | null;
  message?: { content?: unknown } | null;
  finish_reason?: unknown;
}

interface Usage {
  prompt_tokens?: unknown;
  completion_tokens?: unknown;
}

const nonEmpty = (v: unknown) => typeof v === 'string' && v.length > 0;
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** Decodes the exchange; `startNs` is the probe start on the engine's clock (for receive − emit). */
export function decodeExchange(raw: RawExchange, startNs: bigint): Decoded {
  const chunks: Chunk[] = [];
  const emitNs: string[] = [];
  const recvMinusEmitNs: number[] = [];
  let usagePrompt: number | null = null;
  let usageOutput: number | null = null;
  let sawDone = false;
  let sawFinish = false;
  let sawUsageBefore = false;
  let lastCumulative = 0;
  let contentChunks = 0;
  let streamError: string | null = null;
  let malformed: string | null = null;
  let events = 0;

  const onJson = (obj: Record<string, unknown>, tNs: number) => {
    if (obj.error !== undefined && obj.error !== null) {
      streamError ??= errorText(obj.error);
      return;
    }
    const usage = (obj.usage ?? null) as Usage | null;
    const choices = Array.isArray(obj.choices) ? (obj.choices as ChoiceLike[]) : [];
    let hasContent = false;
    let finished = false;
    for (const c of choices) {
      if (nonEmpty(c.text) || nonEmpty(c.delta?.content) || nonEmpty(c.delta?.reasoning_content) || nonEmpty(c.delta?.reasoning) || nonEmpty(c.message?.content)) hasContent = true;
      if (c.finish_reason !== null && c.finish_reason !== undefined) finished = true;
    }
    let tokens = hasContent ? 1 : 0;
    const cumulative = usage ? num(usage.completion_tokens) : null;
    if (usage) {
      usagePrompt = num(usage.prompt_tokens) ?? usagePrompt;
      usageOutput = cumulative ?? usageOutput;
    }
    if (hasContent && cumulative !== null) {
      // Usage on a content chunk is cumulative when it came before or the stream goes on; a final-only
      // usage on the finishing chunk of a longer stream says nothing about this chunk alone.
      const continuous = sawUsageBefore || !finished || contentChunks === 0;
      if (continuous) tokens = Math.max(0, cumulative - lastCumulative);
      lastCumulative = cumulative;
    }
    if (usage && cumulative !== null) sawUsageBefore = true;
    if (finished) sawFinish = true;
    if (hasContent) contentChunks++;
    if (tokens > 0) {
      chunks.push([tNs / 1e9, tokens]);
      const e = obj.fluidcap_emit_ns;
      if ((typeof e === 'string' && /^\d+$/.test(e)) || (typeof e === 'number' && Number.isSafeInteger(e))) {
        emitNs.push(String(e));
        recvMinusEmitNs.push(Number(startNs + BigInt(tNs) - BigInt(e)));
      }
    }
  };

  const isStream = raw.contentType === null || raw.contentType.includes('text/event-stream');
  const ok2xx = raw.httpStatus !== null && raw.httpStatus >= 200 && raw.httpStatus < 300;
  let bodyText = '';
  if (ok2xx && isStream) {
    const parser = new SseParser();
    const decoder = new TextDecoder();
    let from = 0;
    for (let r = 0; r < raw.readNs.length; r++) {
      const tNs = raw.readNs[r];
      const text = decoder.decode(raw.bytes.subarray(from, raw.readEnd[r]), { stream: true });
      from = raw.readEnd[r];
      parser.feed(text, (ev) => {
        events++;
        const data = ev.data.trim();
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
          malformed ??= `malformed SSE data in event ${events}: ${JSON.stringify(data.slice(0, 80))}`;
          return;
        }
        if (obj !== null && typeof obj === 'object') onJson(obj as Record<string, unknown>, tNs);
        else malformed ??= `SSE data in event ${events} is not a JSON object: ${JSON.stringify(data.slice(0, 80))}`;
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
        const last = chunks[chunks.length - 1];
        if (last && usageOutput !== null) last[1] = usageOutput;
        sawDone = true;
      } catch {
        malformed = `2xx answer is neither an event stream nor JSON: ${JSON.stringify(bodyText.slice(0, 80))}`;
      }
    }
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
    usageOutputTokens: usageOutput,
  };
  if (emitNs.length === chunks.length && emitNs.length > 0) record.emitNs = emitNs;
  if (raw.slotWaitNs > 0) record.slotWaitS = raw.slotWaitNs / 1e9;
  return { record, recvMinusEmitNs };
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
