// Profile plan: default lengths from the context, explicit lengths checked against it, warm-ups
// and the round-robin order of measured requests.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { planProfile, defaultPromptLengths } from '../../harness/capacity/profilePlan.ts';

test('default lengths: powers of two from 128 plus the longest prompt that fits with 1 output token', () => {
  const plan = planProfile({ repeats: 3, warmup: 2 }, { maxContextTokens: 4096 });
  assert.equal(plan.promptLengths, [128, 256, 512, 1024, 2048, 4095]);
  assert.equal(plan.problems, []);
  assert.is(plan.maxTokens, 1);
});

test('a context that is a power of two plus one ends exactly on that power', () => {
  assert.equal(defaultPromptLengths(128, 1024), [128, 256, 512, 1024]);
  assert.equal(defaultPromptLengths(100, 600), [128, 256, 512, 600]);
});

test('a context too small for the first length is a problem, not an empty profile', () => {
  const plan = planProfile({ repeats: 3, warmup: 2 }, { maxContextTokens: 100 });
  assert.equal(plan.promptLengths, []);
  assert.equal(plan.requests, []);
  assert.match(plan.problems[0], /context \(100 tokens\) leaves no room/);
});

test('explicit lengths are sorted and de-duplicated; lengths past the context are named', () => {
  const plan = planProfile({ promptLengths: [512, 128, 512, 8192, 256], repeats: 1, warmup: 0 }, { maxContextTokens: 4096 });
  assert.equal(plan.promptLengths, [128, 256, 512]);
  assert.equal(plan.problems, [
    "profile.promptLengths[3] must be <= 4095 (the model's context 4096 minus 1 output token), got 8192",
  ]);
});

test('warm-ups come first (longest first); then repeats round-robin over lengths', () => {
  const plan = planProfile({ promptLengths: [128, 256, 512], repeats: 2, warmup: 4 }, { maxContextTokens: 2048 });
  assert.equal(
    plan.requests.map((r) => [r.promptTokens, r.warmup, r.repeat]),
    [
      [512, true, null], [256, true, null], [128, true, null], [512, true, null],
      [128, false, 0], [256, false, 0], [512, false, 0],
      [128, false, 1], [256, false, 1], [512, false, 1],
    ],
  );
  assert.equal(plan.requests.map((r) => r.seq), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.ok(plan.requests.every((r) => r.maxTokens === 1));
  assert.is(plan.warmupRequests, 4);
});

test('measured requests = lengths × repeats', () => {
  const plan = planProfile({ repeats: 5, warmup: 1 }, { maxContextTokens: 8192 });
  assert.is(plan.requests.filter((r) => !r.warmup).length, plan.promptLengths.length * 5);
});

test.run();
