// Hand-worked fluidity-index cases (Metron Algorithm 1, SPEC §5) plus a differential check against
// the algorithm as written in Python (its source is the fixture's "generator" field).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { DEFAULT_TIE_RULE, fluidityIndex } from '../../harness/metrics/fluidity.ts';
import { floorDivide } from '../../harness/metrics/floorDivide.ts';

const same = (actual: { fluidity: number; total: number; missed: number }, total: number, missed: number) => {
  assert.is(actual.total, total, 'total');
  assert.is(actual.missed, missed, 'missed');
  assert.is(actual.fluidity, total === 0 ? 1 : (total - missed) / total, 'fluidity');
};

// Binary-exact values first (0.5, 0.25, 0.125, 1/32): no rounding anywhere.
test('smooth stream: every token on time, fluidity 1', () => {
  // First token 0.25 s into a 0.5 s budget (slack 0.25), then gaps exactly at the 1/32 s deadline.
  same(fluidityIndex([0.25, 0.03125, 0.03125, 0.03125], 0.5, 0.03125), 4, 0);
});

test('one long stall costs several misses, then deadlines reset', () => {
  // D_p 0.5, D_d 0.125. Token 0 at 0.5 (tie, on time, slack 0); gap 0.125 on time; a 0.625 s stall:
  // misses = floor((0.625 − 0 − 0.125) / 0.125) + 1 = 4 + 1 = 5; slack = 0; then two on-time gaps.
  // total = 4 on time + 5 missed = 9, fluidity 4/9.
  same(fluidityIndex([0.5, 0.125, 0.625, 0.125, 0.125], 0.5, 0.125), 9, 5);
  // Slack earned before the stall shortens it: D_p 1.0, TTFT 0.5 (slack 0.5), gap 0.125 (slack
  // 0.5), stall 1.0 > 0.125 + 0.5: misses = floor((1.0 − 0.5 − 0.125) / 0.125) + 1 = 3 + 1 = 4.
  same(fluidityIndex([0.5, 0.125, 1.0], 1.0, 0.125), 6, 4);
  // After the reset, the next gap is judged against D_d alone (no slack left from before).
  same(fluidityIndex([0.5, 0.125, 1.0, 0.125 + 2 ** -20], 1.0, 0.125), 7, 5);
});

test('burst of multi-token chunks after a delay is absorbed by slack (speculative decoding)', () => {
  // Chunks of 4 tokens every 3/32 s (gap, then 3 zero gaps) against D_d = 1/32: each chunk is
  // due in 4/32 s but takes 3/32. With 0.25 s of slack from an early first token, the late first
  // token of each chunk is absorbed: 9 deadlines, none missed.
  const T = [0.25, 0.09375, 0, 0, 0, 0.09375, 0, 0, 0];
  same(fluidityIndex(T, 0.5, 0.03125), 9, 0);
  // Without initial slack (first token exactly at D_p) the first burst misses
  // floor((3/32 − 0 − 1/32) / (1/32)) + 1 = 3 deadlines; its zeros then earn 3/32 of slack, which
  // absorbs the second burst: total 1 + 3 + 3 + 1 + 3 = 11, missed 3.
  same(fluidityIndex([0.5, ...T.slice(1)], 0.5, 0.03125), 11, 3);
});

test('a request of one token: on time is 1/1, late is all misses', () => {
  same(fluidityIndex([0.25], 0.5, 0.125), 1, 0);
  // TTFT 1.0 vs D_p 0.5: floor(0.5 / 0.125) + 1 = 5 misses, fluidity 0.
  same(fluidityIndex([1.0], 0.5, 0.125), 5, 5);
  // No tokens at all: total 0, fluidity 1 by definition.
  same(fluidityIndex([], 0.5, 0.125), 0, 0);
});

test('first token past D_p: floor((TTFT − D_p) / D_d) + 1 misses, then on time again', () => {
  // 0.8 − 0.5 = 0.30000000000000004; / 0.125 → 2.4 → 2 + 1 = 3 misses; two on-time gaps.
  same(fluidityIndex([0.8, 0.125, 0.125], 0.5, 0.125), 5, 3);
});

test('exact ties: t == D + slack is on time (binary-exact values)', () => {
  // Slack 0.25 after the first token; 0.375 == 0.125 + 0.25 exactly → on time.
  same(fluidityIndex([0.25, 0.375], 0.5, 0.125), 2, 0);
  // One ulp-ish above (2^-20 s) is late: floor(2^-20 / 0.125) + 1 = 1 miss.
  same(fluidityIndex([0.25, 0.375 + 2 ** -20], 0.5, 0.125), 2, 1);
  // First token exactly at D_p is on time.
  same(fluidityIndex([0.5], 0.5, 0.125), 1, 0);
});

