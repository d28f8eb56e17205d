// Parses an OpenAI completions / chat-completions body into what the engine needs, or an error in
// vLLM's shape. Token counting: a text is its whitespace-separated words; a token-id array its
// length; a chat prompt the words of every message's text content (no template tokens), so a
// client asking for P prompt tokens gets usage.prompt_tokens = P. Pure.
import { countWords, hashText } from './text.ts';

export type ApiKind = 'completions' | 'chat';

// One prompt of a request (a completions request may carry several).
export interface ParsedPrompt {
  promptTokens: number;
  seed: number;
}

// A validated request.
export interface ParsedRequest {
  api: ApiKind;
  prompts: ParsedPrompt[];
  maxTokens: number;
  minTokens: number;
  ignoreEos: boolean;
  stream: boolean;
  includeUsage: boolean;
  /** stream_options.continuous_usage_stats with include_usage: the running usage on every chunk (as vLLM). */
  continuousUsage: boolean;
}

// An error answer as vLLM sends it.
export interface ApiError {
  status: number;
  message: string;
  type: string;
}

// Limits a request is checked against.
export interface RequestLimits {
  servedModelName: string;
  maxModelLen: number;
  vocabSize: number;
}

// The body of an error response: {"error": {"message", "type", "param", "code"}}.
export function errorBody(err: ApiError): string {
  return JSON.stringify({ error: { message: err.message, type: err.type, param: null, code: err.status } });
}

const bad = (message: string): ApiError => ({ status: 400, message, type: 'BadRequestError' });

function isIntArray(v: unknown): v is number[] {
  return Array.isArray(v) && v.every((x) => Number.isInteger(x));
}

function parsePrompt(v: unknown, limits: RequestLimits): ParsedPrompt | ApiError {
  if (typeof v === 'string') return { promptTokens: countWords(v), seed: hashText(v) };
  if (isIntArray(v)) {
    const oov = v.find((id) => id < 0 || id >= limits.vocabSize);
    if (oov !== undefined) return bad(`Token id ${oov} is out of vocabulary (vocabulary size ${limits.vocabSize})`);
    return { promptTokens: v.length, seed: hashText(v.join(',')) };
  }
  return bad('prompt must be a string, an array of token ids, or an array of those');
}

function messageText(content: unknown): string | null {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const texts: string[] = [];
    for (const part of content) {
      if (part && typeof part === 'object' && (part as { type?: unknown }).type === 'text' && typeof (part as { text?: unknown }).text === 'string') {
        texts.push((part as { text: string }).text);
      } else return null;
    }
    return texts.join(' ');
  }
  return null;
}

function optionalInt(body: Record<string, unknown>, key: string, min: number): number | null | ApiError {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min) return bad(`${key} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
  return v;
}

// Validates a body for `api`; returns the request or the error to answer with.
export function parseCompletionRequest(api: ApiKind, raw: unknown, limits: RequestLimits): ParsedRequest | ApiError {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return bad('request body must be a JSON object');
  const body = raw as Record<string, unknown>;
  if (body.model !== undefined && body.model !== null && body.model !== limits.servedModelName) {
    return { status: 404, message: `The model \`${String(body.model)}\` does not exist.`, type: 'NotFoundError' };
  }
  if (body.n !== undefined && body.n !== null && body.n !== 1) return bad('n must be 1 (the simulated engine returns one choice per prompt)');

  const prompts: ParsedPrompt[] = [];
  if (api === 'completions') {
    const p = body.prompt;
    const list = Array.isArray(p) && p.length > 0 && (typeof p[0] === 'string' || Array.isArray(p[0])) ? p : [p];
    if (Array.isArray(p) && p.length === 0) return bad('prompt must not be empty');
    for (const one of list) {
      const parsed = parsePrompt(one, limits);
      if ('status' in parsed) return parsed;
      prompts.push(parsed);
    }
  } else {
    if (!Array.isArray(body.messages) || body.messages.length === 0) return bad('messages must be a non-empty array');
    const texts: string[] = [];
    for (const m of body.messages) {
      const text = m && typeof m === 'object' ? messageText((m as { content?: unknown }).content) : null;
      if (text === null || typeof (m as { role?: unknown }).role !== 'string') return bad('each message needs a role and text content');
      texts.push(text);
    }
    const all = texts.join(' ');
    prompts.push({ promptTokens: countWords(all), seed: hashText(all) });
  }
  const longest = Math.max(...prompts.map((p) => p.promptTokens));
  if (prompts.some((p) => p.promptTokens === 0)) return bad('prompt must contain at least one token');

  const maxKey = api === 'chat' && body.max_completion_tokens !== undefined && body.max_completion_tokens !== null ? 'max_completion_tokens' : 'max_tokens';
  const maxTokens = optionalInt(body, maxKey, 1);
  if (maxTokens !== null && typeof maxTokens === 'object') return maxTokens;
  const minTokens = optionalInt(body, 'min_tokens', 0);
  if (minTokens !== null && typeof minTokens === 'object') return minTokens;
  const where = api === 'chat' ? 'messages' : 'prompt';
  if (longest >= limits.maxModelLen && maxTokens === null) {
    return bad(`This model's maximum context length is ${limits.maxModelLen} tokens. However, your request has ${longest} input tokens. Please reduce the length of the input ${where}.`);
  }
  const resolvedMax = maxTokens ?? limits.maxModelLen - longest;
  if (longest + resolvedMax > limits.maxModelLen) {
    return bad(
      `This model's maximum context length is ${limits.maxModelLen} tokens. However, you requested ${longest + resolvedMax} tokens ` +
        `(${longest} in the ${where}, ${resolvedMax} in the completion). Please reduce the length of the ${where} or completion.`,
    );
  }
  if ((minTokens ?? 0) > resolvedMax) return bad(`min_tokens (${minTokens}) must be <= max_tokens (${resolvedMax})`);
  const streamOptions = body.stream_options as { include_usage?: unknown; continuous_usage_stats?: unknown } | undefined | null;
  const includeUsage = body.stream === true && !!streamOptions && streamOptions.include_usage === true;
  return {
    api,
    prompts,
    maxTokens: resolvedMax,
    minTokens: minTokens ?? 0,
    ignoreEos: body.ignore_eos === true,
    stream: body.stream === true,
    includeUsage,
    continuousUsage: includeUsage && streamOptions!.continuous_usage_stats === true,
  };
}
