// A load agent container's entry point: the agent runs fluidcap's own sources through tsx, as the
// probe's worker threads do (load/workerEntry.mjs), so the image holds the code it was hashed from.
import { existsSync } from 'node:fs';

if (existsSync(new URL('./main.js', import.meta.url))) {
  await import('./main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('./main.ts');
}
