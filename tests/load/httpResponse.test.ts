// The raw-socket client's HTTP/1.1 response reader on bytes: every response below is fed whole,
// then split at every offset into two reads, then byte by byte, and must give the same status,
// headers, body, framing and reuse decision each time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { HttpResponseReader } from '../../harness/load/httpResponse.ts';

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

interface Outcome {
  state: string;
  status: number;
  headers: Record<string, string>;
  body: string;
  framing: string;
  reusable: boolean;
  extraBytes: number;
  error: string | null;
}

function read(bytes: Uint8Array, cuts: number[], atEof = false): Outcome {
  const r = new HttpResponseReader(8); // tiny, so the body buffer grows during the test
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    // Each read arrives in a buffer of its own, at an offset, as a socket's reads do.
    const buf = new Uint8Array(cut - from + 5);
    buf.set(bytes.subarray(from, cut), 3);
    r.feed(buf, 3, 3 + cut - from);
    from = cut;
  }
  if (atEof) r.eof();
  return {
    state: r.state,
    status: r.status,
    headers: Object.fromEntries(r.headers),
    body: dec(r.body.subarray(0, r.bodyLength)),
    framing: r.framing,
    reusable: r.reusable,
    extraBytes: r.extraBytes,
    error: r.error,
  };
}

/** Same outcome whole, split once at every offset, and one byte per read. */
function everySplit(text: string, atEof = false): Outcome {
  const bytes = enc(text);
  const whole = read(bytes, [], atEof);
  for (let k = 1; k < bytes.length; k++) assert.equal(read(bytes, [k], atEof), whole, `split at byte ${k}`);
  assert.equal(read(bytes, Array.from({ length: bytes.length - 1 }, (_, i) => i + 1), atEof), whole, 'one byte per read');
  return whole;
}

const sse = 'data: {"choices":[{"text":" ü1"}]}\r\n\r\n: ping\n\ndata:{"choices":[{"text":" ü2"}]}\n\ndata: [DONE]\n\n';

test('chunked SSE with chunk extensions, a UTF-8 character split across chunks, and a trailer', () => {
  const b = enc(sse);
  const cut = b.indexOf(0xc3) + 1; // inside the first "ü": the chunk boundary splits the character
  const [one, two] = [b.subarray(0, cut), b.subarray(cut)];
  const full = new Uint8Array([
    ...enc('HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\nX-Dup: a\r\nX-Dup: b\r\n\r\n'),
    ...enc(`${one.length.toString(16)};name=value\r\n`), ...one, ...enc('\r\n'),
    ...enc(`${two.length.toString(16).toUpperCase()}\r\n`), ...two,
    ...enc('\r\n0\r\nX-Trailer: t\r\n\r\n'),
  ]);
  const whole = read(full, []);
  assert.is(whole.state, 'done');
  assert.is(whole.status, 200);
  assert.is(whole.framing, 'chunked');
  assert.is(whole.body, sse);
  assert.is(whole.headers['x-dup'], 'a, b');
  assert.is(whole.headers['content-type'], 'text/event-stream');
  assert.ok(whole.reusable);
  for (let k = 1; k < full.length; k++) assert.equal(read(full, [k]), whole, `split at byte ${k}`);
  assert.equal(read(full, Array.from({ length: full.length - 1 }, (_, i) => i + 1)), whole, 'one byte per read');
});

test('chunked with bare-LF line ends and many small chunks', () => {
  const parts = ['data: a\n\n', 'data: b', '\n\n', 'data: [DONE]\n\n'];
  const o = everySplit(`HTTP/1.1 200 OK\ntransfer-encoding: chunked\n\n${parts.map((p) => `${p.length.toString(16)}\n${p}\n`).join('')}0\n\n`);
  assert.is(o.state, 'done');
  assert.is(o.body, parts.join(''));
});

test('Content-Length body: done at exactly its length; bytes past it counted and the connection not reused', () => {
  const body = '{"error":{"message":"rate limited"}}';
  const o = everySplit(`HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: ${enc(body).length}\r\n\r\n${body}`);
  assert.is(o.state, 'done');
  assert.is(o.status, 429);
  assert.is(o.body, body);
  assert.ok(o.reusable);
  const extra = read(enc(`HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokJUNK`), []);
  assert.is(extra.body, 'ok');
  assert.is(extra.extraBytes, 4);
  assert.not.ok(extra.reusable);
  const empty = everySplit('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  assert.is(empty.state, 'done');
  assert.is(empty.body, '');
});

test('close-delimited body: complete only at EOF, never reusable; a truncated chunked body is not complete at EOF', () => {
  const o = everySplit(`HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n${sse}`, true);
  assert.is(o.framing, 'close');
  assert.is(o.state, 'done');
  assert.is(o.body, sse);
  assert.not.ok(o.reusable);
  const r = new HttpResponseReader();
  const t = enc('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel');
  r.feed(t, 0, t.length);
  assert.is(r.eof(), false);
  assert.is(r.state, 'body');
  assert.is(new TextDecoder().decode(r.body.subarray(0, r.bodyLength)), 'hel');
});

test('Connection: close and HTTP/1.0 end reuse; HTTP/1.0 keep-alive and Keep-Alive hints are read', () => {
  const close = everySplit('HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 1\r\n\r\nx');
  assert.is(close.state, 'done');
  assert.not.ok(close.reusable);
  assert.not.ok(read(enc('HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx'), []).reusable);
  assert.ok(read(enc('HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx'), []).reusable);
  const r = new HttpResponseReader();
  const b = enc('HTTP/1.1 200 OK\r\nKeep-Alive: max=100, timeout=5\r\nContent-Length: 0\r\n\r\n');
  r.feed(b, 0, b.length);
  assert.is(r.keepAliveTimeoutS, 5);
  const none = new HttpResponseReader();
  const n = enc('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  none.feed(n, 0, n.length);
  assert.is(none.keepAliveTimeoutS, null);
});

test('a 100 Continue before the answer is skipped; 204 has no body', () => {
  const o = everySplit('HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc');
  assert.is(o.status, 200);
  assert.is(o.body, 'abc');
  assert.is(o.state, 'done');
  const n = everySplit('HTTP/1.1 204 No Content\r\n\r\n');
  assert.is(n.state, 'done');
  assert.is(n.framing, 'none');
});

test('garbage fails with a reason: not HTTP, a bad chunk size, a bad Content-Length, a missing CRLF after data', () => {
  const fails = (text: string, why: RegExp) => {
    const r = new HttpResponseReader();
    const b = enc(text);
    r.feed(b, 0, b.length);
    assert.is(r.state, 'failed', text);
    assert.match(String(r.error), why);
  };
  fails('SSH-2.0-OpenSSH\r\n\r\n', /not an HTTP\/1.x status line/);
  fails('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /bad chunk-size byte/);
  fails('HTTP/1.1 200 OK\r\nContent-Length: 12abc\r\n\r\n', /bad Content-Length/);
  fails('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX', /missing CRLF after chunk data/);
  fails(`HTTP/1.1 200 OK\r\nX: ${'y'.repeat(70_000)}`, /response head longer than/);
});

test.run();
