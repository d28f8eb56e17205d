// Durations are bounded where they are parsed: nothing longer than Node's timer limit (a longer
// timer fires after 1 ms), nothing non-zero below 1 µs, no infinities, for recipes and flags alike.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { checkDurationS, parseDurationS, MAX_DURATION_S } from '../../harness/util/duration.ts';

test('ordinary durations parse to seconds', () => {
  assert.is(parseDurationS('25ms'), 0.025);
  assert.is(parseDurationS('1.5m'), 90);
  assert.is(parseDurationS('596h'), 596 * 3600);
  assert.is(parseDurationS(0), 0);
  assert.is(parseDurationS('1us'), 1e-6);
  assert.is(parseDurationS('-5s'), -5, 'the sign is left to the caller, which names its own bound');
});

test('overflowing, infinite and sub-microsecond durations are refused', () => {
  for (const v of ['1000h', '1e309s', '1e309', 1e309, -Infinity, '2147484s', MAX_DURATION_S + 1, '1e-320', 1e-320, '0.1us', NaN]) {
    assert.is(parseDurationS(v, { bareSeconds: true }), null, `${String(v)} must be refused`);
  }
  assert.equal(checkDurationS('1000h'), { problem: `must be a duration of at most ${MAX_DURATION_S}s (about 24.8 days, the longest timer Node can set)` });
  assert.equal(checkDurationS('1e-320s'), { problem: 'must be a duration of 0 or at least 1us' });
  assert.equal(checkDurationS('soon'), { problem: 'must be a duration such as 25ms, 2s or 10m' });
  assert.equal(checkDurationS(MAX_DURATION_S, { bareSeconds: true }), { s: MAX_DURATION_S });
});

test('a number without a unit is refused unless the tool wrote it; 0 needs none', () => {
  assert.equal(checkDurationS(50), { problem: 'needs a unit: 50 alone could mean 50ms or 50s (write "50ms" or "50s")', bare: 50 });
  assert.equal(checkDurationS('30'), { problem: 'needs a unit: 30 alone could mean 30ms or 30s (write "30ms" or "30s")', bare: 30 });
  assert.is(parseDurationS(50), null);
  assert.is(parseDurationS(' 2.5 '), null);
  assert.is(parseDurationS(50, { bareSeconds: true }), 50);
  assert.is(parseDurationS('2.5', { bareSeconds: true }), 2.5);
  assert.is(parseDurationS(0), 0);
  assert.is(parseDurationS('0'), 0);
});

test.run();
