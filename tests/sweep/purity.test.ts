// The sweep's expansion, placement, plan and report are pure: neither they nor anything they
// import (followed through relative imports) may reach the file system, network, processes,
// SSH or Docker.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const PURE = ['expand', 'placement', 'plan', 'sweepReport'].map((f) => resolve(root, 'harness/sweep', `${f}.ts`));
const IO = /^(node:)?(fs|fs\/promises|net|http|https|http2|child_process|worker_threads|dgram|tls|readline)$|^(ssh2|node-ssh|dockerode|execa|undici|zx)(\/|$)/;
const IMPORT_RE = /(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|^import\s+['"]([^'"]+)['"]/gm;

test('pure sweep modules import no I/O, directly or through their imports', () => {
  const seen = new Set<string>();
  const stack = PURE.map((file) => ({ file, via: [file] }));
  while (stack.length > 0) {
    const { file, via } = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(IMPORT_RE)) {
      const spec = m[1] ?? m[2] ?? m[3];
      // `import type` brings no code at run time.
      if (m[0].startsWith('import type') || m[0].startsWith('export type')) continue;
      assert.not.ok(IO.test(spec), `${via.map((f) => f.slice(root.length + 1)).join(' → ')} imports ${spec}`);
      if (spec.startsWith('.')) {
        const next = resolve(dirname(file), spec);
        stack.push({ file: next, via: [...via, next] });
      }
    }
  }
  assert.ok(seen.size >= PURE.length + 3, `followed ${seen.size} files`);
});

test.run();
