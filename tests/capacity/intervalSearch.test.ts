// The search for the interval (capacity/search.ts after the bracket): driven against synthetic
// servers whose miss fraction grows with rate through a known knee, each probe bringing the counts
// that fraction implies (pure, instant). Asserts the placement rule (the estimate while the probed
// rates around it are far apart, never outside [min, max], an open side closed first), each stop
// rule with its outcome and sentence, and that replaying finished probes gives the same next probe.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nextProbe, placeProbe, halfWidth, gridRate, type ProbeVerdict, type SearchBounds, type SearchDecision } from '../../harness/capacity/search.ts';
import { capacityInterval, type ProbeEvidence } from '../../harness/capacity/interval.ts';

const ALLOWED = 0.01;
const bounds = (over: Partial<SearchBounds> = {}, qps: Partial<SearchBounds['qps']> = {}): SearchBounds => ({
  qps: { startQps: 8, minQps: 0.5, maxQps: 64, ...qps },
  tolerance: 0.05,
  maxProbes: 40,
  budgetS: null,
  ...over,
});

// A server whose long-run miss fraction crosses the 1% allowance at `knee` QPS (log-odds linear in
// rate); a probe sees `observed` requests and exactly the expected misses, and lasts `durationS`.
function server(knee: number, observed = 400, durationS = 20) {
  const fraction = (q: number) => 1 / (1 + Math.exp(-(Math.log(ALLOWED / (1 - ALLOWED)) + (12 * (q - knee)) / knee)));
  return (qps: number): ProbeVerdict => {
    const misses = Math.round(fraction(qps) * observed);
    const evidence: ProbeEvidence = { qps, durationS, parts: [{ name: 'fluidity', observed, misses, tau: 1, allowedFraction: ALLOWED }] };
    return { qps, passed: misses <= Math.floor(ALLOWED * observed), valid: true, evidence };
  };
}

function runSearch(b: SearchBounds, probe: (qps: number) => ProbeVerdict) {
  const probes: ProbeVerdict[] = [];
  const decisions: SearchDecision[] = [];
  for (let guard = 0; guard < 200; guard++) {
    const d = nextProbe(b, probes);
    decisions.push(d);
    if (d.done) return { result: d, probes, decisions };
    probes.push(probe(d.qps));
  }
  throw new Error('search did not finish in 200 steps');
}

test('brackets first, then probes at the estimate while the probed rates around it are further apart than the tolerance', () => {
  const { probes, decisions } = runSearch(bounds({ maxProbes: 8 }), server(43));
  assert.equal(probes.slice(0, 4).map((p) => [p.qps, p.passed]), [[8, true], [16, true], [32, true], [64, false]]);
  const fifth = decisions[4];
  assert.ok(!fifth.done && fifth.phase === 'narrow-interval', JSON.stringify(fifth));
  const iv = capacityInterval(probes.slice(0, 4).map((p) => p.evidence!));
  // The estimate, on the search's rate grid: within a twentieth of the tolerance (5%) of it.
  assert.ok(!fifth.done && Math.abs(fifth.qps - iv.estimateQps!) / iv.estimateQps! <= 0.05 / 20, `${!fifth.done && fifth.qps} vs estimate ${iv.estimateQps}`);
  // Every later probe lies strictly between the probed rates around the estimate, or at one of them.
  assert.ok(probes.slice(4).every((p) => p.qps > 32 && p.qps <= 64), probes.map((p) => p.qps).join(' '));
});

test('stops once the interval lies within ± tolerance of its estimate, and says so', () => {
  const { result, probes } = runSearch(bounds({ tolerance: 0.1 }), server(43, 4000));
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'converged', result.reason);
  assert.match(result.reason, /95% interval .* is within the tolerance ±10% of the estimate/);
  assert.ok(result.interval !== null && halfWidth(result.interval) <= 0.1, JSON.stringify(result.interval));
  assert.ok(result.interval!.loQps! <= 43 && 43 <= result.interval!.hiQps!, JSON.stringify(result.interval));
  // The decided-bracket fields the report and the gate read are still filled.
  assert.ok(result.bracket.passQps !== null && result.bracket.failQps !== null);
  assert.is(result.capacityQps, result.bracket.passQps);
  assert.equal(result.undecidedQps, []);
  assert.ok(probes.length < 40);
});

test('stops on the load budget with outcome budget: no probe starts unless one as long as the last fits', () => {
  const { result, probes } = runSearch(bounds({ budgetS: 130 }), server(43, 400, 20));
  assert.ok(result.done);
  if (!result.done) return;
  assert.is(result.outcome, 'budget', result.reason);
  assert.match(result.reason, /the load budget search\.budget \(130 s\) is spent: 120 s of load in 6 probes/);
  assert.match(result.reason, /wider than the tolerance ±5%/);
  assert.is(result.loadS, 120);
  assert.is(probes.length, 6);
  assert.ok(result.interval !== null);
});

test('maxProbes still ends the search, with the interval in its sentence', () => {
  const { result, probes } = runSearch(bounds({ maxProbes: 7 }), server(43));
  assert.ok(result.done && result.outcome === 'max-probes', JSON.stringify(result));
  assert.is(probes.length, 7);
  if (result.done) assert.match(result.reason, /search\.maxProbes \(7\) probes run \(140 s of load\) and the 95% interval/);
});

