// The decision hook stops a probe in both directions once the sequential test decides, never
// passes before the planned minimum, judges only the known prefix in arrival order, and stops on
// the decision that the whole probe's timelines give when re-judged.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { makeDecisionStop } from '../../harness/capacity/earlyStop.ts';
import { decideSlo } from '../../harness/capacity/sloDecision.ts';
import { DEFAULT_DECISION } from '../../harness/capacity/decision.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import type { Slo } from '../../harness/metrics/slo.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import type { ProbeOptions } from '../../harness/load/runProbe.ts';
import { simulateQueue, replay } from './earlyStopSim.ts';

const fit = { a: 0.05, b: 0, c: 0 }; // the simulated queue's prefill is a flat 50 ms
const slo: Slo = { fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9' } };

// A queue of 8 slots serving 20 tokens at 20 ms after a 50 ms prefill: about 0.45 s per request,
// so capacity ≈ 17.6 QPS.
function probe(rateQps: number, requests: number, seed: number) {
  return simulateQueue({ rateQps, requests, servers: 8, seed });
}

const outcomesOf = (records: TimelineRecord[], warmup: number) =>
  [...records].sort((a, b) => a.scheduledS - b.scheduledS).slice(warmup).map((r) => computeRequestMetrics(r, { dpS: fit.a + 0.3, tbtDeadlineS: 0.025, prefillS: fit.a }));

test('the hook plugs into the load runner as is (type-checked by tsc)', () => {
  const hook: NonNullable<ProbeOptions['shouldStop']> = makeDecisionStop(slo, { requests: [], warmupRequests: 0, rateQps: 1, fit, minRequests: 0 }, DEFAULT_DECISION);
  assert.is(hook({ records: [], planned: 0, scheduled: 0, sent: 0, inFlight: 0, ended: 0, elapsedS: 0 }), null);
});

test('overload: stops early with a fail, long before the plan ends', () => {
  const { plan, records } = probe(30, 2000, 1);
  const hook = makeDecisionStop(slo, { requests: plan, warmupRequests: 20, rateQps: 30, fit, minRequests: 500 }, DEFAULT_DECISION);
  const stop = replay(records, hook, true);
  assert.ok(stop, 'should stop');
  assert.match(stop!.reason, /^decided fail after \d+ requests: SLO "fluidity p99 >= 0.9": fail/);
  assert.ok(stop!.finished < 600, `stopped after ${stop!.finished} of 2000`);
  assert.is(hook.current()!.decision, 'fail');
  assert.ok(hook.current()!.confidence >= 0.95);
});

test('light load: stops with a pass, but not before the planned minimum', () => {
  const { plan, records } = probe(4, 2000, 2);
  const hook = makeDecisionStop(slo, { requests: plan, warmupRequests: 20, rateQps: 4, fit, minRequests: 700 }, DEFAULT_DECISION);
  const stop = replay(records, hook, true);
  assert.ok(stop, 'should stop');
  assert.match(stop!.reason, /^decided pass after \d+ requests/);
  const d = hook.current()!;
  assert.is(d.decision, 'pass');
  assert.ok(d.requestsObserved >= 700 && d.requestsObserved < 760, `pass rests on ${d.requestsObserved} requests`);
  assert.ok(stop!.finished < 800, `stopped after ${stop!.finished} of 2000`);
});

test('a request still running blocks the prefix: the fast ones behind it are not judged yet', () => {
  const { plan, records } = probe(4, 400, 3);
  const hook = makeDecisionStop(slo, { requests: plan, warmupRequests: 0, rateQps: 4, fit, minRequests: 0 }, DEFAULT_DECISION);
  // Every request but the first has finished; the first is in flight and has its first token.
  const rest = records.slice(1);
  const now = Math.max(...rest.map((r) => r.chunks[r.chunks.length - 1][0]));
  const reason = hook({ elapsedS: now, scheduled: 400, sent: 400, inFlight: [{ id: records[0].id, firstTokenS: records[0].chunks[0][0] }], records: rest });
  assert.is(reason, null);
  assert.is(hook.current(), null);
  // Once it ends, the 400 clean requests decide a pass.
  assert.match(String(hook({ elapsedS: now + 1, scheduled: 400, sent: 400, inFlight: [], records: [...rest, records[0]] })), /^decided pass/);
});

test('a request that surely misses while still waiting counts as a miss', () => {
  const { plan, records } = probe(30, 300, 4);
  const hook = makeDecisionStop(slo, { requests: plan, warmupRequests: 0, rateQps: 30, fit, minRequests: 0 }, DEFAULT_DECISION);
  // Nothing has finished, every request has been waiting 60 s without a token (the engine hangs).
  const reason = hook({ elapsedS: 70, scheduled: 300, sent: 300, inFlight: records.map((r) => ({ id: r.id, firstTokenS: null })), records: [] });
  assert.match(String(reason), /^decided fail/);
});

test('the stop decision is the decision of the whole probe re-judged, across loads and seeds', () => {
  let agree = 0;
  let total = 0;
  const decisions: Record<string, number> = {};
  for (const rate of [8, 14, 16, 17, 18, 19, 22]) {
    for (let seed = 1; seed <= 4; seed++) {
      const { plan, records } = probe(rate, 1200, 100 + seed);
      const hook = makeDecisionStop(slo, { requests: plan, warmupRequests: 30, rateQps: rate, fit, minRequests: 400 }, DEFAULT_DECISION);
      replay(records, hook, true);
      const stopped = hook.current()?.decision ?? 'undecided';
      const whole = decideSlo(outcomesOf(records, 30), slo, DEFAULT_DECISION, { passFromRequests: 400 }).decision;
      decisions[`${rate}:${whole}`] = (decisions[`${rate}:${whole}`] ?? 0) + 1;
      total += 1;
      if (stopped === whole) agree += 1;
    }
  }
  // A waiting request's score is its wait so far, not its final TTFT, so the clustering estimate
  // can differ slightly at the decisive point; the decisions must still agree almost always.
  assert.ok(agree / total >= 0.9, `agree ${agree}/${total} ${JSON.stringify(decisions)}`);
  assert.ok(Object.keys(decisions).some((k) => k.endsWith('pass')) && Object.keys(decisions).some((k) => k.endsWith('fail')), JSON.stringify(decisions));
});

test.run();
