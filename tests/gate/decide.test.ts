// The gate's decision: search brackets and tolerance (a 2.56% bisection step does not fail a 1%
// gate), a clear drop is caught, runs that did not converge are refused, the noise of earlier
// nights widens the allowed drop, verdict confidences can make a claim inconclusive, a
// confirming rerun must agree, and the exit code ranks a regression above a refusal.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  DEFAULT_GATE,
  combineByConfig,
  decideConfig,
  gateResult,
  historyFor,
  poolableNights,
  referenceOfHistory,
  referenceOfRun,
  refusalOf,
  type RunEvidence,
} from '../../harness/gate/decide.ts';
import { bracketConfidenceOf, bracketOf, intervalOf, probeCountsOf, withConfirmations } from '../../harness/gate/evidence.ts';

let seq = 0;
const run = (lowQps: number, highQps: number, over: Partial<RunEvidence> = {}): RunEvidence => ({
  runDir: `/results/r${++seq}`,
  runId: `r${seq}`,
  config: 'cfg',
  slo: 'fluidity p99 >= 0.9 (tbt 0.05s, ttft slack 0.3s)',
  labels: { recipe: 'cfg', engine: 'sim', model: 'm', gpu: 'h100×1', image: null },
  status: 'completed',
  outcome: 'converged',
  reason: 'bracket within tolerance',
  capacityQps: lowQps,
  estimateQps: lowQps,
  lowQps,
  highQps,
  intervalSource: 'bracket',
  tolerance: 0.025,
  lowConfidence: null,
  highConfidence: null,
  qpsPerUsdPerHour: null,
  usdPerMillionOutputTokens: null,
  startedAt: `2026-11-${String(10 + seq).padStart(2, '0')}T02:00:00Z`,
  ...over,
});
const opts = (maxDrop = 0.05) => ({ ...DEFAULT_GATE, maxDrop });

test('one bisection step of 2.56% does not fail a 1% gate; the same step plus a real drop does', () => {
  const base = run(10.256, 10.52);
  const cand = run(10, 10.256);
  const d = decideConfig(cand, referenceOfRun(base), opts(0.01));
  assert.is(d.verdict, 'inconclusive');
  assert.ok(d.pointDrop! > 0.02, 'the single numbers alone differ by more than the gate');
  assert.is(d.minDrop, 0);
  const far = decideConfig(run(9, 9.2), referenceOfRun(base), opts(0.01));
  assert.is(far.verdict, 'regression');
  assert.ok(Math.abs(far.minDrop! - (1 - 9.2 / 10.256)) < 1e-12);
});

test('a 10% slower engine is a regression at a 5% gate; a bracket one step lower passes', () => {
  const base = run(20.5, 20.75);
  const slow = decideConfig(run(18.5, 18.75), referenceOfRun(base), opts());
  assert.is(slow.verdict, 'regression');
  assert.match(slow.reason, 'at least 8.54% below baseline');
  const same = decideConfig(run(20.25, 20.5), referenceOfRun(base), opts());
  assert.is(same.verdict, 'pass');
  assert.ok(same.maxDrop! < 0.05);
  // A gain passes.
  assert.is(decideConfig(run(24, 24.5), referenceOfRun(base), opts()).verdict, 'pass');
});

