// Early stop: budgets agree with the metrics module's verdict, each rule fires where it should,
// and (rule c) no probe that would have passed is stopped — checked against full-run verdicts of
// a simulated FCFS queue at loads around its capacity.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  makeEarlyStop,
  latencyBudget,
  fluidityBudget,
  fluidityFailWaitS,
  type ProbeProgress,
} from '../../harness/capacity/earlyStop.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { evaluateSlo } from '../../harness/metrics/sloCheck.ts';
import { fluidityIndex } from '../../harness/metrics/fluidity.ts';
import type { Slo } from '../../harness/metrics/slo.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import type { ProbeOptions } from '../../harness/load/runProbe.ts';
import { simulateQueue, replay, fullVerdict, lcg } from './earlyStopSim.ts';

const fit = { a: 0.05, b: 0, c: 0 }; // the simulated queue's prefill is a flat 50 ms
const fluiditySlo: Slo = { fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9' } };
const ttftP50: Slo = { ttft: { percentile: 50, maxS: 2, source: 'ttft p50 <= 2s' } };

// A request that streamed `tokens` tokens with the given TTFT (from scheduled) and gaps.
function record(id: string, ttftS: number, tokens: number, gapS = 0.01, status: TimelineRecord['status'] = 'ok'): TimelineRecord {
  const chunks: [number, number][] = [];
  for (let k = 0; k < tokens; k++) chunks.push([ttftS + k * gapS, 1]);
  return { id, scheduledS: 0, sentS: 0, promptTokens: 100, maxTokens: tokens, outputTokens: tokens, chunks, status, httpStatus: 200, error: null };
}

test('the hook plugs into the load runner as is (type-checked by tsc)', () => {
  const hook: NonNullable<ProbeOptions['shouldStop']> = makeEarlyStop(fluiditySlo, { requests: [], warmupRequests: 0, rateQps: 1, fit });
  assert.is(hook({ records: [], planned: 0, scheduled: 0, sent: 0, inFlight: 0, ended: 0, elapsedS: 0 }), null);
});

test('budgets: nearest-rank examples from the brief', () => {
  assert.is(fluidityBudget(300, 99, 0.9), 3);
  assert.is(latencyBudget(300, 99, 1), 3);
  assert.is(latencyBudget(100, 90, 1), 10);
  assert.is(latencyBudget(270, 90, 2), 27);
  assert.is(latencyBudget(1, 99, 1), 0);
  assert.is(latencyBudget(0, 99, 1), 0);
});

// Nearest rank (the default) takes an observed value, so the budget is exact in both directions.
// Linear interpolation blends a failing value with a passing one; the budget assumes the failing
// ones only just fail, so it may allow more than a given data set does, never fewer: one more than
// the budget always fails.
test('budgets against evaluateSlo: exact for nearest rank, safe for linear', () => {
  const rand = lcg(9);
  // fluidity 8/9 ≈ 0.889, just under 0.9: first token and gaps exactly on time (binary-exact
  // 1/32 s deadline), the last gap late by less than one deadline: one miss.
  const dd = 1 / 32;
  const justUnder = (id: string): TimelineRecord => {
    const r = record(id, 1, 9, dd);
    r.chunks[8][0] = r.chunks[7][0] + dd * 1.5;
    return r;
  };
  assert.ok(Math.abs(computeRequestMetrics(justUnder('x'), { dpS: 1, tbtDeadlineS: dd }).fluidity - 8 / 9) < 1e-12);
  for (let trial = 0; trial < 60; trial++) {
    const n = 1 + Math.floor(rand() * 250);
    const p = [50, 90, 95, 99, 99.9][trial % 5];
    for (const method of ['nearest-rank', 'linear'] as const) {
      const exact = method === 'nearest-rank';
      const ttftMax = 1;
      const allowedT = latencyBudget(n, p, ttftMax, method);
      const slo: Slo = { ttft: { percentile: p, maxS: ttftMax, source: 't' } };
      const build = (failing: number) =>
        Array.from({ length: n }, (_, i) => computeRequestMetrics(record(`r${i}`, i < failing ? ttftMax * 1.000001 : 0.1, 3), { dpS: 1, tbtDeadlineS: 0.025 }));
      if (exact) assert.ok(evaluateSlo(build(allowedT), slo, { method }).passed, `ttft n=${n} p=${p}: ${allowedT} failing should pass`);
      if (allowedT + 1 <= n) assert.not.ok(evaluateSlo(build(allowedT + 1), slo, { method }).passed, `ttft n=${n} p=${p} ${method}: ${allowedT + 1} failing should fail`);

      const allowedF = fluidityBudget(n, p, 0.9, method);
      const fslo: Slo = { fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: p, source: 'f' } };
      const buildF = (failing: number, bad: (id: string) => TimelineRecord) =>
        Array.from({ length: n }, (_, i) => computeRequestMetrics(i < failing ? bad(`r${i}`) : record(`r${i}`, 0.1, 3), { dpS: 1, tbtDeadlineS: dd }));
      const errored = (id: string) => record(id, 0.1, 3, 0.01, 'error');
      if (exact) assert.ok(evaluateSlo(buildF(allowedF, errored), fslo, { method }).passed, `fluidity n=${n} p=${p}`);
      if (allowedF + 1 <= n) {
        assert.not.ok(evaluateSlo(buildF(allowedF + 1, justUnder), fslo, { method }).passed, `fluidity n=${n} p=${p} ${method} +1 (just under)`);
        assert.not.ok(evaluateSlo(buildF(allowedF + 1, errored), fslo, { method }).passed, `fluidity n=${n} p=${p} ${method} +1 (errors)`);
      }
    }
  }
});

