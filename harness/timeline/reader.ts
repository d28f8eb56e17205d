// Streams a timelines.jsonl file line by line (never loading it whole) and yields each record or
// the problem that makes a line unusable, e.g. `timelines.jsonl:17: chunks[3][0] must be a time
// >= 0, got -0.2 (number)`. A corrupt line (a crash mid-write, a hand edit) is reported and
// reading continues: the other requests of a run are still worth analysing.
//
// Lines are split here rather than by readline so that their length is bounded: a file without
// newlines (binary data, a NUL-filled tail after a power loss) must not grow one string until V8
// gives up. Problems quote at most a short, terminal-safe preview of the line.
import { createReadStream, statSync } from 'node:fs';
import { UserError, printable, truncate } from '../util/errors.ts';
import type { TimelineRecord } from './record.ts';
import { timelineProblems } from './validate.ts';

/** Longest line read (64 MiB): 2^20 chunks with their emit times stay well below it. */
export const MAX_LINE_BYTES = 64 * 1024 * 1024;
const PREVIEW_CHARS = 60;

/** One line's outcome: a valid record, or a problem naming file, line, field and value. */
export interface TimelineLine {
  line: number;
  record?: TimelineRecord;
  problem?: string;
}

/**
 * Yields every non-blank line of a timelines file as a record or a problem. `displayPath` is how
 * problems name the file (defaults to the path given). Throws UserError when the file cannot be
 * opened at all (missing, a directory, a device, unreadable).
 */
export async function* readTimelines(
  path: string,
  displayPath = path,
  opts: { maxLineBytes?: number } = {},
): AsyncGenerator<TimelineLine> {
  const maxLineBytes = opts.maxLineBytes ?? MAX_LINE_BYTES;
  const shown = printable(displayPath);
  try {
    const st = statSync(path);
    if (st.isDirectory()) throw new UserError(`${shown}: is a directory, expected a timelines.jsonl file`);
    // A device (/dev/zero, /dev/urandom) never ends; a FIFO is allowed for `analyze <(zcat …)`.
    if (!st.isFile() && !st.isFIFO()) throw new UserError(`${shown}: is not a regular file, expected a timelines.jsonl file`);
  } catch (err) {
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(code === 'ENOENT' ? `${shown}: no such file` : `${shown}: cannot read (${code})`);
  }
  const stream = createReadStream(path, { highWaterMark: 1 << 20 });
  const decoder = new TextDecoder('utf-8');
  let n = 0;
  let pieces: Buffer[] = [];
  let pending = 0;
  let oversized = false;

  const finish = (bytes: Buffer | null): TimelineLine | null => {
    n += 1;
    if (oversized) {
      return { line: n, problem: `${shown}:${n}: line longer than ${maxLineBytes} bytes (binary data or not a timelines file); skipped` };
    }
    const buf = bytes ?? Buffer.concat(pieces, pending);
    return parseLine(buf, n, shown, decoder);
  };

  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let from = 0;
      for (;;) {
        const nl = chunk.indexOf(10, from);
        if (nl < 0) break;
        let out: TimelineLine | null;
        if (pieces.length === 0 && !oversized) {
          const len = nl - from;
          if (len > maxLineBytes) oversized = true;
          out = finish(oversized ? null : chunk.subarray(from, nl));
        } else {
          if (!oversized && pending + (nl - from) > maxLineBytes) oversized = true;
          if (!oversized) {
            pieces.push(chunk.subarray(from, nl));
            pending += nl - from;
          }
          out = finish(null);
        }
        pieces = [];
        pending = 0;
        oversized = false;
        from = nl + 1;
        if (out !== null) yield out;
      }
      if (from < chunk.length && !oversized) {
        if (pending + (chunk.length - from) > maxLineBytes) {
          oversized = true;
          pieces = [];
          pending = 0;
        } else {
          pieces.push(chunk.subarray(from));
          pending += chunk.length - from;
        }
      }
    }
    if (pending > 0 || oversized) {
      const out = finish(null);
      if (out !== null) yield out;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new UserError(`${shown}: cannot read (${code})`);
    throw err;
  } finally {
    stream.destroy();
  }
}

/** One line's bytes to a record or a problem; null for a blank line. */
function parseLine(bytes: Buffer, n: number, shown: string, decoder: TextDecoder): TimelineLine | null {
  if (bytes.includes(0)) {
    return { line: n, problem: `${shown}:${n}: binary data (a NUL byte at column ${bytes.indexOf(0) + 1}), not a JSON line` };
  }
  let text = decoder.decode(bytes);
  if (text.endsWith('\r')) text = text.slice(0, -1);
  if (text.trim() === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // V8's message quotes part of the line; both it and the preview are made terminal-safe.
    const preview = text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
    const why = truncate((err as Error).message, 120);
    return { line: n, problem: `${shown}:${n}: not valid JSON (${printable(why)}): ${printable(preview)}` };
  }
  const problems = timelineProblems(value);
  if (problems.length > 0) return { line: n, problem: `${shown}:${n}: ${problems.join('; ')}` };
  return { line: n, record: value as TimelineRecord };
}
