// QPS search: driven to the end against synthetic servers with a known capacity (pure, instant),
// plus each edge the brief lists: below min, at max, invalid probes, probe budget, resume.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nextProbe, bracketOf, roundRate, gridRate, type ProbeVerdict, type SearchBounds, type SearchDecision } from '../../harness/capacity/search.ts';

const bounds = (over: Partial<SearchBounds> = {}, qps: Partial<SearchBounds['qps']> = {}): SearchBounds => ({
  qps: { startQps: 1, minQps: 0.1, maxQps: 64, ...qps },
  tolerance: 0.025,
  maxProbes: 12,
  ...over,
});

type Server = (qps: number, index: number) => Omit<ProbeVerdict, 'qps'>;
const monotone = (capacityQps: number): Server => (qps) => ({ passed: qps <= capacityQps, valid: true });

function runSearch(b: SearchBounds, server: Server) {
  const probes: ProbeVerdict[] = [];
  const decisions: SearchDecision[] = [];
  for (let guard = 0; guard < 100; guard++) {
    const d = nextProbe(b, probes);
    decisions.push(d);
    if (d.done) return { result: d, probes, decisions };
    assert.is(d.probeIndex, probes.length);
    probes.push({ qps: d.qps, ...server(d.qps, probes.length) });
  }
  throw new Error('search did not finish in 100 steps');
}

test('brackets by doubling then bisects to within the tolerance of a known capacity', () => {
  const { result, probes } = runSearch(bounds(), monotone(5.3));
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'converged');
  assert.equal(probes.slice(0, 5).map((p) => p.qps), [1, 2, 4, 8, 6]);
  const { passQps, failQps } = result.bracket;
  assert.ok(passQps! <= 5.3 && failQps! > 5.3, `bracket ${passQps}–${failQps}`);
  assert.ok((failQps! - passQps!) / passQps! <= 0.025);
  assert.is(result.capacityQps, passQps);
  assert.ok(result.probesRun <= 12);
  assert.match(result.reason, /within the tolerance 2\.5%/);
});

test('with a load budget the bracket rises by four from a pass its request count made long, else it doubles', () => {
  // Verdicts without evidence: the bracketing alone is under test (the interval steers only after it).
  // Sarathi's probes: 300 requests, at least 60 s: 300 s at 1 QPS and 75 s at 4 are set by the count.
  const sarathi = { budgetS: 900, probeLength: { requests: 300, minDurationS: 60 } };
  const stepped = runSearch(bounds(sarathi), monotone(6.75));
  assert.equal(stepped.probes.slice(0, 3).map((p) => [p.qps, p.passed]), [[1, true], [4, true], [16, false]]);
  assert.equal(stepped.decisions.slice(1, 3).map((d) => !d.done && d.phase), ['bracket-up', 'bracket-up']);
  // From 8 QPS the count lasts 37.5 s, less than the minimum: a pass there doubles.
  assert.equal(runSearch(bounds(sarathi, { startQps: 8 }), monotone(100)).probes.map((p) => p.qps), [8, 16, 32, 64]);
  // The quickstart's: 80 requests, at least 15 s: from 8 QPS every probe lasts 15 s, so it doubles.
  assert.equal(runSearch(bounds({ budgetS: 120, probeLength: { requests: 80, minDurationS: 15 } }, { startQps: 8 }), monotone(43.5)).probes.slice(0, 4).map((p) => p.qps), [8, 16, 32, 64]);
  // Without a budget, or from a plan that does not say what sets the length, it doubles.
  assert.equal(runSearch(bounds({ probeLength: sarathi.probeLength }), monotone(6.75)).probes.slice(0, 4).map((p) => p.qps), [1, 2, 4, 8]);
  assert.equal(runSearch(bounds({ budgetS: 900 }), monotone(6.75)).probes.slice(0, 4).map((p) => p.qps), [1, 2, 4, 8]);
  // Capped at the maximum rate; falling still halves.
  assert.equal(runSearch(bounds(sarathi, { startQps: 32 }), monotone(100)).probes.map((p) => p.qps), [32, 64]);
  assert.equal(runSearch(bounds(sarathi, { startQps: 16 }), monotone(1.7)).probes.slice(0, 4).map((p) => p.qps), [16, 8, 4, 2]);
});

