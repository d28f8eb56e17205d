// Per-request metrics (SPEC §5) and agreement with vLLM's benchmark definitions on the same timelines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { fluidityIndex } from '../../harness/metrics/fluidity.ts';

const record = (over: Partial<TimelineRecord> = {}): TimelineRecord => ({
  id: '00-0001',
  scheduledS: 1.0,
  sentS: 1.25,
  promptTokens: 100,
  maxTokens: 6,
  outputTokens: 6,
  // Binary-exact times: first token at 1.75, then a 3-token chunk and two single tokens.
  chunks: [
    [1.75, 1],
    [1.875, 3],
    [2.0, 1],
    [2.5, 1],
  ],
  status: 'ok',
  httpStatus: 200,
  error: null,
  ...over,
});

// vLLM benchmarks/lib/endpoint_request_func.py (streaming loop) + benchmark_serving.py
// calculate_metrics, transcribed: timestamps are the chunk receive times, st the send time.
function vllmBenchmark(sentS: number, chunkTimesS: number[], outputLen: number) {
  let ttft = 0;
  const itl: number[] = [];
  let mostRecent = sentS;
  for (const timestamp of chunkTimesS) {
    if (ttft === 0) ttft = timestamp - sentS;
    else itl.push(timestamp - mostRecent);
    mostRecent = timestamp;
  }
  const latency = mostRecent - sentS;
  const tpot = outputLen > 1 ? (latency - ttft) / (outputLen - 1) : null;
  return { ttft, itl, latency, tpot };
}

test('TTFT from scheduled arrival and from send; dispatch lag; E2E; normalized latency', () => {
  const m = computeRequestMetrics(record(), { dpS: 1.0, tbtDeadlineS: 0.125 });
  assert.is(m.ttftS, 0.75);
  assert.is(m.ttftFromSentS, 0.5);
  assert.is(m.dispatchLagS, 0.25);
  assert.is(m.e2eS, 1.5);
  assert.is(m.e2eFromSentS, 1.25);
  assert.is(m.normalizedLatencyS, 1.5 / 6);
  assert.is(m.receivedTokens, 6);
  assert.is(m.succeeded, true);
  assert.is(m.endS, 2.5);
});

test('TBT samples: a chunk of k tokens gives its gap and k − 1 zeros; ITL excludes TTFT', () => {
  const m = computeRequestMetrics(record(), { dpS: 1.0, tbtDeadlineS: 0.125 });
  assert.equal(m.itlS, [0.125, 0.125, 0.5]);
  assert.equal(m.tbtSamplesS, [0.125, 0, 0, 0.125, 0.5]);
  assert.is(m.tbtSamplesS.length, m.outputTokens - 1);
  assert.is(m.tbtMaxS, 0.5);
  // Zeros inside the first chunk count too: 3 tokens at once → two zero gaps before the next chunk.
  const first = computeRequestMetrics(record({ chunks: [[1.75, 3], [2.0, 1]], outputTokens: 4 }), {
    dpS: 1,
    tbtDeadlineS: 0.125,
  });
  assert.equal(first.tbtSamplesS, [0, 0, 0.25]);
  assert.equal(first.itlS, [0.25]);
});

test('TPOT = (E2E − TTFT) / (outputTokens − 1) = mean TBT sample', () => {
  const m = computeRequestMetrics(record(), { dpS: 1.0, tbtDeadlineS: 0.125 });
  assert.is(m.tpotS, (1.5 - 0.75) / 5);
  const meanTbt = m.tbtSamplesS.reduce((a, b) => a + b, 0) / m.tbtSamplesS.length;
  assert.is(m.tpotS, meanTbt);
});

