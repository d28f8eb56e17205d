// gcPauses.ts: receiving workers start with a young generation large enough for a probe's
// allocation, so no scavenge stalls a burst of chunks (checked on a worker started the same way);
// and the collections a receiver runs before the probe are of the kind asked for.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { collectGarbageNow, sizeWorkerHeaps } from '../../harness/load/gcPauses.ts';

const NEW_SPACE = `const v8 = require('node:v8');
require('node:worker_threads').parentPort.postMessage(v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size);`;

function newSpaceOfAWorker(): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(NEW_SPACE, { eval: true });
    w.once('error', reject);
    w.once('message', (bytes: number) => {
      resolve(bytes);
      void w.terminate();
    });
  });
}

test('a worker started after the call has semi-spaces of the size asked for', async () => {
  // Other tests in this process may have set it already: start from V8's own 1 MB.
  assert.ok(sizeWorkerHeaps(1, 0));
  const before = await newSpaceOfAWorker();
  assert.ok(sizeWorkerHeaps(24, 0));
  const after = await newSpaceOfAWorker();
  assert.ok(after >= 24 * 2 ** 20, `new space ${after} bytes`);
  assert.ok(after > 4 * before, `new space ${before} → ${after} bytes`);
});

/** The kinds of the collections `run` causes, as perf_hooks reports them. */
async function collectionKinds(run: () => void): Promise<number[]> {
  const kinds: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind);
  });
  observer.observe({ entryTypes: ['gc'] });
  run();
  await new Promise((r) => setTimeout(r, 50));
  for (const e of observer.takeRecords()) kinds.push((e as unknown as { detail: { kind: number } }).detail.kind);
  observer.disconnect();
  return kinds;
}

test('a major collection is a mark-compact, a minor one only a scavenge', async () => {
  const major = await collectionKinds(() => assert.ok(collectGarbageNow('major')));
  assert.ok(major.includes(constants.NODE_PERFORMANCE_GC_MAJOR), `kinds ${major}`);
  const minor = await collectionKinds(() => assert.ok(collectGarbageNow('minor')));
  assert.ok(minor.includes(constants.NODE_PERFORMANCE_GC_MINOR), `kinds ${minor}`);
  assert.not.ok(minor.includes(constants.NODE_PERFORMANCE_GC_MAJOR), `kinds ${minor}`);
});

test.run();
