// Client health: the verdict against the tolerance, and the CPU-wait figures that say when the
// machine (threads queued for a CPU) rather than the client's own work made the timing late.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { judgeClientHealth } from '../../harness/load/health.ts';
import { readThreadCpu, threadCpuSince } from '../../harness/load/threadCpu.ts';

const base = { eldP99Ns: [1e6], eldMaxNs: [3e6], dispatchLagS: [0.0001, 0.0002], toleranceS: 0.002 };

test('cpu wait is summed over the receiving loops and named in an invalid verdict', () => {
  const h = judgeClientHealth({
    ...base,
    recvMinusEmitNs: Array.from({ length: 100 }, (_, i) => (i < 90 ? 1e6 : 9e6)),
    loopCpu: [
      { runNs: 400e6, waitNs: 300e6, slices: 1000 },
      { runNs: 100e6, waitNs: 100e6, slices: 600 },
    ],
  });
  assert.is(h.verdict, 'invalid');
  assert.equal(h.cpuWait, { runS: 0.5, runnableWaitS: 0.4, waitPerWakeS: 0.00025 });
  assert.match(h.reason, /waited 0\.250 ms per wake-up for a CPU \(400 ms waiting, 500 ms running\)/);
});

test('cpu wait is null when any loop could not be measured; a valid verdict does not mention it', () => {
  const h = judgeClientHealth({ ...base, recvMinusEmitNs: [1e5, 2e5], loopCpu: [{ runNs: 1, waitNs: 1, slices: 1 }, null] });
  assert.is(h.cpuWait, null);
  assert.is(h.verdict, 'valid');
  assert.not.match(h.reason, /CPU/);
});

test('GC pauses: totals, and the share of the receive − emit tail whose wait overlapped a pause; p99 as a fraction of the TBT deadline', () => {
  // 100 samples received at 10 ms steps; the two slowest (9 ms) waited across a pause at 500-504 ms.
  const recvNs = Array.from({ length: 100 }, (_, i) => i * 10e6);
  const rmeNs = recvNs.map((_, i) => (i === 50 || i === 90 ? 9e6 : 1e6));
  const h = judgeClientHealth({ ...base, recvMinusEmitNs: rmeNs, recvNs, gcPausesNs: [Float64Array.from([495e6, 4e6, 700e6, 2e6])], tbtDeadlineS: 0.025 });
  assert.equal(h.gc, { pauses: 2, totalS: 0.006, maxS: 0.004, tailSamples: 2, tailInGcShare: 0.5 });
  assert.is(h.recvMinusEmit?.p99OfTbtDeadline, 0.36);
  assert.is(judgeClientHealth({ ...base, recvMinusEmitNs: rmeNs }).gc, null);
});

test('receive − emit p50/p99/max and their shares of the TBT deadline are stated, in the fields and in the reason', () => {
  const rmeNs = Array.from({ length: 100 }, (_, i) => (i < 60 ? 0.5e6 : i < 99 ? 1e6 : 5e6));
  const h = judgeClientHealth({ ...base, recvMinusEmitNs: rmeNs, tbtDeadlineS: 0.025 });
  assert.equal(h.recvMinusEmit, { p50S: 0.0005, p99S: 0.001, maxS: 0.005, samples: 100, p50OfTbtDeadline: 0.02, p99OfTbtDeadline: 0.04, maxOfTbtDeadline: 0.2 });
  assert.match(h.reason, /receive−emit p50\/p99\/max 0\.500 ms \/ 1\.000 ms \/ 5\.000 ms = 2\.0% \/ 4\.0% \/ 20\.0% of the 25\.000 ms TBT deadline/);
  // Without a deadline the figures stand alone; without emit stamps there are none.
  assert.match(judgeClientHealth({ ...base, recvMinusEmitNs: rmeNs }).reason, /p50\/p99\/max 0\.500 ms \/ 1\.000 ms \/ 5\.000 ms\)/);
  assert.not.match(judgeClientHealth({ ...base, recvMinusEmitNs: [] }).reason, /receive−emit p50/);
});

test('threadCpu: busy work on this thread shows up as its run time (Linux /proc/thread-self), however slow the machine', () => {
  const before = readThreadCpu();
  if (before === null) {
    console.log('  (skipped: /proc/thread-self/schedstat is not available here)');
    return;
  }
  // Spin until the process has used 100 ms of CPU (not of wall time: a shared machine may give this
  // thread a fraction of a core), then the thread's own figure must account for half of it at least
  // (the process figure also counts V8's background threads, which took over 10 ms of a 20 ms spin here).
  const cpuBefore = process.cpuUsage();
  const giveUpNs = process.hrtime.bigint() + 10_000_000_000n;
  while (process.cpuUsage(cpuBefore).user < 100_000 && process.hrtime.bigint() < giveUpNs) {
    // busy
  }
  const d = threadCpuSince(before, readThreadCpu())!;
  assert.ok(d.runNs >= 50e6, `ran ${d.runNs} ns`);
  // A spin the scheduler never took the core from adds no timeslice: the count may stay where it was.
  assert.ok(Number.isInteger(d.slices) && d.slices >= 0 && d.waitNs >= 0, `waited ${d.waitNs} ns in ${d.slices} slices`);
});

test.run();
