// Appends timeline records as JSON lines, one write per request, so a crash loses at most the
// requests still in flight (SPEC §4). Times are rounded to microseconds when written.
import { writeSync, closeSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { openAppendIn } from '../util/confinedFs.ts';
import type { TimelineRecord } from './record.ts';

const roundUs = (s: number) => Math.round(s * 1e6) / 1e6;

/** Serialises one record to a line (no newline) with times at microsecond resolution. */
export function formatTimelineLine(r: TimelineRecord): string {
  const out: TimelineRecord = {
    ...r,
    scheduledS: roundUs(r.scheduledS),
    sentS: roundUs(r.sentS),
    chunks: r.chunks.map(([t, k]) => [roundUs(t), k]),
  };
  return JSON.stringify(out);
}

export class TimelineWriter {
  readonly path: string;
  private fd: number | null;
  count = 0;

  constructor(path: string) {
    mkdirSync(dirname(path), { recursive: true });
    this.path = path;
    // The probe directory was made by its owner; a link planted as the file itself is refused.
    this.fd = openAppendIn(dirname(path), path);
  }

  /** Writes the record and its newline in one synchronous write (appended and flushed to the OS). */
  append(record: TimelineRecord): void {
    if (this.fd === null) throw new Error(`timeline writer for ${this.path} is closed`);
    writeSync(this.fd, formatTimelineLine(record) + '\n');
    this.count += 1;
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}
