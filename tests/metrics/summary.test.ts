// Probe summary: throughput, goodput, distributions, and the fluid token generation rate search.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { sloSchema } from '../../harness/metrics/slo.ts';
import { summarizeRequests } from '../../harness/metrics/summary.ts';
import { columnsOf } from '../../harness/metrics/columns.ts';
import { fluidTokenRate } from '../../harness/metrics/fluidRate.ts';
import { fluidityIndex } from '../../harness/metrics/fluidity.ts';
import { percentileFromTop } from '../../harness/metrics/percentile.ts';

// A request whose first token lands exactly at D_p (no slack) followed by the given gaps.
const withGaps = (i: number, gapsS: number[], dpS = 0.5, status: TimelineRecord['status'] = 'ok'): TimelineRecord => {
  let t = i + dpS;
  const chunks: [number, number][] = [[t, 1]];
  for (const g of gapsS) chunks.push([(t += g), 1]);
  return {
    id: `r${i}`,
    scheduledS: i,
    sentS: i,
    promptTokens: 50,
    maxTokens: chunks.length,
    outputTokens: chunks.length,
    chunks,
    status,
    httpStatus: status === 'ok' ? 200 : 500,
    error: status === 'ok' ? null : 'boom',
  };
};
const metrics = (recs: TimelineRecord[], tbtDeadlineS = 0.025) =>
  recs.map((r) => computeRequestMetrics(r, { dpS: 0.5, tbtDeadlineS }));

test('fluid rate, hand-worked: gaps 10 ms, 30.5 ms, 10 ms after an on-deadline first token', () => {
  // Slack starts at 0. Gap 1 needs D_d >= 0.01; gap 2 needs 0.0305 <= D_d + (D_d − 0.01), i.e.
  // D_d >= 0.02025; gap 3 needs 3·D_d >= 0.0505. On the 0.1 ms grid the smallest is 20.3 ms.
  const cols = columnsOf(metrics([withGaps(0, [0.01, 0.0305, 0.01])]));
  const r = fluidTokenRate(cols, { percentile: 99, minFluidity: 1 });
  assert.is(r.tbtDeadlineS, 0.0203);
  assert.is(r.tokensPerS, 1 / 0.0203);
  assert.is(r.search, 'bisection');
  assert.ok(r.evaluations < 20, `${r.evaluations} evaluations`);
});

