// Fires a callback at an absolute CLOCK_MONOTONIC time with sub-millisecond accuracy. Node's timers
// alone are only accurate to about a millisecond, and polling with setImmediate burns a core, so:
// a coarse setTimeout until ~2 ms before, then sleeps of at most 0.25 ms in Atomics.wait (a futex
// with a precise timeout, no CPU) separated by setImmediate turns, so other code sharing the event
// loop (an in-process client, new requests) waits 0.25 ms at most; then a spin of ~0.1 ms at most.

// The handle the engine keeps to cancel a pending fire.
export interface PreciseTimerHandle {
  cancel(): void;
}

const COARSE_LEAD_NS = 2_000_000n;
const SPIN_LEAD_NS = 100_000n;
const SLEEP_SLICE_NS = 250_000n;
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
      const sleepNs = remaining - SPIN_LEAD_NS < SLEEP_SLICE_NS ? remaining - SPIN_LEAD_NS : SLEEP_SLICE_NS;
      Atomics.wait(sleepCell, 0, 0, Number(sleepNs) / 1e6);
      remaining = targetNs - process.hrtime.bigint();
      if (remaining > SPIN_LEAD_NS) {
        immediate = setImmediate(check);
        return;
      }
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
