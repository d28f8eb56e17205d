// QPS search: driven to the end against synthetic servers with a known capacity (pure, instant),
// plus each edge the brief lists: below min, at max, invalid probes, probe budget, resume.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nextProbe, bracketOf, roundRate, type ProbeVerdict, type SearchBounds, type SearchDecision } from '../../harness/capacity/search.ts';

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

test.run();