test('brackets down by halving when the start rate fails', () => {
  const { result, probes } = runSearch(bounds({}, { startQps: 16 }), monotone(1.7));
  assert.equal(probes.slice(0, 5).map((p) => p.qps), [16, 8, 4, 2, 1]);
  assert.ok(result.done && result.outcome === 'converged');
  if (result.done) assert.ok(result.capacityQps <= 1.7 && result.capacityQps >= 1.7 / 1.025);
});

test('for many capacities the answer is within the tolerance, or the budget is named', () => {
  let seed = 11;
  const rand = () => ((seed = (seed * 16807) % 2147483647) / 2147483647);
  for (let i = 0; i < 300; i++) {
    const cap = 0.1 * Math.pow(640, rand()); // 0.1 .. 64, log-uniform
    const { result, probes } = runSearch(bounds({ maxProbes: 30 }), monotone(cap));
    if (!result.done) throw new Error('not done');
    assert.ok(result.outcome === 'converged', `capacity ${cap}: ${result.outcome} ${result.reason}`);
    assert.ok(result.capacityQps <= cap && cap < result.capacityQps * 1.025, `capacity ${cap} vs ${result.capacityQps}`);
    assert.ok(probes.every((p) => p.qps >= 0.1 && p.qps <= 64));
    assert.ok(new Set(probes.map((p) => p.qps)).size === probes.length, 'no rate probed twice');
  }
});

test('fails at the minimum rate: capacity 0, flagged below min, said so', () => {
  const { result, probes } = runSearch(bounds(), monotone(0.01));
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'below-min');
  assert.is(result.capacityQps, 0);
  assert.ok(result.belowMin);
  assert.is(probes[probes.length - 1].qps, 0.1);
  assert.match(result.reason, /below search\.qps\.min/);
});

test('passes at the maximum rate: capacity = max, flagged at-least-max, said so', () => {
  const { result, probes } = runSearch(bounds(), monotone(1000));
  assert.ok(result.done);
  if (!result.done) return;
  assert.equal(probes.map((p) => p.qps), [1, 2, 4, 8, 16, 32, 64]);
  assert.is(result.outcome, 'at-least-max');
  assert.is(result.capacityQps, 64);
  assert.ok(result.atLeastMax);
  assert.match(result.reason, /at least search\.qps\.max/);
});

test('doubling is capped at max, halving floored at min', () => {
  const up = runSearch(bounds({}, { startQps: 5, maxQps: 12 }), monotone(100));
  assert.equal(up.probes.map((p) => p.qps), [5, 10, 12]);
  const down = runSearch(bounds({}, { startQps: 0.3, minQps: 0.2 }), monotone(0.01));
  assert.equal(down.probes.map((p) => p.qps), [0.3, 0.2]);
});

test('an invalid probe is retried once at the same rate and then the search goes on', () => {
  const { result, probes } = runSearch(bounds(), (qps, i) => (i === 2 ? { passed: true, valid: false, reason: 'dispatch lag p99 80 ms' } : { passed: qps <= 5.3, valid: true }));
  assert.equal(probes.slice(0, 4).map((p) => [p.qps, p.valid]), [[1, true], [2, true], [4, false], [4, true]]);
  assert.ok(result.done && result.outcome === 'converged');
});

test('two invalid probes in a row stop the search with the reason and the last valid bracket', () => {
  const { result, probes } = runSearch(bounds(), (qps) => (qps >= 4 ? { passed: false, valid: false, reason: 'dispatch lag p99 80 ms' } : { passed: true, valid: true }));
  assert.equal(probes.map((p) => p.qps), [1, 2, 4, 4]);
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'invalid-probes');
  assert.is(result.capacityQps, 2);
  assert.equal(result.bracket, { passQps: 2, failQps: null });
  assert.match(result.reason, /4 QPS was invalid twice in a row \(dispatch lag p99 80 ms\)/);
});

test('invalid probes are neither passes nor failures', () => {
  assert.equal(bracketOf([{ qps: 4, passed: true, valid: false }, { qps: 2, passed: false, valid: false }]), { passQps: null, failQps: null });
});

