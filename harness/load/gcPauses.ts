// Garbage-collection pauses of the calling thread during a probe, on the probe's clock: a pause
// on a receiving loop delays every read that arrives during it, so the client-health figures say
// how much of the receive − emit tail such pauses explain.
import { PerformanceObserver, performance } from 'node:perf_hooks';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Starts recording; stop() returns [start ns after probe start, duration ns] pairs, flattened. */
export function watchGcPauses(probeStartNs: bigint): { stop(): Float64Array } {
  // performance.now() and hrtime share no origin: pin one to the other once, at the start.
  const offsetNs = Number(process.hrtime.bigint() - probeStartNs) - performance.now() * 1e6;
  const pauses: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) pauses.push(e.startTime * 1e6 + offsetNs, e.duration * 1e6);
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    stop() {
      // Entries still queued for the callback are delivered by takeRecords().
      for (const e of observer.takeRecords()) pauses.push(e.startTime * 1e6 + offsetNs, e.duration * 1e6);
      observer.disconnect();
      return Float64Array.from(pauses);
    },
  };
}

/**
 * Runs a full collection now, on the calling thread: a receiving worker does it once before the
 * probe's clock starts, because what loading its modules left behind was otherwise collected by a
 * mark-compact during the ramp (measured at 100 streams: a 2-3 ms marking step plus 1-2 ms of
 * finalisation ~0.4 s in, with every stream receiving; gone with this, and half the scavenges too).
 * Workers cannot be given --expose-gc, so the flag is set at run time and `gc` taken from a new
 * context, where V8 then installs it. A 'minor' collection empties only the young generation
 * (and, unlike a major one, keeps compiled code that refers to objects now dead). False when refused.
 */
export function collectGarbageNow(type: 'major' | 'minor' = 'major'): boolean {
  try {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as (options?: { type: 'minor' }) => void;
    // Node 20's V8 reads any options object as a young-generation collection: only gc() is a full one.
    if (type === 'major') gc();
    else gc({ type: 'minor' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Heap sizes, in MB, of workers started after this call. V8 starts a new isolate with a 1 MB
 * semi-space and grows it only after scavenges, and at 100 streams the two scavenges a probe then
 * needed set its receive − emit p99 (each stalls a whole burst of chunks: measured 2.3-3.3 ms p99
 * with them, 1.3 ms without, against the raw-socket floor's 0.8-1.0). Starting receivers with room
 * for a probe's allocation leaves them none. The initial old-generation size keeps the limit V8
 * derives from the small heap left by the receiver's collection before the probe from starting a
 * mark-compact mid-probe: at 500 streams × 200 tokens on one receiver, one came (about 10 ms, plus
 * its marking steps) in 5 of 10 probes without it and in none of 10 with 128 MB. A worker's
 * resourceLimits can only cap these, so the V8 flags are set before it starts.
 */
export function sizeWorkerHeaps(semiSpaceMb: number, initialOldSpaceMb: number): boolean {
  try {
    // The maximum first: V8 caps the starting size at it (16 MB by default).
    setFlagsFromString(`--max-semi-space-size=${semiSpaceMb}`);
    setFlagsFromString(`--min-semi-space-size=${semiSpaceMb}`);
    setFlagsFromString(`--initial-old-space-size=${initialOldSpaceMb}`);
    return true;
  } catch {
    return false;
  }
}
