// Prompt lengths as the engine itself counts them, on any OpenAI-compatible server: the served
// model and its vocabulary from /v1/models, each word's token count from /tokenize (in the dialect
// the server speaks) or, when it has none, from `usage.prompt_tokens` of max_tokens 1 requests; then
// composed prompts are checked against usage.prompt_tokens until each is within ±1 token of plan.
// Nothing is assumed silently: every fallback comes back as a note.
import { createRng, deriveSeed } from '../util/rng.ts';
import { apiPath, tokenIdRangeFor, type PromptOptions } from './prompt.ts';
import { PROMPT_WORDS, composeText, type TextSizing } from './textSizing.ts';
import { describeDialect, type DialectFound } from './dialect.ts';
import { negotiateDialect } from './dialectProbe.ts';
import { serverUrl } from './serverUrl.ts';
import { httpRequest } from '../util/httpRequest.ts';

export interface ServerTarget {
  baseUrl: string;
  model: string;
  api: 'completions' | 'chat';
  apiKey?: string;
  /** Fields every calibration request carries (the engine's cache-off switch). */
  extraBody?: Record<string, unknown>;
  timeoutS?: number;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/** What /v1/models says about the served model. */
export interface ServedModel {
  /** The first listed model id; null when the server lists none. */
  id: string | null;
  /** Vocabulary size where the server states it (llama.cpp: data[].meta.n_vocab). */
  nVocab: number | null;
  /** data[].owned_by: "llamacpp" names llama.cpp's server. */
  ownedBy: string | null;
  /** Why a field is missing, when one is. */
  note: string | null;
}

/** Reads /v1/models; never throws (a server without it gives nulls and a note). */
export async function readServedModel(baseUrl: string, apiKey?: string): Promise<ServedModel> {
  try {
    const a = await httpRequest(serverUrl(baseUrl, '/v1/models'), { apiKey, timeoutS: 10 });
    if (a.status !== 200) return { id: null, nVocab: null, ownedBy: null, note: `GET /v1/models answered ${a.status}` };
    const data = (parseJson(a.text) as { data?: unknown } | null)?.data;
    const first = Array.isArray(data) ? (data[0] as { id?: unknown; owned_by?: unknown; meta?: { n_vocab?: unknown } } | undefined) : undefined;
    if (!first) return { id: null, nVocab: null, ownedBy: null, note: 'GET /v1/models listed no model' };
    const nVocab = first.meta?.n_vocab;
    return {
      id: typeof first.id === 'string' ? first.id : null,
      nVocab: typeof nVocab === 'number' && Number.isInteger(nVocab) && nVocab > 0 ? nVocab : null,
      ownedBy: typeof first.owned_by === 'string' ? first.owned_by : null,
      note: null,
    };
  } catch (err) {
    return { id: null, nVocab: null, ownedBy: null, note: `GET /v1/models failed: ${(err as Error).message}` };
  }
}

/** The per-request fields that switch a server's prompt cache off, for the servers known to take them. */
export function cacheOffFields(served: Pick<ServedModel, 'ownedBy'>, engine?: string): Record<string, unknown> {
  // llama.cpp's server reuses any cached prefix unless told per request; others would reject or ignore the field.
  if (engine === 'llamacpp' || served.ownedBy === 'llamacpp') return { cache_prompt: false };
  return {};
}

/** The /tokenize request shapes servers speak: vLLM `prompt`, llama.cpp `content`, TGI `inputs`. */
export type TokenizeDialect = 'vllm' | 'llamacpp' | 'tgi';

const DIALECTS: { name: TokenizeDialect; body: (model: string, text: string) => unknown; count: (v: unknown) => number | null }[] = [
  {
    name: 'vllm',
    body: (model, text) => ({ model, prompt: text, add_special_tokens: false }),
    count: (v) => {
      const o = v as { count?: unknown; tokens?: unknown } | null;
      return typeof o?.count === 'number' ? o.count : Array.isArray(o?.tokens) ? o.tokens.length : null;
    },
  },
  {
    name: 'llamacpp',
    body: (_model, text) => ({ content: text, add_special: false }),
    count: (v) => {
      const o = v as { tokens?: unknown } | null;
      return Array.isArray(o?.tokens) ? o.tokens.length : null;
    },
  },
  { name: 'tgi', body: (_model, text) => ({ inputs: text, add_special_tokens: false }), count: (v) => (Array.isArray(v) ? v.length : null) },
];

/** A way of counting tokens of a text, and the notes of how it was found. */
interface Counter {
  count(text: string): Promise<number>;
  source: string;
}

/** The /tokenize dialect this server speaks (the first that counts a known text as > 0 tokens), or null and why. */
export async function findTokenizeDialect(t: ServerTarget): Promise<{ dialect: TokenizeDialect | null; note: string }> {
  const url = serverUrl(t.baseUrl, '/tokenize');
  const tried: string[] = [];
  for (const d of DIALECTS) {
    try {
      const a = await httpRequest(url, { method: 'POST', body: JSON.stringify(d.body(t.model, 'the of and')), apiKey: t.apiKey, timeoutS: t.timeoutS ?? 10 });
      const n = a.status === 200 ? d.count(parseJson(a.text)) : null;
      if (n !== null && n > 0) return { dialect: d.name, note: `POST /tokenize speaks the ${d.name} dialect` };
      tried.push(`${d.name}: ${a.status === 200 ? 'no tokens' : `HTTP ${a.status}`}`);
    } catch (err) {
      tried.push(`${d.name}: ${(err as Error).message}`);
    }
  }
  return { dialect: null, note: `POST /tokenize gave no count (${tried.join('; ')})` };
}

function tokenizeCounter(t: ServerTarget, dialect: TokenizeDialect): Counter {
  const d = DIALECTS.find((x) => x.name === dialect)!;
  const url = serverUrl(t.baseUrl, '/tokenize');
  return {
    source: `/tokenize (${dialect} dialect)`,
    async count(text) {
      const a = await httpRequest(url, { method: 'POST', body: JSON.stringify(d.body(t.model, text)), apiKey: t.apiKey, timeoutS: t.timeoutS ?? 10 });
      const n = a.status === 200 ? d.count(parseJson(a.text)) : null;
      if (n === null) throw new Error(`POST /tokenize answered ${a.status}: ${a.text.slice(0, 200)}`);
      return n;
    },
  };
}

/** usage.prompt_tokens of a max_tokens 1 request: what the engine counts, on every OpenAI-compatible server. */
export async function usagePromptTokens(t: ServerTarget, prompt: string | number[]): Promise<number> {
  const body = {
    model: t.model,
    ...(t.api === 'chat' ? { messages: [{ role: 'user', content: prompt }] } : { prompt }),
    max_tokens: 1,
    temperature: 0,
    stream: false,
    ...t.extraBody,
  };
  const a = await httpRequest(serverUrl(t.baseUrl, apiPath(t.api)), { method: 'POST', body: JSON.stringify(body), apiKey: t.apiKey, timeoutS: t.timeoutS ?? 60 });
  const n = (parseJson(a.text) as { usage?: { prompt_tokens?: unknown } } | null)?.usage?.prompt_tokens;
  if (a.status !== 200 || typeof n !== 'number') {
    const what = Array.isArray(prompt) ? `a prompt of ${prompt.length} token ids` : 'a text prompt';
    throw new Error(`${apiPath(t.api)} answered ${a.status} to ${what}${a.status === 200 ? ' without usage.prompt_tokens' : `: ${a.text.slice(0, 300)}`}`);
  }
  return n;
}

/** Runs `f` over `items` with at most `limit` at once, keeping order. */
async function mapLimit<T, R>(items: readonly T[], limit: number, f: (x: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await f(items[i]);
      }
    }),
  );
  return out;
}