test('the probe budget ends the search with the bracket it reached', () => {
  const { result, probes } = runSearch(bounds({ maxProbes: 6, tolerance: 0.001 }), monotone(5.3));
  assert.is(probes.length, 6);
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'max-probes');
  assert.is(result.capacityQps, result.bracket.passQps);
  assert.match(result.reason, /search\.maxProbes \(6\)/);
});

test('converging on the last allowed probe reports converged, not the budget', () => {
  const full = runSearch(bounds(), monotone(5.3));
  const exact = runSearch(bounds({ maxProbes: full.probes.length }), monotone(5.3));
  assert.ok(exact.result.done && exact.result.outcome === 'converged');
});

test('resume: every prefix of a finished history, after a JSON round trip, gives the same next step', () => {
  const { probes, decisions } = runSearch(bounds(), monotone(7.77));
  for (let k = 0; k <= probes.length; k++) {
    const replayed = JSON.parse(JSON.stringify(probes.slice(0, k))) as ProbeVerdict[];
    assert.equal(nextProbe(bounds(), replayed), decisions[k], `after ${k} probes`);
  }
});

test('noisy non-monotone verdicts: the fail wins, the bracket stays ordered, the search ends', () => {
  let seed = 5;
  const rand = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  for (let i = 0; i < 200; i++) {
    const { result, probes } = runSearch(bounds({ maxProbes: 20 }), (qps) => ({ passed: qps <= 6 * (0.8 + 0.4 * rand()), valid: true }));
    if (!result.done) throw new Error('not done');
    const { passQps, failQps } = result.bracket;
    if (passQps !== null && failQps !== null) assert.ok(passQps < failQps);
    assert.ok(probes.length <= 20);
    assert.ok(!probes.some((p) => !p.passed && p.qps <= result.capacityQps), 'capacity is below every failing rate');
  }
});

test('rates are rounded to 6 significant digits', () => {
  assert.is(roundRate(5.3000000001), 5.3);
  assert.is(roundRate(1 / 3), 0.333333);
});

// A server whose verdicts are decided only outside [lowQps, highQps]: the indifference zone.
const zoned = (lowQps: number, highQps: number): Server => (qps) =>
  qps < lowQps
    ? { passed: true, decision: 'pass', confidence: 0.97, valid: true }
    : qps > highQps
      ? { passed: false, decision: 'fail', confidence: 0.99, valid: true }
      : { passed: false, decision: 'undecided', confidence: 0.6, valid: true };

test('the rate grid: one 1-2-5 step per decade, at most a tenth of the tolerance, moving a rate by at most a twentieth of it, within [min, max]', () => {
  assert.is(gridRate(52.0063, 0.05), 52);
  assert.is(gridRate(40.83, 0.05), 40.85); // step 0.05 (a tenth of 5% of the decade's foot, 10)
  assert.is(gridRate(40.836, 0.025), 40.84); // step 0.02 (a tenth of 2.5% of 10 is 0.025)
  assert.is(gridRate(5.3, 0.025), 5.3); // step 0.002
  assert.is(gridRate(1234.5, 0.025), 1234); // step 2 (a tenth of 2.5% of 1000 is 2.5)
  assert.is(gridRate(99.99, 0.05), 100); // a power of ten is on both decades' grids
  assert.is(gridRate(100, 0.05), 100);
  // A bound off the grid is kept as the recipe gives it.
  assert.is(gridRate(0.50315, 0.05, 0.50315), 0.50315); // the grid (step 0.0005) would give 0.503
  assert.is(gridRate(70, 0.05, 0.5, 63.33), 63.33);
  let seed = 11;
  const rand = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  for (let i = 0; i < 2000; i++) {
    const q = 10 ** (4 * rand() - 1);
    const tol = 0.005 + 0.2 * rand();
    const g = gridRate(q, tol);
    assert.ok(Math.abs(g - q) <= (q * tol) / 20 + 1e-12, `${q} at tolerance ${tol} -> ${g}`);
    assert.is(gridRate(g, tol), g, `${g} at tolerance ${tol} is on its own grid`);
  }
});

