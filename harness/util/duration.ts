// Durations in recipes and flags: `25ms`, `2s`, `1.5m`, `10m`, `1h`. Returns seconds, or a
// sentence saying why the value is no duration (callers name the field).
//
// A person's bare number is refused: `tbtDeadline: 50` reads as 50 ms to one reader and 50 s to
// another, and a 1000× mistake in a deadline passes every probe. Only 0 needs no unit (and a
// negative number is left to the caller, which refuses its sign). Text the tool wrote itself (a
// sim argv, an SLO's canonical text) passes `bareSeconds` and keeps seconds.
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

export interface DurationOptions {
  /** Read a number without a unit as seconds (only for values the tool itself wrote). */
  bareSeconds?: boolean;
}

/** The sentence for a number without a unit, with both readings spelled out. */
export function bareNumberProblem(n: number | string): string {
  const text = String(n).trim();
  return `needs a unit: ${text} alone could mean ${text}ms or ${text}s (write "${text}ms" or "${text}s")`;
}

/**
 * Seconds written as text (or, with `bareSeconds`, a number), or a sentence saying why the value is
 * no duration. `bare` is set when the only fault is a missing unit, so a reader of the tool's own
 * older files can take the number as seconds.
 */
export function checkDurationS(value: unknown, opts: DurationOptions = {}): { s: number } | { problem: string; bare?: number } {
  let s: number;
  let unit: string | undefined;
  if (typeof value === 'number') s = value;
  else if (typeof value === 'string') {
    const m = DURATION_RE.exec(value);
    if (!m) return { problem: 'must be a duration such as 25ms, 2s or 10m' };
    unit = m[2];
    s = Number(m[1]) * UNIT_S[(unit ?? 's').toLowerCase()];
  } else return { problem: 'must be a duration such as 25ms, 2s or 10m' };
  if (Number.isNaN(s)) return { problem: 'must be a duration such as 25ms, 2s or 10m' };
  const tooLong = { problem: `must be a duration of at most ${MAX_DURATION_S}s (about 24.8 days, the longest timer Node can set)` };
  if (!Number.isFinite(s)) return tooLong;
  // Below 1 µs as seconds is below it in any unit, so that is said first; past the timer limit is not.
  if (s !== 0 && Math.abs(s) < MIN_DURATION_S) return { problem: 'must be a duration of 0 or at least 1us' };
  if (unit === undefined && s > 0 && !opts.bareSeconds) return { problem: bareNumberProblem(value as number | string), bare: s };
  if (Math.abs(s) > MAX_DURATION_S) return tooLong;
  return { s };
}

export function parseDurationS(value: unknown, opts: DurationOptions = {}): number | null {
  const r = checkDurationS(value, opts);
  return 's' in r ? r.s : null;
}

/** Formats seconds the way a person writes them: 0.025 → "25ms", 2 → "2s", 600 → "10m". */
export function formatDurationS(seconds: number): string {
  if (seconds !== 0 && Math.abs(seconds) < 1) return `${+(seconds * 1000).toPrecision(6)}ms`;
  if (Math.abs(seconds) >= 120 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${+seconds.toPrecision(6)}s`;
}