/** A planned length beside the engine's count of the prompt composed for it. */
export interface LengthCheck {
  planned: number;
  counted: number;
}

export interface TextCalibration {
  sizing: TextSizing;
  /** Composed prompts checked with usage.prompt_tokens after the last refinement. */
  checks: LengthCheck[];
  /** true when every check is within ±1 token. */
  exact: boolean;
  notes: string[];
}

/**
 * Measures the engine's count of each of our words and of what it adds to a prompt, then checks
 * composed prompts at `checkLengths` with usage.prompt_tokens, correcting the added-token count
 * until they are within ±1 (at most three rounds). `useTokenize: false` skips the fast path.
 */
export async function calibrateText(
  t: ServerTarget,
  opts: { checkLengths: number[]; useTokenize?: boolean; concurrency?: number; nonce?: string },
): Promise<TextCalibration> {
  const notes: string[] = [];
  let counter: Counter | null = null;
  if (opts.useTokenize !== false) {
    const found = await findTokenizeDialect(t);
    notes.push(found.note);
    if (found.dialect) counter = tokenizeCounter(t, found.dialect);
  }
  const usageCounter: Counter = { source: 'usage.prompt_tokens of max_tokens 1 requests', count: (text) => usagePromptTokens(t, text) };
  if (!counter) {
    counter = usageCounter;
    notes.push('word token counts measured with usage.prompt_tokens (one max_tokens 1 request per word)');
  }
  const limit = opts.concurrency ?? 4;
  const lead = PROMPT_WORDS[0];
  const leadCount = await counter.count(lead);
  const alone = await mapLimit(PROMPT_WORDS, limit, (w) => counter!.count(w));
  const after = await mapLimit(PROMPT_WORDS, limit, (w) => counter!.count(`${lead} ${w}`));
  const wordTokens = after.map((n) => n - leadCount);
  // /tokenize counts without the server's additions; usage counts them: the difference is measured once.
  let added = 0;
  let sizing: TextSizing = { words: PROMPT_WORDS, wordTokens, firstTokens: alone, source: counter.source };
  // Check prompts carry the run's nonce too: a later run's checks must not be served from this run's cache.
  const rng = createRng(deriveSeed(0x5eed, `calibration|${opts.nonce ?? ''}`));
  let checks: LengthCheck[] = [];
  for (let round = 0; round < 3; round++) {
    checks = [];
    for (const planned of opts.checkLengths) {
      const composed = composeText(rng, planned, sizing, true);
      checks.push({ planned: composed.tokens, counted: await usagePromptTokens(t, composed.text) });
    }
    const errors = checks.map((c) => c.counted - c.planned);
    const shift = Math.round(errors.reduce((a, b) => a + b, 0) / errors.length);
    if (shift === 0) break;
    added += shift;
    sizing = { ...sizing, firstTokens: alone.map((n) => n + added) };
  }
  const exact = checks.every((c) => Math.abs(c.counted - c.planned) <= 1);
  sizing = { ...sizing, source: `${counter.source}${added ? `, ${added} token(s) the server adds per prompt measured with usage.prompt_tokens` : ''}` };
  notes.push(
    exact
      ? `text prompts sized with ${sizing.source}: planned vs counted ${checks.map((c) => `${c.planned}/${c.counted}`).join(', ')}`
      : `text prompts cannot be sized to ±1 token on this server (planned/counted ${checks.map((c) => `${c.planned}/${c.counted}`).join(', ')}): the profile fits the engine's counts and probes report the drift`,
  );
  return { sizing, checks, exact, notes };
}

