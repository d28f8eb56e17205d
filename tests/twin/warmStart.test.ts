// The warm-started search: twin bracket first, widening in 4 × tolerance steps when the engine
// disagrees, then the ordinary bisection; it converges on the engine's capacity, not the twin's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { warmNextProbe } from '../../harness/capacity/warmStart.ts';
import { nextProbe } from '../../harness/capacity/search.ts';
import type { ProbeVerdict, SearchBounds } from '../../harness/capacity/search.ts';

const bounds: SearchBounds = { qps: { startQps: 8, minQps: 0.5, maxQps: 64 }, tolerance: 0.05, maxProbes: 12 };

function searchTo(capacity: number, twin: { passQps: number | null; failQps: number | null }) {
  const probes: ProbeVerdict[] = [];
  for (;;) {
    const d = warmNextProbe(bounds, probes, twin);
    if (d.done) return { d, probes };
    probes.push({ qps: d.qps, passed: d.qps <= capacity, valid: true });
  }
}

test('engine agrees with the twin: two probes, at the twin bracket', () => {
  const { d, probes } = searchTo(39.5, { passQps: 39, failQps: 40 });
  assert.equal(probes.map((p) => p.qps), [39, 40]);
  assert.is(d.done && d.capacityQps, 39);
});

test('engine above or below the twin: the bracket widens from the twin, then bisects to the engine capacity', () => {
  for (const capacity of [45, 31, 12, 70]) {
    const { d, probes } = searchTo(capacity, { passQps: 39, failQps: 40 });
    assert.ok(d.done);
    if (!d.done) return;
    if (capacity > 64) {
      assert.is(d.outcome, 'at-least-max');
      continue;
    }
    assert.is(d.outcome, 'converged', `${capacity}: ${d.reason} ${JSON.stringify(probes)}`);
    assert.ok(d.capacityQps <= capacity && (d.bracket.failQps! > capacity), `${capacity}: ${JSON.stringify(d.bracket)}`);
    assert.ok(probes.length <= 10, `${capacity}: ${probes.length} probes`);
  }
});

test('an invalid probe is retried at the same rate, as in the cold search', () => {
  const probes: ProbeVerdict[] = [{ qps: 39, passed: false, valid: false }];
  const d = warmNextProbe(bounds, probes, { passQps: 39, failQps: 40 });
  assert.ok(!d.done && d.qps === 39 && d.phase === 'retry-invalid');
});

test('probes with evidence: once the twin bracket has a pass and a fail, the interval search places the next probe', () => {
  const probe = (qps: number, misses: number): ProbeVerdict => ({
    qps, passed: misses === 0, valid: true,
    evidence: { qps, durationS: 20, parts: [{ name: 'fluidity', observed: 100, misses, tau: 1, allowedFraction: 0.01 }] },
  });
  const probes = [probe(39, 0), probe(48, 8), probe(43.5, 0)];
  const d = warmNextProbe(bounds, probes, { passQps: 39, failQps: 48 });
  assert.ok(!d.done && d.phase === 'narrow-interval', JSON.stringify(d));
  assert.equal(d, nextProbe(bounds, probes));
});

test.run();
