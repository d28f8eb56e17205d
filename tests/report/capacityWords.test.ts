// The phrases the console and the report share about a run's capacity.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { passOutsideInterval } from '../../harness/report/capacityWords.ts';

test('the highest passing probe outside the interval is named with the side it lies on; within it, or without a pass, nothing is said', () => {
  const iv = { loQps: 40, hiQps: 44 };
  assert.match(passOutsideInterval(38, iv) ?? '', /^below the 95% interval: .*put the capacity higher \(near the knee a probe's sample passes or fails by chance, and draws its own bursts\)$/);
  assert.match(passOutsideInterval(45, iv) ?? '', /^above the 95% interval: .*put the capacity lower \(near the knee a probe's sample passes or fails by chance, and draws its own bursts\)$/);
  assert.is(passOutsideInterval(40, iv), null);
  assert.is(passOutsideInterval(44, iv), null);
  assert.is(passOutsideInterval(null, iv), null);
  // An open end bounds nothing on its side.
  assert.is(passOutsideInterval(50, { loQps: 40, hiQps: null }), null);
  assert.is(passOutsideInterval(1, { loQps: null, hiQps: 44 }), null);
});

test.run();
