// The dispatcher's precise wake-up: never early, always asynchronous, cancellable in both phases.
// (How late it fires is measured by scripts/bench-dispatch.ts, not asserted here.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { wakeAt } from '../../harness/util/wakeAt.ts';

const t0 = process.hrtime.bigint();
const nowNs = () => Number(process.hrtime.bigint() - t0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

test('fires at or after the target, never before, for targets past, near and far', async () => {
  for (const aheadMs of [-1, 0, 0.05, 0.5, 1.9, 2.5, 12]) {
    const target = nowNs() + aheadMs * 1e6;
    const firedAt = await new Promise<number>((resolve) => wakeAt(target, nowNs, () => resolve(nowNs())));
    assert.ok(firedAt >= target, `${aheadMs} ms ahead: fired ${(target - firedAt) / 1e3} µs early`);
  }
});

test('always asynchronous, even for a target already past', async () => {
  let fired = false;
  wakeAt(nowNs() - 1e6, nowNs, () => (fired = true));
  assert.is(fired, false);
  await sleep(5);
  assert.is(fired, true);
});

test('cancel stops it in the coarse phase and in the fine phase', async () => {
  let coarse = 0;
  let fine = 0;
  const a = wakeAt(nowNs() + 30e6, nowNs, () => coarse++);
  // An injected clock held 1 ms before the target keeps b in its fine phase (slices between turns).
  let checks = 0;
  const b = wakeAt(10e9, () => (checks++, 10e9 - 1e6), () => fine++);
  await sleep(5);
  assert.ok(checks > 2, `fine phase ran ${checks} checks`);
  a.cancel();
  b.cancel();
  const checksAtCancel = checks;
  await sleep(40);
  assert.is(coarse, 0);
  assert.is(fine, 0);
  assert.is(checks, checksAtCancel, 'no check after cancel');
});

test('an injected clock decides: a clock that jumps past the target fires without waiting for real time', async () => {
  let fake = 0;
  const firedAt = await new Promise<number>((resolve) => {
    wakeAt(50e9, () => fake, () => resolve(fake));
    setTimeout(() => (fake = 60e9), 1);
  });
  assert.is(firedAt, 60e9);
});

test.run();