test('fluidityFailWaitS: hand-worked 11-token request (D_p 1 s, D_d 25 ms, min 0.9)', () => {
  // 10 later tokens at best on time: 10/(10+m) < 0.9 needs m >= 2 misses, i.e. t > 1 + 0.025.
  const w = fluidityFailWaitS(1, 0.025, 0.9, 11);
  assert.is(w, 1.025);
  const gaps = new Array(10).fill(0);
  assert.ok(fluidityIndex([1.0251, ...gaps], 1, 0.025).fluidity < 0.9, 'just past the bound: fails');
  assert.ok(fluidityIndex([1.02, ...gaps], 1, 0.025).fluidity >= 0.9, 'before it: can still pass');
  assert.is(fluidityFailWaitS(1, 0.025, 0.9, 1), 1, 'a 1-token request fails as soon as its only deadline passes');
  assert.is(fluidityFailWaitS(1, 0.025, 0, 11), Infinity);
});

test('rule (a): an overloaded probe stops early on the fluidity budget, and its full run indeed fails', () => {
  const { plan, records } = simulateQueue({ rateQps: 20, requests: 300, servers: 4, seed: 1 });
  const hook = makeEarlyStop(fluiditySlo, { requests: plan, warmupRequests: 30, rateQps: 20, fit }, { divergence: false });
  const stop = replay(records, hook);
  assert.ok(stop, 'it stopped');
  assert.match(stop!.reason, /SLO "fluidity p99 >= 0\.9" can no longer pass: \d+ failing requests already exceed the 2 allowed of 270/);
  assert.ok(stop!.finished < 150, `stopped after ${stop!.finished} of 300 requests`);
  assert.not.ok(fullVerdict(records, fluiditySlo, 30, fit));
});

test('rule (a): an underloaded probe runs to the end and passes', () => {
  const { plan, records } = simulateQueue({ rateQps: 4, requests: 300, servers: 4, seed: 2 });
  const hook = makeEarlyStop(fluiditySlo, { requests: plan, warmupRequests: 30, rateQps: 4, fit });
  assert.is(replay(records, hook), null);
  assert.ok(fullVerdict(records, fluiditySlo, 30, fit));
});

