// A failed probe whose client error was beyond tolerance is still trusted when it fails with every
// deadline loosened by that error; loosenSlo is the widening it is judged under.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loosenSlo } from '../../harness/capacity/probeStep.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { evaluateSlo } from '../../harness/metrics/sloCheck.ts';
import type { Slo } from '../../harness/metrics/slo.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const slo: Slo = {
  fluidity: { tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'f' },
  ttft: { percentile: 90, maxS: 2, source: 't' },
  tbt: { percentile: 99, maxS: 0.2, source: 'b' },
};

test('every time threshold widens by the error; fractions and percentiles stay', () => {
  const l = loosenSlo(slo, 0.004);
  const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} != ${b}`);
  near(l.fluidity!.tbtDeadlineS, 0.054);
  near(l.fluidity!.ttftSlackS, 0.304);
  assert.is(l.fluidity!.minFluidity, 0.9);
  assert.is(l.fluidity!.percentile, 99);
  near(l.ttft!.maxS, 2.004);
  near(l.tbt!.maxS, 0.204);
  assert.is(l.tbt!.percentile, 99);
  assert.is(slo.tbt!.maxS, 0.2, 'the original is not mutated');
});

// One request whose first token lands exactly at D_p (no slack banked), then gaps of `gapS`.
function stream(gapS: number): TimelineRecord {
  const chunks: [number, number][] = Array.from({ length: 20 }, (_, i) => [0.3 + i * gapS, 1]);
  return { id: 'r', scheduledS: 0, sentS: 0, promptTokens: 10, maxTokens: 20, outputTokens: 20, chunks, status: 'ok', httpStatus: 200, error: null };
}
const judge = (s: Slo, r: TimelineRecord) =>
  // Predicted prefill 0, so D_p is the TTFT slack.
  evaluateSlo([computeRequestMetrics(r, { dpS: s.fluidity!.ttftSlackS, tbtDeadlineS: s.fluidity!.tbtDeadlineS })], { fluidity: s.fluidity }).passed;

test('a marginal fail flips within the client error; a gross fail does not', () => {
  const f = { fluidity: slo.fluidity };
  assert.not.ok(judge(f, stream(0.06)), 'marginal stream fails the strict SLO');
  assert.ok(judge(loosenSlo(f, 0.011), stream(0.06)), 'and passes once loosened by 11 ms: untrusted');
  assert.not.ok(judge(loosenSlo(f, 0.011), stream(0.2)), 'a 200 ms-gap stream fails even loosened: trusted');
});

test.run();
