// Matrix expansion (every combination in file order, excludes matching on the fields they name)
// and each configuration's recipe text (values set, comments kept, relative trace made absolute).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { configRecipeText, describeValues, expandMatrix } from '../../harness/sweep/expand.ts';

test('2 × 2 matrix: four configurations in file order with stable ids', () => {
  const configs = expandMatrix({ matrix: { maxNumSeqs: [8, 32], scheduler: ['vllm', 'sarathi'] }, exclude: [] });
  assert.equal(configs.map((c) => c.id), ['c01-maxNumSeqs8-schedulervllm', 'c02-maxNumSeqs8-schedulersarathi', 'c03-maxNumSeqs32-schedulervllm', 'c04-maxNumSeqs32-schedulersarathi']);
  assert.equal(configs[3].values, { maxNumSeqs: 32, scheduler: 'sarathi' });
  assert.is(describeValues(configs[1].values), 'maxNumSeqs=8 scheduler=sarathi');
});

test('exclude: a partial entry drops every combination it matches; a full entry drops one', () => {
  const matrix = { tensorParallel: [1, 2, 4], maxNumSeqs: [128, 256], model: ['a', 'b'] };
  const all = expandMatrix({ matrix, exclude: [] });
  assert.is(all.length, 12);
  const partial = expandMatrix({ matrix, exclude: [{ tensorParallel: 4 }] });
  assert.is(partial.length, 8);
  assert.ok(partial.every((c) => c.values.tensorParallel !== 4));
  const full = expandMatrix({ matrix, exclude: [{ tensorParallel: 2, maxNumSeqs: 128, model: 'b' }] });
  assert.is(full.length, 11);
  assert.not.ok(full.some((c) => c.values.tensorParallel === 2 && c.values.maxNumSeqs === 128 && c.values.model === 'b'));
  // numbering follows the kept list, so ids have no gaps
  assert.equal(full.map((c) => c.index), Array.from({ length: 11 }, (_, i) => i + 1));
});

test('an empty matrix is one run of the base recipe', () => {
  const configs = expandMatrix({ matrix: {}, exclude: [] });
  assert.equal(configs, [{ id: 'c01', index: 1, values: {} }]);
});

const BASE = `# a comment that must survive
name: base
target:
  engine: sim
  model: llama-3-8b
  engineArgs: { maxNumSeqs: 16, maxModelLen: 4096 }   # inline comment
workload:
  lengths: { trace: traces/conv.csv }
  seed: 1
`;

test('a configuration\'s recipe: values and placement set, name unique, comments kept, trace path absolute', () => {
  const [c] = expandMatrix({ matrix: { maxNumSeqs: [8], 'target.sim.timeScale': [2], gpus: [[0, 1]] }, exclude: [] });
  const text = configRecipeText(BASE, '/srv/sweeps', 'base', c, { host: 'gpu2', port: 8101 });
  assert.match(text, /# a comment that must survive/);
  assert.match(text, /# inline comment/);
  const doc = parse(text);
  assert.is(doc.name, `base-${c.id}`);
  assert.is(doc.target.engineArgs.maxNumSeqs, 8);
  assert.is(doc.target.engineArgs.maxModelLen, 4096);
  assert.equal(doc.target.sim, { timeScale: 2 });
  assert.equal(doc.target.gpus, [0, 1]);
  assert.is(doc.target.host, 'gpu2');
  assert.is(doc.target.port, 8101);
  assert.is(doc.workload.lengths.trace, '/srv/sweeps/traces/conv.csv');
  // the base text is not changed
  assert.match(BASE, /maxNumSeqs: 16/);
});

test.run();
