// Whether this process may put one of its threads under SCHED_FIFO here: tried on a throwaway
// worker thread, since a capability check alone misses a cgroup that forbids real-time threads.
import { Worker } from 'node:worker_threads';
import { execa } from 'execa';

export async function realtimeAllowed(): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  const worker = new Worker(
    `const { readlinkSync } = require('node:fs');
     require('node:worker_threads').parentPort.postMessage(Number(readlinkSync('/proc/thread-self').split('/').pop()));
     setInterval(() => {}, 1000);`,
    { eval: true },
  );
  try {
    const tid = await new Promise<number>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    return await execa('chrt', ['--fifo', '--pid', '1', String(tid)]).then(() => true, () => false);
  } finally {
    await worker.terminate();
  }
}
