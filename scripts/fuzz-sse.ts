// Differential fuzzing of our SSE parser (harness/load/sse.ts) against eventsource-parser 3, the
// reference: generated event streams (well-formed ones and byte soup built from the grammar's
// pieces), each fed to both parsers split at random points (inside CRLF pairs and surrogate pairs
// included). Every dispatched event (type, id, data) must agree. `tsx scripts/fuzz-sse.ts [count]
// [seed]` prints the count and every mismatch (the first 10 in full) and exits 1 on any; the test
// suite runs it at a smaller count.
import { resolve } from 'node:path';
import { createParser } from 'eventsource-parser';
import { SseParser, type SseEvent } from '../harness/load/sse.ts';
import { createRng, type Rng } from '../harness/util/rng.ts';

export interface SseMismatch {
  input: string;
  parts: string[];
  ours: SseEvent[];
  reference: SseEvent[];
}

export interface SseFuzzResult {
  inputs: number;
  events: number;
  mismatchCount: number;
  /** The first few mismatches, whole. */
  mismatches: SseMismatch[];
}

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)];
const EOLS = ['\n', '\r\n', '\r'];
const VALUE_PIECES = ['a', 'b', ' ', '  ', ':', ': ', '{', '"', 'é', '🙂', '[DONE]', '\t', 'data', 'x:y', '\u0000', '\uFEFF', '\u2028', '{"choices":[{"text":"hi"}]}'];
const FIELDS = ['data', 'data', 'data', 'event', 'id', 'retry', 'Data', 'data ', ' data', 'dat', 'datas', 'foo', '', 'id\u0000'];
// Byte soup: the grammar's pieces in any order, so line ends land everywhere.
const SOUP = ['d', 'a', 't', ':', ' ', '\n', '\r', '\r\n', '\n\n', 'data:', 'data: ', 'event:', 'id:', 'retry:', ':', '\u0000', 'x', 'é', '🙂', '\uFEFF', '1'];

function value(rng: Rng): string {
  let s = '';
  const n = Math.floor(rng.next() * (rng.next() < 0.02 ? 400 : 6));
  for (let i = 0; i < n; i++) s += pick(rng, VALUE_PIECES);
  return s;
}

function structured(rng: Rng): string {
  let out = '';
  const events = Math.floor(rng.next() * 8);
  for (let e = 0; e < events; e++) {
    const lines = Math.floor(rng.next() * 6);
    for (let l = 0; l < lines; l++) {
      const r = rng.next();
      if (r < 0.08) out += `:${value(rng)}`;
      else if (r < 0.12) out += pick(rng, ['data', 'event', 'id', 'retry']);
      else {
        const field = pick(rng, FIELDS);
        const sep = pick(rng, [':', ': ', ':  ', ':']);
        const v = field === 'retry' ? pick(rng, ['100', '1x', '', ' 5', '007']) : field === 'event' ? pick(rng, ['message', 'error', '', 'ping', value(rng)]) : value(rng);
        out += `${field}${sep}${v}`;
      }
      out += pick(rng, EOLS);
    }
    out += pick(rng, EOLS);
  }
  return out;
}

function soup(rng: Rng): string {
  let out = '';
  const n = Math.floor(rng.next() * 60);
  for (let i = 0; i < n; i++) out += pick(rng, SOUP);
  return out;
}

/** A generated stream; it ends with LF so neither parser is left holding a line at the end. */
function generate(rng: Rng): string {
  return `${rng.next() < 0.6 ? structured(rng) : soup(rng)}\n`;
}

function split(rng: Rng, text: string): string[] {
  const mode = rng.next();
  if (mode < 0.1) return [text];
  if (mode < 0.2) return [...text.split('')]; // one UTF-16 unit at a time (halves of surrogate pairs too)
  const parts: string[] = [];
  let i = 0;
  while (i < text.length) {
    const n = 1 + Math.floor(rng.next() * Math.min(16, text.length - i));
    parts.push(text.slice(i, i + n));
    i += n;
  }
  return parts;
}

const norm = (e: SseEvent): SseEvent => ({ event: e.event, id: e.id, data: e.data });
const same = (a: SseEvent[], b: SseEvent[]) =>
  a.length === b.length && a.every((e, i) => e.event === b[i].event && e.id === b[i].id && e.data === b[i].data);

/** Runs `inputs` generated streams through both parsers. */
export function fuzzSse(opts: { inputs: number; seed: number; keep?: number }): SseFuzzResult {
  const rng = createRng(opts.seed);
  const result: SseFuzzResult = { inputs: 0, events: 0, mismatchCount: 0, mismatches: [] };
  for (let k = 0; k < opts.inputs; k++) {
    const input = generate(rng);
    const parts = split(rng, input);
    const reference: SseEvent[] = [];
    const ref = createParser({ onEvent: (e) => reference.push(norm(e)) });
    const ours: SseEvent[] = [];
    const p = new SseParser();
    for (const part of parts) {
      ref.feed(part);
      p.feed(part, (e) => ours.push(norm(e)));
    }
    result.inputs += 1;
    result.events += reference.length;
    if (!same(ours, reference)) {
      result.mismatchCount += 1;
      if (result.mismatches.length < (opts.keep ?? 10)) result.mismatches.push({ input, parts, ours, reference });
    }
  }
  return result;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(import.meta.filename)) {
  const inputs = Number(process.argv[2] ?? 1_000_000);
  const seed = Number(process.argv[3] ?? 1);
  const t0 = performance.now();
  const r = fuzzSse({ inputs, seed });
  const s = ((performance.now() - t0) / 1000).toFixed(1);
  console.log(`${r.inputs} inputs, ${r.events} events compared, ${r.mismatchCount} mismatches (seed ${seed}, ${s} s)`);
  for (const m of r.mismatches) {
    console.log(`  input ${JSON.stringify(m.input)}\n    parts ${JSON.stringify(m.parts)}\n    ours      ${JSON.stringify(m.ours)}\n    reference ${JSON.stringify(m.reference)}`);
  }
  process.exitCode = r.mismatchCount > 0 ? 1 : 0;
}
