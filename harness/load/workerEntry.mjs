// Worker-thread entry. In the compiled dist/, probeWorker.js sits beside this file and runs as is;
// beside the TypeScript sources, tsx is registered first, so the worker runs the same way whether
// the parent was started from dist/, by bin/fluidcap.js through tsx, or by the tests.
import { existsSync } from 'node:fs';

if (existsSync(new URL('./probeWorker.js', import.meta.url))) {
  await import('./probeWorker.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./probeWorker.ts');
}
