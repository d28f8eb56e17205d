// The client against a server that bends one HTTP, SSE or usage-reporting convention at a time
// (tests/support/testServer.ts): token counts per chunk, TPOT and the drift verdict are checked
// against what the server says it sent; keep-alive closes that cross a request are retried.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sendOne } from '../../harness/load/sendOne.ts';
import { StreamClient, type OutgoingRequest } from '../../harness/load/streamClient.ts';
import { decodeExchange } from '../../harness/load/decode.ts';
import { judgeTokenDrift } from '../../harness/load/health.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import type { ProbePlan } from '../../harness/load/plan.ts';
import type { RawExchange } from '../../harness/load/exchange.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { startTestServer, type Misbehaviour, type ServedRequest, type TestServerOptions } from '../support/testServer.ts';

const TOKENS = 40;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One request of TOKENS tokens to a fresh server doing `behaviour`: the client's record and the server's truth. */
async function once(behaviour: Misbehaviour, o: TestServerOptions & { chat?: boolean; continuousUsage?: boolean } = {}): Promise<{ record: TimelineRecord; served: ServedRequest }> {
  const server = await startTestServer({ tokenIntervalMs: 4, ...o, behaviour });
  try {
    const { record } = await sendOne(
      { promptTokens: 12, maxTokens: TOKENS, index: 1 },
      { baseUrl: server.url, model: 'm', api: o.chat ? 'chat' : 'completions', format: o.chat ? 'text' : 'token-ids', requestTimeoutS: 10, stallTimeoutS: 2, continuousUsage: o.continuousUsage },
    );
    assert.is(server.served.length, 1);
    return { record, served: server.served[0] };
  } finally {
    await server.close();
  }
}

/** The record is ok and holds exactly the tokens the server sent, chunk by chunk, with its emit stamps. */
function assertTrue(record: TimelineRecord, served: ServedRequest, counts: 'exact' | 'inferred' = 'exact'): void {
  assert.is(record.status, 'ok', String(record.error));
  assert.is(record.outputTokens, served.tokensSent);
  assert.equal(record.chunks.map((c) => c[1]), served.eventTokens);
  assert.equal(record.emitNs, served.emitNs);
  assert.is(record.tokenCounts, counts);
  assert.is(record.tokenCountProblem, undefined);
  const drift = judgeTokenDrift([record], 0.02);
  assert.is(drift.verdict, 'ok', drift.note);
}

for (const behaviour of ['none', 'crlf', 'comments', 'empty-data-keepalive', 'data-no-space', 'split-anywhere', 'coalesced', 'close-delimited', 'connection-close', 'mixed-case-content-type'] as const) {
  test(`framing "${behaviour}": every token counted, exact, drift ok (completions and chat)`, async () => {
    const a = await once(behaviour);
    assertTrue(a.record, a.served);
    const b = await once(behaviour, { chat: true });
    assertTrue(b.record, b.served);
  });
}

test('no [DONE]: the finish_reason ends the stream well; usage still reconciles', async () => {
  const { record, served } = await once('no-done');
  assertTrue(record, served);
});

test('content after [DONE] is ignored (40 of 40, not 41) and counted as such', async () => {
  const { record, served } = await once('content-after-done');
  assertTrue(record, served);
  assert.is(record.eventsAfterDone, 1);
});

test('two tokens in every 5th event: 40 of 40 counted, placed on the double-length chunks, TPOT from the true count, drift ok, the double gap kept', async () => {
  const { record, served } = await once('two-token-events', { tokenIntervalMs: 20 });
  assertTrue(record, served, 'inferred');
  assert.is(served.eventTokens.filter((k) => k === 2).length, 6);
  const m = computeRequestMetrics(record, { dpS: 1, tbtDeadlineS: 0.025 });
  const emit = served.emitNs.map(Number);
  const serverTpotS = (emit[emit.length - 1] - emit[0]) / 1e9 / (served.tokensSent - 1);
  // Counting 34 chunks as 34 tokens would make TPOT 18% too long; receive jitter moves it far less.
  assert.ok(m.tpotS !== null && Math.abs(m.tpotS - serverTpotS) < 0.1 * serverTpotS, `TPOT ${m.tpotS} vs the server's ${serverTpotS}`);
  // What a user saw stays: the 2-token event is one chunk, received after the double gap the server made.
  const i = served.eventTokens.indexOf(2);
  assert.ok((emit[i] - emit[i - 1]) / 1e9 >= 0.039, 'the server left a double gap before the 2-token event');
  assert.ok(record.chunks[i][0] > record.chunks[i - 1][0]);
  assert.is(judgeTokenDrift([record], 0.02).multiTokenChunks, 6);
});

