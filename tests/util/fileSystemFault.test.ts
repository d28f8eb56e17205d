// A results directory the operating system refuses (a read-only file system, `--out` naming a
// file) is a fault with a message, never an internal error with a stack: the disk's (exit 3) or the
// input's (exit 2), for every command that writes results: run, sweep, sweep --twin and figure.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InfraError, UserError, fileSystemFault } from '../../harness/util/errors.ts';
import { makeDirs } from '../../harness/util/makeDirs.ts';
import { acquireRunLock } from '../../harness/runDir/lock.ts';
import { FAST_RECIPE, fluidcap } from '../pipeline/support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-fsfault-'));
const aFile = join(work, 'a-file');
writeFileSync(aFile, 'not a directory\n');
copyFileSync(FAST_RECIPE, join(work, 'fast.yaml'));
const twinSweep = join(work, 'twin.yaml');
writeFileSync(twinSweep, 'name: tiny\nrecipe: fast.yaml\nmatrix:\n  scheduler: [vllm]\n');
const batchSweep = join(work, 'batch.yaml');
writeFileSync(batchSweep, 'name: tiny\nrecipe: fast.yaml\nmatrix:\n  maxNumSeqs: [8]\n');

// A read-only tmpfs needs root (as the disk-full e2e test does); elsewhere those cases are skipped.
const readOnly = join(work, 'ro');
mkdirSync(readOnly);
let mounted = false;
try {
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', readOnly], { stdio: 'ignore' });
  mounted = true;
} catch {
  console.log('  SKIP read-only results directory: cannot mount a read-only tmpfs (not root)');
}

const errno = (code: string, syscall = 'mkdir', path = '/results/x') => Object.assign(new Error(`${code}: ${syscall} '${path}'`), { code, syscall, path });

test('fileSystemFault: a read-only or full disk is the disk\'s fault, a file in the way the input\'s; others stay bugs', () => {
  for (const code of ['EROFS', 'ENOSPC', 'EDQUOT', 'EIO']) {
    const f = fileSystemFault(errno(code));
    assert.ok(f instanceof InfraError, code);
    assert.match(f!.message, new RegExp(`mkdir /results/x: ${code}`));
  }
  for (const code of ['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EISDIR']) {
    const f = fileSystemFault(errno(code));
    assert.ok(f instanceof UserError && !(f instanceof InfraError), code);
    assert.match(f!.message, /\/results\/x/);
  }
  assert.is(fileSystemFault(new TypeError('x is undefined')), null);
  assert.is(fileSystemFault(Object.assign(new Error('no path'), { code: 'EROFS' })), null);
  assert.is(fileSystemFault(errno('ECONNRESET', 'read')), null);
  assert.ok(fileSystemFault(new Error('wrapped', { cause: errno('EROFS') })) instanceof InfraError);
});

if (mounted) {
  test('makeDirs on a read-only file system reports EROFS (Node\'s recursive mkdir says ENOENT)', () => {
    try {
      makeDirs(join(readOnly, 'a', 'b'));
      assert.unreachable();
    } catch (err) {
      assert.is((err as NodeJS.ErrnoException).code, 'EROFS');
    }
  });

  test('resuming a run on a read-only file system: its lock cannot be taken, a disk fault (exit 3), not bad input', () => {
    try {
      acquireRunLock(readOnly, () => {});
      assert.unreachable();
    } catch (err) {
      assert.instance(err, InfraError);
      assert.match((err as Error).message, /open \S*\/ro\/run\.lock: EROFS/);
    }
  });
}

const noStack = (text: string) => {
  assert.not.match(text, /internal error/);
  assert.not.match(text, /^\s+at /m, `stack trace printed:\n${text}`);
};

const commands: [string, (out: string) => string[]][] = [
  ['run', (out) => ['run', FAST_RECIPE, '--out', out]],
  ['sweep', (out) => ['sweep', batchSweep, '--out', out]],
  ['sweep --twin', (out) => ['sweep', '--twin', twinSweep, '--out', out]],
  ['figure', (out) => ['figure', 'metron-fig3', '--out', out]],
];

for (const [name, args] of commands) {
  test(`${name} --out naming a file (EEXIST) or a path through one (ENOTDIR): exit 2 naming it, no stack`, async () => {
    // Both codes through run; one is enough for the others, which share makeDirs and the CLI's net.
    for (const out of name === 'run' ? [aFile, join(aFile, 'sub')] : [join(aFile, 'sub')]) {
      const r = await fluidcap(args(out), { timeoutMs: 120_000 });
      assert.is(r.code, 2, r.stderr.slice(-2000));
      assert.match(r.stderr, /a-file.*: (EEXIST|ENOTDIR): a file stands where a directory is wanted/);
      noStack(r.stderr);
    }
  });
  if (mounted) {
    test(`${name} into a read-only results directory (EROFS): exit 3, a disk fault naming the path, no stack`, async () => {
      const r = await fluidcap(args(readOnly), { timeoutMs: 120_000 });
      assert.is(r.code, 3, r.stderr.slice(-2000));
      assert.match(r.stderr, /fluidcap: infrastructure fault: the disk refused a write: (mkdir|access) \S*\/ro\S*: EROFS \(a read-only file system\)/);
      noStack(r.stderr);
    });
  }
}

if (mounted) {
  test('compare --reindex of a read-only results directory: exit 3, a disk fault naming the index, no stack', async () => {
    const r = await fluidcap(['compare', '--reindex', readOnly], { timeoutMs: 60_000 });
    assert.is(r.code, 3, r.stderr.slice(-2000));
    assert.match(r.stderr, /fluidcap: infrastructure fault: the disk refused a write: open \S*\/ro\/\.index\.jsonl\S*: EROFS/);
    noStack(r.stderr);
  });
}

test.after(() => {
  if (mounted) execFileSync('umount', ['-l', readOnly]);
  rmSync(work, { recursive: true, force: true });
});

test.run();
