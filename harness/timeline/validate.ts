// Checks one parsed timeline line against SPEC §4 and names every bad field with its value, e.g.
// `chunks[3][0] must be a time >= 0, got -0.2 (number)`. Hand-written rather than zod because it
// runs on every chunk of every line (20 M chunks in the 100k-request benchmark) and must stay cheap.
import { describeValue } from '../util/errors.ts';
import { REQUEST_STATUSES, type TimelineRecord } from './record.ts';

const MAX_PROBLEMS = 5;

// Bounds that keep one hostile line from exhausting memory: metrics expand every token into a TBT
// sample, so a chunk claiming 1e9 tokens would allocate gigabytes. No server streams more than
// about a million tokens in one answer; prompts and limits stay below 2^31 (no context is larger).
/** Most output tokens (and chunks) one request may have: 2^20. */
export const MAX_OUTPUT_TOKENS = 1 << 20;
/** Largest prompt or max_tokens value accepted. */
export const MAX_TOKEN_LIMIT = 2 ** 31 - 1;
/** Longest id (ids are printed in reports and JSON output). */
export const MAX_ID_CHARS = 256;

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isCount = (v: unknown, max: number): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= max;

/** Problems of one parsed line (empty when it is a valid TimelineRecord). */
export function timelineProblems(value: unknown): string[] {
  const problems: string[] = [];
  const badText = (field: string, expected: string, got: string) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${field} must be ${expected}, got ${got}`);
  };
  const bad = (field: string, expected: string, got: unknown) => badText(field, expected, describeValue(got));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    bad('the line', 'a JSON object (one timeline record)', value);
    return problems;
  }
  const r = value as Record<string, unknown>;
  if (typeof r.id !== 'string' || r.id.length === 0 || r.id.length > MAX_ID_CHARS) bad('id', `a non-empty string of at most ${MAX_ID_CHARS} characters`, r.id);
  for (const f of ['scheduledS', 'sentS'] as const) if (!isTime(r[f])) bad(f, 'a time >= 0 (seconds)', r[f]);
  for (const f of ['promptTokens', 'maxTokens'] as const) {
    if (!isCount(r[f], MAX_TOKEN_LIMIT)) bad(f, `an integer within 0..${MAX_TOKEN_LIMIT}`, r[f]);
  }
  if (!isCount(r.outputTokens, MAX_OUTPUT_TOKENS)) bad('outputTokens', `an integer within 0..${MAX_OUTPUT_TOKENS}`, r.outputTokens);
  if (typeof r.status !== 'string' || !(REQUEST_STATUSES as readonly string[]).includes(r.status)) {
    bad('status', `one of ${REQUEST_STATUSES.join(', ')}`, r.status);
  }
  if (r.httpStatus !== null && !(Number.isInteger(r.httpStatus) && (r.httpStatus as number) >= 100 && (r.httpStatus as number) <= 599)) {
    bad('httpStatus', 'an HTTP status 100..599 or null', r.httpStatus);
  }
  if (r.error !== null && typeof r.error !== 'string') bad('error', 'text or null', r.error);
  if (!Array.isArray(r.chunks)) {
    bad('chunks', 'an array of [time, tokens] pairs', r.chunks);
  } else if (r.chunks.length > MAX_OUTPUT_TOKENS) {
    badText('chunks', `at most ${MAX_OUTPUT_TOKENS} [time, tokens] pairs`, `${r.chunks.length}`);
  } else {
    let prevS = -Infinity;
    let streamed = 0;
    const before = problems.length;
    const chunks = r.chunks as unknown[];
    for (let i = 0; i < chunks.length && problems.length < MAX_PROBLEMS; i++) {
      const c = chunks[i];
      if (!Array.isArray(c) || c.length !== 2) {
        bad(`chunks[${i}]`, 'a [time, tokens] pair', c);
        continue;
      }
      const [t, k] = c as [unknown, unknown];
      if (!isTime(t)) bad(`chunks[${i}][0]`, 'a time >= 0', t);
      else if (t < prevS) bad(`chunks[${i}][0]`, `a time >= the previous chunk's ${prevS}`, t);
      else if (i === 0 && isTime(r.sentS) && t < r.sentS) bad('chunks[0][0]', `a time >= sentS ${r.sentS}`, t);
      if (!isCount(k, MAX_OUTPUT_TOKENS)) {
        bad(`chunks[${i}][1]`, `a token count (integer within 0..${MAX_OUTPUT_TOKENS})`, k);
      } else streamed += k;
      if (isTime(t)) prevS = t;
    }
    // outputTokens is what the chunks add up to (the writer derives it so); a record that says
    // otherwise would let a server's claim, not what was streamed, set TPOT and throughput.
    // Checked only over well-formed chunks, so one bad chunk is reported once.
    if (problems.length === before && isCount(r.outputTokens, MAX_OUTPUT_TOKENS) && streamed !== r.outputTokens) {
      badText('outputTokens', `the sum of the chunks' tokens (${streamed})`, `${r.outputTokens}`);
    }
  }
  // Optional extras (record.ts): checked only when present.
  for (const f of ['usagePromptTokens', 'usageOutputTokens'] as const) {
    if (r[f] !== undefined && r[f] !== null && !isCount(r[f], Number.MAX_SAFE_INTEGER)) bad(f, 'an integer >= 0 or null', r[f]);
  }
  if (r.slotWaitS !== undefined && !isTime(r.slotWaitS)) bad('slotWaitS', 'a time >= 0', r.slotWaitS);
  if (r.emitNs !== undefined) {
    if (!Array.isArray(r.emitNs)) bad('emitNs', 'an array of decimal strings', r.emitNs);
    else if (Array.isArray(r.chunks) && r.emitNs.length !== r.chunks.length) {
      badText('emitNs', `one entry per chunk (${r.chunks.length})`, `${r.emitNs.length} entries`);
    } else {
      const i = (r.emitNs as unknown[]).findIndex((v) => typeof v !== 'string' || !/^\d{1,20}$/.test(v));
      if (i >= 0) bad(`emitNs[${i}]`, 'a decimal string of nanoseconds', (r.emitNs as unknown[])[i]);
    }
  }
  if (r.textlessChunks !== undefined) {
    const n = Array.isArray(r.chunks) ? r.chunks.length : 0;
    if (!Array.isArray(r.textlessChunks)) bad('textlessChunks', 'an array of chunk indices', r.textlessChunks);
    else {
      const list = r.textlessChunks as unknown[];
      const i = list.findIndex((v, j) => !(Number.isInteger(v) && (v as number) >= 0 && (v as number) < n && (j === 0 || (v as number) > (list[j - 1] as number))));
      if (i >= 0) bad(`textlessChunks[${i}]`, `a chunk index within 0..${n - 1}, above the previous one`, list[i]);
    }
  }
  return problems;
}

/** Narrowing helper: the value is a TimelineRecord when it has no problems. */
export function isTimelineRecord(value: unknown): value is TimelineRecord {
  return timelineProblems(value).length === 0;
}
