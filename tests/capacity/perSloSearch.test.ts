// Capacity per SLO definition, driven to the end against synthetic servers whose capacity differs by
// definition (pure, instant): each definition's bracket closes around its own capacity, early-stopped
// and invalid probes count only where the rules say, the probe budget is shared, and a recipe with
// one definition searches exactly as the combined search does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { nextProbe, type ProbeVerdict, type SearchBounds } from '../../harness/capacity/search.ts';
import {
  nextPerSloProbe,
  perSloResults,
  probeEvidence,
  sloDefinitions,
  stoppingSloSource,
  type PerSloProbe,
  type PerSloResult,
  type SloDefinition,
} from '../../harness/capacity/perSloSearch.ts';
import type { Slo } from '../../harness/metrics/slo.ts';

const bounds = (over: Partial<SearchBounds> = {}): SearchBounds => ({
  qps: { startQps: 1, minQps: 0.1, maxQps: 64 },
  tolerance: 0.025,
  maxProbes: 40,
  ...over,
});

const SLO: Slo = {
  fluidity: { tbtDeadlineS: 0.05, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9' },
  ttft: { percentile: 90, maxS: 2, source: 'ttft p90 <= 2s' },
  tpot: { percentile: 50, maxS: 0.05, source: 'tpot p50 <= 50ms' },
};

/** Per definition: the rates at which it passes. */
type Server = Record<string, (qps: number) => boolean>;
const caps = (c: Record<string, number>): Server => Object.fromEntries(Object.entries(c).map(([k, v]) => [k, (q: number) => q <= v]));

interface Driven {
  probes: PerSloProbe[];
  rates: number[];
  earlyStops: (string | null)[];
  earlyStopSets: string[][];
  /** Each definition's bracket when the probe was chosen. */
  bracketsBefore: Record<string, { passQps: number | null; failQps: number | null }>[];
  combined: ProbeVerdict[];
  perSlo: PerSloResult[];
  combinedResult: ReturnType<typeof nextProbe>;
}

// The run loop of runCapacity in miniature: the early stop fires for the first definition of the
// probe's early-stop set that fails at its rate, as the real hook would once enough requests failed.
function drive(b: SearchBounds, defs: SloDefinition[], server: Server, opts: { invalidAt?: (qps: number, i: number) => boolean } = {}): Driven {
  const probes: PerSloProbe[] = [];
  const combined: ProbeVerdict[] = [];
  const rates: number[] = [];
  const earlyStops: (string | null)[] = [];
  const earlyStopSets: string[][] = [];
  const bracketsBefore: Driven['bracketsBefore'] = [];
  for (let guard = 0; guard < 200; guard++) {
    const c = nextProbe(b, combined);
    const step = nextPerSloProbe(b, c, defs, probes);
    if (step.done) return { probes, rates, earlyStops, earlyStopSets, bracketsBefore, combined, perSlo: step.perSlo, combinedResult: c };
    const qps = step.qps;
    const invalid = opts.invalidAt?.(qps, probes.length) ?? false;
    const stopNames = Object.keys(step.earlyStopSlo);
    const stopper = defs.find((d) => stopNames.includes(d.name) && !server[d.name](qps));
    const earlyStop = stopper ? `SLO "${stopper.source}" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 (nearest-rank percentile)` : null;
    const results = defs.map((d) => ({ name: d.name, passed: server[d.name](qps) }));
    const passed = !invalid && earlyStop === null && results.every((r) => r.passed);
    rates.push(qps);
    earlyStops.push(earlyStop);
    earlyStopSets.push(stopNames);
    bracketsBefore.push(Object.fromEntries(step.perSlo.map((r) => [r.name, r.bracket])));
    combined.push({ qps, passed, valid: !invalid, reason: invalid ? 'client error 40 ms > tolerance 10 ms' : undefined });
    probes.push(probeEvidence(defs, { qps, valid: !invalid, validity: invalid ? 'client error 40 ms > tolerance 10 ms' : 'ok', earlyStop, results }));
  }
  throw new Error('the per-SLO search did not finish in 200 probes');
}

const byName = (r: PerSloResult[], name: string) => r.find((x) => x.name === name)!;

test('sloDefinitions: one definition per SLO entry, in the canonical order, each a one-entry SLO', () => {
  const defs = sloDefinitions({ tpot: SLO.tpot, fluidity: SLO.fluidity, ttft: SLO.ttft });
  assert.equal(defs.map((d) => d.name), ['fluidity', 'ttft', 'tpot']);
  assert.equal(defs[2].slo, { tpot: SLO.tpot });
  assert.is(defs[1].source, 'ttft p90 <= 2s');
});

test('each definition converges on its own capacity; the combined capacity is the strictest one', () => {
  const defs = sloDefinitions(SLO);
  const d = drive(bounds(), defs, caps({ fluidity: 5.3, ttft: 9.1, tpot: 2.2 }));
  for (const [name, cap] of [['fluidity', 5.3], ['ttft', 9.1], ['tpot', 2.2]] as const) {
    const r = byName(d.perSlo, name);
    assert.is(r.outcome, 'converged', `${name}: ${r.reason}`);
    assert.ok(r.bracket.passQps! <= cap && r.bracket.failQps! > cap, `${name} bracket ${JSON.stringify(r.bracket)} around ${cap}`);
    assert.ok((r.bracket.failQps! - r.bracket.passQps!) / r.bracket.passQps! <= 0.025);
    assert.is(r.capacityQps, r.bracket.passQps);
    // Every probe it used is one whose verdict for it was known.
    for (const i of r.probesUsed) assert.ok(d.probes[i].verdicts[name] !== null);
  }
  assert.ok(d.combinedResult.done);
  if (!d.combinedResult.done) return;
  assert.is(d.combinedResult.outcome, 'converged');
  assert.is(d.combinedResult.capacityQps, byName(d.perSlo, 'tpot').capacityQps, 'the combined verdict fails first where tpot does');
  // The definitions differ, so they need more probes than the combined search alone, but they reuse probes.
  const alone = drive(bounds(), sloDefinitions({ tpot: SLO.tpot }), caps({ tpot: 2.2 })).rates.length;
  assert.ok(d.rates.length > alone, `${d.rates.length} probes for three definitions vs ${alone} for one`);
  const sumOfOwn = defs.map((x) => drive(bounds(), [x], caps({ [x.name]: { fluidity: 5.3, ttft: 9.1, tpot: 2.2 }[x.name]! })).rates.length).reduce((a, b) => a + b, 0);
  assert.ok(d.rates.length < sumOfOwn, `${d.rates.length} probes in all < ${sumOfOwn} for three separate searches: probes are shared`);
});

test('an early stop fires only for definitions whose bracket contains the rate, and counts only for the one it names', () => {
  const defs = sloDefinitions(SLO);
  const d = drive(bounds(), defs, caps({ fluidity: 5.3, ttft: 9.1, tpot: 2.2 }));
  let stopped = 0;
  d.rates.forEach((qps, i) => {
    const stop = d.earlyStops[i];
    if (stop === null) return;
    stopped++;
    const src = stoppingSloSource(stop)!;
    const stopper = defs.find((x) => x.source === src)!;
    assert.ok(d.earlyStopSets[i].includes(stopper.name));
    for (const x of defs) assert.is(d.probes[i].verdicts[x.name], x === stopper ? 'fail' : null, `probe ${i} at ${qps}: ${x.name}`);
    assert.is(d.combined[i].passed, false, 'an early-stopped probe is a combined fail');
  });
  assert.ok(stopped > 0, 'the three capacities differ, so some probes stop early');
  // A definition that already failed at or below a rate (or passed at or above it) may not stop a probe there.
  d.rates.forEach((qps, i) => {
    for (const [name, b] of Object.entries(d.bracketsBefore[i])) {
      const inside = (b.passQps === null || qps > b.passQps) && (b.failQps === null || qps < b.failQps);
      assert.is(d.earlyStopSets[i].includes(name), inside, `probe ${i} at ${qps} QPS, ${name} bracket ${JSON.stringify(b)}`);
    }
  });
  assert.ok(d.earlyStopSets.some((s) => s.length < defs.length), 'some probe ran with a reduced early-stop set');
});

test('probeEvidence: invalid is evidence for none; a client-invalid probe keeps only fails that survive its error', () => {
  const defs = sloDefinitions(SLO);
  const results = [
    { name: 'fluidity', passed: false },
    { name: 'ttft', passed: true },
    { name: 'tpot', passed: false },
  ];
  const invalid = probeEvidence(defs, { qps: 4, valid: false, validity: 'token counts drift', earlyStop: null, results });
  assert.equal(invalid.verdicts, { fluidity: null, ttft: null, tpot: null });
  assert.ok(invalid.untrusted);
  assert.match(invalid.note!, /token counts drift/);
  const client = probeEvidence(defs, { qps: 4, valid: true, earlyStop: null, results, clientInvalid: true, trustedFails: ['tpot'] });
  assert.equal(client.verdicts, { fluidity: null, ttft: null, tpot: 'fail' });
  const ok = probeEvidence(defs, { qps: 4, valid: true, earlyStop: null, results });
  assert.equal(ok.verdicts, { fluidity: 'fail', ttft: 'pass', tpot: 'fail' });
  assert.not.ok(ok.untrusted);
  const diverged = probeEvidence(defs, {
    qps: 4,
    valid: true,
    earlyStop: 'queueing diverges: the backlog grew; if it keeps growing, 30 more requests wait longer than SLO "ttft p90 <= 2s" allows (1 failing + 30 projected > 12 allowed of 120)',
    results,
  });
  assert.equal(diverged.verdicts, { fluidity: null, ttft: 'fail', tpot: null });
  const unnamed = probeEvidence(defs, { qps: 4, valid: true, earlyStop: 'stopped for a reason naming no SLO', results });
  assert.equal(unnamed.verdicts, { fluidity: null, ttft: null, tpot: null });
});

test('the probe budget is shared: definitions still open when it runs out end with outcome max-probes', () => {
  const defs = sloDefinitions(SLO);
  const d = drive(bounds({ maxProbes: 7 }), defs, caps({ fluidity: 5.3, ttft: 9.1, tpot: 2.2 }));
  assert.is(d.rates.length, 7);
  const open = d.perSlo.filter((r) => r.outcome === 'max-probes');
  assert.ok(open.length > 0, JSON.stringify(d.perSlo.map((r) => [r.name, r.outcome])));
  for (const r of open) {
    assert.match(r.reason, /search\.maxProbes \(7\) probes run in all \(\d+ of them evidence for this SLO\)/);
    assert.is(r.capacityQps, r.bracket.passQps ?? 0);
  }
  assert.ok(d.perSlo.every((r) => r.outcome !== 'running'));
});

test('one definition: the same probes as the combined search alone', () => {
  const b = bounds();
  const defs = sloDefinitions({ fluidity: SLO.fluidity });
  const d = drive(b, defs, caps({ fluidity: 5.3 }));
  const alone: number[] = [];
  const verdicts: ProbeVerdict[] = [];
  for (;;) {
    const n = nextProbe(b, verdicts);
    if (n.done) break;
    alone.push(n.qps);
    verdicts.push({ qps: n.qps, passed: n.qps <= 5.3, valid: true });
  }
  assert.equal(d.rates, alone);
  assert.equal(byName(d.perSlo, 'fluidity').bracket, (d.combinedResult as { bracket: unknown }).bracket);
});

test('a rate that is invalid twice ends the definitions that need it with outcome invalid-probes', () => {
  const defs = sloDefinitions(SLO);
  // Every probe at or above 12 QPS is invalid: fluidity and tpot fail below it; ttft (capacity 9.1) passes at 8 and cannot be bracketed.
  const d = drive(bounds(), defs, caps({ fluidity: 5.3, ttft: 9.1, tpot: 2.2 }), { invalidAt: (q) => q >= 12 });
  const ttft = byName(d.perSlo, 'ttft');
  assert.is(ttft.outcome, 'invalid-probes', ttft.reason);
  assert.is(ttft.bracket.passQps, 8);
  assert.match(ttft.reason, /2 probes at 16 QPS gave no trusted verdict/);
  assert.match(ttft.reason, /client error 40 ms/);
  assert.is(ttft.capacityQps, ttft.bracket.passQps);
  assert.is(byName(d.perSlo, 'tpot').outcome, 'converged');
  assert.is(byName(d.perSlo, 'fluidity').outcome, 'converged');
});

test('perSloResults: an archive judged per definition; open searches say the archived probes ran out', () => {
  const defs = sloDefinitions(SLO);
  const server = caps({ fluidity: 5.3, ttft: 9.1, tpot: 2.2 });
  const probes = [1, 2, 4, 8, 16].map((qps) => probeEvidence(defs, { qps, valid: true, earlyStop: null, results: defs.map((x) => ({ name: x.name, passed: server[x.name](qps) })) }));
  const r = perSloResults({ qps: bounds().qps, tolerance: 0.025 }, defs, probes);
  assert.equal(r.map((x) => [x.name, x.bracket.passQps, x.bracket.failQps]), [
    ['fluidity', 4, 8],
    ['ttft', 8, 16],
    ['tpot', 2, 4],
  ]);
  for (const x of r) {
    assert.is(x.outcome, 'max-probes');
    assert.match(x.reason, /the 5 archived probes ran out \(5 of them evidence for this SLO\)/);
  }
});

test.run();
