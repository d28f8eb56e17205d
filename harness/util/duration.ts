// Durations in recipes and flags: `25ms`, `2s`, `1.5m`, `10m`, `1h`, or a bare number of seconds.
// Returns seconds, or null when the text is not a duration (callers name the field in the error).

const UNIT_S: Record<string, number> = { us: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
const DURATION_RE = /^\s*(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)\s*(us|ms|s|m|h)?\s*$/i;

export function parseDurationS(value: unknown): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value !== 'string') return null;
  const m = DURATION_RE.exec(value);
  if (!m) return null;
  const unit = (m[2] ?? 's').toLowerCase();
  return Number(m[1]) * UNIT_S[unit];
}

/** Formats seconds the way a person writes them: 0.025 → "25ms", 2 → "2s", 600 → "10m". */
export function formatDurationS(seconds: number): string {
  if (seconds !== 0 && Math.abs(seconds) < 1) return `${+(seconds * 1000).toPrecision(6)}ms`;
  if (Math.abs(seconds) >= 120 && seconds % 60 === 0) return `${seconds / 60}m`;
  return `${+seconds.toPrecision(6)}s`;
}