test('a usage object in the first chunk (completion_tokens 0) is not a total: 40 of 40, exact, TBT gaps real', async () => {
  const { record, served } = await once('usage-first-chunk');
  assertTrue(record, served);
  const m = computeRequestMetrics(record, { dpS: 1, tbtDeadlineS: 0.025 });
  assert.ok(m.tpotS !== null && m.tpotS > 0.002, `TPOT ${m.tpotS}`);
});

test('per-chunk usage deltas (1 or 2 each, no final total): 40 of 40, each chunk exactly as sent', async () => {
  const { record, served } = await once('usage-deltas');
  assertTrue(record, served);
  assert.ok(served.eventTokens.includes(2));
  assert.is(record.usageOutputTokens, TOKENS);
});

test('continuous_usage_stats switched on: cumulative usage on every chunk gives exact counts, 2-token chunks included', async () => {
  const on = await once('continuous-usage', { continuousUsage: true });
  assert.equal((on.served.body.stream_options as Record<string, unknown>).continuous_usage_stats, true);
  assertTrue(on.record, on.served);
  assert.ok(on.served.eventTokens.includes(2));
  // Without the switch the same server sends a final total only: still right, but inferred.
  const off = await once('continuous-usage');
  assert.is((off.served.body.stream_options as Record<string, unknown>).continuous_usage_stats, undefined);
  assertTrue(off.record, off.served, 'inferred');
});

test('a final usage of 1e9 completion tokens is a drift, never an allocation: chunks stay as streamed', async () => {
  const { record, served } = await once('lying-usage');
  assert.is(record.status, 'ok');
  assert.is(record.outputTokens, served.tokensSent);
  assert.ok(record.chunks.every((c) => c[1] === 1));
  assert.match(String(record.tokenCountProblem), /1000000000 completion tokens, beyond any plausible count/);
  const drift = judgeTokenDrift([record], 0.02);
  assert.is(drift.verdict, 'drift');
  assert.is(drift.unreconciled, 1);
  const m = computeRequestMetrics(record, { dpS: 1, tbtDeadlineS: 0.025 });
  assert.is(m.outputTokens, TOKENS);
});

const out = (id: string, scheduledNs: number): OutgoingRequest => ({
  id, index: 0, scheduledNs, slotWaitNs: 0, promptTokens: 3, maxTokens: 4, path: '/v1/completions',
  body: JSON.stringify({ model: 'm', prompt: [1, 2, 3], max_tokens: 4, stream: true, stream_options: { include_usage: true } }),
});

for (const [behaviour, keepAliveHint] of [['idle-close', undefined], ['idle-close-hinted', 'timeout=5']] as const) {
  test(`${behaviour} ${keepAliveHint ?? ''}: a request whose reused connection the server closed unread is sent again at once on a fresh connection, marked retried`, async () => {
    const server = await startTestServer({ behaviour, keepAliveHint, tokenIntervalMs: 3 });
    const startNs = process.hrtime.bigint();
    const client = new StreamClient({ baseUrl: server.url, requestTimeoutS: 5, stallTimeoutS: 2, startNs });
    const send = (o: OutgoingRequest) => new Promise<RawExchange>((resolve) => client.send(o, resolve));
    const now = () => Number(process.hrtime.bigint() - startNs);
    try {
      const first = decodeExchange(await send(out('a', now())), startNs).record;
      assert.is(first.status, 'ok', String(first.error));
      assert.is(first.retried, undefined);
      await sleep(230); // past the server's 170 ms idle limit, before it closes the socket itself
      const plannedNs = now();
      const raw = await send(out('b', plannedNs));
      const second = decodeExchange(raw, startNs).record;
      assert.is(second.status, 'ok', String(second.error));
      assert.is(second.retried, true);
      assert.is(server.droppedUnread, 1, 'the server dropped the first attempt unread');
      assert.is(server.served.length, 2, 'and served the retry once');
      assert.is(server.served[1].reusedConnection, false);
      assert.is(second.outputTokens, 4);
      assert.is(second.scheduledS, plannedNs / 1e9, 'TTFT still counts from the planned time');
      assert.ok(second.sentS <= second.chunks[0][0] && second.sentS - second.scheduledS < 0.05);
    } finally {
      client.close();
      await server.close();
    }
  });
}