test('runs whose search did not converge, or did not complete, are refused with their reason', () => {
  const base = referenceOfRun(run(20, 20.5));
  const invalid = decideConfig(run(16, Infinity, { outcome: 'invalid-probes', reason: 'the probe at 16 QPS was invalid twice in a row' }), base, opts());
  assert.is(invalid.verdict, 'refused');
  assert.match(invalid.reason, 'did not converge (invalid-probes: the probe at 16 QPS was invalid twice');
  assert.is(decideConfig(run(8, 16, { outcome: 'max-probes' }), base, opts()).verdict, 'refused');
  assert.match(decideConfig(run(0, Infinity, { status: 'failed', reason: 'engine died' }), base, opts()).reason, 'did not complete (status failed: engine died)');
  // A refused baseline refuses the comparison instead of passing it.
  const b = run(20, 20.5, { outcome: 'invalid-probes' });
  const d = decideConfig(run(20, 20.5), referenceOfRun(b), opts(), refusalOf(b));
  assert.is(d.verdict, 'refused');
  assert.match(d.reason, 'baseline refused');
  // Searches that ended at a bound are measurements.
  assert.is(refusalOf(run(0, 1, { outcome: 'below-min', capacityQps: 0 })), null);
  assert.is(refusalOf(run(64, Infinity, { outcome: 'at-least-max' })), null);
  // A search stopped by its load budget or probe count is a measurement when its interval says how unsure it is.
  assert.is(refusalOf(run(38, 44, { outcome: 'budget', intervalSource: 'interval' })), null);
  assert.is(refusalOf(run(38, 44, { outcome: 'max-probes', intervalSource: 'interval' })), null);
  assert.match(refusalOf(run(38, 44, { outcome: 'budget', intervalSource: 'bracket' }))!, 'did not converge (budget');
});

test('below-min candidates regress against a working baseline; a baseline that passed nowhere cannot be dropped below', () => {
  assert.is(decideConfig(run(0, 1, { outcome: 'below-min', capacityQps: 0 }), referenceOfRun(run(20, 20.5)), opts()).verdict, 'regression');
  const d = decideConfig(run(0, 1, { outcome: 'below-min', capacityQps: 0 }), referenceOfRun(run(0, 1, { outcome: 'below-min', capacityQps: 0 })), opts());
  assert.is(d.verdict, 'pass');
  assert.match(d.reason, 'passed at no rate');
  assert.is(decideConfig(run(20, 20.5), null, opts()).verdict, 'new');
  // A reference that held at its search maximum bounds no drop from above.
  const atMax = referenceOfRun(run(64, Infinity, { outcome: 'at-least-max' }));
  assert.is(decideConfig(run(64, Infinity, { outcome: 'at-least-max' }), atMax, opts()).verdict, 'pass');
  assert.is(decideConfig(run(62, 63), atMax, opts()).verdict, 'inconclusive');
  assert.is(decideConfig(run(40, 41), atMax, opts()).verdict, 'regression');
});

test('the spread of earlier nights widens the allowed drop; quiet nights do not', () => {
  const noisy = [20, 22, 18, 21, 19].map((c) => run(c, c * 1.0125));
  const ref = referenceOfHistory(noisy, 3)!;
  assert.is(ref.kind, 'history');
  assert.is(ref.capacityQps, 20);
  assert.ok(Math.abs(ref.noiseFrac! - 1.4826 / 20) < 1e-12, 'robust sd: 1.4826 × MAD(=1) / median(=20)');
  // 12.5% below the median: beyond the 5% gate, within three robust sds (22%) of the nights, and
  // short of three times the gate's allowance (15%).
  const cand = run(17.5, 17.7);
  const within = decideConfig(cand, ref, opts());
  assert.is(within.verdict, 'pass');
  assert.match(within.reason, 'widened to 22.2%');
  assert.ok(Math.abs(within.allowedDrop! - 3 * ref.noiseFrac!) < 1e-12);
  // A bracket straddling the widened allowance is inconclusive and says it is within the noise.
  const edge = decideConfig(run(15.4, 17.5, { estimateQps: 17.2 }), ref, opts());
  assert.is(edge.verdict, 'inconclusive');
  assert.match(edge.reason, 'within the measured noise');
  const quiet = referenceOfHistory([20, 20, 20.25, 20, 19.75].map((c) => run(c, c * 1.0125)), 3)!;
  assert.is(decideConfig(cand, quiet, opts()).verdict, 'regression');
  // Two nights are too few to measure noise: the gate's own allowance stands.
  assert.is(referenceOfHistory(noisy.slice(0, 2), 3)!.noiseFrac, null);
});

