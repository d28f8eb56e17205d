// One isolated request, sent now and awaited: what prefill profiling uses (max_tokens 1, one at a
// time) to read a TTFT. Same client and decoder as probes, so the numbers are comparable.
import { StreamClient, type WarmConnection } from './streamClient.ts';
import type { RawExchange } from './exchange.ts';
import { decodeExchange } from './decode.ts';
import { apiPath, requestBody, type PromptOptions } from './prompt.ts';
import type { TimelineRecord } from '../timeline/record.ts';

export interface SendOneRequest {
  promptTokens: number;
  maxTokens: number;
  /** Varies the prompt content (prompt caches must not hit across profiling repeats). */
  index: number;
  id?: string;
}

export interface SendOneOptions extends Omit<PromptOptions, 'seed'> {
  baseUrl: string;
  apiKey?: string;
  seed?: number;
  requestTimeoutS?: number;
  stallTimeoutS?: number;
}

/** The request's timeline (times from its send) and TTFT in seconds (null unless a token arrived). */
export interface SendOneResult {
  record: TimelineRecord;
  ttftS: number | null;
  e2eS: number;
}

/** Sends one streamed request on a connection of its own and resolves when it has ended; never rejects for request failures. */
export async function sendOne(request: SendOneRequest, options: SendOneOptions): Promise<SendOneResult> {
  const sender = openSender(options);
  try {
    return await sender.send(request);
  } finally {
    sender.close();
  }
}

/** Requests one at a time over one keep-alive client (profiling): each can first confirm an open connection. */
export interface Sender {
  /** With `confirm`, an open connection is confirmed (or opened) first and its set-up reported apart from the request. */
  send(request: SendOneRequest, confirm?: { path: string; maxIdleS: number }): Promise<SendOneResult & { connection: WarmConnection | null }>;
  close(): void;
}

/** One StreamClient for a sequence of requests; times are from the sender's start. */
export function openSender(options: SendOneOptions): Sender {
  const startNs = process.hrtime.bigint();
  const client = new StreamClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    requestTimeoutS: options.requestTimeoutS ?? 300,
    stallTimeoutS: options.stallTimeoutS ?? 60,
    startNs,
  });
  const prompt: PromptOptions = { ...options, seed: options.seed ?? 0 };
  return {
    async send(request, confirm) {
      const body = requestBody(prompt, request.index, request.promptTokens, request.maxTokens);
      const connection = confirm ? await client.warm(confirm.path, confirm.maxIdleS) : null;
      // Scheduled now, after the connection is confirmed: the request's times start at its write.
      const scheduledNs = Number(process.hrtime.bigint() - startNs);
      const raw = await new Promise<RawExchange>((resolve) =>
        client.send(
          { id: request.id ?? `one-${request.index}`, index: request.index, scheduledNs, slotWaitNs: 0, promptTokens: request.promptTokens, maxTokens: request.maxTokens, path: apiPath(options.api), body },
          resolve,
        ),
      );
      const { record } = decodeExchange(raw, startNs);
      const first = record.chunks[0];
      return { record, ttftS: first ? first[0] - record.scheduledS : null, e2eS: (raw.endNs - scheduledNs) / 1e9, connection };
    },
    close: () => client.close(),
  };
}
