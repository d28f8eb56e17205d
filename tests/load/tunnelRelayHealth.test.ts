// Client health with load sent through an SSH tunnel: the tunnel's counters over the probe, and
// the main thread's loop delay (where every relayed byte waits) counted in the client error, so a
// relay slower than the tolerance makes the probe untrusted even when the receivers kept time.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeClientHealth, tunnelRelayShare } from '../../harness/load/health.ts';

const before = { bytesFromEngine: 1_000, bytesToEngine: 200, channels: 2, openS: 0.09 };
const after = { bytesFromEngine: 501_000, bytesToEngine: 40_200, channels: 5, openS: 0.24 };

test('tunnelRelayShare: the counters differenced over the probe, with the main-thread delay', () => {
  assert.equal(tunnelRelayShare(before, after, { p99Ns: 3e6, maxNs: 7.5e6 }), {
    bytesFromEngine: 500_000,
    bytesToEngine: 40_000,
    channels: 3,
    openS: 0.15,
    mainLoopDelayP99S: 0.003,
    mainLoopDelayMaxS: 0.0075,
  });
});

// Receivers with small delays and no emit times (a real engine's case): only the tunnel share can flip trust.
const input = { eldP99Ns: [1e5], eldMaxNs: [2e5], dispatchLagS: [0.0001], recvMinusEmitNs: [], toleranceS: 0.002 };

test('judgeClientHealth: a relay delay beyond the tolerance makes an otherwise valid probe untrusted', () => {
  const without = judgeClientHealth(input);
  assert.is(without.verdict, 'valid');
  assert.is(without.tunnelRelay, undefined);
  assert.not.match(without.reason, /SSH tunnel/);

  const slow = judgeClientHealth({ ...input, tunnelRelay: tunnelRelayShare(before, after, { p99Ns: 3e6, maxNs: 7.5e6 }) });
  assert.is(slow.verdict, 'invalid');
  assert.is(slow.clientErrorS, 0.003);
  assert.is(slow.tunnelRelay?.bytesFromEngine, 500_000);
  assert.match(slow.reason, /^client error 3\.000 ms exceeds tolerance 2\.000 ms /);
  assert.match(slow.reason, /tokens relayed through the SSH tunnel: 500000 bytes, main-thread delay p99 3\.000 ms \(max 7\.500 ms\), 3 channels opened in 150\.000 ms/);
  assert.match(slow.reason, /not trusted$/);
});

test('judgeClientHealth: a relay within the tolerance is stated and leaves the verdict as it was', () => {
  const fast = judgeClientHealth({ ...input, tunnelRelay: tunnelRelayShare(after, after, { p99Ns: 1.5e6, maxNs: 1.6e6 }) });
  assert.is(fast.verdict, 'valid');
  assert.is(fast.clientErrorS, 0.0015);
  assert.match(fast.reason, /tokens relayed through the SSH tunnel: 0 bytes, main-thread delay p99 1\.500 ms \(max 1\.600 ms\)\)$/);
  assert.not.match(fast.reason, /channels opened/);
  // A larger receive − emit error stays the client error: the relay's is one term of the max.
  const rme = judgeClientHealth({ ...input, recvMinusEmitNs: [4e6, 5e6], tunnelRelay: fast.tunnelRelay });
  assert.is(rme.clientErrorS, 0.005);
});

test.run();
