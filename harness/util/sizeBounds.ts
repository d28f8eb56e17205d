// The largest size a plan may derive from its inputs, one bound per kind of thing allocated,
// checked where the size is computed and before anything of that size exists. Each bound is far
// above any real use and far below what exhausts V8 (a plan of 30 million requests takes 4 GB; a
// matrix of 10^10 configurations never finishes expanding), so a typo such as `qps: 1e30` is a
// clear error naming the field rather than a fatal "invalid size" or an out-of-memory abort.
import { UserError } from './errors.ts';

export const SIZE_BOUNDS = {
  /** Requests one load probe plans (rate × duration, or its request count). */
  probeRequests: { max: 1_000_000, noun: 'requests in one probe' },
  /** Requests of the isolated-prefill profile (lengths × repeats + warm-ups). */
  profileRequests: { max: 100_000, noun: 'profiling requests' },
  /** Configurations one sweep expands to (the product of the matrix's value counts). */
  sweepConfigurations: { max: 10_000, noun: 'configurations' },
  /** GPUs one engine or host is given (tensorParallel, gpusPerHost). */
  gpus: { max: 4_096, noun: 'GPUs' },
} as const;

export type SizeKind = keyof typeof SIZE_BOUNDS;

const shown = (n: number) => (Number.isFinite(n) && Math.abs(n) < 1e15 ? Math.ceil(n).toLocaleString('en-US') : String(n));

/**
 * Refuses `size` above the bound of `kind` (NaN too). `from` says which fields gave it, e.g.
 * `recipes/x.yaml: search.qps.max (1e+30) × search.probe.minDuration (10 s)`.
 */
export function checkSize(kind: SizeKind, size: number, from: string): void {
  const problem = sizeProblem(kind, size, from);
  if (problem !== null) throw new UserError(problem);
}

/** checkSize's message, or null when `size` is within the bound (for validators that list every problem). */
export function sizeProblem(kind: SizeKind, size: number, from: string): string | null {
  const { max, noun } = SIZE_BOUNDS[kind];
  return size <= max ? null : `${from} gives ${shown(size)} ${noun}, above the bound of ${max.toLocaleString('en-US')}`;
}
