// The knee warm-up's end: a backlog that keeps growing never counts as stationary (with or without
// noise), a flat one ends at the rule's minimum, one still filling from empty or with no request
// ending does not end, and the cut a watch makes keeps the recipe's measured count.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KneeWarmupWatch, kneeWarmupRecord, stationaryAt, stationaryRule, type BacklogSample, type KneeWarmupPlan } from '../../harness/load/kneeWarmup.ts';
import { warmupRequestsOf } from '../../harness/capacity/runPlan.ts';
import { createRng, standardNormal } from '../../harness/util/rng.ts';

const rule = stationaryRule();
const STEP_S = 0.02;

/** The first instant at which stationaryAt says yes, feeding it one sample every STEP_S up to maxS. */
function firstEnd(backlogAt: (tS: number, i: number) => number, maxS = 10): number | null {
  const samples: BacklogSample[] = [];
  for (let i = 0; i * STEP_S < maxS; i++) {
    const tS = i * STEP_S;
    samples.push({ tS, backlog: backlogAt(tS, i) });
    if (stationaryAt(samples, tS, rule) !== null) return tS;
  }
  return null;
}

test('at a slow rate the rule waits until each compared third holds four request ends', () => {
  // One end every 0.5 s at a flat backlog: the thirds [2, 4) and [4, 6) are the first with four.
  const samples: BacklogSample[] = [];
  let endedAt: number | null = null;
  for (let t = 0; t <= 10 && endedAt === null; t += 0.5) {
    samples.push({ tS: t, backlog: 1 });
    endedAt = stationaryAt(samples, t, rule);
  }
  assert.is(endedAt, 6);
});

test('a growing backlog never ends the warm-up early', () => {
  assert.is(firstEnd((t) => 3 * t), null);
  // Growth that slows (a queue approaching its level only asymptotically) still grows window by window.
  assert.is(firstEnd((t) => 20 * Math.sqrt(t)), null);
  // Steps: flat inside a window, higher in the next.
  assert.is(firstEnd((t) => Math.floor(t / rule.windowS)), null);
});

test('a flat backlog ends at the minimum: the first check after three windows', () => {
  const at = firstEnd(() => 7)!;
  assert.ok(at !== null);
  assert.ok(at >= rule.minWindows * rule.windowS && at < rule.minWindows * rule.windowS + STEP_S, `ended at ${at}`);
  // A backlog that rose for 1 s and then settled ends once the rise is within the first third.
  const settled = firstEnd((t) => Math.min(30, 30 * t))!;
  assert.ok(settled !== null && settled >= 3 - rule.windowS && settled < 3 + STEP_S, `ended at ${settled}`);
});

test('noise does not end a growing backlog, and does not stop a flat one from ending', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rng = createRng(seed);
    // 12 samples a window, noise σ = 2 around a rise of 20 a second (5 a window).
    assert.is(firstEnd((t) => 20 * t + 2 * standardNormal(rng)), null, `seed ${seed}: a growing backlog ended`);
    const flat = createRng(seed);
    const at = firstEnd(() => 20 + 2 * standardNormal(flat));
    assert.ok(at !== null && at < 3, `seed ${seed}: a flat noisy backlog did not end (${at})`);
  }
});

test('when requests stop ending (a stalled engine), the warm-up never counts as stationary', () => {
  // Ends every 0.05 s for the first 0.5 s, shorter than the rule's minimum, then none.
  const samples: BacklogSample[] = [];
  for (let t = 0; t < 0.5; t += 0.05) samples.push({ tS: t, backlog: 4 });
  for (let t = 0; t < 10; t += 0.05) assert.is(stationaryAt(samples, t, rule), null, `at ${t}`);
});

const plan: KneeWarmupPlan = { maxS: 10, maxRequests: 400, measured: 100, warmupFraction: 0.1, rule };
const scheduledS = Array.from({ length: 500 }, (_, i) => i / 40);

test('a watch over requests that last 1.5 s: nothing ends before the first ends, then a stationary cut', () => {
  const watch = new KneeWarmupWatch(plan, scheduledS);
  // Each request lasts 1.5 s: the backlog fills for 1.5 s (no request ends), then holds at 60.
  let record = null;
  for (let i = 0; i < 500 && record === null; i++) {
    const endS = scheduledS[i] + 1.5;
    const scheduled = scheduledS.filter((s) => s <= endS).length;
    record = watch.observe(endS, scheduled, i + 1);
  }
  assert.ok(record, 'never ended');
  assert.is(record!.reason, 'stationary');
  assert.ok(record!.endS >= 1.5 + 2 * rule.windowS, `ended at ${record!.endS}, before two windows of ends`);
  assert.ok(record!.endS < plan.maxS);
  // The requests due by the end are the warm-up's; the recipe's count follows, its share skipped.
  assert.is(record!.requests, scheduledS.filter((s) => s <= record!.endS).length);
  assert.is(record!.planned, record!.requests + 100);
  assert.is(record!.warmupRequests, record!.requests + 10);
  assert.is(watch.observe(record!.endS + 1, 0, 0), null, 'a watch ends once');
});

test('a watch over a growing backlog ends at its bound with the cut a fixed warm-up made', () => {
  const watch = new KneeWarmupWatch(plan, scheduledS);
  let record = null;
  // One end for every two arrivals: the backlog grows by 20 a second.
  for (let i = 0; i < 1000 && record === null; i++) record = watch.observe(i / 20, Math.min(500, Math.floor(i / 20 * 40) + 1), Math.floor(i / 2) + 1);
  assert.is(record!.reason, 'max');
  assert.is(record!.endS, scheduledS[400]);
  assert.is(record!.requests, 400);
  assert.is(record!.warmupRequests, warmupRequestsOf(500, 400, 0.1));
  assert.equal(kneeWarmupRecord(plan, 'max', 400, 10), record);
});

test('a probe stopped before its warm-up ended counts it as run to the bound', () => {
  const watch = new KneeWarmupWatch(plan, scheduledS);
  assert.is(watch.observe(0.1, 4, 1), null);
  const r = watch.finish();
  assert.is(r.reason, 'max');
  assert.is(r.requests, 400);
  assert.is(r.planned, 500);
});

test.run();
