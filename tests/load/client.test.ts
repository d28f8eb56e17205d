// The streaming client and decoder against a real local HTTP emitter (not the simulated engine):
// statuses for every failure mode, chunk timing, usage, token ids of exact length.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { sendOne } from '../../harness/load/sendOne.ts';
import { startEmitter } from './support/emitter.ts';

const base = { api: 'completions' as const, format: 'token-ids' as const, requestTimeoutS: 5, stallTimeoutS: 0.3 };

test('ok stream: one chunk per token, usage recorded, token-id prompt of exact length', async () => {
  const em = await startEmitter({ tokenIntervalMs: 10 });
  try {
    const r = await sendOne({ promptTokens: 37, maxTokens: 5, index: 1 }, { ...base, baseUrl: em.url, model: 'm' });
    assert.is(r.record.status, 'ok');
    assert.is(r.record.httpStatus, 200);
    assert.is(r.record.chunks.length, 5);
    assert.is(r.record.outputTokens, 5);
    assert.is(r.record.usagePromptTokens, 37);
    assert.is(r.record.usageOutputTokens, 5);
    assert.is((em.requests[0].body.prompt as number[]).length, 37);
    assert.is(em.requests[0].body.ignore_eos, true);
    assert.is(em.requests[0].body.min_tokens, 5);
    const t = r.record.chunks.map((c) => c[0]);
    // Each token is its own chunk with its own receive time; the gaps themselves are the shared
    // machine's to stretch or squeeze (a late emitter timer writes two tokens back to back).
    for (let i = 1; i < t.length; i++) assert.ok(t[i] > t[i - 1], `chunk ${i} received at ${t[i]} s, not after chunk ${i - 1} at ${t[i - 1]} s`);
    assert.ok(r.ttftS !== null && r.ttftS >= 0 && r.ttftS < 1);
    assert.is(r.record.emitNs?.length, 5);
  } finally {
    await em.close();
  }
});

test('CRLF framing, chat API and events split across TCP writes decode the same', async () => {
  const em = await startEmitter({ tokenIntervalMs: 8, lineEnd: '\r\n', fault: 'split' });
  try {
    const r = await sendOne({ promptTokens: 12, maxTokens: 4, index: 2 }, { ...base, api: 'chat', format: 'text', baseUrl: em.url + '/v1', model: 'm' });
    assert.is(r.record.status, 'ok', String(r.record.error));
    assert.is(r.record.outputTokens, 4);
    assert.is(r.record.usagePromptTokens, 12);
    const msgs = em.requests[0].body.messages as { content: string }[];
    assert.is(msgs[0].content.split(' ').length, 12);
  } finally {
    await em.close();
  }
});

test('continuous usage counts multi-token chunks; a non-streamed JSON answer becomes one chunk', async () => {
  const em = await startEmitter({ continuousUsage: true });
  try {
    const r = await sendOne({ promptTokens: 8, maxTokens: 3, index: 3 }, { ...base, baseUrl: em.url, model: 'm', continuousUsage: true });
    assert.is(r.record.status, 'ok');
    assert.equal(r.record.chunks.map((c) => c[1]), [1, 1, 1]);
    const j = await sendOne({ promptTokens: 8, maxTokens: 6, index: 4 }, { ...base, baseUrl: em.url, model: 'fault:json' });
    assert.is(j.record.status, 'ok');
    assert.is(j.record.chunks.length, 1);
    assert.is(j.record.chunks[0][1], 6);
  } finally {
    await em.close();
  }
});

test('failures are data: 429, 500, stall, malformed SSE, error event, crash mid-stream, no [DONE], refused', async () => {
  const em = await startEmitter({ tokenIntervalMs: 5 });
  try {
    const one = (model: string) => sendOne({ promptTokens: 4, maxTokens: 6, index: 5 }, { ...base, baseUrl: em.url, model });
    const r429 = await one('fault:429');
    assert.is(r429.record.status, 'error');
    assert.is(r429.record.httpStatus, 429);
    assert.match(String(r429.record.error), /rate limited/);
    const r500 = await one('fault:500');
    assert.is(r500.record.httpStatus, 500);
    assert.match(String(r500.record.error), /engine exploded/);
    const stall = await one('fault:stall');
    assert.is(stall.record.status, 'timeout');
    assert.is(stall.record.chunks.length, 2, 'keeps what was received before the stall');
    assert.match(String(stall.record.error), /stalled/);
    const bad = await one('fault:malformed');
    assert.is(bad.record.status, 'error');
    assert.match(String(bad.record.error), /malformed SSE/);
    const ev = await one('fault:error-event');
    assert.is(ev.record.status, 'error');
    assert.match(String(ev.record.error), /out of memory/);
    const crash = await one('fault:crash-mid');
    assert.is(crash.record.status, 'error');
    assert.is(crash.record.chunks.length, 2);
    const noDone = await one('fault:no-done');
    assert.is(noDone.record.status, 'ok', 'finish_reason alone ends a stream well (servers without [DONE])');
  } finally {
    await em.close();
  }
  const refused = await sendOne({ promptTokens: 4, maxTokens: 2, index: 6 }, { ...base, baseUrl: em.url, model: 'm' });
  assert.is(refused.record.status, 'error');
  assert.match(String(refused.record.error), /ECONNREFUSED/);
  assert.is(refused.record.httpStatus, null);
});

test('request timeout ends a slow stream as timeout', async () => {
  const em = await startEmitter({ tokenIntervalMs: 100 });
  try {
    const r = await sendOne({ promptTokens: 4, maxTokens: 50, index: 7 }, { ...base, baseUrl: em.url, model: 'm', requestTimeoutS: 0.35, stallTimeoutS: 5 });
    assert.is(r.record.status, 'timeout');
    assert.ok(r.record.chunks.length >= 2 && r.record.chunks.length <= 5, `${r.record.chunks.length} chunks`);
    assert.match(String(r.record.error), /request timeout/);
  } finally {
    await em.close();
  }
});

test.run();
