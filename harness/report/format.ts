// Number formatting shared by report.md, report.html and `compare`, so one figure reads the same in
// all three. Absent values print as an em dash, never as "null" or "NaN".

/** The placeholder for a figure that was not measured or not recorded. */
export const NONE = '—';

const absent = (v: number | null | undefined): v is null | undefined => v === null || v === undefined || Number.isNaN(v);

/** A rate or plain quantity with up to `digits` significant digits: 3.75, 0.125, 1280. */
export function fmtNum(v: number | null | undefined, digits = 4): string {
  if (absent(v)) return NONE;
  if (!Number.isFinite(v)) return v > 0 ? '∞' : '−∞';
  return String(+v.toPrecision(digits));
}

/** Seconds as people read latencies: 412 ms, 1.25 s; failures that reach a percentile show as ∞. */
export function fmtSeconds(s: number | null | undefined): string {
  if (absent(s)) return NONE;
  if (!Number.isFinite(s)) return '∞';
  if (s !== 0 && Math.abs(s) < 1) return `${+(s * 1000).toPrecision(3)} ms`;
  return `${+s.toPrecision(4)} s`;
}

/** A fraction as a percentage: 0.025 → 2.5%. */
export function fmtPct(frac: number | null | undefined, digits = 3): string {
  if (absent(frac)) return NONE;
  return `${+(frac * 100).toPrecision(digits)}%`;
}

/** A signed relative change: +12.5%, −3%. */
export function fmtChange(frac: number | null | undefined): string {
  if (absent(frac)) return NONE;
  if (!Number.isFinite(frac)) return frac > 0 ? '+∞' : '−∞';
  const p = +(frac * 100).toPrecision(3);
  return p > 0 ? `+${p}%` : p < 0 ? `−${Math.abs(p)}%` : '0%';
}

/** Dollars: $6.16, $0.0123 (small amounts keep three significant digits). */
export function fmtUsd(v: number | null | undefined): string {
  if (absent(v)) return NONE;
  if (Math.abs(v) >= 1) return `$${v.toFixed(2)}`;
  return `$${+v.toPrecision(3)}`;
}

/** A coefficient in scientific notation when tiny (prefill fit's b and c). */
export function fmtSci(v: number | null | undefined, digits = 4): string {
  if (absent(v)) return NONE;
  if (v === 0) return '0';
  return Math.abs(v) < 1e-3 || Math.abs(v) >= 1e6 ? v.toExponential(digits - 1) : String(+v.toPrecision(digits));
}
