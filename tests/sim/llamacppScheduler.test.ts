// llama.cpp's fixed-slot policy on plain data: requests wait for a free slot, a step carries one
// token per generating slot and then prompt tokens up to n_batch, prompts split across steps,
// nothing is ever preempted, and a slot's context ends generation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Scheduler } from '../../harness/sim/scheduler.ts';
import { KvBlockPool } from '../../harness/sim/kvCache.ts';
import { newSimRequest } from '../../harness/sim/request.ts';
import { SimEngine } from '../../harness/sim/engine.ts';
import { VirtualClock } from '../../harness/sim/virtualClock.ts';
import { resolveSimConfig } from '../../harness/sim/config.ts';
import { engineConfigOf } from '../../harness/sim/engine.ts';

const limits = (slots: number, nBatch: number, slotContextTokens = 1024) => ({ policy: 'llamacpp' as const, maxNumSeqs: slots, maxNumBatchedTokens: nBatch, chunkSize: 0, slotContextTokens });

test('a request waits for a free slot; it takes the slot the first finished request leaves', () => {
  const s = new Scheduler(limits(2, 2048), new KvBlockPool(1));
  const [a, b, c] = [newSimRequest(0, 10, 2, 'length'), newSimRequest(1, 10, 5, 'length'), newSimRequest(2, 10, 3, 'length')];
  for (const r of [a, b, c]) s.add(r);
  const first = s.next()!;
  assert.equal(first.prefills.map((p) => p.req.seq), [0, 1]);
  assert.equal(s.waiting.map((r) => r.seq), [2], 'the third request has no slot');
  s.complete(first); // a and b: first tokens
  const second = s.next()!;
  assert.equal(second.decodes.map((r) => r.seq), [0, 1]);
  assert.is(second.prefills.length, 0, 'still no free slot');
  s.complete(second); // a finishes (2 tokens)
  assert.is(a.phase, 'finished');
  const third = s.next()!;
  assert.equal(third.decodes.map((r) => r.seq), [1]);
  assert.equal(third.prefills.map((p) => [p.req.seq, p.chunkTokens]), [[2, 10]], 'c starts in the freed slot, batched with b\'s decode');
});

test('a step: one token per generating slot first, then prompt tokens up to n_batch, a long prompt split across steps', () => {
  const s = new Scheduler(limits(4, 64), new KvBlockPool(1));
  const a = newSimRequest(0, 20, 10, 'length');
  s.add(a);
  s.complete(s.next()!); // a generating
  const b = newSimRequest(1, 100, 4, 'length');
  const c = newSimRequest(2, 30, 4, 'length');
  s.add(b);
  s.add(c);
  const step1 = s.next()!;
  assert.equal(step1.decodes.map((r) => r.seq), [0]);
  assert.equal(step1.prefills.map((p) => [p.req.seq, p.chunkTokens, p.contextTokens, p.completes]), [[1, 63, 0, false]], '64 − 1 decode token');
  s.complete(step1);
  assert.is(b.generatedTokens, 0, 'no token before the whole prompt is in');
  const step2 = s.next()!;
  assert.equal(step2.prefills.map((p) => [p.req.seq, p.chunkTokens, p.contextTokens, p.completes]), [[1, 37, 63, true], [2, 26, 0, false]]);
  s.complete(step2);
  assert.is(b.generatedTokens, 1);
  const step3 = s.next()!;
  assert.equal(step3.decodes.map((r) => r.seq), [0, 1]);
  assert.equal(step3.prefills.map((p) => [p.req.seq, p.chunkTokens, p.completes]), [[2, 4, true]]);
});

test('no preemption: a KV pool of one block changes nothing (each slot owns its context)', () => {
  const s = new Scheduler(limits(3, 2048), new KvBlockPool(1));
  const reqs = [0, 1, 2, 3, 4].map((i) => newSimRequest(i, 500, 40, 'length'));
  for (const r of reqs) s.add(r);
  let steps = 0;
  for (let b = s.next(); b; b = s.next()) {
    assert.is(b.preempted.length, 0);
    assert.ok(b.decodes.length + b.prefills.length <= 3, 'never more requests in a step than slots');
    s.complete(b);
    steps++;
  }
  assert.is(s.preemptionsTotal, 0);
  assert.ok(reqs.every((r) => r.phase === 'finished' && r.generatedTokens === 40));
  assert.is(steps, 80, "two rounds of 40 steps: three slots, then the two requests that waited");
});

test("a slot's context ends generation", () => {
  const s = new Scheduler(limits(1, 2048, 120), new KvBlockPool(1));
  const r = newSimRequest(0, 100, 50, 'length');
  s.add(r);
  for (let b = s.next(); b; b = s.next()) s.complete(b);
  assert.is(r.generatedTokens, 20);
});

test('the sim resolves --scheduler llamacpp with n_batch 2048 and the slot context as --max-model-len', async () => {
  const config = resolveSimConfig({ model: 'tiny', scheduler: 'llamacpp', maxNumSeqs: 4, maxModelLen: 2048, port: 0 });
  const engine = engineConfigOf(config);
  assert.equal(engine.limits, { policy: 'llamacpp', maxNumSeqs: 4, maxNumBatchedTokens: 2048, chunkSize: 512, slotContextTokens: 2048 });
  // On the engine loop: with 4 slots, the fifth request's first token waits for a slot to free.
  const clock = new VirtualClock();
  const first = new Map<number, bigint>();
  const last = new Map<number, bigint>();
  const e = new SimEngine({ ...engine, iterationModel: { prefillBaseS: 0.01, perPromptTokenS: 1e-5, perAttentionPairS: 0, decodeBaseS: 0.005, perDecodeS: 0.001 } }, clock, (events) => {
    for (const ev of events) {
      if (ev.tokenIndex === 0) first.set(ev.req.seq, clock.nowNs());
      if (ev.finished) last.set(ev.req.seq, clock.nowNs());
    }
  });
  for (let i = 0; i < 5; i++) e.submit(newSimRequest(i, 100, 10, 'length'));
  clock.run();
  assert.is(first.size, 5);
  const firstFree = [...last.values()].reduce((m, t) => (t < m ? t : m));
  assert.ok(first.get(4)! > firstFree, `request 4's first token at ${first.get(4)} before a slot freed at ${firstFree}`);
});

test.run();
