// The capacity decision logic is pure: neither it nor anything it imports (followed through
// relative imports) may reach the file system, network, processes, SSH or Docker.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PURE = ['fit', 'search', 'earlyStop', 'profilePlan', 'cost'].map((f) => resolve(root, 'harness/capacity', `${f}.ts`));
const IO = /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|worker_threads|dgram|tls|readline)$|^(ssh2|node-ssh|dockerode|execa|undici|zx)(\/|$)/;
// Value imports and re-exports only: `import type` vanishes at run time.
const IMPORT_RE = /^(?:import|export)\s+(?!type\s)[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

test('pure capacity modules import no I/O, directly or through their imports', () => {
  const seen = new Set<string>();
  const stack = PURE.map((file) => ({ file, via: [file] }));
  let checked = 0;
  while (stack.length > 0) {
    const { file, via } = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    checked++;
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      assert.not.ok(IO.test(spec), `${via.map((f) => f.slice(root.length + 1)).join(' → ')} imports ${spec}`);
      if (spec.startsWith('.')) {
        const next = resolve(dirname(file), spec);
        stack.push({ file: next, via: [...via, next] });
      }
    }
  }
  assert.ok(checked >= PURE.length + 3, `followed ${checked} files`);
});

test.run();
