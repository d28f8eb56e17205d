// Request bodies for the OpenAI-compatible APIs: prompts of exact token length (token ids where the
// engine takes them, calibrated words otherwise), varied per request so prompt caches cannot hit,
// and output length pinned with max_tokens + min_tokens + ignore_eos. Pure: seeded by request index.
import { createRng, deriveSeed } from '../util/rng.ts';

/** How prompts are written and what extra fields every request carries. */
export interface PromptOptions {
  api: 'completions' | 'chat';
  model: string;
  format: 'token-ids' | 'text';
  seed: number;
  /** Token ids are drawn from [lo, hi): clear of special tokens in common vocabularies (Llama-2 has 32000). */
  tokenIdRange?: [number, number];
  /** Measured tokens per word of our text prompts (1 for the simulated engine); see tokenizeCalibration.ts. */
  tokensPerWord?: number;
  /** Ask for the running token count on every chunk (vLLM usage, llama.cpp timings): exact tokens per chunk. */
  continuousUsage?: boolean;
  /** Fields merged into every body (e.g. a server's cache-off switch); never holds secrets. */
  extraBody?: Record<string, unknown>;
}

// Short common words: one token each in most BPE vocabularies, so word count tracks token count.
const WORDS = (
  'the of and to in is was for on that with as by at from his her he she it they we you this an be are or had ' +
  'not but what all were when there can more if no out so said up one time about into than only other new some ' +
  'could two may then do first any my now such like our over man me even most made after also did many before ' +
  'must through back years where much your way well down should because each just those people how too little ' +
  'state good very make world still own see men work long get here between both life being under never day same ' +
  'another know while last might us great old year off come since against go came right used take three'
).split(' ');

/** Token ids for request `index`: exactly `tokens` of them, different for every request. */
export function tokenIdPrompt(seed: number, index: number, tokens: number, range: [number, number] = [1000, 31000]): number[] {
  const rng = createRng(deriveSeed(seed, `prompt-${index}`));
  const span = range[1] - range[0];
  const ids = new Array<number>(tokens);
  for (let i = 0; i < tokens; i++) ids[i] = range[0] + Math.floor(rng.next() * span);
  return ids;
}

/** A text prompt of `words` words for request `index`, led by its index so no two share a prefix. */
export function textPrompt(seed: number, index: number, words: number): string {
  const rng = createRng(deriveSeed(seed, `prompt-${index}`));
  const out = new Array<string>(Math.max(1, words));
  out[0] = `r${index}`;
  for (let i = 1; i < out.length; i++) out[i] = WORDS[Math.floor(rng.next() * WORDS.length)];
  return out.join(' ');
}

/** The URL path of the API. */
export function apiPath(api: PromptOptions['api']): string {
  return api === 'chat' ? '/v1/chat/completions' : '/v1/completions';
}

/** The JSON body of one streamed request asking for exactly `maxTokens` output tokens. */
export function requestBody(o: PromptOptions, index: number, promptTokens: number, maxTokens: number): string {
  const useIds = o.api === 'completions' && o.format === 'token-ids';
  const words = Math.max(1, Math.round(promptTokens / (o.tokensPerWord ?? 1)));
  const prompt = useIds ? tokenIdPrompt(o.seed, index, promptTokens, o.tokenIdRange) : textPrompt(o.seed, index, words);
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
  return JSON.stringify(body);
}