export interface TokenIdCalibration {
  range: [number, number];
  /** Tokens the server adds to a token-id prompt (usage minus ids sent). */
  overheadTokens: number;
  checks: LengthCheck[];
  notes: string[];
}

function idRangeHint(range: [number, number]): string {
  return `(token ids were drawn from [${range[0]}, ${range[1]}); set workload.prompts.tokenIdRange to ids the model's vocabulary has, or workload.prompts.format: text)`;
}

/** Measures what the server adds to a token-id prompt within `range`, and checks planned lengths. */
export async function calibrateTokenIds(t: ServerTarget, range: [number, number], checkLengths: number[], nonce = ''): Promise<TokenIdCalibration> {
  const rng = createRng(deriveSeed(0x5eed, `calibration-ids|${nonce}`));
  const ids = (n: number) => Array.from({ length: n }, () => range[0] + Math.floor(rng.next() * (range[1] - range[0])));
  let counted: number;
  try {
    counted = await usagePromptTokens(t, ids(32));
  } catch (err) {
    throw new Error(`${(err as Error).message}\n  ${idRangeHint(range)}`);
  }
  const overheadTokens = Math.max(0, counted - 32);
  const checks: LengthCheck[] = [];
  for (const planned of checkLengths) checks.push({ planned, counted: await usagePromptTokens(t, ids(Math.max(1, planned - overheadTokens))) });
  return { range, overheadTokens, checks, notes: [`token-id prompts from [${range[0]}, ${range[1]}); the server adds ${overheadTokens} token(s) to each`] };
}

/** Everything the runner needs to write prompts for this engine, and what was found out. */
export interface PromptSetup {
  /** The model name requests carry (the recipe's, else the server's first listed). */
  model: string;
  format: 'token-ids' | 'text';
  content: Pick<PromptOptions, 'textSizing' | 'idOverheadTokens' | 'tokenIdRange' | 'omitFields'>;
  /** What the server refused of what fluidcap adds (dialectProbe.ts). */
  dialect: DialectFound;
  /** Per-request fields (the engine's cache-off switch when promptCache is off). */
  extraBody: Record<string, unknown>;
  checks: LengthCheck[];
  notes: string[];
}

export interface PromptSetupInput {
  baseUrl: string;
  apiKey?: string;
  api: 'completions' | 'chat';
  /** The recipe's target.model; when absent, the server's is used and a note says so. */
  model?: string;
  engine?: string;
  format: 'token-ids' | 'text';
  /** workload.prompts.tokenIdRange when the recipe sets one. */
  tokenIdRange?: [number, number];
  /** Vocabulary size known from elsewhere (the model catalog) when the server does not state it. */
  knownVocab?: number | null;
  /** true: send the engine's cache-off switch (workload.promptCache off). */
  cacheOff: boolean;
  /** Lengths to check composed prompts at (e.g. the profile's shortest, middle and longest). */
  checkLengths: number[];
  useTokenize?: boolean;
  /** The run's prompt nonce, so calibration prompts differ between runs too. */
  nonce?: string;
}

