// The simulated engine as a strict OpenAI-compatible server, the way Sarathi-Serve's OpenAI server
// validates requests (sarathi/entrypoints/openai/protocol.py: pydantic models with
// extra="forbid"; FastAPI's validation error answered 400 with str() of the error list; token-id
// prompts refused by the completion handler). Hosted APIs refuse unknown fields the same way.
// Pure: the server asks whether a body is refused and sends what comes back.

// The fields Sarathi-Serve's request models declare; anything else is "extra".
const COMPLETION_FIELDS = ['model', 'prompt', 'echo', 'max_tokens', 'stop', 'stream', 'stream_options', 'suffix', 'temperature', 'top_p', 'user', 'top_k', 'ignore_eos'];
const CHAT_FIELDS = [
  'messages', 'model', 'max_tokens', 'stop', 'stream', 'stream_options', 'temperature', 'top_p', 'tools', 'tool_choice', 'user', 'top_k',
  'ignore_eos', 'echo', 'add_generation_prompt',
];
const STREAM_OPTIONS_FIELDS = ['include_usage'];

/** A value as Python's repr() writes it (pydantic error dicts are printed with repr). */
function pyRepr(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (v === true) return 'True';
  if (v === false) return 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'").replace(/\n/g, '\\n')}'`;
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(', ')}]`;
  return `{${Object.entries(v as Record<string, unknown>).map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(', ')}}`;
}

function extraForbidden(loc: string[], input: unknown): string {
  return `{'type': 'extra_forbidden', 'loc': (${loc.map(pyRepr).join(', ')}), 'msg': 'Extra inputs are not permitted', 'input': ${pyRepr(input)}}`;
}

/** Sarathi-Serve's ErrorResponse. */
export function strictErrorBody(message: string): string {
  return JSON.stringify({ object: 'error', message, type: 'BadRequestError', param: null, code: 400 });
}

/** The 400 body a strict server answers to `raw`, or null when it takes it. */
export function strictRefusal(api: 'completions' | 'chat', raw: unknown): string | null {
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return null;
  const body = raw as Record<string, unknown>;
  const known = api === 'chat' ? CHAT_FIELDS : COMPLETION_FIELDS;
  const errors: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (!known.includes(key)) errors.push(extraForbidden(['body', key], value));
    else if (key === 'stream_options' && value && typeof value === 'object' && !Array.isArray(value)) {
      for (const [member, x] of Object.entries(value)) if (!STREAM_OPTIONS_FIELDS.includes(member)) errors.push(extraForbidden(['body', 'stream_options', member], x));
    }
  }
  if (errors.length > 0) return strictErrorBody(`[${errors.join(', ')}]`);
  const p = body.prompt;
  if (api === 'completions' && Array.isArray(p) && p.length > 0 && (Number.isInteger(p[0]) || Array.isArray(p[0]))) {
    return strictErrorBody('array of tokens, or array of token arrays not supported');
  }
  return null;
}
