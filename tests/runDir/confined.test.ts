// A directory fluidcap writes may come from someone else (a downloaded run, a copied sweep): every
// writer goes through util/confinedFs.ts, which follows no link below the directory, lets no path
// leave it and renames whole files into place. Each case plants a link to a file outside and checks
// that the outside file is untouched.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appendFileIn, confinedPath, makeDirIn, openAppendIn, relativeInside, renameIn, writeFileIn } from '../../harness/util/confinedFs.ts';
import { UserError } from '../../harness/util/errors.ts';
import { writeReports } from '../../harness/report/write.ts';
import { Journal } from '../../harness/runDir/journal.ts';
import { TimelineWriter } from '../../harness/timeline/writer.ts';
import { runProbeStep, type ProbeStepInput } from '../../harness/capacity/probeStep.ts';
import { reclaimProbes } from '../../harness/capacity/resume.ts';
import { writeSyntheticRun } from '../report/syntheticRun.ts';
import { refused } from '../support/refused.ts';

/** A root directory and a precious file outside it. */
function setUp(): { root: string; outside: string } {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-confined-'));
  const root = join(dir, 'run');
  mkdirSync(root);
  const outside = join(dir, 'precious.txt');
  writeFileSync(outside, 'PRECIOUS\n');
  return { root, outside };
}

test('a whole-file write replaces a link at the target with a file; the link target is untouched', () => {
  const { root, outside } = setUp();
  symlinkSync(outside, join(root, 'report.md'));
  writeFileIn(root, join(root, 'report.md'), 'new\n');
  assert.is(readFileSync(outside, 'utf8'), 'PRECIOUS\n');
  assert.ok(lstatSync(join(root, 'report.md')).isFile());
  assert.is(readFileSync(join(root, 'report.md'), 'utf8'), 'new\n');
  assert.equal(readdirSync(root), ['report.md'], 'no temporary file left behind');
});

test('a link to a directory anywhere below the root is refused for writes, appends, directories and renames', () => {
  const { root, outside } = setUp();
  const elsewhere = join(outside, '..', 'elsewhere');
  mkdirSync(elsewhere);
  mkdirSync(join(root, 'probes'));
  symlinkSync(elsewhere, join(root, 'probes', '03-qps-24'));
  const link = /probes\/03-qps-24: is a symbolic link inside .*run; fluidcap does not follow links/;
  refused(() => writeFileIn(root, join(root, 'probes', '03-qps-24', 'plan.json'), '{}'), link);
  refused(() => appendFileIn(root, join(root, 'probes', '03-qps-24', 'timelines.jsonl'), '{}\n'), link);
  refused(() => makeDirIn(root, join(root, 'probes', '03-qps-24')), link);
  refused(() => makeDirIn(root, join(root, 'probes', '03-qps-24', 'deeper')), link);
  refused(() => renameIn(root, join(root, 'probes', '03-qps-24', 'x'), join(root, 'y')), link);
  refused(() => confinedPath(root, join(root, 'probes', '03-qps-24'), { includeLast: true }), link);
  assert.equal(readdirSync(elsewhere), []);
  // The run directory itself may sit behind a link (the user's own choice above the root).
  const viaLink = join(outside, '..', 'run-link');
  symlinkSync(root, viaLink);
  writeFileIn(viaLink, join(viaLink, 'manifest.json'), '{}\n');
  assert.ok(existsSync(join(root, 'manifest.json')));
});

test('an append refuses a link at the file itself; a FIFO or directory is refused too', () => {
  const { root, outside } = setUp();
  symlinkSync(outside, join(root, 'events.jsonl'));
  refused(() => appendFileIn(root, join(root, 'events.jsonl'), 'x\n'), /events\.jsonl: is a symbolic link/);
  refused(() => openAppendIn(root, join(root, 'events.jsonl')), /events\.jsonl: is a symbolic link/);
  mkdirSync(join(root, 'server.log'));
  refused(() => appendFileIn(root, join(root, 'server.log'), 'x\n'), /server\.log: is not a regular file/);
  assert.is(readFileSync(outside, 'utf8'), 'PRECIOUS\n');
  appendFileIn(root, join(root, 'new.jsonl'), 'a\n');
  appendFileIn(root, join(root, 'new.jsonl'), 'b\n');
  assert.is(readFileSync(join(root, 'new.jsonl'), 'utf8'), 'a\nb\n');
});

