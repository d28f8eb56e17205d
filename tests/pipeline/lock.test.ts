// One writer per run directory (harness/runDir/lock.ts): the lock is taken with O_EXCL, a second
// taker is refused with the holder's pid, host and start, a lock whose process is gone is taken
// over with a log line, and `fluidcap run --resume` on a held directory exits 2 without writing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { acquireRunLock } from '../../harness/runDir/lock.ts';
import { RUN_FILES } from '../../harness/runDir/layout.ts';
import { FAST_RECIPE, fluidcap } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-pipeline-lock-'));
let n = 0;
const freshDir = () => {
  const d = join(work, `run-${++n}`);
  mkdirSync(d);
  return d;
};
const lockFile = (dir: string) => join(dir, RUN_FILES.lock);

/** The pid of a process that has exited (and been reaped). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('the lock names its holder; a second taker is refused with pid, host and start; release lets the next one in', () => {
  const dir = freshDir();
  const logs: string[] = [];
  const lock = acquireRunLock(dir, (l) => logs.push(l));
  const holder = JSON.parse(readFileSync(lockFile(dir), 'utf8'));
  assert.is(holder.pid, process.pid);
  assert.is(holder.host, hostname());
  assert.match(holder.startedAt, /^\d{4}-\d\d-\d\dT/);
  assert.throws(() => acquireRunLock(dir, (l) => logs.push(l)), (err: Error) => {
    assert.is(err.name, 'UserError');
    assert.ok(err.message.includes(`${dir} is in use by fluidcap pid ${process.pid} on host ${hostname()} since ${holder.startedAt}`), err.message);
    assert.ok(err.message.includes(lockFile(dir)), err.message);
    return true;
  });
  lock.release();
  assert.not.ok(existsSync(lockFile(dir)));
  lock.release(); // twice is harmless
  const again = acquireRunLock(dir, () => {});
  again.release();
  assert.equal(logs, []);
});

test('a lock left by a process that is gone from this host is taken over, with a log line', () => {
  const dir = freshDir();
  const pid = deadPid();
  writeFileSync(lockFile(dir), JSON.stringify({ pid, host: hostname(), pidStart: '1', startedAt: '2026-01-01T00:00:00.000Z' }));
  const logs: string[] = [];
  const lock = acquireRunLock(dir, (l) => logs.push(l));
  assert.is(JSON.parse(readFileSync(lockFile(dir), 'utf8')).pid, process.pid);
  assert.equal(logs, [`${dir}: removed a stale lock (pid ${pid} on ${hostname()}, started 2026-01-01T00:00:00.000Z, is gone)`]);
  lock.release();
});

test('a live pid that is another process than the holder (pid reused) is stale; a live holder is not', () => {
  const dir = freshDir();
  writeFileSync(lockFile(dir), JSON.stringify({ pid: process.pid, host: hostname(), pidStart: 'not-this-start', startedAt: 'then' }));
  const logs: string[] = [];
  acquireRunLock(dir, (l) => logs.push(l)).release();
  assert.match(logs.join('\n'), /is now another process than the one that took the lock/);
});

test('a lock of another host is never taken over; an empty lock is refused while young and taken over when old', () => {
  const dir = freshDir();
  writeFileSync(lockFile(dir), JSON.stringify({ pid: deadPid(), host: 'gpu-box-7', pidStart: null, startedAt: 'then' }));
  assert.throws(() => acquireRunLock(dir, () => {}), /in use by fluidcap pid \d+ on host gpu-box-7 since then/);

  const torn = freshDir();
  writeFileSync(lockFile(torn), '');
  assert.throws(() => acquireRunLock(torn, () => {}), /is being opened by another fluidcap/);
  const old = (statSync(lockFile(torn)).mtimeMs - 60_000) / 1000;
  utimesSync(lockFile(torn), old, old);
  const logs: string[] = [];
  acquireRunLock(torn, (l) => logs.push(l)).release();
  assert.match(logs.join('\n'), /removed a stale lock \(unreadable for \d+ s/);
});

test('fluidcap run --resume on a directory another process holds: exit 2 naming the holder, nothing written', async () => {
  const dir = freshDir();
  const recipeText = readFileSync(FAST_RECIPE, 'utf8');
  const manifest = JSON.stringify({ runId: 'fast-held', recipeFile: FAST_RECIPE, recipeSha256: createHash('sha256').update(recipeText).digest('hex'), status: 'interrupted' });
  writeFileSync(join(dir, RUN_FILES.manifest), manifest);
  const lock = acquireRunLock(dir, () => {});
  try {
    const r = await fluidcap(['run', '--resume', dir], { timeoutMs: 60_000 });
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`is in use by fluidcap pid ${process.pid} on host `));
    assert.not.match(r.stderr, /\n\s+at /);
    assert.is(readFileSync(join(dir, RUN_FILES.manifest), 'utf8'), manifest, 'the refused resume rewrote manifest.json');
    assert.not.ok(existsSync(join(dir, RUN_FILES.events)), 'the refused resume wrote events.jsonl');
  } finally {
    lock.release();
  }
});

test.after(() => rmSync(work, { recursive: true, force: true }));

test.run();
