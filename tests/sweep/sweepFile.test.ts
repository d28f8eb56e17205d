// The sweep file: aliases and dotted paths, every problem with file, field and value, the base
// recipe kept inside the sweep file's directory, and the CLI's exit 2 on a bad file.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseSweep, resolveField } from '../../harness/sweep/sweepFile.ts';
import { fluidcap, ROOT } from '../pipeline/support.ts';

test('aliases and dotted paths resolve to recipe paths; the port and paths outside the recipe sections are refused', () => {
  assert.equal(resolveField('maxNumSeqs'), { ok: true, path: ['target', 'engineArgs', 'maxNumSeqs'] });
  assert.equal(resolveField('scheduler'), { ok: true, path: ['target', 'sim', 'scheduler'] });
  assert.equal(resolveField('workload.arrivals.process'), { ok: true, path: ['workload', 'arrivals', 'process'] });
  assert.is(resolveField('target.port').ok, false);
  assert.is(resolveField('name').ok, false);
  assert.is(resolveField('target').ok, false);
  assert.is(resolveField('target..model').ok, false);
});

test('a good sweep file: name from the file when absent, recipe resolved against its directory', () => {
  const r = parseSweep({ recipe: 'base.yaml', matrix: { maxNumSeqs: [8, 16] } }, '/srv/sweeps/my sweep.yaml');
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.is(r.sweep.name, 'my-sweep');
  assert.is(r.sweep.recipeFile, '/srv/sweeps/base.yaml');
  assert.equal(r.sweep.exclude, []);
});

test('every problem at once, each with file, field and value', () => {
  const r = parseSweep(
    {
      recipe: 'base.yaml',
      matrix: { maxNumSeqs: [8, 8], 'target.port': [1, 2], bogus: [1], 'target.engineArgs.maxNumSeqs': [4] },
      exclude: [{ maxNumSeqs: 12 }, { nothere: 1 }],
      parallel: 0,
    },
    'sw.yaml',
  );
  assert.not.ok(r.ok);
  if (r.ok) return;
  const all = r.problems.join('\n');
  assert.match(all, /sw\.yaml: matrix\.maxNumSeqs must not repeat a value, got \[8,8\]/);
  assert.match(all, /sw\.yaml: matrix\.target\.port is set by the sweep/);
  assert.match(all, /sw\.yaml: matrix\.bogus must name a recipe field: one of model, .*target\.engineArgs\.maxNumSeqs\), got \[1\] \(array\)/);
  assert.match(all, /matrix\.target\.engineArgs\.maxNumSeqs sets the same field as maxNumSeqs/);
  assert.match(all, /sw\.yaml: exclude\[0\]\.maxNumSeqs must be one of matrix\.maxNumSeqs's values \(8, 8\), got 12 \(number\)/);
  assert.match(all, /sw\.yaml: exclude\[1\]\.nothere must name a matrix field/);
  assert.match(all, /sw\.yaml: parallel must be > 0, got 0 \(number\)/);
});

test('the base recipe must stay inside the sweep file\'s directory', () => {
  for (const recipe of ['../elsewhere/base.yaml', '/etc/base.yaml']) {
    const r = parseSweep({ recipe, matrix: {} }, '/srv/sweeps/s.yaml');
    assert.not.ok(r.ok, recipe);
    if (!r.ok) assert.match(r.problems[0], /s\.yaml: recipe must be a path inside the sweep file's directory \(\/srv\/sweeps\), got "/);
  }
  assert.ok(parseSweep({ recipe: 'sub/base.yaml' }, '/srv/sweeps/s.yaml').ok);
});

test('fluidcap sweep on a bad sweep file: one message naming file, field and value, exit 2, no sweep directory', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweepfile-'));
  copyFileSync(join(ROOT, 'sweeps/sim-base.yaml'), join(dir, 'base.yaml'));
  writeFileSync(join(dir, 'bad.yaml'), 'recipe: base.yaml\nmatrix:\n  maxNumSeqs: [0, 8]\n');
  const r = await fluidcap(['sweep', join(dir, 'bad.yaml'), '--out', join(dir, 'out')], { timeoutMs: 60_000 });
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /bad\.yaml has 1 problem:\n {2}.*bad\.yaml \[c01-maxNumSeqs0: maxNumSeqs=0\]: target\.engineArgs\.maxNumSeqs must be .*got 0 \(number\)/);
  assert.not.match(r.stderr, /at .*\.ts:\d+/, 'no stack trace');
  const { existsSync } = await import('node:fs');
  assert.not.ok(existsSync(join(dir, 'out')), 'nothing written before validation passes');
});

test.run();
