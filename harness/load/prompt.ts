// Request bodies for the OpenAI-compatible APIs: prompts of exact token length (token ids where the
// engine's vocabulary is known, measured words otherwise) and output length pinned with max_tokens
// + min_tokens + ignore_eos. No prompt shares a prefix with another request of the run or of any
// other run: its content is drawn from (run nonce, stream, index, length), and the first tokens
// are where those differ, since a prefix cache matches from the start. Pure.
import { createRng, deriveSeed } from '../util/rng.ts';
import { PROMPT_WORDS, composeText, type TextSizing } from './textSizing.ts';

/** Who a prompt belongs to and how its content is sized; arrival times and lengths never depend on it. */
export interface PromptContent {
  /** Random per run and recorded in its manifest: no run sends a prompt another run sent. */
  nonce?: string;
  /** The request stream within the run (a profile attempt, one probe): no two streams share prompts. */
  stream?: string;
  /** Token counts of our words measured on this engine; text prompts are composed to exact lengths. */
  textSizing?: TextSizing;
  /** Tokens the server adds to a token-id prompt (a BOS on some servers), left out of the ids sent. */
  idOverheadTokens?: number;
  /** Token ids are drawn from [lo, hi); see tokenIdRangeFor() for one that fits a known vocabulary. */
  tokenIdRange?: [number, number];
  /** A fraction of requests open with one prefix of this many tokens on purpose (workload.promptCache on). */
  sharedPrefix?: { tokens: number; fraction: number } | null;
  /** Added fields a strict server refused (dotted paths, dialect.ts), left out of every body. */
  omitFields?: readonly string[];
}

/** How prompts are written and what extra fields every request carries. */
export interface PromptOptions extends PromptContent {
  api: 'completions' | 'chat';
  model: string;
  format: 'token-ids' | 'text';
  seed: number;
  /** Fallback when no sizing was measured: words per prompt = tokens / tokensPerWord. */
  tokensPerWord?: number;
  /** Ask for the running token count on every chunk (vLLM usage, llama.cpp timings): exact tokens per chunk. */
  continuousUsage?: boolean;
  /** Fields merged into every body (e.g. a server's cache-off switch); never holds secrets. */
  extraBody?: Record<string, unknown>;
}

/** Clear of special tokens in common vocabularies (Llama-2 has 32000); refused by smaller ones. */
export const DEFAULT_TOKEN_ID_RANGE: [number, number] = [1000, 31000];

/**
 * Token ids that fit a vocabulary of `nVocab`: the default range where it fits, else the ids above
 * the first 1/16 (byte and control tokens sit low) and below the last 1/64 (added special tokens sit high).
 */
export function tokenIdRangeFor(nVocab: number): [number, number] {
  if (nVocab >= DEFAULT_TOKEN_ID_RANGE[1] + 1000) return DEFAULT_TOKEN_ID_RANGE;
  const lo = Math.max(3, Math.floor(nVocab / 16));
  const hi = nVocab - Math.max(1, Math.floor(nVocab / 64));
  if (hi - lo < 16) throw new RangeError(`a vocabulary of ${nVocab} tokens is too small for token-id prompts`);
  return [lo, hi];
}

/** The seed of one prompt's content: the run's nonce and stream, the request's index and planned length. */
export function promptSeed(o: Pick<PromptOptions, 'seed' | 'nonce' | 'stream'>, index: number, tokens: number): number {
  return deriveSeed(o.seed, `prompt|${o.nonce ?? ''}|${o.stream ?? ''}|${index}|${tokens}`);
}

/** Whether request `index` opens with the stream's shared prefix: a seeded draw, the same in every run. */
export function sharesPrefix(o: Pick<PromptOptions, 'seed' | 'sharedPrefix'>, index: number, promptTokens: number): boolean {
  const sp = o.sharedPrefix;
  if (!sp || sp.fraction <= 0 || promptTokens <= sp.tokens) return false;
  return createRng(deriveSeed(o.seed, `shared-prefix|${index}`)).next() < sp.fraction;
}

/** `count` token ids drawn from `seed` within `range`. */
function drawIds(seed: number, count: number, range: [number, number]): number[] {
  const rng = createRng(seed);
  const span = range[1] - range[0];
  const ids = new Array<number>(count);
  for (let i = 0; i < count; i++) ids[i] = range[0] + Math.floor(rng.next() * span);
  return ids;
}

/** The token ids of request `index`: `tokens` as the server counts them, its own additions included. */
export function tokenIdPrompt(o: PromptOptions, index: number, tokens: number): number[] {
  const range = o.tokenIdRange ?? DEFAULT_TOKEN_ID_RANGE;
  const count = Math.max(1, tokens - (o.idOverheadTokens ?? 0));
  if (sharesPrefix(o, index, tokens)) {
    const prefix = drawIds(deriveSeed(o.seed, `shared|${o.nonce ?? ''}|${o.stream ?? ''}`), Math.min(o.sharedPrefix!.tokens, count - 1), range);
    return prefix.concat(drawIds(promptSeed(o, index, tokens), count - prefix.length, range));
  }
  return drawIds(promptSeed(o, index, tokens), count, range);
}

/** The text of request `index`: `tokens` as the engine counts them when a sizing was measured. */
export function textPrompt(o: PromptOptions, index: number, tokens: number): string {
  const rng = createRng(promptSeed(o, index, tokens));
  const sizing = o.textSizing;
  if (!sizing) {
    const words = Math.max(1, Math.round(tokens / (o.tokensPerWord ?? 1)));
    const out = new Array<string>(words);
    for (let i = 0; i < words; i++) out[i] = PROMPT_WORDS[Math.floor(rng.next() * PROMPT_WORDS.length)];
    return out.join(' ');
  }
  if (sharesPrefix(o, index, tokens)) {
    const prefix = composeText(createRng(deriveSeed(o.seed, `shared|${o.nonce ?? ''}|${o.stream ?? ''}`)), o.sharedPrefix!.tokens, sizing, true);
    const rest = composeText(rng, tokens - prefix.tokens, sizing, false);
    return rest.text ? `${prefix.text} ${rest.text}` : prefix.text;
  }
  return composeText(rng, tokens, sizing, true).text;
}

/** The URL path of the API. */
export function apiPath(api: PromptOptions['api']): string {
  return api === 'chat' ? '/v1/chat/completions' : '/v1/completions';
}

/** The JSON body of one streamed request asking for exactly `maxTokens` output tokens. */
export function requestBody(o: PromptOptions, index: number, promptTokens: number, maxTokens: number): string {
  const useIds = o.api === 'completions' && o.format === 'token-ids';
  const prompt = useIds ? tokenIdPrompt(o, index, promptTokens) : textPrompt(o, index, promptTokens);
  const body: Record<string, unknown> = {
    model: o.model,
    ...(o.api === 'chat' ? { messages: [{ role: 'user', content: prompt }] } : { prompt }),
    max_tokens: maxTokens,
    min_tokens: maxTokens,
    ignore_eos: true,
    temperature: 0,
    stream: true,
    stream_options: o.continuousUsage ? { include_usage: true, continuous_usage_stats: true } : { include_usage: true },
    // llama.cpp's server states its running count (timings.predicted_n) per chunk only when asked.
    ...(o.continuousUsage ? { timings_per_token: true } : {}),
    ...o.extraBody,
  };
  for (const path of o.omitFields ?? []) {
    const [head, member] = path.split('.');
    if (member === undefined) delete body[head];
    else if (body[head] && typeof body[head] === 'object') delete (body[head] as Record<string, unknown>)[member];
  }
  return JSON.stringify(body);
}
