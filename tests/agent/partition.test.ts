// The pure parts of load agents: round-robin partition (the union is the plan, Poisson stays
// Poisson at the total rate), merging timelines and client health, the wire schema, the version.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planProbe } from '../../harness/load/plan.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { mergeClientHealth, mergeTimelines, partitionPlan } from '../../harness/agent/partition.ts';
import { LineSplitter, decodeFromAgent, decodeToAgent, encodeMessage } from '../../harness/agent/protocol.ts';
import { agentImageTag, agentVersion, versionProblem } from '../../harness/agent/version.ts';
import type { ClientHealth } from '../../harness/load/health.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: { min: 4, max: 12 } }, arrivals: { process: 'poisson' }, seed: 3 });

/** Rate and squared coefficient of variation of the gaps of sorted arrival times. */
function process(times: number[]): { rate: number; cv2: number } {
  const gaps = times.slice(1).map((t, i) => t - times[i]);
  const mean = gaps.reduce((s, g) => s + g, 0) / gaps.length;
  const variance = gaps.reduce((s, g) => s + (g - mean) ** 2, 0) / gaps.length;
  return { rate: 1 / mean, cv2: variance / mean ** 2 };
}

test('partition: every request in exactly one share, in plan order, dealt round-robin; the union is the plan', () => {
  const plan = planProbe({ workload, rateQps: 50, requests: 1001, maxContextTokens: 2048 });
  for (const n of [1, 2, 3, 7]) {
    const shares = partitionPlan(plan, n);
    assert.is(shares.length, n);
    shares.forEach((s, k) => {
      assert.ok(s.requests.every((r) => r.index % n === k), `share ${k} of ${n}`);
      assert.ok(s.requests.every((r, i) => i === 0 || r.scheduledS >= s.requests[i - 1].scheduledS));
      assert.is(s.rateQps, plan.rateQps);
    });
    const union = shares.flatMap((s) => s.requests).sort((a, b) => a.index - b.index);
    assert.equal(union, plan.requests);
  }
  assert.throws(() => partitionPlan(plan, 0), /positive integer/);
});

test('partition: the shares of a Poisson plan merge back to the planned rate and gap CV² (1 for Poisson)', () => {
  const plan = planProbe({ workload, rateQps: 100, requests: 20000, maxContextTokens: 2048 });
  const merged = partitionPlan(plan, 4).flatMap((s) => s.requests.map((r) => r.scheduledS)).sort((a, b) => a - b);
  const m = process(merged);
  const p = process(plan.requests.map((r) => r.scheduledS));
  assert.is(m.rate, p.rate);
  assert.ok(Math.abs(m.cv2 - 1) < 0.05, `CV² ${m.cv2}`);
  // Each share alone is a thinned (Erlang-like) process at a quarter of the rate: not Poisson.
  const share = process(partitionPlan(plan, 4)[0].requests.map((r) => r.scheduledS));
  assert.ok(Math.abs(share.rate - 25) < 1.5 && share.cv2 < 0.4, JSON.stringify(share));
});

const rec = (id: string, scheduledS: number): TimelineRecord => ({ id, scheduledS, sentS: scheduledS, promptTokens: 1, maxTokens: 1, outputTokens: 1, chunks: [[scheduledS + 0.1, 1]], status: 'ok', httpStatus: 200, error: null });

test('merge: ordered by planned arrival then index, whatever order they ended in, each naming its agent', () => {
  const merged = mergeTimelines([
    { agent: 1, index: 3, record: rec('00-0003', 0.3) },
    { agent: 0, index: 0, record: rec('00-0000', 0.1) },
    { agent: 0, index: 2, record: rec('00-0002', 0.2) },
    { agent: 1, index: 1, record: rec('00-0001', 0.2) },
  ]);
  assert.equal(merged.map((r) => [r.id, r.agent]), [['00-0000', 0], ['00-0001', 1], ['00-0002', 0], ['00-0003', 1]]);
});

const health = (clientErrorS: number, verdict: 'valid' | 'invalid'): ClientHealth => ({
  eventLoopDelayP99S: 0, eventLoopDelayMaxS: 0, dispatchLagP99S: 0, dispatchLagMaxS: 0, recvMinusEmit: null, clientErrorS, toleranceS: 0.002, verdict, reason: `error ${clientErrorS}`,
});

test('merge: client health is the worst agent’s, invalid when any agent’s is', () => {
  assert.is(mergeClientHealth([health(0.001, 'valid'), health(0.0015, 'valid')]).clientErrorS, 0.0015);
  const m = mergeClientHealth([health(0.001, 'valid'), health(0.004, 'invalid'), health(0.0001, 'valid')]);
  assert.is(m.verdict, 'invalid');
  assert.match(m.reason, /^agent 1 \(the worst of 3\)/);
  assert.throws(() => mergeClientHealth([]));
});

test('protocol: messages round-trip, Infinity included; malformed lines are refused with what is wrong', () => {
  const plan = planProbe({ workload, rateQps: 5, requests: 3, maxContextTokens: 2048 });
  assert.is(plan.durationLimitS, Infinity);
  const line = encodeMessage({ type: 'probe', plan, options: { baseUrl: 'http://127.0.0.1:8000', model: 'm' } });
  assert.ok(line.endsWith('\n') && !line.slice(0, -1).includes('\n'));
  const back = decodeToAgent(line.trim());
  assert.equal(back, { type: 'probe', plan, options: { baseUrl: 'http://127.0.0.1:8000', model: 'm' } });
  assert.throws(() => decodeToAgent('{"type":"stop"}'), /malformed 'stop' message: reason/);
  assert.throws(() => decodeToAgent('{"type":"launch"}'), /malformed 'launch' message/);
  assert.throws(() => decodeFromAgent('not json'), /not JSON/);
  assert.throws(() => decodeFromAgent(JSON.stringify({ type: 'record', index: -1, record: rec('a', 0), sent: 0 })), /index/);
  const r = decodeFromAgent(encodeMessage({ type: 'record', index: 4, record: { ...rec('x', 1), emitNs: ['5'] }, sent: 5 }).trim());
  assert.equal(r, { type: 'record', index: 4, record: { ...rec('x', 1), emitNs: ['5'] }, sent: 5 });
});

test('framing: lines split across chunks come out whole; a partial line waits', () => {
  const s = new LineSplitter();
  assert.equal(s.push('{"a":1}\n{"b"'), ['{"a":1}']);
  assert.equal(s.push(':2}\n\n{"c":3}'), ['{"b":2}']);
  assert.is(s.rest(), '{"c":3}');
});

test('version: package version and sources hash; any other reported version is a problem', () => {
  const v = agentVersion('0.1.0', 'ab'.repeat(32));
  assert.is(v, '0.1.0-abababababababab');
  assert.is(agentImageTag(v), 'fluidcap/agent:0.1.0-abababababababab');
  assert.is(versionProblem(v, v, 'x'), null);
  assert.match(versionProblem(v, '0.1.0-cdcdcdcdcdcdcdcd', 'image fluidcap/agent on h')!, /image fluidcap\/agent on h is load agent version 0.1.0-cdcd.*this fluidcap is 0.1.0-abab/);
  assert.match(versionProblem(v, null, 'agent 0')!, /\(none\)/);
  assert.throws(() => agentVersion('0.1.0', 'nothex'));
});

test.run();
