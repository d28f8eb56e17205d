// A verdict stands when it is the same with every deadline moved against it by the client's error:
// a pass re-judged with every deadline tightened, a fail with every deadline loosened.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeClientError, tightenSlo } from '../../harness/capacity/clientError.ts';
import { probeEvidence, sloDefinitions } from '../../harness/capacity/perSloSearch.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { evaluateSlo } from '../../harness/metrics/sloCheck.ts';
import { fluidityDeadlines, type Slo } from '../../harness/metrics/slo.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const near = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-12, `${a} != ${b}`);

const every: Slo = {
  fluidity: { tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'f' },
  ttft: { percentile: 90, maxS: 2, source: 't' },
  tbt: { percentile: 99, maxS: 0.2, source: 'b' },
  tpot: { percentile: 50, maxS: 0.1, source: 'p' },
  e2e: { percentile: 99, maxS: 10, source: 'e' },
  schedulingDelay: { percentile: 99, maxS: 0.5, source: 's' },
};

test('tightenSlo narrows every deadline kind by the error; fractions and percentiles stay', () => {
  const t = tightenSlo(every, 0.004)!;
  near(t.fluidity!.tbtDeadlineS, 0.046);
  near(t.fluidity!.ttftSlackS, 0.296);
  assert.is(t.fluidity!.minFluidity, 0.9);
  assert.is(t.fluidity!.percentile, 99);
  near(t.ttft!.maxS, 1.996);
  near(t.tbt!.maxS, 0.196);
  near(t.tpot!.maxS, 0.096);
  near(t.e2e!.maxS, 9.996);
  near(t.schedulingDelay!.maxS, 0.496);
  assert.is(t.tpot!.percentile, 50);
  assert.is(every.tbt!.maxS, 0.2, 'the original is not mutated');
  assert.equal(Object.keys(t).sort(), Object.keys(every).sort());
});

test('tightenSlo: a deadline the error would consume whole leaves no trusted SLO', () => {
  assert.is(tightenSlo({ tpot: every.tpot }, 0.1), null, 'reaching 0 is not > 0');
  assert.is(tightenSlo({ fluidity: every.fluidity }, 0.06), null, 'the TBT deadline would go negative');
  assert.is(tightenSlo({ fluidity: { ...every.fluidity!, ttftSlackS: 0.01 } }, 0.02), null, 'the TTFT slack would go negative');
  assert.is(tightenSlo(every, 0.2), null, 'one entry consumed spoils the whole SLO');
  assert.ok(tightenSlo({ e2e: every.e2e }, 0.2));
});

// One request: first token at `firstS` (predicted prefill 0, so D_p is the TTFT slack), then gaps of `gapS`.
function stream(gapS: number, firstS = 0.1): TimelineRecord {
  const chunks: [number, number][] = Array.from({ length: 20 }, (_, i) => [firstS + i * gapS, 1]);
  return { id: 'r', scheduledS: 0, sentS: 0, promptTokens: 10, maxTokens: 20, outputTokens: 20, chunks, status: 'ok', httpStatus: 200, error: null };
}
const judgeOf = (r: TimelineRecord) => (s: Slo) => {
  const { tbtDeadlineS, ttftSlackS } = fluidityDeadlines(s);
  return evaluateSlo([computeRequestMetrics(r, { dpS: ttftSlackS, tbtDeadlineS })], s);
};
const fluid: Slo = { fluidity: { ...every.fluidity!, ttftSlackS: 0.3 } };

test('a pass by a margin wider than the error holds tightened; a marginal one does not', () => {
  // Tokens every 20 ms against a 50 ms deadline: the case, a 7 ms error cannot flip it.
  const judge = judgeOf(stream(0.02));
  const ok = judgeClientError(fluid, 0.0073, judge(fluid), judge);
  assert.is(ok.verdict, 'pass');
  assert.is(ok.moved, 'tightened');
  assert.ok(ok.holds);
  assert.equal(ok.passesHolding, ['fluidity']);
  assert.is(ok.note, 'client error 7.3 ms: the pass holds with every deadline 7.3 ms tighter');
  // Gaps of 45 ms pass the 50 ms deadline but not one 7.3 ms tighter.
  const marginal = judgeOf(stream(0.045, 0.3));
  const flip = judgeClientError(fluid, 0.0073, marginal(fluid), marginal);
  assert.ok(marginal(fluid).passed);
  assert.not.ok(flip.holds);
  assert.equal(flip.passesHolding, []);
  assert.match(flip.note, /would turn to a fail with every deadline 7\.3 ms tighter/);
});

test('a pass whose deadline the error consumes is not trusted, and says which', () => {
  const judge = judgeOf(stream(0.001));
  const e = judgeClientError({ tpot: { percentile: 50, maxS: 0.005, source: 'p' } }, 0.006, judge({ tpot: every.tpot }), judge);
  assert.is(e.verdict, 'pass');
  assert.not.ok(e.holds);
  assert.match(e.note, /consume the whole tpot deadline/);
});

test('a fail holds loosened when gross, not when marginal (the other half, unchanged)', () => {
  const gross = judgeOf(stream(0.2));
  const g = judgeClientError(fluid, 0.011, gross(fluid), gross);
  assert.is(g.verdict, 'fail');
  assert.is(g.moved, 'loosened');
  assert.ok(g.holds);
  assert.equal(g.failsHolding, ['fluidity']);
  const marginal = judgeOf(stream(0.055, 0.3));
  const m = judgeClientError(fluid, 0.011, marginal(fluid), marginal);
  assert.not.ok(m.holds);
  assert.match(m.note, /would turn to a pass with every deadline 11 ms looser/);
});

test('per SLO: a client-invalid probe counts a pass only where it holds tightened', () => {
  const slo: Slo = { fluidity: every.fluidity, tpot: every.tpot };
  const defs = sloDefinitions(slo);
  const facts = {
    qps: 4,
    valid: true,
    earlyStop: null,
    results: [{ name: 'fluidity', passed: true }, { name: 'tpot', passed: true }],
    clientInvalid: true,
    trustedFails: [],
    trustedPasses: ['fluidity'],
  };
  const e = probeEvidence(defs, facts);
  assert.is(e.verdicts.fluidity, 'pass');
  assert.is(e.verdicts.tpot, null);
  assert.is(probeEvidence(defs, { ...facts, trustedPasses: [] }).verdicts.fluidity, null);
});

test.run();