test('a regression resting on unconfident verdicts is inconclusive', () => {
  const ref = referenceOfRun(run(20.5, 20.75, { lowConfidence: 0.97 }));
  const weak = decideConfig(run(18.5, 18.75, { highConfidence: 0.8 }), ref, opts());
  assert.is(weak.verdict, 'inconclusive');
  assert.ok(Math.abs(weak.claimConfidence! - 0.8 * 0.97) < 1e-12);
  assert.match(weak.reason, 'confirm with a probe of the candidate at 19.47 QPS (a decided fail there settles a regression)');
  assert.equal(weak.confirm, [{ qps: 19.47, settles: 'regression' }]);
  assert.is(decideConfig(run(18.5, 18.75, { highConfidence: 0.99 }), ref, opts()).verdict, 'regression');
});

test('a confirming rerun must agree: two regressions regress, a regression and a pass pass', () => {
  const ref = referenceOfRun(run(20.5, 20.75));
  const reg = () => decideConfig(run(18.5, 18.75), ref, opts());
  const ok = decideConfig(run(20.5, 20.75), ref, opts());
  const [both] = combineByConfig([reg(), reg()]);
  assert.is(both.verdict, 'regression');
  assert.match(both.reason, 'confirmed by 2 runs');
  const [mixed] = combineByConfig([reg(), ok]);
  assert.is(mixed.verdict, 'pass');
  assert.match(mixed.reason, 'not confirmed by every run');
  const refusedToo = decideConfig(run(16, Infinity, { outcome: 'invalid-probes' }), ref, opts());
  assert.is(combineByConfig([refusedToo, reg()])[0].verdict, 'regression');
  assert.is(combineByConfig([refusedToo])[0].verdict, 'refused');
});

test('exit codes: a regression (4) outranks a refusal (5), a refusal an undecided answer (6); new exits 0', () => {
  const ref = referenceOfRun(run(20.5, 20.75));
  const reg = decideConfig(run(18.5, 18.75, { config: 'a' }), ref, opts());
  const refused = decideConfig(run(1, 2, { config: 'b', outcome: 'invalid-probes' }), ref, opts());
  const unsure = decideConfig(run(20, 20.5, { config: 'c' }), ref, opts(0.01));
  assert.is(gateResult([reg, refused, unsure], opts()).exitCode, 4);
  assert.is(gateResult([refused, unsure], opts()).exitCode, 5);
  const r = gateResult([unsure, decideConfig(run(1, 2, { config: 'd' }), null, opts())], opts());
  assert.is(r.exitCode, 6);
  assert.equal(r.counts, { pass: 0, regression: 0, inconclusive: 1, refused: 0, new: 1 });
  assert.is(gateResult([decideConfig(run(1, 2, { config: 'd' }), null, opts())], opts()).exitCode, 0);
});

test('history: same configuration, started before the candidate, converged, the latest N', () => {
  const nights = [1, 2, 3, 4, 5].map((n) => run(20, 20.5, { startedAt: `2026-11-0${n}T02:00:00Z` }));
  const other = run(20, 20.5, { config: 'other', startedAt: '2026-11-01T01:00:00Z' });
  const bad = run(20, 20.5, { outcome: 'invalid-probes', startedAt: '2026-11-02T03:00:00Z' });
  const cand = run(20, 20.5, { startedAt: '2026-11-04T12:00:00Z' });
  const h = historyFor(cand, [...nights, other, bad, cand], 2);
  assert.equal(h.map((r) => r.startedAt), ['2026-11-03T02:00:00Z', '2026-11-04T02:00:00Z']);
  assert.is(historyFor(cand, [...nights, other, bad], 10).length, 4);
});