test('fluid rate: bisection finds what a brute-force scan over the grid finds', () => {
  // Deterministic pseudo-random gaps around 20–60 ms, 30 requests.
  let x = 12345;
  const rnd = () => ((x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const recs = Array.from({ length: 30 }, (_, i) => withGaps(i, Array.from({ length: 20 }, () => 0.02 + 0.04 * rnd())));
  const ms = metrics(recs);
  for (const [percentile, minFluidity] of [
    [99, 0.9],
    [90, 0.9],
    [50, 0.95],
  ]) {
    const r = fluidTokenRate(columnsOf(ms), { percentile, minFluidity });
    let k = 1;
    const ok = (kk: number) =>
      percentileFromTop(
        ms.map((m) => fluidityIndex([m.ttftS as number, ...m.tbtSamplesS], 0.5, kk / 10000).fluidity),
        percentile,
      ) >= minFluidity;
    while (!ok(k)) k += 1;
    assert.is(r.tbtDeadlineS, k / 10000, `p${percentile} >= ${minFluidity}`);
  }
});

test('fluid rate: the chosen percentile lets the worst request be ignored', () => {
  // Binary-exact gaps (62.5 ms and 2^-7 s) so the subtraction of receive times is exact.
  const recs = Array.from({ length: 10 }, (_, i) => withGaps(i, i === 0 ? [0.0625, 0.0625] : [0.0078125, 0.0078125]));
  const all = fluidTokenRate(columnsOf(metrics(recs)), { percentile: 99, minFluidity: 1 });
  const p90 = fluidTokenRate(columnsOf(metrics(recs)), { percentile: 90, minFluidity: 1 });
  assert.is(all.tbtDeadlineS, 0.0625);
  // 7.8125 ms rounds up to the next 0.1 ms step.
  assert.is(p90.tbtDeadlineS, 0.0079);
});

test('fluid rate: unreachable when too many requests failed', () => {
  const recs = [withGaps(0, [0.01]), withGaps(1, [0.01], 0.5, 'error')];
  const r = fluidTokenRate(columnsOf(metrics(recs)), { percentile: 99, minFluidity: 0.9 });
  assert.is(r.tokensPerS, null);
  assert.match(r.note!, /failed/);
  assert.is(fluidTokenRate(columnsOf([])).note, 'no requests');
});

test('summary: throughput, goodput, statuses and exact distributions', () => {
  // 8 smooth requests (scheduled at 0..7 s, 5 tokens 20 ms apart), one timeout, one error.
  const recs = Array.from({ length: 8 }, (_, i) => withGaps(i, [0.02, 0.02, 0.02, 0.02]));
  recs.push({ ...withGaps(8, []), chunks: [], outputTokens: 0, status: 'timeout', error: 'timed out' });
  recs.push(withGaps(9, [0.02], 0.5, 'error'));
  const slo = sloSchema.parse({ fluidity: {}, ttft: 'p50 <= 1s' });
  const s = summarizeRequests(metrics(recs), { slo });
  assert.is(s.requests, 10);
  assert.is(s.succeeded, 8);
  assert.is(s.failed, 2);
  assert.equal(s.byStatus, { ok: 8, error: 1, timeout: 1, cancelled: 0 });
  // Last end: request 9's second token at 9.52 s.
  assert.is(s.durationS, 9 + 0.5 + 0.02);
  assert.is(s.requestThroughputQps, 8 / s.durationS);
  assert.is(s.outputTokensPerS, 40 / s.durationS);
  assert.is(s.goodRequests, 8);
  assert.is(s.goodputQps, 8 / s.durationS);
  assert.is(s.ttftS.count, 8);
  assert.is(s.ttftS.p99, 0.5);
  assert.is(s.tbtS.count, 32);
  assert.is(s.tbtS.max, Math.max(...metrics(recs.slice(0, 8)).flatMap((m) => m.tbtSamplesS)));
  assert.is(s.fluidity.count, 10);
  assert.is(s.fluidity.p50, 1);
  assert.is(s.fluidity.min, 0);
  // P99 of fluidity over 10 requests with 2 failures is 0: the SLO fails, the rate is unreachable.
  assert.is(s.slo.passed, false);
  assert.is(s.fluidRate.tokensPerS, null);
  assert.is(s.percentileMethod, 'nearest-rank');
  // An explicit probe duration wins over the last end time.
  assert.is(summarizeRequests(metrics(recs), { slo, durationS: 20 }).goodputQps, 8 / 20);
});

test('fluid rate: gaps past 2^53 grid steps (1e15 s up to 1e306 s) end the search', () => {
  // The grid index of a 1e15 s gap is 1e19, beyond 2^53: there the midpoint of two neighbouring
  // doubles is one of them, which used to loop forever; past 1.8e304 s the index overflows.
  for (const gapS of [1e15, 1e300, 1e306]) {
    const r = fluidTokenRate(columnsOf(metrics([withGaps(0, [0.01, gapS, 0.01])])), { percentile: 99, minFluidity: 1 });
    assert.ok(r.evaluations < 2200, `${gapS}: ${r.evaluations} evaluations`);
    if (r.tbtDeadlineS !== null) {
      // The first gap's slack (D_d − 10 ms) carries over, so the long gap needs 2·D_d − 0.01 >= gap.
      assert.ok(Math.abs(r.tbtDeadlineS / (gapS / 2) - 1) < 1e-12, `${gapS}: ${r.tbtDeadlineS}`);
    } else assert.is(gapS, 1e306, `only a gap past the grid's largest double has no deadline`);
  }
});

test.run();
