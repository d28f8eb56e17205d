// The `runs` of a figure directory's figure.json: each system's run directory, written relative to
// the figure directory so a moved or copied figure still resumes into its own runs. A downloaded
// figure.json is not trusted: an entry that is absolute, climbs out with `..` or passes through a
// link is refused before anything is resumed or written.
import { join } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import { confinedPath, relativeInside } from '../util/confinedFs.ts';

export const FIGURE_STATE_FILE = 'figure.json';

/** figure.json's `runs` checked entry by entry: an object of relative paths inside `dir`. */
export function checkFigureRuns(dir: string, runs: unknown): Record<string, string | null> {
  const file = join(dir, FIGURE_STATE_FILE);
  if (runs === null || typeof runs !== 'object' || Array.isArray(runs)) {
    throw new UserError(`${file}: runs must be an object of run directories relative to ${dir}, got ${describeValue(runs)}`);
  }
  for (const [key, rel] of Object.entries(runs)) {
    if (rel === null) continue;
    if (typeof rel !== 'string') throw new UserError(`${file}: runs.${key} must be a run directory relative to ${dir}, got ${describeValue(rel)}`);
    relativeInside(dir, rel, `${file}: runs.${key}`);
  }
  return runs as Record<string, string | null>;
}

/** The run directory figure.json names for `key`, inside `dir` with no link on the way; null when it has none yet (absent or null). */
export function figureRunDir(dir: string, runs: Record<string, string | null | undefined>, key: string): string | null {
  const rel = runs[key];
  if (rel === undefined || rel === null) return null;
  return confinedPath(dir, relativeInside(dir, rel, `${join(dir, FIGURE_STATE_FILE)}: runs.${key}`), { includeLast: true });
}
