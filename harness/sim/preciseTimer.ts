// The engine's iteration timer: the shared precise wake-up (util/wakeAt.ts) on CLOCK_MONOTONIC.
// Sleep slices of 0.25 ms keep the engine's event loop turning for requests arriving meanwhile.
import { wakeAt, type Wake } from '../util/wakeAt.ts';

// The handle the engine keeps to cancel a pending fire.
export type PreciseTimerHandle = Wake;

const nowNs = () => Number(process.hrtime.bigint());

// Calls `fn` as soon as process.hrtime.bigint() >= targetNs (always asynchronously).
export function fireAt(targetNs: bigint, fn: () => void): PreciseTimerHandle {
  return wakeAt(Number(targetNs), nowNs, fn, { sliceNs: 250_000, spinNs: 100_000 });
}
