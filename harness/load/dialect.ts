// The request dialect of a strict server: which of the fields fluidcap adds beyond the OpenAI API
// it refuses, and whether it takes token-id prompts. Servers that validate with pydantic
// `extra="forbid"` (Sarathi-Serve, hosted APIs) answer 400 naming what they refuse; this module reads
// that answer and decides what to drop before trying again. Pure: the probe that sends is dialectProbe.ts.

/** Fields fluidcap adds beyond the OpenAI API, as dotted paths into the request body. */
export const ADDED_FIELDS = ['min_tokens', 'ignore_eos', 'timings_per_token', 'stream_options.continuous_usage_stats', 'stream_options'] as const;
export type AddedField = (typeof ADDED_FIELDS)[number];

/** What the server takes: the added fields left out of every request, and the prompt form. */
export interface Dialect {
  omitFields: AddedField[];
  promptFormat: 'token-ids' | 'text';
}

/** The dialect a run found (manifest.json prompts.dialect), and how many requests it took. */
export interface DialectFound {
  dialect: Dialect;
  /** The prompt form the recipe asked for, before the server had its say. */
  requestedFormat: 'token-ids' | 'text';
  attempts: number;
}

/** What an error answer names among what fluidcap added. */
export interface Named {
  fields: AddedField[];
  /** The server refuses the prompt's form (only read when token ids were sent). */
  prompt: boolean;
}

export type NextStep =
  | { kind: 'accepted' }
  | { kind: 'retry'; dialect: Dialect }
  | { kind: 'refuse'; message: string };

// pydantic's error list as Python prints it: `[{'type': ..., 'loc': ('body', 'min_tokens'), 'msg': ..., 'input': ...}]`.
const REPR_LOC = /'loc':\s*\(([^)]*)\)/g;
const REPR_MSG = /'msg':\s*'([^']*)'/g;

/**
 * The error text of an answer, each shape read alike: every string of a JSON body, `loc` paths as
 * `loc body.min_tokens`. An error's `input` is left out: a "missing field" error echoes the whole
 * body, which names every field sent without refusing any.
 */
function errorText(body: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = body;
  }
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      const locs = [...v.matchAll(REPR_LOC)];
      if (locs.length === 0) return void out.push(v);
      for (const m of locs) out.push(`loc ${m[1].split(',').map((p) => p.trim().replace(/^'|'$/g, '')).filter(Boolean).join('.')}`);
      for (const m of v.matchAll(REPR_MSG)) out.push(m[1]);
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [key, x] of Object.entries(v)) {
        if (key === 'input') continue;
        // FastAPI's 422 `detail[].loc`: ["body", "stream_options", "continuous_usage_stats"].
        if (key === 'loc' && Array.isArray(x)) out.push(`loc ${x.join('.')}`);
        else walk(x);
      }
    }
  };
  walk(parsed);
  return out.join('\n');
}

const word = (name: string) => new RegExp(`(^|[^A-Za-z0-9_])${name}([^A-Za-z0-9_]|$)`);

// A token-id prompt refused: pydantic's loc names `prompt`, Sarathi-Serve says "array of tokens ...
// not supported", others name token ids. A context-length or vocabulary answer names the prompt
// too, but is not about its form.
const PROMPT_FORM = /array of tokens|token arrays?|token[- ]ids?\b|list\[int\]/i;
const PROMPT_NAMED = /loc body\.prompt\b|\bprompt\b[^\n]*\b(string|type|format|supported)\b/i;
const NOT_FORM = /maximum context length|reduce the length|vocabulary|out of range/i;

/** Which of the fields in `sent` (and the token-id prompt, when `sentIds`) an error body names. */
export function namedInError(body: string, sent: readonly AddedField[], sentIds: boolean): Named {
  const text = errorText(body);
  const fields: AddedField[] = [];
  const has = (name: string) => word(name).test(text);
  // pydantic's loc of the member names stream_options too: the whole only when the member is not named.
  if (has('continuous_usage_stats')) {
    if (sent.includes('stream_options.continuous_usage_stats')) fields.push('stream_options.continuous_usage_stats');
  } else if (sent.includes('stream_options') && (has('stream_options') || has('include_usage'))) fields.push('stream_options');
  for (const f of ['min_tokens', 'ignore_eos', 'timings_per_token'] as const) if (sent.includes(f) && has(f)) fields.push(f);
  const prompt = sentIds && !NOT_FORM.test(text) && (PROMPT_FORM.test(text) || PROMPT_NAMED.test(text));
  return { fields, prompt };
}

