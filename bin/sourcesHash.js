// One hash over everything the compiled dist/ is made from (harness/ and the TypeScript settings),
// recorded by the build and compared by bin/fluidcap.js before it runs dist/: content, not file
// times, so a checkout, copy or restore can never make an older build look current. Plain
// JavaScript, so it runs before any TypeScript tooling loads (hashing the sources takes a few ms).
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('..', import.meta.url));
export const DIST = join(REPO, 'dist');
/** Written last by the build: the hash of the sources it compiled. */
export const STAMP = join(DIST, '.sources-sha256');
const INPUTS = ['harness', 'tsconfig.json', 'tsconfig.build.json'];

/** sha256 over the relative path and content of every input file, in a fixed order. */
export function sourcesHash(repo = REPO) {
  const hash = createHash('sha256');
  const add = (rel) => {
    const abs = join(repo, rel);
    let entries;
    try {
      entries = readdirSync(abs, { withFileTypes: true });
    } catch (err) {
      // An absent input (a copy without the TypeScript settings) is part of the hash too.
      if (err.code === 'ENOENT') return void hash.update(`${rel}\0absent\0`);
      if (err.code !== 'ENOTDIR') throw err;
      hash.update(`${rel}\0`);
      hash.update(readFileSync(abs));
      hash.update('\0');
      return;
    }
    for (const e of entries.map((d) => d.name).sort()) add(join(rel, e));
  };
  for (const rel of INPUTS) add(rel);
  return hash.digest('hex');
}

/** True when dist/ was built from exactly the sources now on disk. */
export function distIsCurrent(repo = REPO) {
  let recorded;
  try {
    recorded = readFileSync(join(repo, 'dist', '.sources-sha256'), 'utf8').trim();
  } catch {
    return false;
  }
  return recorded === sourcesHash(repo);
}
