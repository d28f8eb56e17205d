// Metrics are pure functions of timelines (STYLE habit 11): nothing in harness/metrics imports I/O,
// so any archived run can be re-analysed anywhere and the functions are safe in the probe workers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

const DIR = resolve(import.meta.dirname, '..', '..', 'harness', 'metrics');
const IO = /^(?:import|export)[^;]*?from\s+['"](node:)?(fs|fs\/promises|net|http|https|child_process|dgram|tls|ssh2|node-ssh|dockerode|undici|execa|zx)['"]/m;

test('harness/metrics imports no I/O module', () => {
  const files = readdirSync(DIR).filter((f) => f.endsWith('.ts'));
  assert.ok(files.length >= 8, `found ${files.length} files`);
  for (const f of files) {
    const text = readFileSync(join(DIR, f), 'utf8');
    assert.not.match(text, IO, `${f} imports I/O`);
    for (const m of text.matchAll(/^(?:import|export)[^;]*?from\s+['"](\.\.?\/[^'"]+)['"]/gm)) {
      // Relative imports stay inside metrics, or reach only the pure timeline types and util helpers.
      assert.ok(/^\.\/|^\.\.\/timeline\/record\.ts$|^\.\.\/util\/(duration|errors)\.ts$/.test(m[1]), `${f} imports ${m[1]}`);
    }
  }
});

test.run();
