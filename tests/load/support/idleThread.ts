// Worker threads for scheduling tests: one that reports its Linux thread id and then idles until
// terminated, and a check, on such a throwaway thread, whether this process may put a thread under
// SCHED_FIFO here (a capability check alone misses a cgroup that forbids real-time threads).
import { Worker } from 'node:worker_threads';
import { execa } from 'execa';

/** A worker that reports its thread id and then idles until terminated. */
export function startIdleWorker(): Promise<{ worker: Worker; tid: number }> {
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

export async function realtimeAllowed(): Promise<boolean> {
  if (process.platform !== 'linux') return false;
  const { worker, tid } = await startIdleWorker();
  try {
    return await execa('chrt', ['--fifo', '--pid', '1', String(tid)]).then(() => true, () => false);
  } finally {
    await worker.terminate();
  }
}
