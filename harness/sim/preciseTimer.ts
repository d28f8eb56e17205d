// Fires a callback at an absolute CLOCK_MONOTONIC time with sub-millisecond accuracy: a coarse
// setTimeout until ~2 ms before, then setImmediate turns (I/O keeps flowing) until ~0.1 ms before,
// then a short spin. Node's timers alone are only accurate to about a millisecond.

// The handle the engine keeps to cancel a pending fire.
export interface PreciseTimerHandle {
  cancel(): void;
}

const COARSE_LEAD_NS = 2_000_000n;
const SPIN_LEAD_NS = 100_000n;

// Calls `fn` as soon as process.hrtime.bigint() >= targetNs.
export function fireAt(targetNs: bigint, fn: () => void): PreciseTimerHandle {
  let timeout: NodeJS.Timeout | null = null;
  let immediate: NodeJS.Immediate | null = null;
  let cancelled = false;
  const check = () => {
    timeout = null;
    immediate = null;
    if (cancelled) return;
    const remaining = targetNs - process.hrtime.bigint();
    if (remaining > COARSE_LEAD_NS) {
      timeout = setTimeout(check, Math.max(1, Number(remaining - COARSE_LEAD_NS) / 1e6));
    } else if (remaining > SPIN_LEAD_NS) {
      immediate = setImmediate(check);
    } else {
      while (process.hrtime.bigint() < targetNs) {
        // spin: at most ~0.1 ms
      }
      fn();
    }
  };
  // First step is always asynchronous so a chain of short iterations never recurses.
  const first = targetNs - process.hrtime.bigint();
  if (first > COARSE_LEAD_NS) check();
  else immediate = setImmediate(check);
  return {
    cancel() {
      cancelled = true;
      if (timeout) clearTimeout(timeout);
      if (immediate) clearImmediate(immediate);
    },
  };
}
