#!/usr/bin/env node
// Compiles harness/ into dist/ (tsconfig.build.json: `.ts` imports rewritten to `.js`) so the CLI
// starts without compiling TypeScript, copies the non-TypeScript files the code loads at run time
// (the worker entry), and writes the sources' hash last: bin/fluidcap.js runs dist/ only while
// that hash matches the sources. With --optional (the `prepare` script of `npm ci`), a missing
// TypeScript (installed without dev dependencies) or a failed compile leaves no dist/ and exits 0:
// the CLI then runs the sources through tsx.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { DIST, REPO, STAMP, sourcesHash } from '../bin/sourcesHash.js';

const optional = process.argv.includes('--optional');
const t0 = performance.now();

function giveUp(message) {
  rmSync(DIST, { recursive: true, force: true });
  console.error(`build: ${message}; ${optional ? 'fluidcap will run the TypeScript sources through tsx (slower start)' : 'no dist/ built'}`);
  process.exit(optional ? 0 : 1);
}

let tsc;
try {
  tsc = createRequire(join(REPO, 'package.json')).resolve('typescript/bin/tsc');
} catch {
  giveUp('TypeScript is not installed (dev dependencies omitted?)');
}

// Hashed before compiling: a source edited during the build makes the result count as stale.
const hash = sourcesHash();
rmSync(DIST, { recursive: true, force: true });
const r = spawnSync(process.execPath, [tsc, '-p', join(REPO, 'tsconfig.build.json')], { cwd: REPO, stdio: 'inherit' });
if (r.status !== 0) giveUp(`tsc -p tsconfig.build.json failed (exit ${r.status ?? r.signal})`);

let copied = 0;
const copyAssets = (dir) => {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const src = join(dir, e.name);
    if (e.isDirectory()) copyAssets(src);
    else if (!e.name.endsWith('.ts')) {
      const dest = join(DIST, relative(join(REPO, 'harness'), src));
      mkdirSync(dirname(dest), { recursive: true });
      copyFileSync(src, dest);
      copied++;
    }
  }
};
copyAssets(join(REPO, 'harness'));
if (!existsSync(join(DIST, 'cli', 'main.js'))) giveUp('tsc wrote no dist/cli/main.js');
writeFileSync(STAMP, hash + '\n');
console.log(`build: dist/ from sources ${hash.slice(0, 12)} (${copied} other files copied) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
