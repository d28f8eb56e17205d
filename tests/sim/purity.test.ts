// Import direction: the engine's pure logic (cost model, scheduler, KV blocks, request parsing,
// metrics text, faults, text) never imports I/O; only config, server, gpus and the CLI do.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';

const PURE = [
  'harness/sim/costModel.ts', 'harness/sim/scheduler.ts', 'harness/sim/kvCache.ts', 'harness/sim/request.ts',
  'harness/sim/engine.ts', 'harness/sim/faults.ts', 'harness/sim/text.ts', 'harness/sim/openaiRequest.ts',
  'harness/sim/promMetrics.ts', 'harness/sim/vllmMetrics.ts', 'harness/catalog/models.ts', 'harness/catalog/gpuProfile.ts',
];
const IO = /from ['"](node:)?(fs|net|http|https|child_process|dgram|tls|fs\/promises)['"]|from ['"](ssh2|node-ssh|dockerode|execa|zx|undici)['"]|from ['"][^'"]*(server|config|gpus|preciseTimer)\.ts['"]/;

test('pure sim modules import no I/O (only types from I/O modules)', () => {
  for (const file of PURE) {
    const src = readFileSync(file, 'utf8');
    for (const line of src.split('\n').filter((l) => /^import /.test(l))) {
      if (/^import type /.test(line)) continue;
      assert.not.ok(IO.test(line), `${file}: ${line}`);
    }
  }
});

test.run();
