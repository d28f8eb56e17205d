// Receiving workers start with a young generation large enough for a probe's allocation, so no
// scavenge stalls a burst of chunks (gcPauses.ts). Checked on a worker started the same way.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Worker } from 'node:worker_threads';
import { startWorkersWithYoungGeneration } from '../../harness/load/gcPauses.ts';

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
  assert.ok(startWorkersWithYoungGeneration(1));
  const before = await newSpaceOfAWorker();
  assert.ok(startWorkersWithYoungGeneration(24));
  const after = await newSpaceOfAWorker();
  assert.ok(after >= 24 * 2 ** 20, `new space ${after} bytes`);
  assert.ok(after > 4 * before, `new space ${before} → ${after} bytes`);
});

test.run();
