// Child process for warmUp.test.ts (run with --allow-natives-syntax): warms the receive path, then
// prints V8's optimisation status of the reader's per-read functions before and after the first
// transfer of a fresh ArrayBuffer, as a probe's hand-off to the decoder does.
import { warmReceivePath } from '../../../harness/load/warmUp.ts';
import { HttpResponseReader } from '../../../harness/load/httpResponse.ts';

const status = new Function('f', 'return %GetOptimizationStatus(f)') as (f: unknown) => number;
// V8's OptimizationStatus bit for code compiled by TurboFan.
const TURBOFANNED = 1 << 6;
const proto = HttpResponseReader.prototype as unknown as Record<string, unknown>;
const perRead = ['feedChunked', 'append'];
const compiled = () => Object.fromEntries(perRead.map((name) => [name, (status(proto[name]) & TURBOFANNED) !== 0]));

const result = await warmReceivePath({ streams: 64, tokens: 64, prompt: { api: 'completions', model: 'tiny', format: 'token-ids', seed: 1 } });
// Concurrent compiles finish on a helper thread: give them a moment to be installed.
await new Promise((r) => setTimeout(r, 200));
const afterWarmUp = compiled();
const buffer = new ArrayBuffer(64);
structuredClone(buffer, { transfer: [buffer] });
const afterTransfer = compiled();
console.log(JSON.stringify({ result, afterWarmUp, afterTransfer }));
