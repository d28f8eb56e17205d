// The two-step send the dispatcher uses (prepare ahead, fire at the instant) against a real local
// emitter: nothing reaches the engine before fire(), sentNs is taken at fire(), abandon() sends
// nothing and ends nothing, and a connection failure during preparation ends as data at fire().
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StreamClient, type OutgoingRequest } from '../../harness/load/streamClient.ts';
import { decodeExchange } from '../../harness/load/decode.ts';
import type { RawExchange } from '../../harness/load/exchange.ts';
import { startEmitter } from './support/emitter.ts';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const body = JSON.stringify({ model: 'm', prompt: [1, 2, 3], max_tokens: 3, stream: true });
const out = (id: string): OutgoingRequest => ({ id, index: 0, scheduledNs: 0, slotWaitNs: 0, promptTokens: 3, maxTokens: 3, path: '/v1/completions', body });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('prepared: the engine sees nothing until fire(); sentNs is the fire instant; the stream decodes ok', async () => {
  const em = await startEmitter({ tokenIntervalMs: 2 });
  const startNs = process.hrtime.bigint();
  const client = new StreamClient({ baseUrl: em.url, requestTimeoutS: 5, stallTimeoutS: 2, startNs });
  try {
    let ended: RawExchange | null = null;
    const p = client.prepare(out('a'), (raw) => (ended = raw));
    await sleep(30);
    assert.is(em.requests.length, 0, 'nothing sent before fire()');
    assert.is(client.inFlight, 0);
    const firedAtNs = Number(process.hrtime.bigint() - startNs);
    p.fire();
    p.fire(); // a second fire is a no-op
    assert.is(client.inFlight, 1);
    while (ended === null) await sleep(5);
    const raw = ended as RawExchange;
    assert.ok(raw.sentNs !== null && raw.sentNs >= firedAtNs && raw.sentNs - firedAtNs < 30e6, `sentNs ${raw.sentNs} vs fire at ${firedAtNs}`);
    assert.is(em.requests.length, 1);
    const { record } = decodeExchange(raw, startNs);
    assert.is(record.status, 'ok', String(record.error));
    assert.is(record.outputTokens, 3);
  } finally {
    client.close();
    await em.close();
  }
});

test('abandon(): nothing is sent and onEnd is never called; close() releases a prepared socket', async () => {
  const em = await startEmitter({ tokenIntervalMs: 2 });
  const client = new StreamClient({ baseUrl: em.url, requestTimeoutS: 5, stallTimeoutS: 2, startNs: process.hrtime.bigint() });
  try {
    let ends = 0;
    const a = client.prepare(out('a'), () => ends++);
    client.prepare(out('b'), () => ends++); // left prepared: close() must drop it
    await sleep(20);
    a.abandon();
    a.fire(); // fire after abandon does nothing
    await sleep(20);
    assert.is(ends, 0);
    assert.is(em.requests.length, 0);
  } finally {
    client.close();
    await em.close();
  }
});

test('a refused connection while prepared ends as an error at fire(), once, asynchronously', async () => {
  const em = await startEmitter();
  const url = em.url;
  await em.close(); // nothing listens there now
  const client = new StreamClient({ baseUrl: url, requestTimeoutS: 5, stallTimeoutS: 2, startNs: process.hrtime.bigint() });
  try {
    const ends: RawExchange[] = [];
    const p = client.prepare(out('a'), (raw) => ends.push(raw));
    await sleep(30); // the connect fails during preparation
    p.fire();
    assert.is(ends.length, 0, 'onEnd is asynchronous');
    await sleep(10);
    assert.is(ends.length, 1);
    assert.is(ends[0].endReason, 'error');
    assert.match(String(ends[0].error), /ECONNREFUSED/);
    assert.ok(ends[0].sentNs !== null);
  } finally {
    client.close();
  }
});

test('the server closes the idle keep-alive socket a prepared request holds: it is sent afresh and ends ok', async () => {
  let requests = 0;
  // Like servers that send no Keep-Alive timeout hint (so the client cannot retire the socket
  // first): the connection is dropped 40 ms after a response unless another request came.
  const server = http.createServer((req, res) => {
    requests++;
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {"choices":[{"text":"a","finish_reason":"length"}]}\n\ndata: [DONE]\n\n');
      const served = requests;
      setTimeout(() => {
        if (requests === served) req.socket.destroy();
      }, 40).unref();
    });
  });
  server.keepAliveTimeout = 0;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const startNs = process.hrtime.bigint();
  const client = new StreamClient({ baseUrl: url, requestTimeoutS: 5, stallTimeoutS: 2, startNs });
  try {
    const ends: RawExchange[] = [];
    client.send(out('first'), (raw) => ends.push(raw));
    while (ends.length < 1) await sleep(5);
    const p = client.prepare(out('second'), (raw) => ends.push(raw)); // takes the pooled socket
    await sleep(150); // the server drops it as idle meanwhile
    p.fire();
    while (ends.length < 2) await sleep(5);
    assert.is(ends[1].endReason, 'end', String(ends[1].error));
    assert.is(decodeExchange(ends[1], startNs).record.status, 'ok');
    assert.is(requests, 2);
  } finally {
    client.close();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test.run();
