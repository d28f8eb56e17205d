// bin/fluidcap.js runs the compiled dist/ only when it was built from exactly the sources on disk:
// checked on a scratch copy of the entry point whose dist/ and sources print which one ran, and on
// the content hash itself (an edit that keeps size and file time still counts as a change).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { distIsCurrent, sourcesHash } from '../../bin/sourcesHash.js';

const ROOT = resolve(import.meta.dirname, '..', '..');

/** A repository skeleton: bin/ copied, node_modules linked, sources and dist/ that say who ran. */
function scratchRepo(): string {
  const repo = mkdtempSync(join(tmpdir(), 'fluidcap-bin-'));
  mkdirSync(join(repo, 'bin'));
  for (const f of ['fluidcap.js', 'sourcesHash.js']) copyFileSync(join(ROOT, 'bin', f), join(repo, 'bin', f));
  writeFileSync(join(repo, 'package.json'), '{"type":"module"}\n');
  symlinkSync(join(ROOT, 'node_modules'), join(repo, 'node_modules'));
  mkdirSync(join(repo, 'harness', 'cli'), { recursive: true });
  writeFileSync(join(repo, 'harness', 'cli', 'main.ts'), "const from: string = 'sources';\nconsole.log(from);\n");
  writeFileSync(join(repo, 'tsconfig.json'), '{}\n');
  writeFileSync(join(repo, 'tsconfig.build.json'), '{}\n');
  mkdirSync(join(repo, 'dist', 'cli'), { recursive: true });
  writeFileSync(join(repo, 'dist', 'cli', 'main.js'), "console.log('dist');\n");
  return repo;
}

const stamp = (repo: string) => writeFileSync(join(repo, 'dist', '.sources-sha256'), sourcesHash(repo) + '\n');
const ran = (repo: string, env: NodeJS.ProcessEnv = {}) =>
  execFileSync(process.execPath, [join(repo, 'bin', 'fluidcap.js')], { env: { ...process.env, ...env }, encoding: 'utf8' }).trim();

test('runs dist/ while its recorded hash matches the sources, the sources through tsx otherwise', () => {
  const repo = scratchRepo();
  try {
    assert.is(ran(repo), 'sources', 'no stamp: never built, run the sources');
    stamp(repo);
    assert.is(ran(repo), 'dist');
    assert.is(ran(repo, { FLUIDCAP_FROM_SOURCE: '1' }), 'sources', 'FLUIDCAP_FROM_SOURCE=1 forces the sources');
    writeFileSync(join(repo, 'harness', 'cli', 'extra.ts'), 'export {};\n');
    assert.is(ran(repo), 'sources', 'a new source file makes dist/ stale');
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
});

test('the hash follows content, not file times: a same-size edit with the old time is a change; a touch is not', () => {
  const repo = scratchRepo();
  try {
    stamp(repo);
    assert.ok(distIsCurrent(repo));
    const file = join(repo, 'harness', 'cli', 'main.ts');
    const before = statSync(file);
    const text = readFileSync(file, 'utf8');
    utimesSync(file, new Date(), new Date(Date.UTC(2030, 0, 1)));
    assert.ok(distIsCurrent(repo), 'a newer file time alone does not force the slow path');
    writeFileSync(file, text.replace('sources', 'SOURCES'));
    utimesSync(file, before.atime, before.mtime);
    assert.is(statSync(file).size, before.size);
    assert.not.ok(distIsCurrent(repo), 'same size and time, different content: stale');
    writeFileSync(file, text);
    assert.ok(distIsCurrent(repo), 'content restored: current again');
    rmSync(join(repo, 'tsconfig.build.json'));
    assert.not.ok(distIsCurrent(repo), 'the compiler settings are part of what dist/ was built from');
  } finally {
    rmSync(repo, { recursive: true, force: true });
  }
});

test.run();