test('brackets of older runs come from capacity and tolerance; confidences from verdict probes', () => {
  assert.equal(bracketOf({ capacityQps: 10, passQps: null, failQps: null, tolerance: 0.05, outcome: 'converged' }), { lowQps: 10, highQps: 10.5 });
  assert.equal(bracketOf({ capacityQps: 64, passQps: null, failQps: null, tolerance: 0.05, outcome: 'at-least-max' }), { lowQps: 64, highQps: Infinity });
  assert.equal(bracketOf({ capacityQps: 0, passQps: null, failQps: 1, tolerance: 0.05, outcome: 'below-min' }), { lowQps: 0, highQps: 1 });
  const raw = {
    probes: [
      { qps: 16, decision: 'pass', confidence: 0.99 },
      { qps: 20, decision: 'undecided', confidence: 0.6 },
      { qps: 20, decision: 'fail', confidence: 0.93 },
    ],
  };
  assert.equal(bracketConfidenceOf(raw, 16, 20), { low: 0.99, high: 0.93 });
  assert.equal(bracketConfidenceOf({ ...raw, bracketConfidence: { passQps: 0.9, failQps: null } }, 16, 20), { low: 0.9, high: 0.93 });
  assert.equal(bracketConfidenceOf({ probes: [{ qps: 16, passed: true }] }, 16, 20), { low: null, high: null });
  // Runs that record each end's statistical decision: a decided end counts its confidence; an
  // undecided one the confidence of its leaning, turned round when it leans the other way.
  const withStats = {
    ...raw,
    bracketStatistics: {
      passQps: { decision: 'undecided', confidence: 0.8, leaning: 'pass', evidence: '' },
      failQps: { decision: 'undecided', confidence: 0.7, leaning: 'pass', evidence: '' },
    },
  };
  const both = bracketConfidenceOf(withStats, 16, 20);
  assert.is(both.low, 0.8);
  assert.ok(Math.abs(both.high! - 0.3) < 1e-12, String(both.high));
  assert.equal(bracketConfidenceOf({ bracketStatistics: { passQps: { decision: 'pass', confidence: 0.97, leaning: 'pass' }, failQps: null } }, 16, 20), { low: 0.97, high: null });
});

test('a 57% drop on unconfident verdicts is never a pass: 3× the allowed drop is a regression (exit 4)', () => {
  // A sweep run at 24 QPS against one at 56: brackets far apart, but every end only leaning.
  const ref = referenceOfRun(run(56, 57, { lowConfidence: 0.85 }));
  const d = decideConfig(run(24, 25, { highConfidence: 0.8 }), ref, opts());
  assert.is(d.verdict, 'regression');
  assert.match(d.reason, 'more than 3× the allowed 5%: never a pass');
  assert.match(d.reason, 'only 68% confident');
  assert.is(gateResult([d], opts()).exitCode, 4);
  // Just under 3×, the same unconfident claim stays undecided (exit 6), never a pass.
  const near = decideConfig(run(47.9, 48.2, { highConfidence: 0.8 }), referenceOfRun(run(56, 57, { lowConfidence: 0.85 })), opts());
  assert.is(near.verdict, 'inconclusive');
  assert.is(gateResult([near], opts()).exitCode, 6);
});

test('overlapping intervals around the allowed drop: undecided (exit 6), naming the rates that would settle it', () => {
  // capacity.json intervals: the candidate [36, 44] around 40, the reference [40, 46] around 43.
  const ref = referenceOfRun(run(40, 46, { estimateQps: 43, intervalSource: 'interval' }));
  const d = decideConfig(run(36, 44, { estimateQps: 40, intervalSource: 'interval' }), ref, opts());
  assert.is(d.verdict, 'inconclusive');
  assert.is(gateResult([d], opts()).exitCode, 6);
  // A pass at the pass line settles a pass: 90% of the reference's high end (41.4) here, above 95%
  // of its estimate (40.85); a fail below 95% of its low end, a regression. The point estimate
  // (−7%) leans to a regression, so that rate comes first.
  assert.equal(d.confirm, [{ qps: 37.99, settles: 'regression' }, { qps: 41.4, settles: 'pass' }]);
  // Confirming probes fold in: a decided fail at 37.99 QPS makes it a regression...
  const failed = withConfirmations(run(36, 44, { estimateQps: 40, intervalSource: 'interval' }), [{ qps: 37.99, decision: 'fail', confidence: 0.97, runDir: '/c' }], 0.9);
  assert.is(decideConfig(failed, ref, opts()).verdict, 'regression');
  // ...a decided pass at 41.4 a pass; an undecided probe changes nothing.
  const passed = withConfirmations(run(36, 44, { estimateQps: 40, intervalSource: 'interval' }), [{ qps: 41.4, decision: 'pass', confidence: 0.96, runDir: '/c' }], 0.9);
  assert.is(decideConfig(passed, ref, opts()).verdict, 'pass');
  const open = withConfirmations(run(36, 44, { estimateQps: 40, intervalSource: 'interval' }), [{ qps: 37.99, decision: 'undecided', confidence: 0.7, runDir: '/c' }], 0.9);
  assert.is(decideConfig(open, ref, opts()).verdict, 'inconclusive');
  assert.match(decideConfig(open, ref, opts()).reason, 'after 1 confirming probe(s): 37.99 QPS undecided (70%)');
});