test('undecided probes move neither end of the bracket', () => {
  const probes: ProbeVerdict[] = [
    { qps: 4, passed: true, decision: 'pass', valid: true },
    { qps: 8, passed: false, decision: 'fail', valid: true },
    { qps: 6, passed: false, decision: 'undecided', valid: true },
    { qps: 5, passed: false, decision: 'undecided', valid: true },
  ];
  assert.equal(bracketOf(probes), { passQps: 4, failQps: 8 });
  // Journals without decisions still read as pass/fail.
  assert.equal(bracketOf([{ qps: 4, passed: true, valid: true }, { qps: 8, passed: false, valid: true }]), { passQps: 4, failQps: 8 });
});

test('an undecided midpoint splits the bracket: the next rate is in the widest gap, never the same rate', () => {
  const probes: ProbeVerdict[] = [
    { qps: 32, passed: true, decision: 'pass', valid: true },
    { qps: 64, passed: false, decision: 'fail', valid: true },
    { qps: 48, passed: false, decision: 'undecided', valid: true },
  ];
  const d = nextProbe(bounds({ tolerance: 0.05 }), probes);
  assert.not.ok(d.done);
  if (d.done) return;
  assert.is(d.phase, 'split-undecided');
  assert.is(d.qps, 40); // [32, 48] is 50% wide, [48, 64] 33%
});

test('a zone of undecided rates: the search ends with decided ends, their confidence, and says why', () => {
  const { result, probes } = runSearch(bounds({ tolerance: 0.05, maxProbes: 20 }, { startQps: 8 }), zoned(40, 44));
  assert.ok(result.done);
  if (!result.done) return;
  const { passQps, failQps } = result.bracket;
  assert.ok(passQps! < 40 && failQps! > 44, `bracket ${passQps}–${failQps}`);
  assert.is(result.capacityQps, passQps);
  assert.is(result.confidence.passQps, 0.97);
  assert.is(result.confidence.failQps, 0.99);
  assert.ok(result.undecidedQps.length > 0 && result.undecidedQps.every((q) => q >= 40 && q <= 44), String(result.undecidedQps));
  assert.is(result.outcome, 'undecided');
  assert.match(result.reason, /undecided/);
  // The decided pass was raised to within the tolerance of the lowest undecided rate.
  const lowestUndecided = Math.min(...result.undecidedQps);
  assert.ok((lowestUndecided - passQps!) / passQps! <= 0.05, `pass ${passQps}, lowest undecided ${lowestUndecided}`);
  // Each undecided rate was probed once.
  const rates = probes.filter((p) => p.decision === 'undecided').map((p) => p.qps);
  assert.is(new Set(rates).size, rates.length);
  // It stopped because the undecided rates span the tolerance: no decided bracket could be narrower.
  assert.ok((Math.max(...result.undecidedQps) - Math.min(...result.undecidedQps)) / Math.min(...result.undecidedQps) >= 0.05, String(result.undecidedQps));
});

test('a narrow undecided zone does not stop convergence: both ends decided within the tolerance', () => {
  const { result } = runSearch(bounds({ tolerance: 0.05, maxProbes: 20 }, { startQps: 8 }), zoned(41.9, 42.1));
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'converged');
  assert.ok((result.bracket.failQps! - result.bracket.passQps!) / result.bracket.passQps! <= 0.05);
});

test('undecided at the start rate: the search brackets away from it instead of repeating it', () => {
  const probes: ProbeVerdict[] = [{ qps: 8, passed: false, decision: 'undecided', valid: true }];
  const d = nextProbe(bounds({}, { startQps: 8 }), probes);
  assert.not.ok(d.done);
  if (!d.done) assert.equal([d.qps, d.phase], [4, 'bracket-down']);
  const up = nextProbe(bounds({}, { startQps: 8 }), [...probes, { qps: 4, passed: true, decision: 'pass', valid: true }]);
  assert.not.ok(up.done);
  if (!up.done) assert.equal([up.qps, up.phase], [16, 'bracket-up']);
});

test('undecided at the maximum rate ends the search rather than probing it again', () => {
  const probes: ProbeVerdict[] = [
    { qps: 32, passed: true, decision: 'pass', valid: true },
    { qps: 64, passed: false, decision: 'undecided', valid: true },
  ];
  const d = nextProbe(bounds({}, { startQps: 32, maxQps: 64 }), probes);
  assert.ok(d.done);
  if (d.done) {
    assert.is(d.outcome, 'undecided');
    assert.is(d.capacityQps, 32);
  }
});

test.run();
