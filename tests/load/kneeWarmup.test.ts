// The knee warm-up's end: a backlog that keeps growing never counts as stationary (with or without
// noise, slowly and seen through few request ends), a flat one ends at the rule's minimum, one still
// filling from empty or with no request ending does not end, and the cut a watch makes keeps the
// recipe's measured count.
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

test('at a slow rate the rule waits until each compared third holds eight request ends', () => {
  // One end every 0.5 s at a flat backlog: the thirds [4, 8) and [8, 12) are the first with eight.
  const samples: BacklogSample[] = [];
  let endedAt: number | null = null;
  for (let t = 0; t <= 20 && endedAt === null; t += 0.5) {
    samples.push({ tS: t, backlog: 1 });
    endedAt = stationaryAt(samples, t, rule);
  }
  assert.is(endedAt, 12);
});

test('a growing backlog never ends the warm-up early', () => {
  // The rule lets the later third exceed the middle one by a request (a backlog of a few moves by
  // one): a rise counts once it is more than that between thirds, 1.5 requests from the first check on.
  assert.is(firstEnd((t) => 6 * t), null);
  // Growth that slows (a queue approaching its level only asymptotically) still grows window by window.
  assert.is(firstEnd((t) => 20 * Math.sqrt(t)), null);
  // Steps: flat inside a window, higher in the next.
  assert.is(firstEnd((t) => 2 * Math.floor(t / rule.windowS)), null);
  // A rise of less than a request between the first thirds is within the tolerance.
  assert.ok(firstEnd((t) => 3 * t) !== null);
});

test('a flat backlog ends at the minimum: the first check after three windows', () => {
  const at = firstEnd(() => 7)!;
  assert.ok(at !== null);
  assert.ok(at >= rule.minWindows * rule.windowS && at < rule.minWindows * rule.windowS + STEP_S, `ended at ${at}`);
  // A backlog that rose for 1 s and then settled ends once the rise is within the first third, give
  // or take the request the tolerance allows.
  const settled = firstEnd((t) => Math.min(30, 30 * t))!;
  assert.ok(settled !== null && settled >= 2 && settled < 3 + STEP_S, `ended at ${settled}`);
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

test('a slowly rising backlog seen through few request ends is not taken for a flat one', () => {
  // Ten ends a second, the backlog rising 3 a second from 10 with noise σ = 2: in thirds of a second
  // or two the rise hides in the noise. A test of difference (the later third no more than one
  // standard error above the middle one) ends on the first look that shows no rise; the rule asks
  // the rise to be shown small, and it never is.
  const difference = { ...rule, z: -1, tolerance: 0, minTolerance: 0, minSamples: 4 };
  const endOf = (seed: number, r: typeof rule) => {
    const rng = createRng(seed);
    const samples: BacklogSample[] = [];
    for (let i = 0; i * 0.1 < 10; i++) {
      const tS = i * 0.1;
      samples.push({ tS, backlog: 10 + 3 * tS + 2 * standardNormal(rng) });
      if (stationaryAt(samples, tS, r) !== null) return tS;
    }
    return null;
  };
  let differenceEnded = 0;
  for (let seed = 1; seed <= 20; seed++) {
    assert.is(endOf(seed, rule), null, `seed ${seed}: a rising backlog ended`);
    if (endOf(seed, difference) !== null) differenceEnded += 1;
  }
  assert.ok(differenceEnded >= 10, `a test of difference ended ${differenceEnded} of 20: the case does not tell the rules apart`);
});

test('a flat backlog of a few requests ends although it moves by one', () => {
  // Ten ends a second at a backlog of 2 or 3: the tolerance of one request lets it end.
  const samples: BacklogSample[] = [];
  let endedAt: number | null = null;
  for (let i = 0; i * 0.1 < 10 && endedAt === null; i++) {
    const tS = i * 0.1;
    samples.push({ tS, backlog: 2 + (i % 2) });
    endedAt = stationaryAt(samples, tS, rule);
  }
  assert.ok(endedAt !== null && endedAt <= 3, `ended at ${endedAt}`);
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
