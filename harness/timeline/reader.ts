// Streams a timelines.jsonl file line by line (never loading it whole) and yields each record or
// the problem that makes a line unusable, e.g. `timelines.jsonl:17: chunks[3][0] must be a time
// >= 0, got -0.2 (number)`. A corrupt line (a crash mid-write, a hand edit) is reported and
// reading continues: the other requests of a run are still worth analysing.
import { createReadStream, statSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { UserError } from '../util/errors.ts';
import type { TimelineRecord } from './record.ts';
import { timelineProblems } from './validate.ts';

/** One line's outcome: a valid record, or a problem naming file, line, field and value. */
export interface TimelineLine {
  line: number;
  record?: TimelineRecord;
  problem?: string;
}

/**
 * Yields every non-blank line of a timelines file as a record or a problem. `displayPath` is how
 * problems name the file (defaults to the path given). Throws UserError when the file cannot be
 * opened at all (missing, a directory, unreadable).
 */
export async function* readTimelines(path: string, displayPath = path): AsyncGenerator<TimelineLine> {
  try {
    if (statSync(path).isDirectory()) throw new UserError(`${displayPath}: is a directory, expected a timelines.jsonl file`);
  } catch (err) {
    if (err instanceof UserError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UserError(code === 'ENOENT' ? `${displayPath}: no such file` : `${displayPath}: cannot read (${code})`);
  }
  const stream = createReadStream(path, { encoding: 'utf8', highWaterMark: 1 << 20 });
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const text of lines) {
      n += 1;
      if (text.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(text);
      } catch (err) {
        const preview = text.length > 60 ? `${text.slice(0, 60)}…` : text;
        yield { line: n, problem: `${displayPath}:${n}: not valid JSON (${(err as Error).message}): ${preview}` };
        continue;
      }
      const problems = timelineProblems(value);
      if (problems.length > 0) yield { line: n, problem: `${displayPath}:${n}: ${problems.join('; ')}` };
      else yield { line: n, record: value as TimelineRecord };
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code) throw new UserError(`${displayPath}: cannot read (${code})`);
    throw err;
  } finally {
    lines.close();
    stream.destroy();
  }
}