test('idle-close-hinted timeout=1: the agent does not reuse the connection at all, so nothing needs a retry', async () => {
  const server = await startTestServer({ behaviour: 'idle-close-hinted', keepAliveHint: 'timeout=1', tokenIntervalMs: 3 });
  const startNs = process.hrtime.bigint();
  const client = new StreamClient({ baseUrl: server.url, requestTimeoutS: 5, stallTimeoutS: 2, startNs });
  const send = (o: OutgoingRequest) => new Promise<RawExchange>((resolve) => client.send(o, resolve));
  try {
    assert.is(decodeExchange(await send(out('a', 0)), startNs).record.status, 'ok');
    await sleep(230);
    const second = decodeExchange(await send(out('b', 0)), startNs).record;
    assert.is(second.status, 'ok', String(second.error));
    assert.is(second.retried, undefined);
    assert.is(server.droppedUnread, 0);
    assert.is(server.connections, 2);
  } finally {
    client.close();
    await server.close();
  }
});

/** Two requests one after the other on one client: the server's view of each. */
async function twoInARow(behaviour: Misbehaviour, o: TestServerOptions = {}) {
  const server = await startTestServer({ behaviour, tokenIntervalMs: 2, ...o });
  const startNs = process.hrtime.bigint();
  const client = new StreamClient({ baseUrl: server.url, requestTimeoutS: 5, stallTimeoutS: 2, startNs });
  const send = (o: OutgoingRequest) => new Promise<RawExchange>((resolve) => client.send(o, resolve));
  try {
    const records = [decodeExchange(await send(out('a', 0)), startNs).record, decodeExchange(await send(out('b', 0)), startNs).record];
    return { records, served: server.served, connections: server.connections, droppedUnread: server.droppedUnread };
  } finally {
    client.close();
    await server.close();
  }
}

test('keep-alive: a well-behaved server gets the second request on the first connection', async () => {
  const r = await twoInARow('none');
  assert.equal(r.records.map((x) => x.status), ['ok', 'ok'], String(r.records.map((x) => x.error)));
  assert.equal(r.records.map((x) => x.outputTokens), [4, 4]);
  assert.is(r.connections, 1);
  assert.equal(r.served.map((x) => x.reusedConnection), [false, true]);
});

for (const behaviour of ['connection-close', 'close-delimited'] as const) {
  test(`${behaviour}: the connection is never reused, so the second request needs no retry`, async () => {
    const r = await twoInARow(behaviour);
    assert.equal(r.records.map((x) => x.status), ['ok', 'ok'], String(r.records.map((x) => x.error)));
    assert.equal(r.records.map((x) => x.outputTokens), [4, 4]);
    assert.is(r.connections, 2);
    assert.equal(r.served.map((x) => x.reusedConnection), [false, false]);
    assert.equal(r.records.map((x) => x.retried), [undefined, undefined]);
    assert.is(r.droppedUnread, 0);
  });
}

