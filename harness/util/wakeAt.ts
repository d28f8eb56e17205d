// Wakes code at an instant to within tens of microseconds: the load dispatcher at a planned send,
// the simulated engine at an iteration boundary. setTimeout alone was measured here to fire
// ~0.3 ms EARLY at the median (libuv's millisecond clock), after which a re-armed 1 ms timer made
// the median dispatch lag ~0.8 ms and its p99 several ms. So: a coarse setTimeout until `leadNs`
// before, then futex sleeps (Atomics.wait, no CPU) of at most `sliceNs` separated by setImmediate
// turns, so socket reads on the same loop wait one slice at most; then a spin of at most `spinNs`
// (a futex sleep here oversleeps by ~75 µs: the kernel's timer slack). Busy-polling with
// setImmediate instead burns a core on a shared machine.

/** Cancels a pending wake-up. */
export interface Wake {
  cancel(): void;
}

/** Tuning of the three phases (ns); the defaults were measured on this 2-core machine. */
export interface WakeOptions {
  leadNs?: number;
  sliceNs?: number;
  spinNs?: number;
  /** Called once when the fine phase starts (the dispatcher prepares its request there). */
  onNear?: () => void;
}

const sleepCell = new Int32Array(new SharedArrayBuffer(4));

// Calls `fn` once `nowNs() >= targetNs`, always asynchronously; `nowNs` is the caller's clock in ns.
export function wakeAt(targetNs: number, nowNs: () => number, fn: () => void, o: WakeOptions = {}): Wake {
  const leadNs = o.leadNs ?? 2_000_000;
  const sliceNs = o.sliceNs ?? 100_000;
  const spinNs = o.spinNs ?? 150_000;
  let timeout: NodeJS.Timeout | null = null;
  let immediate: NodeJS.Immediate | null = null;
  let cancelled = false;
  let near = false;
  const check = () => {
    timeout = null;
    immediate = null;
    if (cancelled) return;
    let remaining = targetNs - nowNs();
    if (remaining > leadNs) {
      // setTimeout may fire up to ~1 ms early or late; the check after it decides.
      timeout = setTimeout(check, (remaining - leadNs) / 1e6);
      return;
    }
    if (!near) {
      near = true;
      o.onNear?.();
      if (cancelled) return;
      remaining = targetNs - nowNs();
    }
    if (remaining > spinNs) {
      Atomics.wait(sleepCell, 0, 0, Math.min(sliceNs, remaining - spinNs) / 1e6);
      remaining = targetNs - nowNs();
      if (remaining > spinNs) {
        immediate = setImmediate(check);
        return;
      }
    }
    while (nowNs() < targetNs) {
      // spin: at most spinNs
    }
    fn();
  };
  immediate = setImmediate(check);
  return {
    cancel() {
      cancelled = true;
      if (timeout) clearTimeout(timeout);
      if (immediate) clearImmediate(immediate);
      timeout = null;
      immediate = null;
    },
  };
}