test('failures inside the warm-up do not count; errors after it do', () => {
  const errorsEarly = simulateQueue({ rateQps: 4, requests: 100, servers: 4, seed: 3, errorAt: new Set([0, 1, 2, 3, 4]) });
  const early = makeEarlyStop(fluiditySlo, { requests: errorsEarly.plan, warmupRequests: 10, rateQps: 4, fit });
  assert.is(replay(errorsEarly.records, early), null);
  const errorsLate = simulateQueue({ rateQps: 4, requests: 100, servers: 4, seed: 3, errorAt: new Set([20, 21]) });
  const late = makeEarlyStop(fluiditySlo, { requests: errorsLate.plan, warmupRequests: 10, rateQps: 4, fit });
  // 90 evaluated at p99 allow 0 failing: the first error ends it.
  const stop = replay(errorsLate.records, late);
  assert.ok(stop);
  assert.match(stop!.reason, /1 failing requests already exceed the 0 allowed of 90/);
});

test('requests known to have no token count once their wait alone exceeds the TTFT max', () => {
  const plan = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, scheduledS: 0, promptTokens: 100, maxTokens: 5 }));
  const slo: Slo = { ttft: { percentile: 80, maxS: 1, source: 'ttft p80 <= 1s' } }; // 10 requests: 2 may fail
  const hook = makeEarlyStop(slo, { requests: plan, warmupRequests: 0, rateQps: 10, fit: null }, { divergence: false });
  // Runner with per-request detail: r1.. in flight, null = no first token yet.
  const progress = (elapsedS: number, firstTokens: (number | null)[]): ProbeProgress => ({
    elapsedS,
    scheduled: 10,
    sent: 10,
    inFlight: firstTokens.map((f, i) => ({ id: `r${i + 1}`, firstTokenS: f })),
    records: [record('r0', 0.2, 5)],
  });
  // At 0.9 s nobody has waited past 1 s: go on.
  assert.is(hook(progress(0.9, [null, null, null, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])), null);
  // At 1.5 s two wait without a token: still within the 2 allowed.
  assert.is(hook(progress(1.5, [null, null, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5])), null);
  // Three without a token past 1 s: the budget of 2 is exceeded whatever happens next.
  const reason = hook(progress(1.5, [null, null, null, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]));
  assert.match(reason ?? '', /"ttft p80 <= 1s" can no longer pass: 3 failing requests already exceed the 2 allowed of 10/);
  assert.is(hook(progress(2, [])), reason, 'the answer is sticky');
});

test('count-only progress (the load runner): in-flight requests are not judged, unsent ones are', () => {
  const plan = Array.from({ length: 10 }, (_, i) => ({ id: `r${i}`, scheduledS: i * 0.01, promptTokens: 100, maxTokens: 5 }));
  const slo: Slo = { ttft: { percentile: 80, maxS: 1, source: 'ttft p80 <= 1s' } };
  const hook = makeEarlyStop(slo, { requests: plan, warmupRequests: 0, rateQps: 10, fit: null }, { divergence: false });
  const r0 = { ...record('r0', 0.2, 5) };
  // Nine in flight for 5 s: perhaps all streaming already, so nothing is certain.
  assert.is(hook({ elapsedS: 5, scheduled: 10, sent: 10, inFlight: 9, records: [r0] }), null);
  // Three of them never sent (client backlog): surely no token after 5 s.
  assert.match(hook({ elapsedS: 5, scheduled: 10, sent: 7, inFlight: 6, records: [r0] }) ?? '', /3 failing requests already exceed the 2 allowed/);
});

