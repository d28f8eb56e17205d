// SLOs as miss series: which requests (or token gaps) miss and nearly miss each SLO entry, and the
// streaming accumulator (`analyze`) deciding exactly as decideSlo on the same requests.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decideSlo, probeDecision, sloSeries, SloDecisionAccumulator, statisticsOfDecision, stopStatistics } from '../../harness/capacity/sloDecision.ts';
import { DEFAULT_DECISION } from '../../harness/capacity/decision.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import type { Slo } from '../../harness/metrics/slo.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { simulateQueue } from './earlyStopSim.ts';

const slo: Slo = {
  fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 'fluidity p99 >= 0.9' },
  ttft: { percentile: 90, maxS: 1, source: 'ttft p90 <= 1s' },
  tbt: { percentile: 99, maxS: 0.03, source: 'tbt p99 <= 30ms' },
};
const metrics = (r: TimelineRecord) => computeRequestMetrics(r, { dpS: 0.35, tbtDeadlineS: 0.025, prefillS: 0.05 });

function rec(id: string, scheduledS: number, ttftS: number, gapsS: number[], status: TimelineRecord['status'] = 'ok'): TimelineRecord {
  const chunks: [number, number][] = [[scheduledS + ttftS, 1]];
  for (const g of gapsS) chunks.push([chunks[chunks.length - 1][0] + g, 1]);
  return { id, scheduledS, sentS: scheduledS, promptTokens: 100, maxTokens: chunks.length, outputTokens: chunks.length, chunks, status, httpStatus: 200, error: null };
}

test('misses and near misses per SLO entry; TBT counts token gaps; a failed request misses everything once', () => {
  const outcomes = [
    rec('a', 0, 0.1, [0.01, 0.01]), // meets all
    rec('b', 1, 0.6, [0.01, 0.02]), // ttft above half its limit; fluidity: first token 0.25 s late → misses
    rec('c', 2, 0.34, [0.04, ...Array(19).fill(0.01)]), // one late gap of 20: tbt miss, fluidity 20/21 (near miss)
    rec('d', 3, 2, [0.01], 'error'),
  ].map(metrics);
  const [fluidity, ttft, tbt] = sloSeries(outcomes, slo);
  assert.equal([fluidity.name, ttft.name, tbt.name], ['fluidity', 'ttft', 'tbt']);
  assert.equal(fluidity.misses, [0, 1, 0, 1]);
  assert.equal(fluidity.nearMisses, [0, 1, 1, 1]);
  assert.equal(ttft.misses, [0, 0, 0, 1]);
  assert.equal(ttft.nearMisses, [0, 1, 0, 1]);
  assert.equal(tbt.misses, [0, 0, 0, 0, 1, ...Array(19).fill(0), 1]);
  assert.equal(tbt.endOf, [2, 4, 24, 25]);
  assert.ok(Math.abs(ttft.allowedFraction - 0.1) < 1e-12);
});

test('the accumulator decides as decideSlo, whatever order requests arrive in', () => {
  for (const rate of [6, 17, 30]) {
    const { records } = simulateQueue({ rateQps: rate, requests: 900, servers: 8, seed: rate });
    const inOrder = decideSlo(records.map(metrics), slo, DEFAULT_DECISION, { passFromRequests: 300 });
    const acc = new SloDecisionAccumulator(slo);
    const byEnd = [...records].sort((a, b) => a.chunks[a.chunks.length - 1][0] - b.chunks[b.chunks.length - 1][0]);
    for (const r of byEnd) acc.add(metrics(r));
    const streamed = acc.decide(DEFAULT_DECISION, { passFromRequests: 300 });
    assert.is(streamed.decision, inOrder.decision, `rate ${rate}`);
    assert.is(streamed.confidence, inOrder.confidence, `rate ${rate}`);
  }
});

test('requests cancelled by an early stop end the series: they are not misses', () => {
  const { records } = simulateQueue({ rateQps: 4, requests: 600, servers: 8, seed: 3 });
  const acc = new SloDecisionAccumulator({ fluidity: slo.fluidity });
  records.forEach((r, i) => acc.add(metrics(i >= 500 ? { ...r, status: 'cancelled', chunks: r.chunks.slice(0, 1) } : r)));
  const d = acc.decide(DEFAULT_DECISION);
  assert.is(d.requestsObserved, 500);
  assert.is(d.parts[0].result.misses, 0);
  assert.is(d.decision, 'pass');
});

test("a probe's statistical decision: pass needs the planned minimum, a fail leans and decides fail, evidence names the SLO", () => {
  const fluidityOnly: Slo = { fluidity: slo.fluidity };
  const { records } = simulateQueue({ rateQps: 4, requests: 600, servers: 8, seed: 3 });
  const calm = records.map(metrics);
  const pass = probeDecision(calm, fluidityOnly, DEFAULT_DECISION, 400);
  assert.is(pass.decision, 'pass');
  assert.ok(pass.confidence >= 1 - DEFAULT_DECISION.alpha, String(pass.confidence));
  assert.match(pass.evidence, 'SLO "fluidity p99 >= 0.9": pass');
  // The same requests cannot pass a probe planned longer than they are.
  const short = probeDecision(calm, fluidityOnly, DEFAULT_DECISION, 700);
  assert.is(short.decision, 'undecided');
  assert.is(short.leaning, 'pass');
  // Every tenth request late by a second: 10% misses against 1% allowed.
  const late = records.map((r, i) => metrics(i % 10 === 0 ? { ...r, chunks: r.chunks.map(([t, n]) => [t + 1, n] as [number, number]) } : r));
  const fail = probeDecision(late, fluidityOnly, DEFAULT_DECISION, 400);
  assert.is(fail.decision, 'fail');
  assert.is(fail.leaning, 'fail');
});


test('an early stop keeps the counts of the entries it failed, not the others sampled before the stop', () => {
  // Every first token 0.9 s late for fluidity (deadline 0.65 s) and within TTFT's 1 s; no gap past 30 ms.
  const early = Array.from({ length: 20 }, (_, i) => metrics(rec(`r${i}`, i * 0.1, 0.9, [0.01, 0.01])));
  const d = decideSlo(early, slo, DEFAULT_DECISION);
  assert.is(d.decision, 'fail');
  assert.equal(statisticsOfDecision(d).parts!.map((p) => p.name), ['fluidity', 'ttft', 'tbt']);
  const kept = stopStatistics(d);
  // The sequential test fails fluidity on its first requests, every one a miss; TTFT's and TBT's counts go.
  assert.equal(kept.parts!.map((p) => p.name), ['fluidity']);
  assert.ok(kept.parts![0].observed >= 3 && kept.parts![0].misses === kept.parts![0].observed, JSON.stringify(kept.parts));
  assert.is(kept.decision, 'fail');
});

test.run();
