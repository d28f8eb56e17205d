// A sweep file's `include` list: chosen configurations besides (or instead of) the matrix, each
// key checked like a matrix key; and configuration recipe names kept within the recipe's limit.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseSweep } from '../../harness/sweep/sweepFile.ts';
import { configRecipeText, expandMatrix } from '../../harness/sweep/expand.ts';
import { parse } from 'yaml';

test('include alone runs exactly its entries; with a matrix it adds the ones not already there', () => {
  const only = expandMatrix({ matrix: {}, exclude: [], include: [{ maxNumSeqs: 8, scheduler: 'sarathi' }, { tensorParallel: 2 }] });
  assert.equal(only.map((c) => [c.id, c.values]), [
    ['c01-maxNumSeqs8-schedulersarathi', { maxNumSeqs: 8, scheduler: 'sarathi' }],
    ['c02-tensorParallel2', { tensorParallel: 2 }],
  ]);
  const both = expandMatrix({ matrix: { maxNumSeqs: [8, 16] }, exclude: [{ maxNumSeqs: 16 }], include: [{ maxNumSeqs: 8 }, { maxNumSeqs: 32 }] });
  assert.equal(both.map((c) => c.values), [{ maxNumSeqs: 8 }, { maxNumSeqs: 32 }]);
  assert.equal(expandMatrix({ matrix: {}, exclude: [] }).map((c) => c.values), [{}], 'an empty matrix alone is still the base recipe once');
});

test('include entries are validated: unknown fields, two keys for one field and empty entries are named', () => {
  const r = parseSweep({ recipe: 'b.yaml', include: [{ maxNumSeqs: 8, 'target.engineArgs.maxNumSeqs': 16 }, {}, { colour: 'red' }] }, 's.yaml');
  assert.is(r.ok, false);
  if (r.ok) return;
  const text = r.problems.join('\n');
  assert.match(text, /s\.yaml: include\[0\]\.target\.engineArgs\.maxNumSeqs sets the same field as maxNumSeqs/);
  assert.match(text, /s\.yaml: include\[1\] must name at least one field/);
  assert.match(text, /s\.yaml: include\[2\]\.colour must name a recipe field/);
});

test('a long base name and id still make a recipe name of at most 64 characters that keeps the cNN', () => {
  const [c] = expandMatrix({ matrix: {}, exclude: [], include: [{ gpuProfile: 'h100-sxm-80gb', tensorParallel: 8, scheduler: 'sarathi', maxNumSeqs: 256, chunkSize: 2048 }] });
  const name = (parse(configRecipeText('name: a-rather-long-base-recipe-name\n', '/x', 'a-rather-long-base-recipe-name', c)) as { name: string }).name;
  assert.ok(name.length <= 64, name);
  assert.match(name, /^a-rather-long-base-r-c01-gpuProfile/);
  const short = (parse(configRecipeText('name: b\n', '/x', 'b', { id: 'c02-maxNumSeqs8', index: 2, values: { maxNumSeqs: 8 } })) as { name: string }).name;
  assert.is(short, 'b-c02-maxNumSeqs8');
});

test.run();
