// Client health states the engine-log relay's share of a probe: the counters' difference over the
// probe, its share of the main thread, and the time the rate bound held reading back.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeClientHealth, logRelayShare } from '../../harness/load/health.ts';

const before = { bytes: 1_000, lines: 3, busyS: 0.002, pausedS: 0, droppedBytes: 0 };
const after = { bytes: 601_000, lines: 33, busyS: 0.012, pausedS: 1.5, droppedBytes: 200_000 };

test('logRelayShare: differences over the probe, busy share of its duration', () => {
  assert.equal(logRelayShare(before, after, 4), { bytes: 600_000, lines: 30, busyS: 0.01, busyShare: 0.0025, pausedS: 1.5, droppedBytes: 200_000 });
  assert.is(logRelayShare(before, before, 0).busyShare, 0);
});

test('judgeClientHealth: the relay is stated in the reason and kept in the figures; absent without a log', () => {
  const input = { eldP99Ns: [1e5], eldMaxNs: [2e5], dispatchLagS: [0.0001], recvMinusEmitNs: [2e5, 3e5], toleranceS: 0.002 };
  const h = judgeClientHealth({ ...input, logRelay: logRelayShare(before, after, 4) });
  assert.is(h.verdict, 'valid');
  assert.is(h.logRelay?.bytes, 600_000);
  assert.match(h.reason, /engine log relayed 600000 bytes, 30 lines, 10\.000 ms of main-thread time \(0\.25%\), held back 1\.50 s by its rate bound/);
  const none = judgeClientHealth(input);
  assert.is(none.logRelay, undefined);
  assert.not.match(none.reason, /engine log/);
});

test.run();