test('paths that leave the root are refused: ../, absolute paths from files, and a sibling with the same prefix', () => {
  const { root } = setUp();
  refused(() => writeFileIn(root, join(root, '..', 'x'), ''), /is not inside .*run, the directory fluidcap writes/);
  refused(() => writeFileIn(root, `${root}-other/x`, ''), /is not inside/);
  refused(() => makeDirIn(root, '/tmp'), /is not inside/);
  for (const rel of ['../outside/run', '/abs/run', 'runs/../../x', '', 'a/../../b']) {
    refused(() => relativeInside(root, rel, 'figure.json: runs.vllm'), /^figure\.json: runs\.vllm: must be a path inside .* relative to it, got /);
  }
  assert.is(relativeInside(root, 'runs/r1', 'x'), join(root, 'runs', 'r1'));
});

test('fluidcap report: report.md, report.html and a CSV linked to outside files are replaced, the outside files untouched', async () => {
  const { root, outside } = setUp();
  const runDir = writeSyntheticRun(join(root, 'r'));
  const targets = ['report.md', 'report.html', 'report-probes.csv'];
  for (const [i, name] of targets.entries()) {
    writeFileSync(`${outside}.${i}`, 'PRECIOUS\n');
    symlinkSync(`${outside}.${i}`, join(runDir, name));
  }
  const written = await writeReports(runDir);
  for (const name of targets) assert.ok(written.includes(name), name);
  for (const [i, name] of targets.entries()) {
    assert.is(readFileSync(`${outside}.${i}`, 'utf8'), 'PRECIOUS\n', `${name} wrote through its link`);
    assert.ok(lstatSync(join(runDir, name)).isFile(), `${name} is still a link`);
  }
});

test('fluidcap report reads no input through a link: a probe summary linked to an outside file is refused, not quoted', () => {
  const { root, outside } = setUp();
  const runDir = writeSyntheticRun(join(root, 'r'));
  const probe = readdirSync(join(runDir, 'probes')).sort()[0];
  const summary = join(runDir, 'probes', probe, 'summary.json');
  writeFileSync(outside, 'aws_secret_access_key = CANARY\n');
  rmSync(summary);
  symlinkSync(outside, summary);
  refused(() => writeReports(runDir), new RegExp(`probes/${probe}/summary\\.json: is a symbolic link inside`));
  assert.not.ok(existsSync(join(runDir, 'report.md')), 'a report was written');
});

test('events.jsonl and timelines.jsonl linked to an outside file: appends refused', () => {
  const { root, outside } = setUp();
  symlinkSync(outside, join(root, 'events.jsonl'));
  refused(() => new Journal(join(root, 'events.jsonl')).append({ type: 'run-started', runId: 'r', recipeFile: 'x', resumed: true } as never), /events\.jsonl: is a symbolic link/);
  mkdirSync(join(root, 'probe'));
  symlinkSync(outside, join(root, 'probe', 'timelines.jsonl'));
  refused(() => new TimelineWriter(join(root, 'probe', 'timelines.jsonl')), /timelines\.jsonl: is a symbolic link/);
  assert.is(readFileSync(outside, 'utf8'), 'PRECIOUS\n');
});

test('a probe step into a probe directory that is a link: refused before its plan is written', async () => {
  const { root, outside } = setUp();
  const elsewhere = join(outside, '..', 'elsewhere');
  mkdirSync(elsewhere);
  mkdirSync(join(root, 'probes'));
  symlinkSync(elsewhere, join(root, 'probes', '03-qps-24'));
  // The step refuses the directory before it reads the plan or touches the engine.
  const input = { runDir: root, index: 3, qps: 24 } as unknown as ProbeStepInput;
  try {
    await runProbeStep(input);
    assert.unreachable('the probe step wrote through a link');
  } catch (err) {
    assert.instance(err, UserError, String(err));
    assert.match((err as Error).message, /probes\/03-qps-24: is a symbolic link/);
  }
  assert.equal(readdirSync(elsewhere), []);
});

test('resume: an unfinished probe whose directory is a link is refused, not moved aside or followed', () => {
  const { root, outside } = setUp();
  const elsewhere = join(outside, '..', 'elsewhere');
  mkdirSync(elsewhere);
  mkdirSync(join(root, 'probes'));
  symlinkSync(elsewhere, join(root, 'probes', '03-qps-24'));
  const journal = new Journal(join(root, 'events.jsonl'));
  refused(() => reclaimProbes(root, [{ type: 'probe-started', index: 3, qps: 24, dir: 'probes/03-qps-24', atIso: '' }] as never, journal, () => {}), /probes\/03-qps-24: is a symbolic link/);
  assert.ok(lstatSync(join(root, 'probes', '03-qps-24')).isSymbolicLink());
  assert.equal(readdirSync(elsewhere), []);
});

test.run();
