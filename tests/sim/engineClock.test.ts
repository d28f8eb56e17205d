// The engine loop on an injected clock: iteration k ends at anchor + Σ modelled durations even when
// every timer fires late, so lateness never accumulates into drift.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { SimEngine, type EngineDeps, type IterationTrace } from '../../harness/sim/engine.ts';
import { newSimRequest } from '../../harness/sim/request.ts';
import { findModel } from '../../harness/catalog/models.ts';
import { loadGpuProfile } from '../../harness/catalog/gpus.ts';

test('fake clock: timers 0.3 ms late every time, schedule unchanged (no drift)', () => {
  let now = 1_000_000_000n;
  const pending: Array<{ at: bigint; fn: () => void }> = [];
  const deferred: Array<() => void> = [];
  const deps: EngineDeps = {
    nowNs: () => now,
    fireAt: (at, fn) => {
      const item = { at, fn };
      pending.push(item);
      return { cancel: () => pending.splice(pending.indexOf(item), 1) };
    },
    defer: (fn) => deferred.push(fn),
  };
  const traces: IterationTrace[] = [];
  let tokens = 0;
  const engine = new SimEngine(
    {
      model: findModel('tiny')!, gpu: loadGpuProfile('h100-sxm-80gb'), tensorParallel: 1, timeScale: 1,
      limits: { policy: 'vllm', maxNumSeqs: 256, maxNumBatchedTokens: 4096, chunkSize: 512 }, totalKvBlocks: 10_000,
    },
    deps,
    (events) => {
      tokens += events.length;
    },
    (t) => traces.push(t),
  );
  for (let i = 0; i < 8; i++) engine.submit(newSimRequest(i, 200, 100, 'length'));
  deferred.shift()!();
  const anchor = now;
  while (pending.length) {
    const { at, fn } = pending.shift()!;
    now = at + 300_000n; // always 0.3 ms late
    fn();
  }
  assert.is(tokens, 800);
  let expectedEnd = anchor;
  for (const t of traces) {
    assert.is(t.plannedStartNs, expectedEnd, `iteration ${t.index} planned from the anchor`);
    expectedEnd += t.durationNs;
    assert.is(t.actualEndNs! - expectedEnd, 300_000n, 'lateness stays 0.3 ms, never accumulates');
  }
  assert.ok(traces.length >= 100);
});

test.run();