test('runs under different SLOs are refused, naming both SLOs', () => {
  const ref = referenceOfRun(run(24, 24.5, { runId: 'base', slo: 'fluidity p99 >= 0.9 (tbt 0.05s, ttft slack 0.3s)' }));
  // A 1.6× slower engine with its SLO loosened measures far more: never a pass (+433%).
  const d = decideConfig(run(128, 130, { runId: 'loose', slo: 'fluidity p99 >= 0.9 (tbt 0.2s, ttft slack 0.3s)' }), ref, opts());
  assert.is(d.verdict, 'refused');
  assert.match(d.reason, 'loose was measured under SLO "fluidity p99 >= 0.9 (tbt 0.2s, ttft slack 0.3s)" and baseline base under SLO "fluidity p99 >= 0.9 (tbt 0.05s, ttft slack 0.3s)"');
  assert.is(gateResult([d], opts()).exitCode, 5);
});

test('intervals come from capacity.json: interval first, else the decided bracket, else the search bracket', () => {
  const bracket = { lowQps: 40, highQps: 42 };
  const interval = { estimateQps: 41.2, loQps: 38.5, hiQps: 44, level: 0.95, method: 'bootstrap', probesUsed: 9, loadSeconds: 130, open: 'none' };
  assert.equal(intervalOf({ interval, decidedBracket: { passQps: 32, failQps: 48 } }, 40, bracket), { estimateQps: 41.2, lowQps: 38.5, highQps: 44, source: 'interval' });
  assert.equal(intervalOf({ interval: { ...interval, hiQps: null, open: 'hi' } }, 40, bracket).highQps, Infinity);
  assert.equal(intervalOf({ decidedBracket: { passQps: 32, failQps: 42 } }, 40, bracket), { estimateQps: 40, lowQps: 32, highQps: 42, source: 'decided-bracket' });
  assert.equal(intervalOf({ decidedBracket: { passQps: null, failQps: null } }, 40, bracket), { estimateQps: 40, lowQps: 0, highQps: Infinity, source: 'decided-bracket' });
  assert.equal(intervalOf({}, 40, bracket), { estimateQps: 40, lowQps: 40, highQps: 42, source: 'bracket' });
});


test('a reference open above because no fail was decided is no pass for an equal candidate; one that held at its search maximum is', () => {
  const openBase = run(2, Infinity, { estimateQps: 32, capacityQps: 32, intervalSource: 'decided-bracket' });
  const cand = run(2, Infinity, { estimateQps: 28, capacityQps: 28, intervalSource: 'decided-bracket' });
  const d = decideConfig(cand, referenceOfRun(openBase), opts());
  assert.is(d.verdict, 'inconclusive', d.reason);
  assert.match(d.reason, 'no fail of it was decided');
  const atMax = run(64, Infinity, { outcome: 'at-least-max' });
  assert.is(decideConfig(run(64, Infinity, { outcome: 'at-least-max' }), referenceOfRun(atMax), opts()).verdict, 'pass');
});

