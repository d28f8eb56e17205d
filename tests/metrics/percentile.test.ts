// Exact percentiles: nearest-rank and linear (numpy type 7), plus counting from the top.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  percentile,
  percentileAt,
  percentileFromTop,
  percentiles,
  mean,
} from '../../harness/metrics/percentile.ts';

const oneToHundred = Array.from({ length: 100 }, (_, i) => 100 - i); // unsorted on purpose

test('nearest-rank: rank = ceil(p/100 · n), always an observed value', () => {
  assert.is(percentile(oneToHundred, 99), 99);
  assert.is(percentile(oneToHundred, 50), 50);
  assert.is(percentile(oneToHundred, 100), 100);
  assert.is(percentile(oneToHundred, 0), 1);
  assert.is(percentile([15, 20, 35, 40, 50], 30), 20); // Wikipedia's worked example
  assert.is(percentile([15, 20, 35, 40, 50], 40), 20);
  assert.is(percentile([15, 20, 35, 40, 50], 50), 35);
  assert.is(percentile([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], 25), 7);
  // 99.9 · 1000 / 100 = 999.0000000000001 in doubles: still rank 999.
  const thousand = Array.from({ length: 1000 }, (_, i) => i + 1);
  assert.is(percentile(thousand, 99.9), 999);
});

test('linear: numpy default (h = (n − 1)·p/100)', () => {
  assert.is(percentile([1, 2, 3, 4], 50, 'linear'), 2.5);
  assert.is(percentile(oneToHundred, 99, 'linear'), 99.01);
  assert.is(percentile([15, 20, 35, 40, 50], 40, 'linear'), 29);
  assert.is(percentile([7], 90, 'linear'), 7);
});

test('Infinity (failed requests) does not turn into NaN', () => {
  assert.is(percentile([1, Infinity, Infinity], 90, 'linear'), Infinity);
  assert.is(percentile([1, 2, Infinity], 50, 'linear'), 2);
  assert.is(percentile([1, 2, Infinity], 75, 'linear'), Infinity);
  assert.is(percentileAt(3, (i) => (i < 1 ? 5 : Infinity), 10), 5);
});

test('from the top: the value that p% of values reach or exceed', () => {
  // 100 fluidity values, one of them bad: P99 from the top tolerates exactly one.
  const f = Array.from({ length: 100 }, (_, i) => (i === 0 ? 0.2 : 1));
  assert.is(percentileFromTop(f, 99), 1);
  const two = f.map((v, i) => (i === 1 ? 0.3 : v));
  assert.is(percentileFromTop(two, 99), 0.3);
  assert.is(percentileFromTop([0.1, 0.5, 0.9], 100), 0.1);
  assert.is(percentileFromTop(oneToHundred, 90, 'linear'), percentile(oneToHundred, 10, 'linear'));
});

test('empty input gives NaN; out-of-range p throws', () => {
  assert.ok(Number.isNaN(percentile([], 50)));
  assert.ok(Number.isNaN(mean([])));
  assert.throws(() => percentile([1], 101), /0\.\.100/);
  assert.equal(percentiles([4, 1, 3, 2], [50, 100]), { 50: 2, 100: 4 });
});

test.run();