test('never probes outside [min, max], whatever the knee (near either bound, or beyond them)', () => {
  for (const knee of [0.3, 0.6, 1.1, 43, 63.5, 90]) {
    const b = bounds({ budgetS: 300 });
    const { result, probes } = runSearch(b, server(knee));
    for (const p of probes) assert.ok(p.qps >= 0.5 && p.qps <= 64, `knee ${knee}: probe at ${p.qps}`);
    assert.ok(result.done);
    if (!result.done) continue;
    if (knee < 0.5) assert.is(result.outcome, 'below-min', `knee ${knee}: ${result.reason}`);
    // Just below max the probe at max still passes on its few hundred requests.
    else if (knee > 63) assert.is(result.outcome, 'at-least-max', `knee ${knee}: ${result.reason}`);
    else assert.ok(['converged', 'budget', 'max-probes'].includes(result.outcome), `knee ${knee}: ${result.outcome} ${result.reason}`);
  }
});

test('an open side is closed once the probes around the estimate are close: above by a step of 2 × tolerance (capped at max), below by the highest pass again', () => {
  const probed = (qps: number, observed: number, misses: number): ProbeEvidence => ({ qps, durationS: 10, parts: [{ name: 'fluidity', observed, misses, tau: 1, allowedFraction: ALLOWED }] });
  // The fail at 40 QPS is barely above the allowance on few requests: it does not cap the capacity surely.
  const high = [probed(38.5, 800, 0), probed(40, 60, 1)];
  const iv = capacityInterval(high);
  assert.is(iv.open, 'hi');
  const bracket = { passQps: 38.5, failQps: 40 };
  assert.equal(placeProbe(bounds(), high, iv, bracket), { qps: 44, phase: 'close-interval' });
  assert.equal(placeProbe(bounds({}, { maxQps: 42 }), high, iv, bracket), { qps: 42, phase: 'close-interval' });
  // 50 passing requests cannot show a 1% miss fraction is under 1%: the pass at 38.5 is probed again.
  const low = [probed(38.5, 50, 0), probed(40, 800, 200)];
  const ivLow = capacityInterval(low);
  assert.is(ivLow.open, 'lo');
  assert.equal(placeProbe(bounds(), low, ivLow, bracket), { qps: 38.5, phase: 'close-interval' });
  // Far apart, the estimate comes first, open or not.
  const far = [probed(20, 50, 0), probed(40, 800, 200)];
  const ivFar = capacityInterval(far);
  const next = placeProbe(bounds(), far, ivFar, { passQps: 20, failQps: 40 });
  assert.is(next.phase, 'narrow-interval');
  assert.ok(next.qps > 20 && next.qps < 40, JSON.stringify(next));
});

test('resume: replaying the finished probes gives the same next probe at every step', () => {
  const b = bounds({ budgetS: 240 });
  const { probes, decisions } = runSearch(b, server(27));
  assert.ok(probes.length >= 10, `${probes.length} probes`);
  for (let k = 0; k < probes.length; k++) {
    // A fresh copy, as a resumed run rebuilds them from its journal.
    const replay = nextProbe(b, JSON.parse(JSON.stringify(probes.slice(0, k))) as ProbeVerdict[]);
    assert.equal(replay, decisions[k], `step ${k}`);
  }
});

test('every rate the search picks lies on its grid (a 1-2-5 step per decade, at most a tenth of the tolerance), whatever the knee and tolerance', () => {
  for (const tolerance of [0.025, 0.05, 0.1]) {
    for (const knee of [0.7, 5.3, 27, 43.3, 61]) {
      const b = bounds({ tolerance, budgetS: 300 });
      const { probes } = runSearch(b, server(knee));
      for (const p of probes) {
        assert.is(gridRate(p.qps, tolerance, 0.5, 64), p.qps, `tolerance ${tolerance}, knee ${knee}: ${p.qps} is off the grid`);
        // A readable rate: at most 4 significant digits between 0.5 and 64 QPS at these tolerances.
        assert.ok(Number(p.qps.toPrecision(4)) === p.qps, `tolerance ${tolerance}, knee ${knee}: ${p.qps}`);
      }
    }
  }
});

test('invalid probes count against the budget and are retried once, as before', () => {
  const ok = server(43);
  let calls = 0;
  const { probes } = runSearch(bounds({ budgetS: 200 }), (qps) => {
    calls++;
    return calls === 6 ? { ...ok(qps), valid: false, reason: 'client error' } : ok(qps);
  });
  assert.is(probes[5].valid, false);
  assert.is(probes[6].qps, probes[5].qps, 'the invalid rate is retried');
  assert.ok(probes.reduce((t, p) => t + p.evidence!.durationS, 0) <= 200);
});

test('without a budget a bracket within the tolerance still stops the search (it costs what it did); with one it does not', () => {
  const at = server(43);
  const probes = [8, 16, 32, 64, 42, 43.5].map((q) => at(q));
  assert.equal(probes.map((p) => p.passed), [true, true, true, false, true, false]);
  const without = nextProbe(bounds({ budgetS: null }), probes);
  assert.ok(without.done && without.outcome === 'converged', JSON.stringify(without));
  if (without.done) assert.match(without.reason, /^bracket 42–43\.5 QPS is within the tolerance 5%/);
  const within = nextProbe(bounds({ budgetS: 1000 }), probes);
  assert.ok(!within.done, JSON.stringify(within));
});

test.run();
