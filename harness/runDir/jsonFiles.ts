// The JSON and JSON-lines helpers every run-directory file goes through: pretty JSON written whole,
// JSON lines appended and flushed one at a time, and readers that name the file in every error.
// Timelines have their own streaming reader (timeline/reader.ts); everything else is small.
// Writers name the directory they own (`root`): nothing is written through a link below it.
import { existsSync, readFileSync } from 'node:fs';
import { UserError } from '../util/errors.ts';
import { appendFileIn, writeFileIn } from '../util/confinedFs.ts';

/**
 * Writes `value` as JSON with a trailing newline: indented for people, or compact for large plans.
 * Written beside the file and renamed over it, so a full disk or a kill mid-write leaves the old
 * file whole (manifest.json is rewritten at every step of a run).
 */
export function writeJsonFile(root: string, path: string, value: unknown, opts: { compact?: boolean } = {}): void {
  writeFileIn(root, path, (opts.compact ? JSON.stringify(value) : JSON.stringify(value, null, 2)) + '\n');
}

/** Parses a JSON file; a file that is not JSON is a UserError naming it. */
export function readJsonFile(path: string): unknown {
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new UserError(`${path}: not valid JSON (${(err as Error).message})`);
  }
}

/** Appends one line, handed to the OS at once, so a crash loses at most this line. */
export function appendJsonLine(root: string, path: string, value: unknown): void {
  appendFileIn(root, path, JSON.stringify(value) + '\n');
}

/** Starts (or empties) a JSON-lines file. */
export function startJsonLines(root: string, path: string): void {
  writeFileIn(root, path, '');
}

/** The objects of a JSON-lines file; [] when it is absent. A torn line (a crash mid-write) is skipped. */
export function readJsonLines(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // a line cut short by SIGKILL: the step it describes did not complete
    }
  }
  return out;
}
