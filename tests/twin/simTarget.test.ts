// Which simulated engine models a recipe's target: the scheduler follows the engine (sarathi =
// chunked prefill), the batch limits and GPU carry over, and an endpoint is refused by name.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { simConfigOf, simOptionsOf } from '../../harness/twin/simTarget.ts';

const target = (raw: Record<string, unknown>) => targetSchema.parse(raw);

test('sarathi target → the sarathi policy with its chunk size, on its GPU profile and model', () => {
  const t = target({ engine: 'sarathi', image: 'vllm/vllm-openai:v0.8.5', model: 'meta-llama/Meta-Llama-3-8B', host: 'gpu1', gpus: [0], gpuProfile: 'a100-sxm-80gb', engineArgs: { maxNumSeqs: 64, chunkSize: 1024, maxModelLen: 4096 } });
  const c = simConfigOf(t, 'r.yaml');
  assert.is(c.scheduler, 'sarathi');
  assert.is(c.chunkSize, 1024);
  assert.is(c.maxNumSeqs, 64);
  assert.is(c.gpu.name, 'a100-sxm-80gb');
  assert.is(c.model.name, 'llama-3-8b');
  assert.is(c.timeScale, 1);
});

test('sim target keeps its own scheduler and time scale', () => {
  const o = simOptionsOf(target({ engine: 'sim', model: 'tiny', sim: { scheduler: 'sarathi', timeScale: 3 } }), 'r.yaml');
  assert.is(o.scheduler, 'sarathi');
  assert.is(o.timeScale, 3);
});

test('an endpoint cannot be simulated: the message names the file and the engine', () => {
  try {
    simOptionsOf(target({ engine: 'endpoint', endpoint: { url: 'http://10.0.0.5:8000' } }), 'recipes/x.yaml');
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /recipes\/x\.yaml: target\.engine "endpoint"/);
  }
});

test.run();
