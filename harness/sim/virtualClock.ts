// The engine's second clock: a discrete-event loop in virtual time. It implements the same
// EngineDeps the real-time server gives SimEngine (nowNs, fireAt, defer), so one engine core —
// scheduler, KV cache, iteration-time model — runs either against CLOCK_MONOTONIC or as fast as
// the CPU allows. Pure: no I/O, no real clock.
import type { EngineDeps } from './engine.ts';
import type { PreciseTimerHandle } from './preciseTimer.ts';

interface Scheduled {
  atNs: bigint;
  /** Insertion order: events at the same time run first-in first-out, like timers of one turn. */
  order: number;
  fn: () => void;
  cancelled: boolean;
}

// Events ordered by (time, insertion); run() pops them until none are left.
export class VirtualClock implements EngineDeps {
  private heap: Scheduled[] = [];
  private order = 0;
  private now: bigint;
  /** Events run so far (for benchmarks). */
  eventsRun = 0;

  constructor(startNs = 0n) {
    this.now = startNs;
  }

  nowNs(): bigint {
    return this.now;
  }

  /** Runs `fn` at `targetNs` (never in the past: a past target runs at the current time). */
  fireAt(targetNs: bigint, fn: () => void): PreciseTimerHandle {
    const ev = this.push(targetNs < this.now ? this.now : targetNs, fn);
    return { cancel: () => void (ev.cancelled = true) };
  }

  /** Runs `fn` after every event already due now (setImmediate's place in the real loop). */
  defer(fn: () => void): void {
    this.push(this.now, fn);
  }

  /** Schedules `fn` at an absolute virtual time, e.g. a planned arrival. */
  at(atNs: bigint, fn: () => void): void {
    this.push(atNs < this.now ? this.now : atNs, fn);
  }

  /** Runs events in time order until none remain or `stop()` returns true after an event. */
  run(stop?: () => boolean): void {
    while (this.heap.length > 0) {
      const ev = this.pop();
      if (ev.cancelled) continue;
      this.now = ev.atNs;
      this.eventsRun += 1;
      ev.fn();
      if (stop?.()) return;
    }
  }

  get pending(): number {
    return this.heap.length;
  }

  private push(atNs: bigint, fn: () => void): Scheduled {
    const ev: Scheduled = { atNs, order: this.order++, fn, cancelled: false };
    const h = this.heap;
    h.push(ev);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
    return ev;
  }

  private pop(): Scheduled {
    const h = this.heap;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && before(h[l], h[m])) m = l;
        if (r < h.length && before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

function before(a: Scheduled, b: Scheduled): boolean {
  return a.atNs < b.atNs || (a.atNs === b.atNs && a.order < b.order);
}