test('an unchanged night against pooled earlier nights is asked to hold at 95% of their estimate, and a decided pass there passes', () => {
  // Each night's own interval is ~25% wide; the nights' probes pooled pin the capacity to 41.5–44.5.
  const nights = [42, 44, 43].map((c) => run(c * 0.88, c * 1.1, { estimateQps: c, intervalSource: 'interval' }));
  const ref = referenceOfHistory(nights, 3, { estimateQps: 43, lowQps: 41.5, highQps: 44.5, probes: 24, nights: 3 })!;
  assert.is(ref.basis, 'pooled');
  assert.equal([ref.capacityQps, ref.lowQps, ref.highQps], [43, 41.5, 44.5]);
  const tonight = () => run(36, 47, { estimateQps: 42, intervalSource: 'interval' });
  const d = decideConfig(tonight(), ref, opts());
  assert.is(d.verdict, 'inconclusive');
  assert.match(d.reason, 'the pooled probes of 3 earlier nights 43 QPS [41.5, 44.5]');
  // The likelier side first: a pass at 95% of 43 (above 90% of 44.5), then a fail at 95% of 41.5.
  assert.equal(d.confirm, [{ qps: 40.85, settles: 'pass' }, { qps: 39.42, settles: 'regression' }]);
  const passed = decideConfig(withConfirmations(tonight(), [{ qps: 40.85, decision: 'pass', confidence: 0.96, runDir: '/c' }], 0.9), ref, opts());
  assert.is(passed.verdict, 'pass');
  assert.match(passed.reason, 'holds at 40.85 QPS');
  assert.is(gateResult([passed], opts()).exitCode, 0);
  // A decided fail at the pass line is no regression: only a fail below 95% of the low end is.
  const missed = decideConfig(withConfirmations(tonight(), [{ qps: 40.85, decision: 'fail', confidence: 0.96, runDir: '/c' }], 0.9), ref, opts());
  assert.is(missed.verdict, 'inconclusive');
  assert.equal(missed.confirm, [{ qps: 39.42, settles: 'regression' }]);
  const failed = decideConfig(withConfirmations(tonight(), [{ qps: 39.42, decision: 'fail', confidence: 0.96, runDir: '/c' }], 0.9), ref, opts());
  assert.is(failed.verdict, 'regression');
});

test('the pass line never lets a drop of twice the allowed one through a wide reference', () => {
  // The reference's estimate is 43 but its interval reaches 50: a candidate holding at 95% of 43
  // may still be 18% below the reference's capacity. It must hold at 90% of 50 = 45.
  const ref = referenceOfRun(run(36, 50, { estimateQps: 43, intervalSource: 'interval' }));
  const below = decideConfig(run(44.9, 46, { estimateQps: 45.5, intervalSource: 'interval' }), ref, opts());
  assert.is(below.verdict, 'inconclusive');
  assert.equal(below.confirm, [{ qps: 45, settles: 'pass' }]);
  const at = decideConfig(run(45, 46, { estimateQps: 45.5, intervalSource: 'interval' }), ref, opts());
  assert.is(at.verdict, 'pass');
  assert.match(at.reason, 'at most 10% below its high end (allowed 10%)');
});

test('the spread of earlier nights does not widen the allowed drop for a candidate with an interval (it carries that noise)', () => {
  const noisy = [20, 22, 18, 21, 19].map((c) => run(c * 0.95, c * 1.05, { estimateQps: c, intervalSource: 'interval' }));
  const ref = referenceOfHistory(noisy, 3)!;
  assert.is(ref.basis, 'median');
  assert.ok(3 * ref.noiseFrac! > 0.2, 'three robust sds of the nights: 22%');
  // 12.5% below: passed as noise before, although its own interval says it lies 11.5–13.5% down.
  const d = decideConfig(run(17.3, 17.7, { estimateQps: 17.5, intervalSource: 'interval' }), ref, opts());
  assert.is(d.verdict, 'regression');
  assert.is(d.allowedDrop, 0.05);
  // A bracket without an interval still gets the widening.
  assert.ok(decideConfig(run(17.3, 17.7), ref, opts()).allowedDrop! > 0.2);
});