/** The added fields a request written in `dialect` carries (stream_options' member only while stream_options is sent). */
export function sentFields(dialect: Dialect, continuousUsage: boolean): AddedField[] {
  const all: AddedField[] = ['min_tokens', 'ignore_eos', 'stream_options'];
  if (continuousUsage) all.push('stream_options.continuous_usage_stats', 'timings_per_token');
  return all.filter((f) => !dialect.omitFields.includes(f) && !(f === 'stream_options.continuous_usage_stats' && dialect.omitFields.includes('stream_options')));
}

/**
 * What to do after the server answered `status` / `body` to a request written in `dialect`: accept,
 * retry without what it named, or refuse when it names nothing fluidcap added (a retry could only
 * fail the same way).
 */
export function nextStep(dialect: Dialect, continuousUsage: boolean, answer: { status: number; body: string }): NextStep {
  if (answer.status >= 200 && answer.status < 300) return { kind: 'accepted' };
  const excerpt = answer.body.replace(/\s+/g, ' ').slice(0, 400);
  if (answer.status !== 400 && answer.status !== 422) {
    return { kind: 'refuse', message: `answered HTTP ${answer.status} to a small streamed request: ${excerpt}` };
  }
  const named = namedInError(answer.body, sentFields(dialect, continuousUsage), dialect.promptFormat === 'token-ids');
  if (named.fields.length === 0 && !named.prompt) {
    const tried = dialect.omitFields.length > 0 ? ` (already without ${dialect.omitFields.join(', ')})` : '';
    return { kind: 'refuse', message: `answered HTTP ${answer.status} naming nothing fluidcap adds${tried}: ${excerpt}` };
  }
  // Dropping stream_options takes its member with it.
  const omit = [...dialect.omitFields, ...named.fields];
  const omitFields = ADDED_FIELDS.filter((f) => omit.includes(f) && !(f === 'stream_options.continuous_usage_stats' && omit.includes('stream_options')));
  return { kind: 'retry', dialect: { omitFields, promptFormat: named.prompt ? 'text' : dialect.promptFormat } };
}

/** Whether output lengths are still pinned to max_tokens: either min_tokens or ignore_eos does it. */
export function outputPinned(omitFields: readonly string[] | undefined): boolean {
  const omit = omitFields ?? [];
  return !(omit.includes('min_tokens') && omit.includes('ignore_eos'));
}

/** One line for the console and the report: what the server refused and what that does to measurement. */
export function describeDialect(d: Dialect, requestedFormat: 'token-ids' | 'text'): string {
  const toText = requestedFormat === 'token-ids' && d.promptFormat === 'text';
  if (d.omitFields.length === 0 && !toText) return 'server dialect: takes every field fluidcap adds';
  const parts: string[] = [];
  if (d.omitFields.length > 0) parts.push(`requests go without ${d.omitFields.join(', ')}`);
  if (toText) parts.push('prompts are text (it refused token ids)');
  const effects: string[] = [];
  if (!outputPinned(d.omitFields)) {
    effects.push('output length is no longer pinned: a request may end before max_tokens (recorded as it ended; output drift is not counted against the probe)');
  } else if (d.omitFields.includes('min_tokens') || d.omitFields.includes('ignore_eos')) {
    effects.push(`output length pinned by ${d.omitFields.includes('min_tokens') ? 'ignore_eos' : 'min_tokens'} alone`);
  }
  if (d.omitFields.includes('stream_options.continuous_usage_stats') || d.omitFields.includes('timings_per_token')) {
    effects.push('per-chunk token counts cannot be asked for: tokens per chunk are inferred from the chunks');
  }
  if (d.omitFields.includes('stream_options')) effects.push('no usage in the stream: token counts are unchecked');
  return `server dialect: it refused fields fluidcap adds, so ${parts.join('; ')}${effects.length ? `; ${effects.join('; ')}` : ''}`;
}