test('agrees with vLLM benchmark definitions (TTFT from send, ITL, TPOT) on the same timelines', () => {
  const timelines: TimelineRecord[] = [
    record(),
    record({ chunks: [[1.4, 1]], outputTokens: 1 }),
    // Decimal times as a real client records them (µs resolution).
    record({
      scheduledS: 3.100001,
      sentS: 3.100417,
      chunks: [
        [3.412345, 1],
        [3.437001, 1],
        [3.461999, 2],
        [3.49, 1],
        [3.514321, 4],
      ],
      outputTokens: 9,
    }),
  ];
  for (const r of timelines) {
    const ours = computeRequestMetrics(r, { dpS: 0.5, tbtDeadlineS: 0.025 });
    const vllm = vllmBenchmark(
      r.sentS,
      r.chunks.map(([t]) => t),
      r.outputTokens,
    );
    assert.is(ours.ttftFromSentS, vllm.ttft, `${r.id} ttft`);
    assert.equal(ours.itlS, vllm.itl, `${r.id} itl`);
    assert.is(ours.e2eFromSentS, vllm.latency, `${r.id} latency`);
    if (vllm.tpot === null) assert.is(ours.tpotS, null);
    else assert.ok(Math.abs((ours.tpotS as number) - vllm.tpot) < 1e-12, `${r.id} tpot ${ours.tpotS} vs ${vllm.tpot}`);
  }
});

test('one-token request: no TPOT, no TBT samples, fluidity from TTFT alone', () => {
  const m = computeRequestMetrics(record({ chunks: [[1.5, 1]], outputTokens: 1 }), { dpS: 1.0, tbtDeadlineS: 0.125 });
  assert.is(m.tpotS, null);
  assert.equal(m.tbtSamplesS, []);
  assert.is(m.tbtMaxS, null);
  assert.is(m.fluidity, 1);
  assert.is(m.deadlinesTotal, 1);
});

test('fluidity uses T = [TTFT from scheduled, TBT samples...] with the given D_p and D_d', () => {
  const m = computeRequestMetrics(record(), { dpS: 0.5, tbtDeadlineS: 0.125 });
  const direct = fluidityIndex([0.75, 0.125, 0, 0, 0.125, 0.5], 0.5, 0.125);
  assert.equal([m.fluidity, m.deadlinesTotal, m.deadlinesMissed], [direct.fluidity, direct.total, direct.missed]);
  assert.ok(m.deadlinesMissed > 0);
});

test('failed, timed-out and token-less requests have fluidity 0 and do not succeed', () => {
  for (const status of ['error', 'timeout', 'cancelled'] as const) {
    const m = computeRequestMetrics(record({ status, error: 'boom', httpStatus: 500 }), { dpS: 5, tbtDeadlineS: 1 });
    assert.is(m.succeeded, false, status);
    assert.is(m.fluidity, 0, status);
    // What it streamed before failing is still measured.
    assert.is(m.ttftS, 0.75);
  }
  const empty = computeRequestMetrics(record({ chunks: [], outputTokens: 0, status: 'error' }), { dpS: 1, tbtDeadlineS: 1 });
  assert.is(empty.ttftS, null);
  assert.is(empty.e2eS, null);
  assert.is(empty.endS, 1.25);
  const okNoTokens = computeRequestMetrics(record({ chunks: [], outputTokens: 0 }), { dpS: 1, tbtDeadlineS: 1 });
  assert.is(okNoTokens.succeeded, false);
  assert.is(okNoTokens.fluidity, 0);
});

test('scheduling delay = TTFT − predicted prefill (without slack) when a prediction is given', () => {
  const m = computeRequestMetrics(record(), { dpS: 0.55, tbtDeadlineS: 0.125, prefillS: 0.25 });
  assert.is(m.schedulingDelayS, 0.5);
  assert.is(computeRequestMetrics(record(), { dpS: 0.55, tbtDeadlineS: 0.125 }).schedulingDelayS, null);
});

test('zero-token chunks (usage-only) are not token arrivals', () => {
  const m = computeRequestMetrics(
    record({
      chunks: [
        [1.5, 0],
        [1.75, 1],
        [2.0, 1],
        [2.125, 0],
      ],
      outputTokens: 2,
    }),
    { dpS: 1, tbtDeadlineS: 0.5 },
  );
  assert.is(m.ttftS, 0.75);
  assert.equal(m.itlS, [0.25]);
  assert.is(m.e2eS, 1.0);
});

test.run();