test('earlier nights are pooled when two or more agree and kept their probe counts; a night the host spoiled is left out', () => {
  const counts = (qps: number) => [{ qps, durationS: 20, parts: [{ name: 'fluidity', observed: 400, misses: 2, tau: 1.5, allowedFraction: 0.01 }] }];
  const a = run(40, 44, { estimateQps: 42, probes: counts(40) });
  const b = run(41, 45, { estimateQps: 43, probes: counts(42) });
  assert.is(poolableNights([a]), null);
  assert.is(poolableNights([a, run(40, 44, { estimateQps: 42 })]), null, 'a night from before probe counts were kept');
  assert.equal(poolableNights([a, b])!.probes.map((p) => p.qps), [40, 42]);
  // Two nights whose intervals overlap are pooled, even when one misses the other's estimate.
  assert.is(poolableNights([run(35.2, 41.7, { estimateQps: 41.3, probes: counts(40) }), run(40.4, 45.2, { estimateQps: 43, probes: counts(42) })])!.runs.length, 2);
  // A night measured at 10 QPS on a saturated host: its interval overlaps no other night's.
  const spoiled = run(0, 10.4, { estimateQps: 10.3, probes: counts(10) });
  assert.is(poolableNights([a, spoiled]), null, 'two nights that disagree: neither is trusted over the other');
  const c = run(39, 44, { estimateQps: 41.5, probes: counts(41) });
  const pool = poolableNights([a, spoiled, b, c])!;
  assert.equal(pool.runs, [a, b, c]);
  const ref = referenceOfHistory([a, spoiled, b, c], 3, { estimateQps: 42, lowQps: 40.5, highQps: 43.5, probes: 3, nights: pool.runs.length })!;
  assert.match(decideConfig(run(30, 48, { estimateQps: 41, intervalSource: 'interval' }), ref, opts()).reason, 'the pooled probes of 3 of 4 earlier nights 42 QPS [40.5, 43.5]');
  // A pooled interval open on a side is no better than the medians.
  const open = referenceOfHistory([a, b], 3, { estimateQps: 42, lowQps: 0, highQps: 46, probes: 2, nights: 2 })!;
  assert.is(open.basis, 'median');
  assert.is(open.capacityQps, 42.5);
});

test("probe counts are read from capacity.json's probe rows: valid probes with statistics parts only, and the rate each realized", () => {
  const part = { name: 'fluidity', observed: 540, misses: 1, tau: 4.87, allowedFraction: 0.01 };
  const raw = {
    probes: [
      { qps: 40, valid: true, durationS: 25.8, statistics: { decision: 'undecided', parts: [part] } },
      { qps: 44, valid: false, durationS: 25.6, statistics: { decision: 'undecided', parts: [part] } },
      { qps: 48, valid: true, durationS: 18, statistics: { decision: 'fail' } },
      { qps: 42, valid: true, durationS: 3, statistics: { decision: 'fail', parts: [{ name: 'fluidity', observed: 'many' }] } },
    ],
  };
  assert.equal(probeCountsOf(raw), [{ qps: 40, durationS: 25.8, parts: [part] }]);
  assert.equal(probeCountsOf({}), []);
  // With the arrival rate the probe realized, the pooled interval reads it there.
  const realized = { probes: [{ ...raw.probes[0], statistics: { ...raw.probes[0].statistics, arrivalQps: 41.2 } }] };
  assert.equal(probeCountsOf(realized), [{ qps: 40, arrivalQps: 41.2, durationS: 25.8, parts: [part] }]);
  // And the rate its bursts put it at; a zero or missing one is left out.
  const bursts = { probes: [{ ...raw.probes[0], statistics: { ...raw.probes[0].statistics, arrivalQps: 41.2, burstQps: 42.7 } }] };
  assert.equal(probeCountsOf(bursts), [{ qps: 40, arrivalQps: 41.2, burstQps: 42.7, durationS: 25.8, parts: [part] }]);
  const zero = { probes: [{ ...raw.probes[0], statistics: { ...raw.probes[0].statistics, burstQps: 0 } }] };
  assert.equal(probeCountsOf(zero), [{ qps: 40, durationS: 25.8, parts: [part] }]);
});

test.run();
