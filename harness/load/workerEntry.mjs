// Worker-thread entry: registers tsx so the TypeScript worker runs the same way whether the
// parent was started by bin/fluidcap.js, `tsx`, or uvu with `-r tsx`.
import { register } from 'tsx/esm/api';

register();
await import('./probeWorker.ts');
