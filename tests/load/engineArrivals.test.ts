// Token arrivals as the engine emits them (pure decode): vLLM streams `text: ""` chunks for a token
// whose text is held back (half a UTF-8 character) or never shown (a special token). Streams here
// are shaped as vLLM's serving_completion.py / serving_chat.py write them, one read per event.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeExchange } from '../../harness/load/decode.ts';
import type { RawExchange } from '../../harness/load/exchange.ts';
import { arrivalChunks } from '../../harness/timeline/record.ts';
import { timelineProblems } from '../../harness/timeline/validate.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { formatTimelineLine } from '../../harness/timeline/writer.ts';

/** One read per event, the i-th read at `timesMs[i]` ms; events after the last time share it. */
function exchange(events: unknown[], timesMs: number[], maxTokens: number): RawExchange {
  const parts = events.map((e) => new TextEncoder().encode(`data: ${JSON.stringify(e)}\n\n`));
  parts.push(new TextEncoder().encode('data: [DONE]\n\n'));
  const bytes = new Uint8Array(parts.reduce((s, p) => s + p.length, 0));
  const readEnd = new Int32Array(parts.length);
  const readNs = new Float64Array(parts.length);
  let at = 0;
  parts.forEach((p, i) => {
    bytes.set(p, at);
    at += p.length;
    readEnd[i] = at;
    readNs[i] = (timesMs[Math.min(i, timesMs.length - 1)] ?? 0) * 1e6;
  });
  return { id: 'r', index: 0, scheduledNs: 0, sentNs: 0, slotWaitNs: 0, httpStatus: 200, contentType: 'text/event-stream', readNs, readEnd, bytes, endNs: readNs[readNs.length - 1], endReason: 'end', error: null, promptTokens: 8, maxTokens };
}

const usage = (n: number) => ({ prompt_tokens: 8, completion_tokens: n, total_tokens: 8 + n });
/** A vLLM completions chunk with continuous usage: its text, the running count, its emit stamp. */
const cmpl = (text: string, count: number, emitMs: number, finish: string | null = null) => ({
  id: 'cmpl-1', object: 'text_completion', choices: [{ index: 0, text, logprobs: null, finish_reason: finish, stop_reason: null }], usage: usage(count), fluidcap_emit_ns: String(emitMs * 1e6),
});

test('a vLLM stream with empty-text chunks: every token an arrival at its own time, counts exact, text-only view kept', () => {
  // Tokens 2 and 3 carry no text (held-back UTF-8), token 5 is a special token, token 6 two tokens merged.
  const events = [cmpl(' a', 1, 10), cmpl('', 2, 12), cmpl('', 3, 14), cmpl(' bé', 4, 16), cmpl('', 5, 18), cmpl(' c d', 7, 20, 'length'), { id: 'cmpl-1', choices: [], usage: usage(7) }];
  const { record, recvMinusEmitNs } = decodeExchange(exchange(events, [10.5, 12.5, 14.5, 16.5, 18.5, 20.5, 20.6], 7), 0n);
  assert.equal(record.chunks, [[0.0105, 1], [0.0125, 1], [0.0145, 1], [0.0165, 1], [0.0185, 1], [0.0205, 2]]);
  assert.equal(record.textlessChunks, [1, 2, 4]);
  assert.is(record.tokenCounts, 'exact');
  assert.is(record.tokenCountProblem, undefined);
  assert.is(record.outputTokens, 7);
  assert.equal(record.emitNs, ['10000000', '12000000', '14000000', '16000000', '18000000', '20000000']);
  assert.equal(recvMinusEmitNs.map((d) => Math.round(d / 1e3)), [500, 500, 500, 500, 500, 500]);
  assert.equal(timelineProblems(JSON.parse(formatTimelineLine(record))), []);
  // What a reader saw: the textless tokens with the next text.
  assert.equal(arrivalChunks(record, 'visible'), [[0.0105, 1], [0.0165, 3], [0.0205, 3]]);
  const engine = computeRequestMetrics(record, { dpS: 1, tbtDeadlineS: 0.025 });
  const visible = computeRequestMetrics(record, { dpS: 1, tbtDeadlineS: 0.025, arrivals: 'visible' });
  assert.equal(engine.tbtSamplesS.map((g) => Math.round(g * 1e4)), [20, 20, 20, 20, 20, 0]);
  assert.equal(visible.tbtSamplesS.map((g) => Math.round(g * 1e4)), [60, 0, 0, 40, 0, 0]);
  assert.is(engine.outputTokens, visible.outputTokens);
});

