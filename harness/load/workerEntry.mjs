// Worker-thread entry for a probe's receiving workers (workerData.role 'receive') and its decoding
// worker ('decode'). In the compiled dist/, the .js modules sit beside this file and run as they
// are; beside the TypeScript sources, tsx is registered first, so workers run the same way whether
// the parent was started from dist/, by bin/fluidcap.js through tsx, or by the tests.
import { existsSync } from 'node:fs';
import { workerData } from 'node:worker_threads';

const name = workerData?.role === 'decode' ? 'decodeWorker' : 'probeWorker';
if (existsSync(new URL(`./${name}.js`, import.meta.url))) {
  await import(`./${name}.js`);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import(`./${name}.ts`);
}
