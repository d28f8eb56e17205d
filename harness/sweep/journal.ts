// The sweep's journal (sweep.jsonl): one JSON line per run start and end, appended and flushed as
// it happens, so `--resume` knows which runs finished (skipped), which began (resumed from their
// run directory) and which never started. A torn last line (crash mid-write) is ignored.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';

export type SweepRunStatus = 'completed' | 'failed' | 'interrupted';

export type SweepEvent =
  | { type: 'sweep-started'; name: string; sweepFile: string; sweepSha256: string; recipeSha256: string; runs: number; resumed: boolean }
  | { type: 'run-started'; id: string; host: string; gpus: number[]; port: number | null; recipeFile: string; resumeDir: string | null }
  | { type: 'run-finished'; id: string; status: SweepRunStatus; reason: string; runDir: string | null; capacityQps: number | null }
  | { type: 'sweep-finished'; status: 'completed' | 'failed' | 'interrupted'; completed: number; failed: number; interrupted: number; notStarted: number };

export type SweepJournalLine = SweepEvent & { atIso: string };

export class SweepJournal {
  constructor(readonly path: string) {}

  append(event: SweepEvent): void {
    appendFileSync(this.path, JSON.stringify({ atIso: new Date().toISOString(), ...event }) + '\n');
  }

  read(): SweepJournalLine[] {
    if (!existsSync(this.path)) return [];
    const out: SweepJournalLine[] = [];
    for (const line of readFileSync(this.path, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      try {
        out.push(JSON.parse(line) as SweepJournalLine);
      } catch {
        // a line cut short by SIGKILL: the step it describes did not complete
      }
    }
    return out;
  }
}

/** Where each run stands according to the journal: its last status and run directory. */
export interface RunState {
  /** `pending`: never started; `started`: began and has no end line (the process was killed). */
  status: SweepRunStatus | 'pending' | 'started';
  runDir: string | null;
  attempts: number;
}

/** Folds the journal into each run's state (pure). */
export function runStates(lines: readonly SweepEvent[], ids: readonly string[]): Map<string, RunState> {
  const states = new Map<string, RunState>(ids.map((id) => [id, { status: 'pending', runDir: null, attempts: 0 }]));
  for (const e of lines) {
    if (e.type !== 'run-started' && e.type !== 'run-finished') continue;
    const s = states.get(e.id);
    if (!s) continue;
    if (e.type === 'run-started') {
      s.status = 'started';
      s.attempts += 1;
      if (e.resumeDir) s.runDir = e.resumeDir;
    } else {
      s.status = e.status;
      if (e.runDir) s.runDir = e.runDir;
    }
  }
  return states;
}
