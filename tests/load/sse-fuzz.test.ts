// Our incremental SSE parser against eventsource-parser 3 (the reference): random event streams
// with LF/CRLF/CR line ends, `data:` with and without a space, multi-line data, comments, event/id/
// retry/unknown fields, split at random points into reads. Both must dispatch the same events.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createParser } from 'eventsource-parser';
import { SseParser, type SseEvent } from '../../harness/load/sse.ts';
import { createRng, type Rng } from '../../harness/util/rng.ts';

const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng.next() * xs.length)];
const VALUE_CHARS = ['a', 'b', ' ', ':', '{', '"', 'é', '🙂', '[DONE]', '\t', 'data', 'x:y'];

function randomValue(rng: Rng): string {
  let s = '';
  const n = Math.floor(rng.next() * 6);
  for (let i = 0; i < n; i++) s += pick(rng, VALUE_CHARS);
  return s;
}

/** A random but well-formed-enough stream; always ends with a line end so neither parser holds a final line. */
function randomStream(rng: Rng): string {
  const eol = () => pick(rng, ['\n', '\r\n', '\r']);
  let out = '';
  const events = 1 + Math.floor(rng.next() * 8);
  for (let e = 0; e < events; e++) {
    const lines = Math.floor(rng.next() * 5);
    for (let l = 0; l < lines; l++) {
      const kind = pick(rng, ['data', 'data', 'data', 'datanospace', 'comment', 'event', 'id', 'retry', 'unknown', 'bare-data']);
      const v = randomValue(rng);
      if (kind === 'data') out += `data: ${v}`;
      else if (kind === 'datanospace') out += `data:${v}`;
      else if (kind === 'comment') out += `:${v}`;
      else if (kind === 'event') out += `event: ${pick(rng, ['message', 'error', 'ping', ''])}`;
      else if (kind === 'id') out += `id: ${v}`;
      else if (kind === 'retry') out += `retry: ${pick(rng, ['100', 'x1', ''])}`;
      else if (kind === 'unknown') out += `foo: ${v}`;
      else out += 'data';
      out += eol();
    }
    out += eol();
  }
  return out + '\n';
}

function splitRandomly(rng: Rng, text: string): string[] {
  const parts: string[] = [];
  let i = 0;
  while (i < text.length) {
    const n = 1 + Math.floor(rng.next() * Math.min(12, text.length - i));
    parts.push(text.slice(i, i + n));
    i += n;
  }
  return parts;
}

const norm = (e: SseEvent) => ({ event: e.event, id: e.id, data: e.data });

test('differential fuzz: 3000 random streams, random splits, same events as eventsource-parser 3', () => {
  const rng = createRng(2024);
  let compared = 0;
  for (let round = 0; round < 3000; round++) {
    const text = randomStream(rng);
    const ref: SseEvent[] = [];
    const refParser = createParser({ onEvent: (e) => ref.push(norm(e)) });
    refParser.feed(text);
    const ours: SseEvent[] = [];
    const p = new SseParser();
    for (const part of splitRandomly(rng, text)) p.feed(part, (e) => ours.push(norm(e)));
    assert.equal(ours, ref, `stream ${JSON.stringify(text)}`);
    compared += ref.length;
  }
  assert.ok(compared > 3000, `only ${compared} events compared`);
});

test('the reference split the same way agrees too (splits do not change either parser)', () => {
  const rng = createRng(7);
  for (let round = 0; round < 500; round++) {
    const text = randomStream(rng);
    const whole: SseEvent[] = [];
    createParser({ onEvent: (e) => whole.push(norm(e)) }).feed(text);
    const ref: SseEvent[] = [];
    const refParser = createParser({ onEvent: (e) => ref.push(norm(e)) });
    const ours: SseEvent[] = [];
    const p = new SseParser();
    for (const part of splitRandomly(rng, text)) {
      refParser.feed(part);
      p.feed(part, (e) => ours.push(norm(e)));
    }
    assert.equal(ours, whole);
    assert.equal(ref, whole);
  }
});

test('typical OpenAI stream: multi-line data joined with \\n, comment keep-alives ignored, [DONE] seen', () => {
  const p = new SseParser();
  const got: string[] = [];
  p.feed(': keep-alive\r\ndata: {"a":\r\ndata:1}\r\n\r', (e) => got.push(e.data));
  p.feed('\ndata: [DONE]\n\n', (e) => got.push(e.data));
  assert.equal(got, ['{"a":\n1}', '[DONE]']);
});

test.run();
