// A sweep directory is self-contained: its journal names run directories relative to itself, so a
// copy resumes into its own runs, never the original's; an entry that leaves it (edited, or from a
// downloaded sweep) is refused with exit 2 before anything runs. runCapacity is a stand-in here
// (as in runSweepScheduling.test.ts): these tests are about where the sweep writes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync, existsSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSweep, type SweepOutcome } from '../../harness/sweep/runSweep.ts';
import type { RunOptions, RunOutcome } from '../../harness/capacity/runCapacity.ts';
import { UserError } from '../../harness/util/errors.ts';
import { ROOT } from '../pipeline/support.ts';

function workDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweepmoved-'));
  copyFileSync(join(ROOT, 'sweeps/sim-base.yaml'), join(dir, 'base.yaml'));
  writeFileSync(join(dir, 'sweep.yaml'), 'name: moved\nrecipe: base.yaml\nmatrix:\n  maxNumSeqs: [4, 8]\ngpusPerHost: 2\n');
  return dir;
}

/** A stand-in run that records where it was asked to resume, makes its run directory and ends with `status`. */
function standIn(status: (id: string) => 'completed' | 'interrupted', calls: { id: string; resumeDir: string | undefined }[]) {
  return async (opts: RunOptions): Promise<RunOutcome> => {
    const id = opts.recipeFile.split('/').pop()!.slice(0, 3);
    calls.push({ id, resumeDir: opts.resumeDir });
    const runDir = opts.resumeDir ?? join(opts.outDir, `run-${id}`);
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify({ recipeFile: opts.recipeFile }));
    const s = status(id);
    if (s === 'completed') {
      writeFileSync(join(runDir, 'capacity.json'), JSON.stringify({ capacityQps: 4, outcome: 'converged', reason: 'ok', tolerance: 0.1, bracket: { passQps: 4, failQps: 4.4 }, slo: {}, gpuSeconds: 1, cost: null, probes: [] }));
    }
    return { runDir, status: s, reason: s, capacity: null };
  };
}

/** A sweep in `dir/a` whose c01 completed and c02 was interrupted. */
async function interruptedSweep(dir: string): Promise<SweepOutcome> {
  const first = await runSweep({ sweepFile: join(dir, 'sweep.yaml'), outDir: join(dir, 'a'), log: () => {}, runOne: standIn((id) => (id === 'c01' ? 'completed' : 'interrupted'), []) });
  assert.equal(first.counts, { completed: 1, failed: 0, interrupted: 1, notStarted: 0, invalid: 0 });
  return first;
}

const copyOf = (from: string, to: string) => {
  cpSync(from, to, { recursive: true, verbatimSymlinks: true });
  return to;
};

async function resumeRefused(sweepDir: string, pattern: RegExp): Promise<void> {
  const calls: { id: string; resumeDir: string | undefined }[] = [];
  try {
    await runSweep({ resumeDir: sweepDir, outDir: sweepDir, log: () => {}, runOne: standIn(() => 'completed', calls) });
    assert.unreachable('resume must be refused');
  } catch (err) {
    assert.instance(err, UserError, String(err));
    assert.match((err as Error).message, pattern, (err as Error).message);
  }
  assert.equal(calls, [], 'nothing ran');
}

test('a copied sweep directory resumes into its own runs; the original is left as it was', async () => {
  const dir = workDir();
  const first = await interruptedSweep(dir);
  assert.not.match(readFileSync(join(first.sweepDir, 'sweep.jsonl'), 'utf8'), new RegExp(`"(runDir|resumeDir|recipeFile)":"${first.sweepDir}`), 'paths journalled relative');
  const before = readFileSync(join(first.sweepDir, 'sweep.jsonl'), 'utf8');
  const copy = copyOf(first.sweepDir, join(dir, 'b', 'sweep'));
  const calls: { id: string; resumeDir: string | undefined }[] = [];
  const second = await runSweep({ resumeDir: copy, outDir: join(dir, 'b'), log: () => {}, runOne: standIn(() => 'completed', calls) });
  assert.is(second.status, 'completed');
  assert.equal(calls, [{ id: 'c02', resumeDir: join(copy, 'runs', 'run-c02') }]);
  assert.ok(second.rows.every((r) => r.runDir!.startsWith(`${copy}/`)), JSON.stringify(second.rows.map((r) => r.runDir)));
  assert.is(readFileSync(join(first.sweepDir, 'sweep.jsonl'), 'utf8'), before, "the original's journal is untouched");
  assert.not.ok(existsSync(join(first.sweepDir, 'runs', 'run-c02', 'capacity.json')), 'the original run was not resumed');
});

