// While a probe runs, every thread of the process but its receivers runs under SCHED_IDLE (niceness
// 19 where that cannot be set) and is put back afterwards (threadPriority.ts). Checked on this
// process's own threads (Linux only).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import { existsSync, readFileSync } from 'node:fs';
import { execa } from 'execa';
import { getPriority } from 'node:os';
import { currentThreadId, lowerOtherThreads, schedulingPolicy } from '../../harness/load/threadPriority.ts';

const linux = existsSync('/proc/thread-self');
// CAP_SYS_NICE (bit 23 of the effective capabilities): whether priorities can be raised back here.
const mayRaise = linux && (BigInt(`0x${/^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`) >> 23n) & 1n;

/** A worker that reports its thread id and then idles until terminated. */
function startIdleWorker(): Promise<{ worker: Worker; tid: number }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(
      `const { readlinkSync } = require('node:fs');
       require('node:worker_threads').parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
       setInterval(() => {}, 1000);`,
      { eval: true },
    );
    worker.once('error', reject);
    worker.once('message', (tid: number) => resolve({ worker, tid }));
  });
}

test('the kept threads stay, the others go to SCHED_IDLE and niceness 19, and restore() puts them back', async () => {
  if (!linux) {
    console.log('  skipped: no /proc/thread-self (not Linux)');
    return;
  }
  const kept = await startIdleWorker();
  const other = await startIdleWorker();
  try {
    const me = currentThreadId()!;
    assert.is(me, process.pid, 'the main thread id is the process id');
    const before = { kept: getPriority(kept.tid), other: getPriority(other.tid), main: getPriority(me) };
    assert.is(schedulingPolicy(other.tid), 0, 'SCHED_OTHER to begin with');
    const hasChrt = await execa('chrt', ['--version']).then(() => true, () => false);
    const lowered = await lowerOtherThreads([me, kept.tid]);
    assert.ok(lowered.lowered >= 1, `${lowered.lowered} lowered`);
    assert.is(getPriority(kept.tid), before.kept, 'the receiver is untouched');
    assert.is(getPriority(me), before.main, 'and so is the main thread');
    assert.is(schedulingPolicy(kept.tid), 0, 'the receiver keeps SCHED_OTHER');
    assert.is(getPriority(other.tid), 19, 'another thread is lowered');
    if (hasChrt) {
      assert.is(schedulingPolicy(other.tid), 5, 'and runs under SCHED_IDLE');
      assert.is(lowered.idle, lowered.lowered);
    } else console.log('  no chrt here: niceness 19 only');
    await lowered.restore();
    if (mayRaise) {
      assert.is(getPriority(other.tid), before.other, 'restored');
      assert.is(schedulingPolicy(other.tid), 0, 'restored to SCHED_OTHER');
    } else console.log('  no CAP_SYS_NICE here: the lowered threads stay low');
  } finally {
    await kept.worker.terminate();
    await other.worker.terminate();
  }
});

test.run();
