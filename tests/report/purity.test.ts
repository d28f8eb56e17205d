// The report's renderers and compare logic are pure: neither they nor anything they import at run
// time (type-only imports are erased) may reach the file system, network, processes, SSH or Docker.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PURE = ['buildReport', 'markdown', 'html', 'svg', 'format', 'doc', 'compareRuns', 'runData'].map((f) => resolve(root, 'harness/report', `${f}.ts`));
const IO = /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|worker_threads|dgram|tls|readline)$|^(ssh2|node-ssh|dockerode|execa|undici|zx)(\/|$)/;
// Value imports and re-exports only: `import type` / `export type` vanish at run time.
const IMPORT_RE = /^(?:import|export)\s+(?!type\s)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

test('pure report modules import no I/O, directly or through their imports', () => {
  const seen = new Set<string>();
  const stack = PURE.map((file) => ({ file, via: [file] }));
  while (stack.length > 0) {
    const { file, via } = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      assert.not.ok(IO.test(spec), `${via.map((f) => f.slice(root.length + 1)).join(' → ')} imports ${spec}`);
      if (spec.startsWith('.')) stack.push({ file: resolve(dirname(file), spec), via: [...via, resolve(dirname(file), spec)] });
    }
  }
  // The walk reached beyond the report folder (metrics' prefill curve), so it did follow imports.
  assert.ok(seen.has(resolve(root, 'harness/metrics/prefill.ts')), [...seen].join(', '));
});

test('the I/O side is where the files are read (the check can fail)', () => {
  const loader = readFileSync(resolve(root, 'harness/report/loadRun.ts'), 'utf8');
  const specs = [...loader.matchAll(IMPORT_RE)].map((m) => m[1] ?? m[2] ?? m[3]);
  assert.ok(specs.some((s) => IO.test(s)), `loadRun.ts imports: ${specs.join(', ')}`);
});

test.run();
