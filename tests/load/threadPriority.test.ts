// While a probe runs, every thread of the process but its receivers is lowered to niceness 19 and
// put back afterwards (threadPriority.ts). Checked on this process's own threads (Linux only).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import { existsSync } from 'node:fs';
import { getPriority } from 'node:os';
import { canLowerNiceTo, currentThreadId, lowerOtherThreads } from '../../harness/load/threadPriority.ts';

const linux = existsSync('/proc/thread-self');

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

test('the kept thread stays, the others go to 19, and restore() puts back what it may', async () => {
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
    const lowered = lowerOtherThreads([kept.tid]);
    assert.ok(lowered.lowered >= 1, `${lowered.lowered} lowered`);
    assert.is(getPriority(kept.tid), before.kept, 'the receiver is untouched');
    assert.is(getPriority(other.tid), 19, 'another thread is lowered');
    lowered.restore();
    if (canLowerNiceTo(before.main)) {
      // The kernel allows it here (CAP_SYS_NICE or RLIMIT_NICE): everything is back where it was.
      assert.is(getPriority(other.tid), before.other);
      assert.is(getPriority(me), before.main);
    } else assert.is(getPriority(me), before.main, 'without permission to restore it, the main thread was never lowered');
  } finally {
    await kept.worker.terminate();
    await other.worker.terminate();
  }
});

test.run();
