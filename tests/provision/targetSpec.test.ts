// The recipe's target section: defaults, engine-specific rules, and every problem at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { targetSchema } from '../../harness/provision/targetSpec.ts';

const problems = (raw: unknown) => {
  const r = targetSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

test('defaults: local host, GPU 0, port 8000, direct access, 15 min ready timeout', () => {
  const t = targetSchema.parse({ engine: 'sim', model: 'tiny' });
  assert.is(t.host, 'local');
  assert.equal(t.gpus, [0]);
  assert.is(t.port, 8000);
  assert.is(t.access, 'direct');
  assert.is(t.readyTimeoutS, 900);
  assert.is(t.engineArgs.chunkSize, undefined);
  assert.equal(t.gpuIdle, { maxUsedMiB: 1024, timeoutS: 120 });
});

test('sarathi gets chunk size 512 by default; durations parse to seconds', () => {
  const t = targetSchema.parse({ engine: 'sarathi', image: 'vllm/vllm-openai:v0.8.5', model: 'm', readyTimeout: '10m' });
  assert.is(t.engineArgs.chunkSize, 512);
  assert.is(t.readyTimeoutS, 600);
});

test('engine rules: image required for vllm, url for endpoint, sections only for their engine', () => {
  assert.equal(problems({ engine: 'vllm', model: 'm' }), ['image: is required for engine vllm (e.g. vllm/vllm-openai:v0.8.5, best pinned by @sha256 digest)']);
  assert.equal(problems({ engine: 'endpoint' }), ['endpoint.url: is required for engine endpoint']);
  assert.equal(problems({ engine: 'endpoint', endpoint: { url: 'http://x:1' }, image: 'a/b:c' }), ['image: must be absent for engine endpoint (nothing is launched)']);
  assert.equal(problems({ engine: 'vllm', image: 'a/b:c', model: 'm', sim: {} }), ['sim: is only for engine sim']);
  assert.equal(problems({ engine: 'sim', model: 'tiny', host: 'local', access: 'ssh-tunnel' }), ['access: ssh-tunnel needs a remote inventory host (not local, not engine endpoint)']);
});

test('every problem at once, including engine rules next to a bad duration', () => {
  const p = problems({
    engine: 'vllm',
    model: 'm',
    image: 'NOT AN IMAGE',
    gpus: [0, 0, 1],
    tensorParallel: 2,
    readyTimeout: 'soon',
    engineArgs: { maxNumBatchedTokens: 2048, maxModelLen: 4096, extraArgs: ['--port=9'] },
  });
  assert.equal(p, [
    'image: must be an image reference such as vllm/vllm-openai:v0.8.5 or repo@sha256:<64 hex>',
    'engineArgs.extraArgs.0: must not set --port (fluidcap sets it from the target section)',
    'readyTimeout: must be a duration such as 25ms, 2s or 10m',
    'gpus: must not repeat a GPU id',
    'gpus: must list exactly tensorParallel (2) GPU ids',
    'engineArgs.maxNumBatchedTokens: must be >= engineArgs.maxModelLen (4096) without chunked prefill (vLLM refuses otherwise)',
  ]);
});

test('secrets map container variable names to local variable names, both validated', () => {
  assert.equal(targetSchema.parse({ engine: 'sim', model: 'tiny', secrets: { HF_TOKEN: 'MY_TOKEN' } }).secrets, { HF_TOKEN: 'MY_TOKEN' });
  assert.equal(problems({ engine: 'sim', model: 'tiny', secrets: { HF_TOKEN: 'hf_abc-123 literal' } }), ['secrets.HF_TOKEN: must be an environment variable name such as HF_TOKEN']);
});

test('llamacpp rules: a model file is required, engine args belong to their engine, one slot\'s context bounds maxModelLen', () => {
  assert.equal(problems({ engine: 'llamacpp', model: 'm' }), [
    'llamacpp.modelFile: is required for engine llamacpp (or llamacpp.modelFileEnv: a local environment variable holding the GGUF path)',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: {} }), [
    'llamacpp.modelFile: give exactly one of modelFile (a GGUF path on the engine host) or modelFileEnv (a local environment variable holding it)',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: { modelFile: 'models/m.gguf' } }), [
    'llamacpp.modelFile: must be an absolute path on the engine host (or start with ~/)',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: { modelFileEnv: 'not a name' } }), [
    'llamacpp.modelFileEnv: must be an environment variable name such as HF_TOKEN',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: { modelFile: '/m.gguf' }, engineArgs: { slots: 4, ctxSize: 2048, maxModelLen: 1024 } }), [
    'engineArgs.maxModelLen: must be <= the context of one slot, ctxSize / slots = 512 (llama.cpp splits --ctx-size between its slots)',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: { modelFile: '/m.gguf' }, tensorParallel: 2 }), [
    'tensorParallel: must be 1 for engine llamacpp (one CPU process)',
  ]);
  assert.equal(problems({ engine: 'vllm', image: 'a/b:c', model: 'm', engineArgs: { slots: 4 }, llamacpp: { modelFile: '/m.gguf' } }), [
    'llamacpp: is only for engine llamacpp',
    'engineArgs.slots: is only for engine llamacpp',
  ]);
  assert.equal(problems({ engine: 'llamacpp', model: 'm', llamacpp: { modelFile: '/m.gguf' }, engineArgs: { extraArgs: ['--ctx-size=512', '--no-cache-prompt', '-m', '--flash-attn'] } }), [
    'engineArgs.extraArgs.2: must not set -m (fluidcap sets it from the target section)',
    'engineArgs.extraArgs.0: must not set --ctx-size (fluidcap sets it from engineArgs.ctxSize)',
    "engineArgs.extraArgs.1: must not set --no-cache-prompt (fluidcap sets it from the run's prompt-cache setting)",
  ]);
  assert.equal(problems({ engine: 'endpoint', endpoint: { url: 'http://x:1' }, env: { A: '1' } }), ['env: must be absent for engine endpoint (nothing is launched)']);
  assert.equal(problems({ engine: 'vllm', image: 'a/b:c', model: 'm', env: { HF_TOKEN: 'x' }, secrets: { HF_TOKEN: 'HF_TOKEN' } }), ['env.HF_TOKEN: is also a secret; set it in one place']);
});

test.run();
