// Per-request metrics kept as numbers in typed arrays, not objects, so a probe of 100,000 requests
// × 200 tokens fits in memory and every percentile stays exact. NaN stands for "not applicable"
// (no TPOT for a one-token request); failure is recorded separately in `succeeded`.
import type { RequestMetrics } from './request.ts';

// A Float64Array that doubles when full: amortised O(1) push without boxing numbers.
export class GrowableF64 {
  private buf: Float64Array;
  length = 0;

  constructor(capacity = 1024) {
    this.buf = new Float64Array(Math.max(1, capacity));
  }

  push(v: number): void {
    if (this.length === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      next.set(this.buf);
      this.buf = next;
    }
    this.buf[this.length++] = v;
  }

  /** The filled part (a view: valid until the next push). */
  view(): Float64Array {
    return this.buf.subarray(0, this.length);
  }
}

/** Column view of a set of requests, as the SLO check and the fluid-rate search read them. */
export interface MetricColumns {
  count: number;
  /** 1 when the request ended ok with at least one token, else 0. */
  succeeded: ArrayLike<number>;
  ttftS: ArrayLike<number>;
  tpotS: ArrayLike<number>;
  e2eS: ArrayLike<number>;
  normalizedLatencyS: ArrayLike<number>;
  schedulingDelayS: ArrayLike<number>;
  dispatchLagS: ArrayLike<number>;
  fluidity: ArrayLike<number>;
  /** First-token deadline D_p used for each request. */
  dpS: ArrayLike<number>;
  /** Every request's TBT samples back to back; request i owns [tbtStart[i], tbtStart[i + 1]). */
  tbtSamplesS: ArrayLike<number>;
  tbtStart: ArrayLike<number>;
}

const nanIfNull = (v: number | null) => (v === null ? NaN : v);

// Collects RequestMetrics one at a time; analyze drops each request object right after adding it.
export class MetricColumnsBuilder {
  private readonly cols = {
    succeeded: new GrowableF64(),
    ttftS: new GrowableF64(),
    tpotS: new GrowableF64(),
    e2eS: new GrowableF64(),
    normalizedLatencyS: new GrowableF64(),
    schedulingDelayS: new GrowableF64(),
    dispatchLagS: new GrowableF64(),
    fluidity: new GrowableF64(),
    dpS: new GrowableF64(),
    tbtSamplesS: new GrowableF64(64 * 1024),
    tbtStart: new GrowableF64(),
  };
  count = 0;

  constructor() {
    this.cols.tbtStart.push(0);
  }

  add(m: RequestMetrics): void {
    const c = this.cols;
    c.succeeded.push(m.succeeded ? 1 : 0);
    c.ttftS.push(nanIfNull(m.ttftS));
    c.tpotS.push(nanIfNull(m.tpotS));
    c.e2eS.push(nanIfNull(m.e2eS));
    c.normalizedLatencyS.push(nanIfNull(m.normalizedLatencyS));
    c.schedulingDelayS.push(nanIfNull(m.schedulingDelayS));
    c.dispatchLagS.push(m.dispatchLagS);
    c.fluidity.push(m.fluidity);
    c.dpS.push(m.dpS);
    for (const s of m.tbtSamplesS) c.tbtSamplesS.push(s);
    c.tbtStart.push(c.tbtSamplesS.length);
    this.count += 1;
  }

  /** Views of the columns (valid until the next add). */
  build(): MetricColumns {
    const c = this.cols;
    return {
      count: this.count,
      succeeded: c.succeeded.view(),
      ttftS: c.ttftS.view(),
      tpotS: c.tpotS.view(),
      e2eS: c.e2eS.view(),
      normalizedLatencyS: c.normalizedLatencyS.view(),
      schedulingDelayS: c.schedulingDelayS.view(),
      dispatchLagS: c.dispatchLagS.view(),
      fluidity: c.fluidity.view(),
      dpS: c.dpS.view(),
      tbtSamplesS: c.tbtSamplesS.view(),
      tbtStart: c.tbtStart.view(),
    };
  }
}

/** Columns of an in-memory list of request metrics. */
export function columnsOf(metrics: readonly RequestMetrics[]): MetricColumns {
  const b = new MetricColumnsBuilder();
  for (const m of metrics) b.add(m);
  return b.build();
}