test('TBT pooled over token gaps: stops when the gaps over max exceed the bound for the most samples possible', () => {
  const plan = Array.from({ length: 4 }, (_, i) => ({ id: `r${i}`, scheduledS: 0, promptTokens: 100, maxTokens: 11 }));
  const slo: Slo = { tbt: { percentile: 90, maxS: 0.2, source: 'tbt p90 <= 200ms' } }; // ≤ 40 gaps: 4 may be slow
  const hook = makeEarlyStop(slo, { requests: plan, warmupRequests: 0, rateQps: 1, fit: null }, { divergence: false });
  const base = { scheduled: 4, sent: 4, inFlight: 0 };
  const slow = (id: string, n: number) => {
    const r = record(id, 0.1, 11, 0.05);
    for (let k = 1; k <= n; k++) for (let j = k; j < 11; j++) r.chunks[j][0] += 0.3; // n gaps of 0.35 s
    return r;
  };
  const records = [slow('r0', 4)];
  assert.is(hook({ ...base, elapsedS: 5, records }), null);
  records.push(slow('r1', 1));
  assert.match(hook({ ...base, elapsedS: 6, records }) ?? '', /5 failing token gaps already exceed the 4 allowed of 40/);
});

test('rule (b): with a lenient SLO, divergence stops an overloaded probe well before the budget would', () => {
  const { plan, records } = simulateQueue({ rateQps: 20, requests: 600, servers: 4, seed: 4 });
  const withDiv = replay(records, makeEarlyStop(ttftP50, { requests: plan, warmupRequests: 60, rateQps: 20, fit }));
  const budgetOnly = replay(records, makeEarlyStop(ttftP50, { requests: plan, warmupRequests: 60, rateQps: 20, fit }, { divergence: false }));
  assert.ok(withDiv, 'divergence stopped it');
  assert.match(withDiv!.reason, /^queueing diverges: the backlog grew from \d+ to \d+ requests and the median TTFT from/);
  assert.match(withDiv!.reason, /SLO "ttft p50 <= 2s"/);
  assert.ok(budgetOnly === null || budgetOnly.atS > withDiv!.atS + 5, `divergence at ${withDiv!.atS}s vs budget at ${budgetOnly?.atS}`);
  assert.not.ok(fullVerdict(records, ttftP50, 60, fit));
});

test('rule (b) waits for the minimum observation time and steady growth', () => {
  const { plan, records } = simulateQueue({ rateQps: 20, requests: 600, servers: 4, seed: 4 });
  const stop = replay(records, makeEarlyStop(ttftP50, { requests: plan, warmupRequests: 60, rateQps: 20, fit }, { divergence: { minObservationS: 15 } }));
  assert.ok(stop && stop.atS >= 15, `stopped at ${stop?.atS}`);
});

// Rule (c): across loads from 60% to 140% of capacity (~9.3 QPS) with Poisson arrivals, a probe
// is only ever stopped when its full run fails; and the rules do stop most failing probes.
test('rule (c): no stopped probe would have passed (both rules, three SLOs, 120 simulated probes)', () => {
  const slos: Slo[] = [fluiditySlo, ttftP50, { e2e: { percentile: 90, maxS: 1.5, source: 'e2e p90 <= 1.5s' }, ttft: { percentile: 95, maxS: 1, source: 'ttft p95 <= 1s' } }];
  let stopped = 0;
  let failed = 0;
  let passed = 0;
  for (const rate of [5.5, 8, 9, 9.5, 10, 13]) {
    for (let seed = 1; seed <= 20; seed++) {
      const slo = slos[seed % slos.length];
      const { plan, records } = simulateQueue({ rateQps: rate, requests: 200, servers: 4, seed: seed * 7 + Math.round(rate * 10) });
      const verdict = fullVerdict(records, slo, 20, fit);
      // Alternate the runner's progress shape: counts (load/runProbe) and per-request detail.
      const stop = replay(records, makeEarlyStop(slo, { requests: plan, warmupRequests: 20, rateQps: rate, fit }), seed % 2 === 0);
      if (stop) {
        stopped++;
        assert.not.ok(verdict, `rate ${rate} seed ${seed}: stopped (${stop.reason}) but the full run passes`);
      }
      if (verdict) passed++;
      else failed++;
    }
  }
  assert.ok(passed > 10 && failed > 10, `the loads must straddle capacity: ${passed} passed, ${failed} failed`);
  assert.ok(stopped >= failed * 0.6, `early stop caught ${stopped} of ${failed} failing probes`);
});

test.run();
