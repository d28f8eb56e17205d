// The probe's clock on the calling thread: ns since the probe's start (a process.hrtime.bigint()
// reading) as a plain number. Read through performance.now(), which shares hrtime's monotonic
// source but returns a double: no BigInt is allocated per read on the receive path.
import { performance } from 'node:perf_hooks';

/** A function returning ns since `startNs`; the offset between the two clocks is pinned once here. */
export function probeClock(startNs: bigint): () => number {
  // The two readings straddle a few tens of ns; the closest of a few pairs pins the offset.
  let bestGap = Infinity;
  let offsetNs = 0;
  for (let i = 0; i < 5; i++) {
    const a = performance.now();
    const h = process.hrtime.bigint();
    const b = performance.now();
    if (b - a < bestGap) {
      bestGap = b - a;
      offsetNs = Number(h - startNs) - ((a + b) / 2) * 1e6;
    }
  }
  offsetNs = Math.round(offsetNs);
  // Whole ns, as hrtime gives them (decoders do exact BigInt arithmetic with these).
  return () => Math.round(performance.now() * 1e6) + offsetNs;
}
