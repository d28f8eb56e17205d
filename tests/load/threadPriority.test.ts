// While a probe runs, every thread of the process but the main thread and the receivers of every
// probe running runs under SCHED_IDLE (niceness 19 where that cannot be set), and all is put back
// once the last probe ends (threadPriority.ts). Checked on this process's own threads (Linux only).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readFileSync } from 'node:fs';
import { getPriority } from 'node:os';
import { execa } from 'execa';
import { currentThreadId, prioritiseReceivers, schedulingPolicy } from '../../harness/load/threadPriority.ts';
import { realtimeAllowed, startIdleWorker } from './support/idleThread.ts';

const linux = existsSync('/proc/thread-self');
// CAP_SYS_NICE (bit 23 of the effective capabilities): whether priorities can be raised back here.
const mayRaise = linux && ((BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`) >> 23n) & 1n) === 1n;
const SCHED_OTHER = 0;
const SCHED_FIFO = 1;
const SCHED_IDLE = 5;

test('two probes side by side: neither lowers the other\'s receivers, and all is put back after the last', async () => {
  if (!linux) {
    console.log('  skipped: no /proc/thread-self (not Linux)');
    return;
  }
  const [a, b, other] = await Promise.all([startIdleWorker(), startIdleWorker(), startIdleWorker()]);
  try {
    const me = currentThreadId()!;
    assert.is(me, process.pid, 'the main thread id is the process id');
    const before = { a: getPriority(a.tid), other: getPriority(other.tid), main: getPriority(me) };
    assert.is(schedulingPolicy(other.tid), SCHED_OTHER, 'SCHED_OTHER to begin with');
    const hasChrt = await execa('chrt', ['--version']).then(() => true, () => false);

    // Probe A claims its receiver first: B's receiver, not yet claimed, is lowered with the rest.
    const probeA = await prioritiseReceivers([a.tid], { realtime: false });
    assert.ok(probeA.lowered >= 2, `${probeA.lowered} lowered`);
    assert.is(getPriority(a.tid), before.a, "A's receiver is untouched");
    assert.is(getPriority(me), before.main, 'and so is the main thread');
    assert.is(getPriority(other.tid), 19, 'another thread is lowered');
    if (hasChrt) assert.is(schedulingPolicy(other.tid), SCHED_IDLE, 'and runs under SCHED_IDLE');
    else console.log('  no chrt here: niceness 19 only');

    // Probe B then claims its receiver: it is put back (where the kernel allows it) and A's stays.
    const probeB = await prioritiseReceivers([b.tid], { realtime: false });
    if (mayRaise) assert.is(schedulingPolicy(b.tid), SCHED_OTHER, "B's receiver is put back");
    assert.is(schedulingPolicy(a.tid), SCHED_OTHER, "A's receiver stays as it was");

    // A ends: B still runs, so nothing is put back yet.
    await probeA.release();
    assert.is(getPriority(other.tid), 19, 'still lowered while B runs');
    await probeB.release();
    if (mayRaise) {
      assert.is(getPriority(other.tid), before.other, 'restored after the last probe');
      assert.is(schedulingPolicy(other.tid), SCHED_OTHER);
    } else console.log('  no CAP_SYS_NICE here: the lowered threads stay low');
  } finally {
    await Promise.all([a, b, other].map((w) => w.worker.terminate()));
  }
});

test('receivers run under SCHED_FIFO while the probe runs, where the kernel allows it, and leave it at release', async () => {
  if (!linux) return;
  const hasChrt = await execa('chrt', ['--version']).then(() => true, () => false);
  if (!hasChrt || !mayRaise || !(await realtimeAllowed())) {
    console.log('  skipped: needs chrt, CAP_SYS_NICE and real-time threads allowed');
    return;
  }
  const [r, other] = await Promise.all([startIdleWorker(), startIdleWorker()]);
  try {
    const probe = await prioritiseReceivers([r.tid]);
    assert.is(probe.realtime, 1);
    assert.is(schedulingPolicy(r.tid), SCHED_FIFO);
    assert.is(schedulingPolicy(other.tid), SCHED_IDLE, 'the other thread is lowered, not raised');
    assert.is(schedulingPolicy(process.pid), SCHED_OTHER, 'the main thread is left as it is');
    await probe.release();
    assert.is(schedulingPolicy(r.tid), SCHED_OTHER);
    assert.is(schedulingPolicy(other.tid), SCHED_OTHER);

    const plain = await prioritiseReceivers([r.tid], { realtime: false });
    assert.is(plain.realtime, 0);
    assert.is(schedulingPolicy(r.tid), SCHED_OTHER);
    await plain.release();
  } finally {
    await Promise.all([r, other].map((w) => w.worker.terminate()));
  }
});

test.run();