test('chat with continuous usage: the role chunk (count 0) is no arrival, an empty delta that advances the count is', () => {
  const chat = (delta: Record<string, unknown>, count: number, finish: string | null = null) => ({ object: 'chat.completion.chunk', choices: [{ index: 0, delta, finish_reason: finish }], usage: usage(count) });
  const events = [chat({ role: 'assistant', content: '' }, 0), chat({ content: '' }, 1), chat({ content: ' x' }, 2), chat({ content: ' y' }, 3, 'length'), { choices: [], usage: usage(3) }];
  const { record } = decodeExchange(exchange(events, [5, 7, 9, 11, 11], 3), 0n);
  assert.equal(record.chunks, [[0.007, 1], [0.009, 1], [0.011, 1]]);
  assert.equal(record.textlessChunks, [0]);
  assert.is(record.tokenCounts, 'exact');
});

test('a max_tokens 1 reply whose only token has no text gives a TTFT, with or without continuous usage', () => {
  const withCounts = decodeExchange(exchange([cmpl('', 1, 40, 'length'), { choices: [], usage: usage(1) }], [40.2, 40.3], 1), 0n).record;
  assert.equal(withCounts.chunks, [[0.0402, 1]]);
  assert.is(withCounts.status, 'ok');
  assert.is(computeRequestMetrics(withCounts, { dpS: 1, tbtDeadlineS: 0.025 }).ttftS, 0.0402);
  // vLLM without continuous_usage_stats: `"usage": null` on the chunk, the total after it.
  const plain = { ...cmpl('', 1, 40, 'length'), usage: null };
  const totalOnly = decodeExchange(exchange([plain, { choices: [], usage: usage(1) }], [40.2, 40.3], 1), 0n).record;
  assert.equal(totalOnly.chunks, [[0.0402, 1]]);
  assert.is(totalOnly.tokenCountProblem, undefined);
  // Nothing was visible: the text view has no arrival, so a reader-side TTFT does not exist.
  assert.is(computeRequestMetrics(totalOnly, { dpS: 1, tbtDeadlineS: 0.025, arrivals: 'visible' }).ttftS, null);
});

test('a stream whose every chunk is empty text is counted exactly, not a token-count drift', () => {
  const events = [cmpl('', 1, 1), cmpl('', 2, 2), cmpl('', 3, 3, 'length'), { choices: [], usage: usage(3) }];
  const { record } = decodeExchange(exchange(events, [1, 2, 3, 3], 3), 0n);
  assert.is(record.tokenCountProblem, undefined);
  assert.equal(record.chunks.map((c) => c[1]), [1, 1, 1]);
  assert.is(record.tokenCounts, 'exact');
  assert.is(record.status, 'ok');
});

test('token ids listed in the choices count each chunk outright, empty text included', () => {
  const ids = (text: string, tokenIds: number[], finish: string | null = null) => ({ choices: [{ index: 0, text, token_ids: tokenIds, finish_reason: finish }], usage: null });
  const events = [ids(' a', [11]), ids('', [12, 13]), ids(' b', [14], 'length'), { choices: [], usage: usage(4) }];
  const { record } = decodeExchange(exchange(events, [1, 2, 3, 3], 4), 0n);
  assert.equal(record.chunks.map((c) => c[1]), [1, 2, 1]);
  assert.equal(record.textlessChunks, [1]);
  assert.is(record.tokenCounts, 'exact');
});

test('a total after uncounted text chunks is no arrival of its own: a tokenless finish chunk stays out', () => {
  // OpenAI-style: text chunks without usage, a final `delta: {}` finish chunk carrying the total.
  const chat = (delta: Record<string, unknown>, finish: string | null = null, u: unknown = undefined) => ({ choices: [{ index: 0, delta, finish_reason: finish }], ...(u ? { usage: u } : {}) });
  const events = [chat({ content: ' a' }), chat({ content: ' b' }), chat({}, 'stop', usage(2))];
  const { record } = decodeExchange(exchange(events, [1, 2, 3], 2), 0n);
  assert.equal(record.chunks.map((c) => c[1]), [1, 1]);
  assert.is(record.textlessChunks, undefined);
  assert.is(record.tokenCounts, 'exact');
});

test('old timelines (no textlessChunks) read the same in both views; a bad textlessChunks is named', () => {
  const old = { id: 'a', scheduledS: 0, sentS: 0, promptTokens: 1, maxTokens: 2, outputTokens: 2, chunks: [[0.1, 1], [0.2, 1]] as [number, number][], status: 'ok' as const, httpStatus: 200, error: null };
  assert.equal(timelineProblems(old), []);
  assert.is(arrivalChunks(old, 'visible'), old.chunks);
  assert.equal(timelineProblems({ ...old, textlessChunks: [1, 1] }), ['textlessChunks[1] must be a chunk index within 0..1, above the previous one, got 1 (number)']);
  assert.equal(timelineProblems({ ...old, textlessChunks: [2] }).length, 1);
});

test.run();