/**
 * Resolves the served model, the prompt format the engine can take (token ids only where the
 * vocabulary is known and the server takes them), the fields it refuses (dialectProbe.ts), the
 * cache-off switch, and the sizing of prompts; throws with the fix when the engine refuses what is planned.
 */
export async function preparePrompts(input: PromptSetupInput): Promise<PromptSetup> {
  const notes: string[] = [];
  const served = await readServedModel(input.baseUrl, input.apiKey);
  let model = input.model;
  if (!model) {
    if (!served.id) throw new Error(`target.model is not set and ${input.baseUrl}/v1/models names no model (${served.note}): set target.model`);
    model = served.id;
    notes.push(`target.model not set: using "${model}", the first model ${input.baseUrl}/v1/models lists`);
  }
  const extraBody = input.cacheOff ? cacheOffFields(served, input.engine) : {};
  if (Object.keys(extraBody).length > 0) notes.push(`prompt cache off: every request carries ${JSON.stringify(extraBody)}`);
  const t: ServerTarget = { baseUrl: input.baseUrl, apiKey: input.apiKey, api: input.api, model, extraBody };
  let format = input.api === 'chat' ? 'text' : input.format;
  const nVocab = served.nVocab ?? input.knownVocab ?? null;
  if (format === 'token-ids' && !input.tokenIdRange && nVocab === null) {
    format = 'text';
    notes.push(`token-id prompts need the vocabulary size, which ${input.baseUrl}/v1/models does not state: text prompts instead`);
  }
  let range: [number, number] | undefined;
  if (format === 'token-ids') {
    range = input.tokenIdRange ?? tokenIdRangeFor(nVocab!);
    if (nVocab !== null && range[1] > nVocab) {
      throw new Error(`workload.prompts.tokenIdRange [${range[0]}, ${range[1]}) exceeds the vocabulary of ${model} (${nVocab} tokens): use ids below ${nVocab}`);
    }
  }
  // Before calibration: a strict server refuses token-id prompts there too.
  const dialect = await negotiateDialect(t, { format, tokenIdRange: range, nonce: input.nonce }, (url, body) => httpRequest(url, { method: 'POST', body, apiKey: t.apiKey, timeoutS: t.timeoutS ?? 60 })).catch((err: Error) => {
    throw range ? new Error(`${err.message}\n  ${idRangeHint(range)}`) : err;
  });
  if (dialect.attempts > 1) notes.push(describeDialect(dialect.dialect, format));
  format = dialect.dialect.promptFormat;
  const omitFields = dialect.dialect.omitFields;
  if (format === 'token-ids') {
    const ids = await calibrateTokenIds(t, range!, input.checkLengths, input.nonce);
    return { model, format, content: { tokenIdRange: range, idOverheadTokens: ids.overheadTokens, omitFields }, extraBody, dialect, checks: ids.checks, notes: [...notes, ...ids.notes] };
  }
  const text = await calibrateText(t, { checkLengths: input.checkLengths, useTokenize: input.useTokenize, nonce: input.nonce });
  return { model, format, content: { textSizing: text.sizing, omitFields }, extraBody, dialect, checks: text.checks, notes: [...notes, ...text.notes] };
}

/**
 * Average tokens per word of our words by /tokenize alone (the standalone probe verb's quick
 * estimate): null with the reason when the server has no /tokenize in a dialect we speak.
 */
export async function calibrateTokensPerWord(baseUrl: string, model: string, apiKey?: string): Promise<{ tokensPerWord: number | null; note: string }> {
  const t: ServerTarget = { baseUrl, model, apiKey, api: 'completions' };
  const found = await findTokenizeDialect(t);
  if (!found.dialect) return { tokensPerWord: null, note: `${found.note}: text prompt lengths are uncalibrated (1 token per word assumed; the drift check reports the truth)` };
  const text = PROMPT_WORDS.join(' ');
  try {
    const count = await tokenizeCounter(t, found.dialect).count(text);
    const tpw = count / PROMPT_WORDS.length;
    return { tokensPerWord: tpw, note: `text prompts calibrated with /tokenize (${found.dialect} dialect): ${tpw.toFixed(3)} tokens per word on average` };
  } catch (err) {
    return { tokensPerWord: null, note: `POST /tokenize failed (${(err as Error).message}): text prompt lengths are uncalibrated` };
  }
}
