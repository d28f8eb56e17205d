// Checks one parsed timeline line against SPEC §4 and names every bad field with its value, e.g.
// `chunks[3][0] must be a time >= 0, got -0.2 (number)`. Hand-written rather than zod because it
// runs on every chunk of every line (20 M chunks in the 100k-request benchmark) and must stay cheap.
import { describeValue } from '../util/errors.ts';
import { REQUEST_STATUSES, type TimelineRecord } from './record.ts';

const MAX_PROBLEMS = 5;

const isTime = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** Problems of one parsed line (empty when it is a valid TimelineRecord). */
export function timelineProblems(value: unknown): string[] {
  const problems: string[] = [];
  const bad = (field: string, expected: string, got: unknown) => {
    if (problems.length < MAX_PROBLEMS) problems.push(`${field} must be ${expected}, got ${describeValue(got)}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    bad('the line', 'a JSON object (one timeline record)', value);
    return problems;
  }
  const r = value as Record<string, unknown>;
  if (typeof r.id !== 'string' || r.id.length === 0) bad('id', 'a non-empty string', r.id);
  for (const f of ['scheduledS', 'sentS'] as const) if (!isTime(r[f])) bad(f, 'a time >= 0 (seconds)', r[f]);
  for (const f of ['promptTokens', 'maxTokens', 'outputTokens'] as const) {
    if (!isCount(r[f])) bad(f, 'an integer >= 0', r[f]);
  }
  if (typeof r.status !== 'string' || !(REQUEST_STATUSES as readonly string[]).includes(r.status)) {
    bad('status', `one of ${REQUEST_STATUSES.join(', ')}`, r.status);
  }
  if (r.httpStatus !== null && !(Number.isInteger(r.httpStatus) && (r.httpStatus as number) >= 100 && (r.httpStatus as number) <= 599)) {
    bad('httpStatus', 'an HTTP status 100..599 or null', r.httpStatus);
  }
  if (r.error !== null && typeof r.error !== 'string') bad('error', 'text or null', r.error);
  if (!Array.isArray(r.chunks)) {
    bad('chunks', 'an array of [time, tokens] pairs', r.chunks);
  } else {
    let prevS = -Infinity;
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
      if (!isCount(k)) bad(`chunks[${i}][1]`, 'a token count (integer >= 0)', k);
      if (isTime(t)) prevS = t;
    }
  }
  // Optional extras (record.ts): checked only when present.
  for (const f of ['usagePromptTokens', 'usageOutputTokens'] as const) {
    if (r[f] !== undefined && r[f] !== null && !isCount(r[f])) bad(f, 'an integer >= 0 or null', r[f]);
  }
  if (r.slotWaitS !== undefined && !isTime(r.slotWaitS)) bad('slotWaitS', 'a time >= 0', r.slotWaitS);
  if (r.emitNs !== undefined) {
    if (!Array.isArray(r.emitNs)) bad('emitNs', 'an array of decimal strings', r.emitNs);
    else {
      const i = (r.emitNs as unknown[]).findIndex((v) => typeof v !== 'string' || !/^\d+$/.test(v));
      if (i >= 0) bad(`emitNs[${i}]`, 'a decimal string of nanoseconds', (r.emitNs as unknown[])[i]);
    }
  }
  return problems;
}

/** Narrowing helper: the value is a TimelineRecord when it has no problems. */
export function isTimelineRecord(value: unknown): value is TimelineRecord {
  return timelineProblems(value).length === 0;
}
