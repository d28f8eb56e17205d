// The run's journal (events.jsonl): one JSON line per step, appended and flushed as it happens, so
// `--resume` can rebuild where a killed run stood. A torn last line (crash mid-write) is ignored.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

/** A finished probe as the journal records it and capacity.json lists it. */
export interface ProbeOutcome {
  index: number;
  qps: number;
  dir: string;
  passed: boolean;
  valid: boolean;
  requests: number;
  durationS: number;
  earlyStop: string | null;
  sloValue: number | null;
}

export type RunEvent =
  | { type: 'run-started'; runId: string; recipeFile: string; resumed: boolean }
  | { type: 'engine-ready'; baseUrl: string; timeToReadyS: number | null; engine: string }
  | { type: 'profile-finished'; points: number; r2: number }
  | { type: 'probe-started'; index: number; qps: number; dir: string }
  | ({ type: 'probe-finished' } & ProbeOutcome)
  | { type: 'probe-interrupted'; index: number; qps: number; dir: string; movedTo: string }
  | { type: 'search-finished'; capacityQps: number; reason: string }
  | { type: 'engine-stopped'; verified: boolean }
  | { type: 'run-finished'; status: 'completed' | 'failed' | 'interrupted'; reason: string };

export type JournalLine = RunEvent & { atIso: string };

export class Journal {
  constructor(readonly path: string) {}

  /** Appends one event with its wall-clock stamp; appendFileSync flushes it to the OS at once. */
  append(event: RunEvent): void {
    appendFileSync(this.path, JSON.stringify({ atIso: new Date().toISOString(), ...event }) + '\n');
  }

  /** Every complete event so far, in order (a torn trailing line from a crash is skipped). */
  read(): JournalLine[] {
    if (!existsSync(this.path)) return [];
    const out: JournalLine[] = [];
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as JournalLine);
      } catch {
        // a line cut short by SIGKILL: the step it describes did not complete
      }
    }
    return out;
  }
}