test('decimal ties follow float arithmetic exactly as Metron (Python) does', () => {
  // 0.3 <= 0.3 + 0 → on time.
  same(fluidityIndex([0.3], 0.3, 0.1), 1, 0);
  // slack = 0.3 − 0.1 = 0.19999999999999998; 0.1 + slack rounds to exactly 0.3 → tie, on time.
  same(fluidityIndex([0.1, 0.3], 0.3, 0.1), 2, 0);
  // A tie in decimal arithmetic that is NOT a tie in doubles: slack = 0.3 − 0.2 =
  // 0.09999999999999998, so D + slack = 0.19999999999999998 < 0.2 → late (Python gives the same
  // 1 miss: the algorithm is defined on floats, and we reproduce it rather than "fix" it).
  same(fluidityIndex([0.2, 0.2], 0.3, 0.1), 2, 1);
});

test('misses use floor division of the exact quotient (Python //), not of the rounded one', () => {
  // 1.0 / 0.1 rounds to 10, but 0.1 is stored as 0.1000000000000000055…, so the exact quotient
  // is just under 10: Python's 1.0 // 0.1 == 9.0. TTFT 1.5 vs D_p 0.5: 9 + 1 = 10 misses.
  assert.is(floorDivide(1.0, 0.1), 9);
  assert.is(Math.floor(1.0 / 0.1), 10);
  same(fluidityIndex([1.5], 0.5, 0.1), 10, 10);
  // Integral in decimal arithmetic (0.5 = 5 × 0.1): 0.6 − 0.1 = 0.5; 0.5 // 0.1 == 4.0 → 5 misses.
  same(fluidityIndex([0.6], 0.1, 0.1), 5, 5);
  // Exactly representable quotient stays exact: 0.625 / 0.125 = 5.
  assert.is(floorDivide(0.625, 0.125), 5);
  assert.is(floorDivide(0.3, 0.1), 2);
  assert.is(floorDivide(-1, 0.3), -4);
  assert.is(floorDivide(7, 2), 3);
  assert.is(floorDivide(0, 0.1), 0);
});

test('agrees with Metron Algorithm 1 in Python on 400 seeded random timelines', () => {
  const url = new URL('./fixtures/metron-reference.json', import.meta.url);
  const { cases } = JSON.parse(readFileSync(url, 'utf8')) as {
    cases: { T: number[]; dpS: number; ddS: number; fluidity: number; total: number; missed: number }[];
  };
  assert.is(cases.length, 400);
  let withMisses = 0;
  for (const [i, c] of cases.entries()) {
    const r = fluidityIndex(c.T, c.dpS, c.ddS);
    assert.equal([r.total, r.missed, r.fluidity], [c.total, c.missed, c.fluidity], `case ${i}`);
    if (c.missed > 0) withMisses += 1;
  }
  // The fixture exercises misses, not only smooth streams.
  assert.ok(withMisses > 100, `only ${withMisses} cases with misses`);
});

// Metron §4's example (PRINTED-NUMBERS row M-S10), decode tokens only, D_d = 100 ms: system A
// sends 10 tokens 10 ms apart then one 150 ms later; system B 10 tokens 100 ms apart then one 150 ms
// later. Both miss 1 of 11 TBTs, but A's early tokens bank slack. B's first ten tokens land exactly
// on their deadlines, so the tie rule decides them: Metron's code (and fluidcap's default) counts
// them met, Algorithm 1 as printed (t < D + slack) counts each one missed.
test('the tie rule on Metron\u2019s worked example M-S10: A is fluid either way; B is 10/11 with ties met, 0 with ties missed', () => {
  const a = [...Array(10).fill(0.01), 0.15];
  const b = [...Array(10).fill(0.1), 0.15];
  for (const tie of ['met', 'missed'] as const) same(fluidityIndex(a, 0.1, 0.1, tie), 11, 0);
  same(fluidityIndex(b, 0.1, 0.1), 11, 1);
  same(fluidityIndex(b, 0.1, 0.1, 'met'), 11, 1);
  same(fluidityIndex(b, 0.1, 0.1, 'missed'), 11, 11);
  assert.is(DEFAULT_TIE_RULE, 'met', 'the default is Metron\u2019s code');
});

test('rejects a non-positive TBT deadline', () => {
  assert.throws(() => fluidityIndex([0.1], 0.5, 0), /TBT deadline/);
});

test.run();
