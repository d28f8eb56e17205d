// The model catalog: names, Hugging Face ids and aliases resolve; derived sizes match the
// published parameter counts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { findModel, listModels, modelSizes } from '../../harness/catalog/models.ts';

test('catalog names, HF ids and aliases resolve to the same entry', () => {
  assert.equal(listModels(), ['llama-2-7b', 'llama-3-8b', 'llama-2-70b', 'llama-3-70b', 'tiny']);
  assert.is(findModel('meta-llama/Meta-Llama-3-8B')?.name, 'llama-3-8b');
  assert.is(findModel('Meta-Llama-3-8B-Instruct')?.name, 'llama-3-8b');
  assert.is(findModel('meta-llama/Llama-2-70b-chat-hf')?.name, 'llama-2-70b');
  assert.is(findModel('LLAMA-2-7B')?.name, 'llama-2-7b');
  assert.is(findModel('tiny')?.name, 'tiny');
  assert.is(findModel('mistral-7b'), null);
});

test('parameter counts match the published sizes within 2%', () => {
  const expected: Record<string, number> = { 'llama-2-7b': 6.74e9, 'llama-3-8b': 8.03e9, 'llama-2-70b': 68.98e9, 'llama-3-70b': 70.55e9 };
  for (const [name, params] of Object.entries(expected)) {
    const got = modelSizes(findModel(name)!).parameterCount;
    assert.ok(Math.abs(got - params) / params < 0.02, `${name}: ${got} vs ${params}`);
  }
  assert.is(findModel('llama-3-8b')!.maxContextTokens, 8192);
  assert.is(modelSizes(findModel('llama-3-8b')!).kvBytesPerToken, 2 * 32 * 8 * 128 * 2);
  assert.is(modelSizes(findModel('llama-2-7b')!).weightBytes, modelSizes(findModel('llama-2-7b')!).parameterCount * 2);
});

test.run();
