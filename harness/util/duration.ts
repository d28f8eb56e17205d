// Durations in recipes and flags: `25ms`, `2s`, `1.5m`, `10m`, `1h`, or a bare number of seconds.
// Returns seconds, or null when the text is not a usable duration (callers name the field).
//
// Bounds: every duration may end up in a Node timer, which fires after 1 ms when given more than
// 2^31−1 ms (24.8 days), so longer values are refused rather than silently shortened; anything
// non-zero below 1 µs (`1e-320`) is below what any clock here resolves and is refused as well.

const UNIT_S: Record<string, number> = { us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
const DURATION_RE = /^\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(us|ms|s|m|h)?\s*$/i;

/** Longest duration: Node's timer limit, 2^31−1 ms (about 24.8 days or 596 h). */
export const MAX_DURATION_S = (2 ** 31 - 1) / 1000;
/** Shortest non-zero duration: 1 µs. */
export const MIN_DURATION_S = 1e-6;

/** Seconds written as text or a number, or a sentence saying why the value is no duration. */
export function checkDurationS(value: unknown): { s: number } | { problem: string } {
  let s: number;
  if (typeof value === 'number') s = value;
  else if (typeof value === 'string') {
    const m = DURATION_RE.exec(value);
    if (!m) return { problem: 'must be a duration such as 25ms, 2s or 10m' };
    s = Number(m[1]) * UNIT_S[(m[2] ?? 's').toLowerCase()];
  } else return { problem: 'must be a duration such as 25ms, 2s or 10m' };
  if (Number.isNaN(s)) return { problem: 'must be a duration such as 25ms, 2s or 10m' };
  if (!Number.isFinite(s) || Math.abs(s) > MAX_DURATION_S) {
    return { problem: `must be a duration of at most ${MAX_DURATION_S}s (about 24.8 days, the longest timer Node can set)` };
  }
  if (s !== 0 && Math.abs(s) < MIN_DURATION_S) return { problem: 'must be a duration of 0 or at least 1us' };
  return { s };
}

export function parseDurationS(value: unknown): number | null {
  const r = checkDurationS(value);
  return 's' in r ? r.s : null;
}

/** Formats seconds the way a person writes them: 0.025 → "25ms", 2 → "2s", 600 → "10m". */
export function formatDurationS(seconds: number): string {
  if (seconds !== 0 && Math.abs(seconds) < 1) return `${+(seconds * 1000).toPrecision(6)}ms`;
  if (Math.abs(seconds) >= 120 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${+seconds.toPrecision(6)}s`;
}
