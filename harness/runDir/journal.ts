// The run's journal (events.jsonl): one JSON line per step, appended and flushed as it happens, so
// `--resume` can rebuild where a killed run stood. A torn last line (crash mid-write) is ignored.
import { dirname } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import { SIZE_BOUNDS } from '../util/sizeBounds.ts';
import { appendJsonLine, readJsonLines } from './jsonFiles.ts';
import type { JournalLine, RunEvent } from './schema.ts';

// No search reaches these: a probe takes seconds, and a probe above a million QPS would plan more
// requests in its first second than the bound on one probe (util/sizeBounds.ts). An edited journal
// beyond them is refused before the engine starts, not followed to a path that does not exist.
const MAX_PROBE_INDEX = 1_000_000;
const MAX_PROBE_QPS = SIZE_BOUNDS.probeRequests.max;

export class Journal {
  constructor(readonly path: string) {}

  /** events.jsonl sits at the top of the run directory, the directory it may write in. */
  private get root(): string {
    return dirname(this.path);
  }

  /** Appends one event with its wall-clock stamp, handed to the OS at once. */
  append(event: RunEvent): void {
    appendJsonLine(this.root, this.path, { atIso: new Date().toISOString(), ...event });
  }

  /**
   * Every complete event so far, in order (a torn trailing line from a crash is skipped). A probe
   * event whose index or rate is not a number is refused: resume derives paths from the two.
   */
  read(): JournalLine[] {
    const out: JournalLine[] = [];
    for (const e of readJsonLines(this.path)) {
      if (typeof e.type !== 'string') continue;
      if (e.type.startsWith('probe-')) {
        if (!(Number.isInteger(e.index) && (e.index as number) >= 1 && (e.index as number) <= MAX_PROBE_INDEX)) {
          throw new UserError(`${this.path}: ${e.type} event: index must be a whole number within 1..${MAX_PROBE_INDEX}, got ${describeValue(e.index)}`);
        }
        if (!(typeof e.qps === 'number' && Number.isFinite(e.qps) && e.qps > 0 && e.qps <= MAX_PROBE_QPS)) {
          throw new UserError(`${this.path}: ${e.type} event: qps must be a rate > 0 and <= ${MAX_PROBE_QPS}, got ${describeValue(e.qps)}`);
        }
      }
      out.push(e as JournalLine);
    }
    return out;
  }
}
