// The two batching policies and KV accounting, on plain data (no clock, no sockets).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Scheduler, type ScheduledBatch } from '../../harness/sim/scheduler.ts';
import { KvBlockPool, blocksFor, kvBlocksForMemory } from '../../harness/sim/kvCache.ts';
import { newSimRequest, type SimRequest } from '../../harness/sim/request.ts';

const limits = (policy: 'vllm' | 'sarathi') => ({ policy, maxNumSeqs: 256, maxNumBatchedTokens: 4096, chunkSize: 512 });

function runUntil(s: Scheduler, pred: (b: ScheduledBatch) => boolean, max = 10_000): ScheduledBatch {
  for (let i = 0; i < max; i++) {
    const b = s.next();
    if (!b) throw new Error('idle');
    if (pred(b)) return b;
    s.complete(b);
  }
  throw new Error('never');
}

test('vllm: a prefill iteration runs no decodes; the prompt is admitted whole', () => {
  const s = new Scheduler(limits('vllm'), new KvBlockPool(10_000));
  const a = newSimRequest(0, 100, 50, 'length');
  s.add(a);
  s.complete(s.next()!); // prefill a → first token
  assert.is(a.generatedTokens, 1);
  const long = newSimRequest(1, 3000, 5, 'length');
  s.add(long);
  const b = s.next()!;
  assert.is(b.prefills.length, 1);
  assert.is(b.prefills[0].chunkTokens, 3000);
  assert.is(b.decodes.length, 0, 'decodes paused while prefilling');
  s.complete(b);
  const c = s.next()!;
  assert.is(c.decodes.length, 2);
});

test('sarathi: decodes every iteration, prefill chunked to the chunk budget', () => {
  const s = new Scheduler(limits('sarathi'), new KvBlockPool(10_000));
  const a = newSimRequest(0, 100, 50, 'length');
  s.add(a);
  s.complete(s.next()!);
  const long = newSimRequest(1, 3000, 5, 'length');
  s.add(long);
  let chunks = 0;
  while (long.phase !== 'decode') {
    const b = s.next()!;
    assert.is(b.decodes.length, 1, 'the decode runs alongside each chunk');
    const tokens = b.prefills.reduce((n, p) => n + p.chunkTokens, 0) + b.decodes.length;
    assert.ok(tokens <= 512, `iteration tokens ${tokens}`);
    s.complete(b);
    chunks++;
  }
  assert.is(chunks, Math.ceil(3000 / 511));
  assert.is(long.generatedTokens, 1);
});

test('requests finish at their target length and give back every block', () => {
  for (const policy of ['vllm', 'sarathi'] as const) {
    const pool = new KvBlockPool(1000);
    const s = new Scheduler(limits(policy), pool);
    const reqs = Array.from({ length: 20 }, (_, i) => newSimRequest(i, 50 + i * 10, 10 + i, 'length'));
    reqs.forEach((r) => s.add(r));
    let produced = 0;
    for (let b = s.next(); b; b = s.next()) produced += s.complete(b).length;
    assert.is(produced, reqs.reduce((n, r) => n + r.targetOutputTokens, 0));
    assert.ok(reqs.every((r) => r.phase === 'finished' && r.generatedTokens === r.targetOutputTokens));
    assert.is(pool.freeBlocks, 1000, `${policy}: all blocks returned`);
  }
});

test('KV exhaustion preempts the latest arrival, which later recomputes and finishes', () => {
  const pool = new KvBlockPool(40); // 640 tokens
  const s = new Scheduler(limits('vllm'), pool);
  const reqs: SimRequest[] = Array.from({ length: 4 }, (_, i) => newSimRequest(i, 100, 100, 'length'));
  reqs.forEach((r) => s.add(r));
  const b = runUntil(s, (x) => x.preempted.length > 0);
  assert.is(b.preempted[0], reqs[3], 'latest arrival preempted first');
  s.complete(b);
  for (let x = s.next(); x; x = s.next()) s.complete(x);
  assert.ok(s.preemptionsTotal >= 1);
  assert.ok(reqs.every((r) => r.generatedTokens === 100));
  assert.is(reqs[3].preemptions >= 1, true);
  assert.is(pool.freeBlocks, 40);
});

test('max-num-seqs caps the running batch', () => {
  const s = new Scheduler({ ...limits('vllm'), maxNumSeqs: 3 }, new KvBlockPool(10_000));
  for (let i = 0; i < 10; i++) s.add(newSimRequest(i, 10, 100, 'length'));
  for (let i = 0; i < 20; i++) {
    const b = s.next()!;
    assert.ok(s.running.length <= 3);
    s.complete(b);
  }
});

test('KV capacity from memory: (memory × utilization − weights) / block bytes', () => {
  const blocks = kvBlocksForMemory({ memoryGiB: 80, gpuMemoryUtilization: 0.9, weightBytes: 16e9, kvBytesPerToken: 131072, tensorParallel: 1 });
  const expected = Math.floor((80 * 2 ** 30 * 0.9 - 16e9) / (16 * 131072));
  assert.is(blocks, expected);
  assert.is(blocksFor(17), 2);
});

test.run();
