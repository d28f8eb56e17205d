// Import direction: the twin's engine clock, probe runner, profile, judge and search are pure (no
// I/O, no real clock); only rehearse.ts reads the recipe's trace file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';

const PURE = ['harness/sim/virtualClock.ts', 'harness/twin/virtualProbe.ts', 'harness/twin/virtualProfile.ts', 'harness/twin/judge.ts', 'harness/twin/twinSearch.ts', 'harness/twin/calibrate.ts', 'harness/capacity/warmStart.ts'];
const IO = /from ['"](node:)?(fs|net|http|https|child_process|worker_threads|perf_hooks|fs\/promises)['"]|from ['"][^'"]*(server|preciseTimer|runProbe|probeStep|runCapacity|traceFile|wakeAt)\.ts['"]/;

test('pure twin modules import no I/O and no real clock (types excepted)', () => {
  for (const file of PURE) {
    const src = readFileSync(file, 'utf8');
    for (const line of src.split('\n').filter((l) => /^import /.test(l))) {
      if (/^import type /.test(line)) continue;
      assert.not.ok(IO.test(line), `${file}: ${line}`);
    }
    assert.not.ok(/Date\.now|performance\.now|process\.hrtime/.test(src), `${file} reads a real clock`);
  }
});

test.run();