test('a journal written with absolute paths (older versions) resumes a copy into its own runs', async () => {
  const dir = workDir();
  const first = await interruptedSweep(dir);
  const journal = join(first.sweepDir, 'sweep.jsonl');
  // As older versions wrote it: every path absolute, under the sweep directory where it then stood.
  const abs = (v: string | null) => (v === null ? null : join(first.sweepDir, v));
  const lines = readFileSync(journal, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string | null>);
  writeFileSync(journal, lines.map((e) => JSON.stringify({ ...e, ...(e.type === 'run-started' ? { recipeFile: abs(e.recipeFile), resumeDir: abs(e.resumeDir) } : {}), ...(e.type === 'run-finished' ? { runDir: abs(e.runDir) } : {}) }) + '\n').join(''));
  assert.match(readFileSync(journal, 'utf8'), new RegExp(`"runDir":"${first.sweepDir}/runs/run-c01"`));
  const copy = copyOf(first.sweepDir, join(dir, 'b', 'sweep'));
  renameSync(first.sweepDir, join(dir, 'gone'));
  const calls: { id: string; resumeDir: string | undefined }[] = [];
  const second = await runSweep({ resumeDir: copy, outDir: join(dir, 'b'), log: () => {}, runOne: standIn(() => 'completed', calls) });
  assert.equal(calls, [{ id: 'c02', resumeDir: join(copy, 'runs', 'run-c02') }]);
  assert.is(second.rows[0].status, 'completed', 'c01 found finished in the copy');
  assert.is(second.rows[0].runDir, join(copy, 'runs', 'run-c01'));
});

test('a journal entry that leaves the sweep directory is refused (exit 2) naming the file, entry and value', async () => {
  const dir = workDir();
  const first = await interruptedSweep(dir);
  const journal = join(first.sweepDir, 'sweep.jsonl');
  const original = readFileSync(journal, 'utf8');
  const outside = join(dir, 'elsewhere');
  mkdirSync(outside);
  for (const value of [outside, '../../elsewhere', 'runs/../../elsewhere', join(dir, 'other', 'runs', 'run-c02')]) {
    writeFileSync(journal, original.replace('"runDir":"runs/run-c02"', `"runDir":${JSON.stringify(value)}`));
    assert.ok(readFileSync(journal, 'utf8') !== original, 'the entry was edited');
    await resumeRefused(first.sweepDir, new RegExp(`sweep\\.jsonl: run-finished of c02-\\S*: runDir: must be .*${value.replace(/[./]/g, '\\$&')}`));
  }
  assert.equal(readFileSync(join(dir, 'sweep.yaml'), 'utf8').length > 0, true);
  assert.not.ok(existsSync(join(outside, 'manifest.json')), 'nothing was written outside');
});

test('a run directory inside the sweep that is a link is refused, not followed', async () => {
  const dir = workDir();
  const first = await interruptedSweep(dir);
  const outside = join(dir, 'elsewhere');
  renameSync(join(first.sweepDir, 'runs', 'run-c02'), outside);
  symlinkSync(outside, join(first.sweepDir, 'runs', 'run-c02'));
  await resumeRefused(first.sweepDir, /runs\/run-c02: is a symbolic link inside/);
  assert.not.ok(existsSync(join(outside, 'capacity.json')));
});

test.run();