/** A throwaway self-signed certificate for 127.0.0.1 (null when openssl is not installed). */
function selfSigned(): { key: string; cert: string } | null {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'k.pem'), '-out', join(dir, 'c.pem')], { stdio: 'ignore' });
    return { key: readFileSync(join(dir, 'k.pem'), 'utf8'), cert: readFileSync(join(dir, 'c.pem'), 'utf8') };
  } catch {
    return null;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('HTTPS: events split anywhere arrive exact over TLS, the connection is reused, and an untrusted certificate is refused by default', async () => {
  const pem = selfSigned();
  if (!pem) {
    console.log('SKIP: openssl is not installed, so no certificate for the HTTPS test');
    return;
  }
  // First as shipped: a self-signed certificate is not trusted.
  const server = await startTestServer({ tls: pem, tokenIntervalMs: 2 });
  try {
    const refused = await sendOne({ promptTokens: 4, maxTokens: 4, index: 1 }, { baseUrl: server.url, model: 'm', api: 'completions', format: 'token-ids', requestTimeoutS: 5, stallTimeoutS: 2 });
    assert.is(refused.record.status, 'error');
    assert.match(String(refused.record.error), /self[- ]signed|SELF_SIGNED/i);
    assert.is(server.served.length, 0);
  } finally {
    await server.close();
  }
  // Then trusting it for this test only, to check the framing over TLS.
  const before = process.env.NODE_TLS_REJECT_UNAUTHORIZED;
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';
  try {
    const split = await once('split-anywhere', { tls: pem });
    assertTrue(split.record, split.served);
    const two = await twoInARow('none', { tls: pem });
    assert.equal(two.records.map((x) => x.status), ['ok', 'ok'], String(two.records.map((x) => x.error)));
    assert.is(two.connections, 1);
    assert.equal(two.served.map((x) => x.reusedConnection), [false, true]);
  } finally {
    if (before === undefined) delete process.env.NODE_TLS_REJECT_UNAUTHORIZED;
    else process.env.NODE_TLS_REJECT_UNAUTHORIZED = before;
  }
});

const plan = (requests: { scheduledS: number; maxTokens: number }[]): ProbePlan => ({
  seed: 1,
  rateQps: 1,
  api: 'completions',
  promptFormat: 'token-ids',
  arrivals: { process: 'poisson' } as ProbePlan['arrivals'],
  tokenDriftTolerance: 0.02,
  durationLimitS: Infinity,
  prompts: { nonce: 'test', stream: 'serverBehaviours', cache: { mode: 'off' } } as ProbePlan['prompts'],
  requests: requests.map((r, i) => ({ id: `p-${i}`, index: i, scheduledS: r.scheduledS, promptTokens: 8, maxTokens: r.maxTokens })),
});

async function probeAgainst(behaviour: Misbehaviour, p: ProbePlan, workers: number) {
  const server = await startTestServer({ behaviour, tokenIntervalMs: 3 });
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-behaviour-'));
  try {
    const result = await runProbe(p, { outDir: dir, baseUrl: server.url, model: 'm', workers, requestTimeoutS: 5, stallTimeoutS: 2, metricsUrl: false });
    const lines = readFileSync(result.timelinesFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);
    return { result, lines, server };
  } finally {
    await server.close();
    rmSync(dir, { recursive: true });
  }
}

test('probe (1 receiving worker) against idle-close: no request lost to the crossing close; retries counted in the result', async () => {
  const { result, lines, server } = await probeAgainst('idle-close', plan([0, 0.23, 0.46, 0.69].map((s) => ({ scheduledS: s, maxTokens: 3 }))), 1);
  assert.is(result.byStatus.ok, 4, JSON.stringify(lines.map((l) => l.error)));
  assert.ok(server.droppedUnread >= 1, `${server.droppedUnread} dropped`);
  assert.is(result.retried, server.droppedUnread);
  assert.is(lines.filter((l) => l.retried === true).length, server.droppedUnread);
});

test('probe summary: multi-token chunks counted; a lying usage makes the token-drift verdict drift', async () => {
  const two = await probeAgainst('two-token-events', plan([0, 0.01, 0.02].map((s) => ({ scheduledS: s, maxTokens: 20 }))), 0);
  assert.is(two.result.tokenDrift.verdict, 'ok', two.result.tokenDrift.note);
  assert.is(two.result.tokenDrift.multiTokenChunks, 3 * 3);
  assert.match(two.result.tokenDrift.note, /9 chunks carried more than one token/);
  assert.ok(two.lines.every((l) => l.outputTokens === 20));
  const lie = await probeAgainst('lying-usage', plan([0, 0.01].map((s) => ({ scheduledS: s, maxTokens: 20 }))), 0);
  assert.is(lie.result.byStatus.ok, 2);
  assert.is(lie.result.tokenDrift.verdict, 'drift');
  assert.is(lie.result.tokenDrift.unreconciled, 2);
  assert.match(lie.result.tokenDrift.note, /usage disagrees with what was streamed/);
});

test.run();
