// Reconciling streamed chunks with the server's counts (pure): totals, cumulative and delta usage,
// placeholders, placement of extra tokens by text length, and the counts that cannot be believed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { reconcileTokenCounts, type CountObservation } from '../../harness/load/tokenCounts.ts';
import { decodeExchange } from '../../harness/load/decode.ts';
import { requestBody } from '../../harness/load/prompt.ts';
import type { RawExchange } from '../../harness/load/exchange.ts';

const at = (contentBefore: number, completionTokens: number, onContent = false): CountObservation => ({ contentBefore, completionTokens, onContent });
const chars = (n: number, c = 4) => new Array<number>(n).fill(c);

test('no usage: one token per chunk, inferred, no problem', () => {
  const r = reconcileTokenCounts(chars(3), [], 3);
  assert.equal(r.perChunk, [1, 1, 1]);
  assert.is(r.counts, 'inferred');
  assert.is(r.reporting, 'none');
  assert.is(r.problem, null);
});

test('a final total equal to the chunk count pins every chunk: exact', () => {
  const r = reconcileTokenCounts(chars(5), [at(5, 5)], 5);
  assert.equal(r.perChunk, [1, 1, 1, 1, 1]);
  assert.is(r.counts, 'exact');
  assert.is(r.reporting, 'total');
});

test('a larger total goes to the chunks whose text is longer; without a difference, evenly from the latest', () => {
  const r = reconcileTokenCounts([4, 4, 8, 4, 12], [at(5, 8)], 8);
  assert.equal(r.perChunk, [1, 1, 2, 1, 3]);
  assert.is(r.counts, 'inferred');
  assert.is(r.problem, null);
  const even = reconcileTokenCounts(chars(4), [at(4, 6)], 6);
  assert.equal(even.perChunk, [1, 1, 2, 2]);
});

test('a zero placeholder in the first chunk is not a total; the final count is', () => {
  const r = reconcileTokenCounts(chars(4), [at(1, 0, true), at(4, 4)], 4);
  assert.equal(r.perChunk, [1, 1, 1, 1]);
  assert.is(r.counts, 'exact');
  assert.is(r.reportedTotal, 4);
});

test('cumulative counts on every chunk are exact, multi-token chunks included', () => {
  const r = reconcileTokenCounts(chars(4), [at(1, 1, true), at(2, 3, true), at(3, 4, true), at(4, 6, true), at(4, 6)], 6);
  assert.equal(r.perChunk, [1, 2, 1, 2]);
  assert.is(r.counts, 'exact');
  assert.is(r.reporting, 'cumulative');
});

test('a count on an event without text (a held-back half character) goes with the next chunk, still exact', () => {
  const r = reconcileTokenCounts(chars(3), [at(1, 1, true), at(1, 2), at(2, 3, true), at(3, 4, true), at(3, 4)], 4);
  assert.equal(r.perChunk, [1, 2, 1]);
  assert.is(r.counts, 'exact');
  const tail = reconcileTokenCounts(chars(2), [at(1, 1, true), at(2, 2, true), at(2, 3)], 3);
  assert.equal(tail.perChunk, [1, 2]);
  assert.is(tail.counts, 'inferred');
  assert.is(tail.problem, null);
});

test('per-chunk deltas that fall back or stay below the chunk count are deltas', () => {
  const d = reconcileTokenCounts(chars(4), [at(1, 1, true), at(2, 2, true), at(3, 1, true), at(4, 1, true)], 5);
  assert.equal(d.perChunk, [1, 2, 1, 1]);
  assert.is(d.reporting, 'delta');
  assert.is(d.counts, 'exact');
  assert.is(d.reportedTotal, 5);
  const ones = reconcileTokenCounts(chars(3), [at(1, 1, true), at(2, 1, true), at(3, 1, true)], 3);
  assert.equal(ones.perChunk, [1, 1, 1]);
  assert.is(ones.reporting, 'delta');
});

test('fewer tokens than chunks cannot be reconciled: a problem, chunks kept at one each', () => {
  const r = reconcileTokenCounts(chars(5), [at(5, 3)], 5);
  assert.equal(r.perChunk, [1, 1, 1, 1, 1]);
  assert.match(String(r.problem), /usage says 3 completion tokens but 5 chunks were streamed/);
});

test('an implausible count (1e9, or beyond 100 x max_tokens) is a problem and never allocated', () => {
  const r = reconcileTokenCounts(chars(3), [at(3, 1e9)], 3);
  assert.equal(r.perChunk, [1, 1, 1]);
  assert.is(r.reportedTotal, 1e9);
  assert.match(String(r.problem), /beyond any plausible count/);
  assert.match(String(reconcileTokenCounts(chars(3), [at(3, 301)], 3).problem), /limit 300/);
  assert.is(reconcileTokenCounts(chars(3), [at(3, 300)], 3).problem, null);
  assert.match(String(reconcileTokenCounts(chars(2), [at(2, 2.5)], 2).problem), /not a token count/);
});

test("llama.cpp's timings.predicted_n on every chunk (timings_per_token, sent with continuousUsage) counts a 2-token chunk exactly", () => {
  const body = JSON.parse(requestBody({ api: 'completions', model: 'm', format: 'token-ids', seed: 1, continuousUsage: true }, 0, 4, 3));
  assert.is(body.timings_per_token, true);
  assert.equal(body.stream_options, { include_usage: true, continuous_usage_stats: true });
  // Shaped as llama-server b10573 streams /v1/completions: the same text length for 1 and 2 tokens.
  const events = [
    { choices: [{ text: 'ab', index: 0, finish_reason: null }], timings: { predicted_n: 1 } },
    { choices: [{ text: 'cd', index: 0, finish_reason: null }], timings: { predicted_n: 3 } },
    { choices: [{ text: 'ef', index: 0, finish_reason: 'length' }], timings: { predicted_n: 4 } },
  ];
  const text = events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') + 'data: [DONE]\n\n';
  const bytes = new TextEncoder().encode(text);
  const raw: RawExchange = {
    id: 'x', index: 0, scheduledNs: 0, sentNs: 0, slotWaitNs: 0, httpStatus: 200, contentType: 'text/event-stream',
    readNs: new Float64Array([1e6]), readEnd: new Int32Array([bytes.length]), bytes, endNs: 2e6, endReason: 'end', error: null, promptTokens: 4, maxTokens: 4,
  };
  const { record } = decodeExchange(raw, 0n);
  assert.equal(record.chunks.map((c) => c[1]), [1, 2, 1]);
  assert.is(record.tokenCounts, 'exact');
  assert.is(record.outputTokens, 4);
  assert.is(record.usageOutputTokens, 4);
});

test.run();
