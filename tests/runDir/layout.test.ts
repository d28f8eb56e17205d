// The run directory's layout: names derived from probe index and rate, a journal that cannot send
// resume outside the run, JSON-lines readers that survive a torn last line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseProbeDirName, probeDirName, probePaths, rateInName, runPaths } from '../../harness/runDir/layout.ts';
import { Journal } from '../../harness/runDir/journal.ts';
import { readJsonLines } from '../../harness/runDir/jsonFiles.ts';
import { findProbeDir } from '../../harness/runDir/read.ts';
import { reclaimProbes } from '../../harness/capacity/resume.ts';
import { UserError } from '../../harness/util/errors.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-rundir-'));
test.after(() => rmSync(work, { recursive: true, force: true }));

test('probe directory names: two-digit index, rate to 6 significant digits, parsed back', () => {
  assert.is(probeDirName(3, 12.5), '03-qps-12.5');
  assert.is(probeDirName(12, 1 / 3), '12-qps-0.333333');
  assert.equal(parseProbeDirName('03-qps-12.5'), { index: 3, qps: 12.5 });
  assert.is(parseProbeDirName('03-qps-12.5.interrupted'), null);
  assert.is(parseProbeDirName('../victim'), null);
  assert.throws(() => probeDirName(1, Number.NaN), /qps must be a rate > 0/);
  assert.throws(() => probeDirName(-1, 2), /index must be a whole number/);
  const p = probePaths('/runs/r1', 2, 4);
  assert.is(p.summary, '/runs/r1/probes/02-qps-4/summary.json');
  assert.is(p.interruptedDir, '/runs/r1/probes/02-qps-4.interrupted');
  assert.is(runPaths('/runs/r1').fit, '/runs/r1/profile/fit.json');
});

test('a rate past what a number holds (01-qps-1e999) is no rate, not 1 QPS; exponents read whole', () => {
  assert.is(rateInName('01-qps-1e999'), null);
  assert.is(parseProbeDirName('01-qps-1e999'), null);
  assert.is(rateInName('01-qps-1e999.interrupted'), null);
  assert.is(rateInName('01-qps-2.interrupted'), 2);
  assert.is(rateInName('03-qps-12.5'), 12.5);
  assert.is(rateInName('04-qps-1e-7'), 1e-7);
  assert.is(rateInName('05-qps-0'), null);
});

test('a journal line with "dir":"../victim" makes resume touch nothing outside the run', () => {
  const base = join(work, 'tampered');
  const runDir = join(base, 'run');
  const victim = join(base, 'victim');
  mkdirSync(victim, { recursive: true });
  writeFileSync(join(victim, 'precious.txt'), 'keep me');
  writeFileSync(join(victim, 'summary.json'), JSON.stringify({ qps: 999, passed: true }));
  const finished = probePaths(runDir, 1, 2);
  const unfinished = probePaths(runDir, 2, 4);
  mkdirSync(finished.dir, { recursive: true });
  mkdirSync(unfinished.dir, { recursive: true });
  writeFileSync(finished.summary, JSON.stringify({ index: 1, qps: 2, passed: true, valid: true }));
  writeFileSync(unfinished.timelines, '{"id":"02-0000"}\n');
  const events = runPaths(runDir).events;
  const lines = [
    { type: 'probe-started', index: 1, qps: 2, dir: '../victim' },
    { type: 'probe-finished', index: 1, qps: 2, dir: '../victim', passed: true, valid: true, requests: 1, durationS: 1, earlyStop: null, sloValue: 1 },
    { type: 'probe-started', index: 2, qps: 4, dir: '../../victim' },
  ];
  writeFileSync(events, lines.map((l) => JSON.stringify({ atIso: '2026-01-01T00:00:00.000Z', ...l })).join('\n') + '\n');
  const journal = new Journal(events);
  const logged: string[] = [];
  const reclaimed = reclaimProbes(runDir, journal.read(), journal, (l) => logged.push(l));

  // The finished probe's summary came from probes/01-qps-2, not from ../victim.
  assert.is(reclaimed.summaries.length, 1);
  assert.is(reclaimed.summaries[0].qps, 2);
  assert.is(reclaimed.usedIndex, 2);
  // The unfinished probe's own directory was moved aside; the victim is untouched.
  assert.ok(existsSync(unfinished.interruptedDir), readdirSync(join(runDir, 'probes')).join(', '));
  assert.not.ok(existsSync(unfinished.dir));
  assert.equal(readdirSync(victim).sort(), ['precious.txt', 'summary.json']);
  assert.is(readFileSync(join(victim, 'precious.txt'), 'utf8'), 'keep me');
  assert.not.ok(existsSync(`${victim}.interrupted`));
  const moved = readJsonLines(events).at(-1)!;
  assert.is(moved.type, 'probe-interrupted');
  assert.is(moved.movedTo, 'probes/02-qps-4.interrupted');
});

test('a journal whose probe event has no usable rate is refused with the file named', () => {
  const runDir = join(work, 'badrate');
  mkdirSync(runDir, { recursive: true });
  const events = runPaths(runDir).events;
  writeFileSync(events, JSON.stringify({ type: 'probe-started', index: 1, qps: '../x', dir: 'probes/x' }) + '\n');
  try {
    new Journal(events).read();
    assert.unreachable('read a probe event without a rate');
  } catch (err) {
    assert.instance(err, UserError);
    assert.match((err as Error).message, `${events}: probe-started event: qps must be a rate > 0 and <= 1000000, got "../x"`);
  }
});

test('a torn last line of a JSON-lines file is skipped, earlier lines kept', () => {
  const file = join(work, 'torn.jsonl');
  writeFileSync(file, '{"type":"run-started"}\n{"type":"engine-re');
  assert.equal(readJsonLines(file), [{ type: 'run-started' }]);
  assert.equal(readJsonLines(join(work, 'absent.jsonl')), []);
});

test('findProbeDir: by index and rate, else the one directory encoding the rate; never a name from a file', () => {
  const runDir = join(work, 'find');
  const p = probePaths(runDir, 5, 1.5);
  mkdirSync(p.dir, { recursive: true });
  writeFileSync(p.summary, '{}');
  assert.is(findProbeDir(runDir, { index: 5, qps: 1.5 })?.dir, p.dir);
  assert.is(findProbeDir(runDir, { qps: 1.5 })?.dir, p.dir);
  assert.is(findProbeDir(runDir, { qps: 3 }), null);
});

test.run();
