// Fires a callback at an absolute CLOCK_MONOTONIC time with sub-millisecond accuracy. Node's timers
// alone are only accurate to about a millisecond, and polling with setImmediate burns a core, so:
// a coarse setTimeout until ~2 ms before, then the thread sleeps in Atomics.wait (a futex with a
// precise timeout, no CPU) until ~0.1 ms before, then a short spin. Blocking the loop for those last
// ~2 ms changes nothing the engine models: requests arriving meanwhile only join at the boundary.

// The handle the engine keeps to cancel a pending fire.
export interface PreciseTimerHandle {
  cancel(): void;
}

const COARSE_LEAD_NS = 2_000_000n;
const SPIN_LEAD_NS = 100_000n;
const sleepCell = new Int32Array(new SharedArrayBuffer(4));

// Calls `fn` as soon as process.hrtime.bigint() >= targetNs (always asynchronously).
export function fireAt(targetNs: bigint, fn: () => void): PreciseTimerHandle {
  let timeout: NodeJS.Timeout | null = null;
  let immediate: NodeJS.Immediate | null = null;
  let cancelled = false;
  const check = () => {
    timeout = null;
    immediate = null;
    if (cancelled) return;
    let remaining = targetNs - process.hrtime.bigint();
    if (remaining > COARSE_LEAD_NS) {
      timeout = setTimeout(check, Math.max(1, Number(remaining - COARSE_LEAD_NS) / 1e6));
      return;
    }
    if (remaining > SPIN_LEAD_NS) {
      Atomics.wait(sleepCell, 0, 0, Number(remaining - SPIN_LEAD_NS) / 1e6);
      remaining = targetNs - process.hrtime.bigint();
    }
    while (process.hrtime.bigint() < targetNs) {
      // spin: at most ~0.1 ms
    }
    fn();
  };
  // First step is always asynchronous so a chain of short iterations never recurses, and the
  // event loop gets one turn per iteration at least.
  if (targetNs - process.hrtime.bigint() > COARSE_LEAD_NS) check();
  else immediate = setImmediate(check);
  return {
    cancel() {
      cancelled = true;
      if (timeout) clearTimeout(timeout);
      if (immediate) clearImmediate(immediate);
    },
  };
}
