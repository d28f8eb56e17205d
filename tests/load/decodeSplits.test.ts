// The decoder over the receive path's output: one SSE body (CRLF, comments, `data:` without a
// space, two-byte UTF-8 characters) cut into two reads at every byte offset. Each content event
// must be timed by the read that completed it, and the record must be the same otherwise.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeExchange } from '../../harness/load/decode.ts';
import type { RawExchange } from '../../harness/load/exchange.ts';

const events = [
  'data: {"choices":[{"text":" ü1","finish_reason":null}],"fluidcap_emit_ns":"100"}\r\n\r\n',
  ': keep-alive\r\n\r\n',
  'data:{"choices":[{"text":" ü2","finish_reason":null}],"fluidcap_emit_ns":"200"}\n\n',
  'data: {"choices":[{"text":" ü3","finish_reason":"length"}],"fluidcap_emit_ns":"300"}\n\n',
  'data: {"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":3}}\n\n',
  'data: [DONE]\n\n',
];
const body = new TextEncoder().encode(events.join(''));
// How many bytes it takes to complete each content event: up to its blank line's line end, which
// for CRLF is the CR (a CR alone ends a line; the LF after it is swallowed when it comes).
const contentEnds = [0, 2, 3].map((k) => new TextEncoder().encode(events.slice(0, k + 1).join('')).length - (events[k].endsWith('\r\n\r\n') ? 1 : 0));

function raw(cuts: number[]): RawExchange {
  const ends = [...cuts, body.length];
  return {
    id: 'r', index: 0, scheduledNs: 0, sentNs: 0, slotWaitNs: 0, httpStatus: 200, contentType: 'text/event-stream',
    // Read k arrives at (k + 1) ms.
    readNs: Float64Array.from(ends, (_, k) => (k + 1) * 1e6),
    readEnd: Int32Array.from(ends),
    bytes: body.slice(),
    endNs: 10e6, endReason: 'end', error: null, promptTokens: 4, maxTokens: 3,
  };
}

test('two reads split at every offset: same tokens and usage, each chunk timed by the read that completed its event', () => {
  for (let cut = 1; cut < body.length; cut++) {
    const { record } = decodeExchange(raw([cut]), 0n);
    assert.is(record.status, 'ok', `cut ${cut}: ${record.error}`);
    assert.is(record.outputTokens, 3, `cut ${cut}`);
    assert.is(record.usageOutputTokens, 3);
    assert.equal(record.emitNs, ['100', '200', '300'], `cut ${cut}`);
    const expected = contentEnds.map((end) => (end <= cut ? 0.001 : 0.002));
    assert.equal(record.chunks.map((c) => c[0]), expected, `cut ${cut}`);
  }
});

test('one byte per read: every chunk is timed at the read holding its last byte', () => {
  const cuts = Array.from({ length: body.length - 1 }, (_, i) => i + 1);
  const { record } = decodeExchange(raw(cuts), 0n);
  assert.is(record.status, 'ok', String(record.error));
  // Read k ends at byte k + 1 and arrives at (k + 1) ms, so an event completed by byte e arrives at e ms.
  assert.equal(record.chunks.map((c) => Math.round(c[0] * 1e3)), contentEnds);
});

test.run();
