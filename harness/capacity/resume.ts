// What `--resume` takes over from the journal: the summaries of the probes that finished, and the
// data of probes that started and never finished (SIGKILL, power loss), moved aside so the rate is
// probed again. Every path is derived from a probe's index and rate, never from the journal's `dir`.
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { confinedPath, renameIn } from '../util/confinedFs.ts';
import { UserError } from '../util/errors.ts';
import type { Journal } from '../runDir/journal.ts';
import { probePaths } from '../runDir/layout.ts';
import { readJsonFile } from '../runDir/jsonFiles.ts';
import type { JournalLine, ProbeSummary } from '../runDir/schema.ts';

/** Finished probes' summaries in run order, and the highest probe index used so far. */
export interface ReclaimedProbes {
  summaries: ProbeSummary[];
  usedIndex: number;
}

/**
 * Refuses a journal whose finished probes have no summary where their index and rate put it (an
 * edited or foreign events.jsonl), before anything is started or moved.
 */
export function checkFinishedProbes(runDir: string, history: readonly JournalLine[], journalPath: string): void {
  const moved = new Set(history.flatMap((x) => (x.type === 'probe-interrupted' ? [x.index] : [])));
  for (const e of history) {
    if (e.type !== 'probe-finished' || moved.has(e.index)) continue;
    const p = probePaths(runDir, e.index, e.qps);
    if (!existsSync(confinedPath(runDir, p.summary, { includeLast: true }))) {
      throw new UserError(`${journalPath}: probe-finished event (index ${e.index}, qps ${e.qps}) has no ${relative(runDir, p.summary)}; the journal does not match the run directory (start a new run instead of resuming)`);
    }
  }
}

/** Reads the finished probes and moves unfinished ones aside (journalling each move). */
export function reclaimProbes(runDir: string, history: readonly JournalLine[], journal: Journal, log: (line: string) => void): ReclaimedProbes {
  const summaries: ProbeSummary[] = [];
  const finished = new Set<number>();
  const movedAside = new Set(history.flatMap((x) => (x.type === 'probe-interrupted' ? [x.index] : [])));
  const moveAside = (index: number, qps: number, why: string) => {
    const p = probePaths(runDir, index, qps);
    // A link in its place is refused rather than moved aside: the report reads nothing through links.
    if (existsSync(confinedPath(runDir, p.dir, { includeLast: true }))) renameIn(runDir, p.dir, p.interruptedDir);
    journal.append({ type: 'probe-interrupted', index, qps, dir: p.rel, movedTo: p.interruptedRel });
    movedAside.add(index);
    log(`probe ${index} at ${qps} QPS ${why}; its data is kept in ${p.interruptedRel} and the rate is probed again`);
  };
  for (const e of history) {
    if (e.type !== 'probe-finished' || movedAside.has(e.index)) continue;
    const summary = readJsonFile(confinedPath(runDir, probePaths(runDir, e.index, e.qps).summary, { includeLast: true })) as ProbeSummary;
    // A probe the engine died under measured a dying engine: its verdict is never reused.
    if (summary.interrupted === true || (summary.engineDied ?? null) !== null) {
      moveAside(e.index, e.qps, `ended with the engine gone (${summary.engineDied ?? 'interrupted'})`);
      continue;
    }
    summaries.push(summary);
    finished.add(e.index);
  }
  let usedIndex = 0;
  for (const e of history) if (e.type === 'probe-started') usedIndex = Math.max(usedIndex, e.index);
  for (const e of history) {
    if (e.type !== 'probe-started' || finished.has(e.index) || movedAside.has(e.index)) continue;
    moveAside(e.index, e.qps, 'did not finish');
  }
  if (summaries.length > 0) log(`reusing ${summaries.length} finished probe(s): ${summaries.map((s) => `${s.qps} QPS ${s.passed ? 'pass' : 'fail'}`).join(', ')}`);
  return { summaries, usedIndex };
}
