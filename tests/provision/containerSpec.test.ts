// The papers' setups rendered to container specs and checked field by field: H100 + Llama-3-8B on
// vLLM and on Sarathi-Serve (chunk 512), A100 + Llama-2-70B with tensor parallelism 4; plus the
// Docker create body and the printed `docker run` equivalent.
import { test } from 'uvu';
import { readFileSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec, formatDockerRun } from '../../harness/provision/containerSpec.ts';
import { dockerCreateOptions } from '../../harness/provision/dockerCreateOptions.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';

const VLLM_IMAGE = 'vllm/vllm-openai@sha256:' + 'ab'.repeat(32);
const GiB = 1024 ** 3;

const h100 = (engine: 'vllm' | 'sarathi') =>
  targetSchema.parse({
    engine,
    image: VLLM_IMAGE,
    model: 'meta-llama/Meta-Llama-3-8B',
    gpuProfile: 'h100-sxm-80gb',
    host: 'gpu1',
    gpus: [0],
    tensorParallel: 1,
    port: 8000,
    engineArgs: { gpuMemoryUtilization: 0.9, maxNumSeqs: 256, maxModelLen: 4096, loadFormat: 'dummy' },
    secrets: { HF_TOKEN: 'HF_TOKEN' },
  });

test('H100, Llama-3-8B, vLLM: prefill-prioritizing baseline, every field', () => {
  const spec = renderContainerSpec(h100('vllm'), { runId: 'r1', hostHfCache: '/data/hf' })!;
  assert.equal(spec, {
    runId: 'r1',
    engine: 'vllm',
    name: 'fluidcap-r1-vllm',
    image: VLLM_IMAGE,
    argv: [
      '--model', 'meta-llama/Meta-Llama-3-8B',
      '--host', '0.0.0.0',
      '--port', '8000',
      '--tensor-parallel-size', '1',
      '--gpu-memory-utilization', '0.9',
      '--max-num-seqs', '256',
      '--max-model-len', '4096',
      '--no-enable-chunked-prefill',
      '--no-enable-prefix-caching',
      '--load-format', 'dummy',
    ],
    env: { HF_HOME: '/root/.cache/huggingface' },
    secretEnv: [{ name: 'HF_TOKEN', fromEnv: 'HF_TOKEN' }],
    gpuDeviceIds: ['0'],
    ipcMode: null,
    shmSizeBytes: 16 * GiB,
    mounts: [{ source: '/data/hf', target: '/root/.cache/huggingface', readOnly: false }],
    labels: { 'fluidcap.run': 'r1', 'fluidcap.engine': 'vllm', 'fluidcap.model': 'meta-llama/Meta-Llama-3-8B', 'fluidcap.port': '8000', 'fluidcap.gpus': '0' },
    networkMode: 'host',
    port: 8000,
    readyTimeoutS: 900,
    promptCache: 'off',
    healthPath: '/health',
    basis: { family: 'vllm', scheduler: 'prefill-first', version: null, versionSource: 'unknown', versionArgv: [], versionEnv: [] },
  });
});

test('H100, Llama-3-8B, Sarathi-Serve chunk 512: chunked prefill, chunk = per-iteration token budget', () => {
  const spec = renderContainerSpec(h100('sarathi'), { runId: 'r2' })!;
  assert.is(spec.name, 'fluidcap-r2-sarathi');
  assert.is(spec.image, VLLM_IMAGE, 'the vLLM image, as the papers ran Sarathi-Serve');
  assert.equal(spec.argv, [
    '--model', 'meta-llama/Meta-Llama-3-8B',
    '--host', '0.0.0.0',
    '--port', '8000',
    '--tensor-parallel-size', '1',
    '--gpu-memory-utilization', '0.9',
    '--max-num-seqs', '256',
    '--max-model-len', '4096',
    '--enable-chunked-prefill',
    '--max-num-batched-tokens', '512',
    '--no-enable-prefix-caching',
    '--load-format', 'dummy',
  ]);
  assert.not.ok(spec.argv.includes('--no-enable-chunked-prefill'));
  assert.equal(spec.mounts, [{ source: '~/.cache/huggingface', target: '/root/.cache/huggingface', readOnly: false }], 'default cache: the remote user home');
  assert.is(spec.labels['fluidcap.engine'], 'sarathi');
});

test('A100, Llama-2-70B, TP4: four device ids, host IPC instead of shm, tensor-parallel-size 4', () => {
  const target = targetSchema.parse({
    engine: 'vllm',
    image: 'vllm/vllm-openai:v0.8.5',
    model: 'meta-llama/Llama-2-70b-hf',
    gpuProfile: 'a100-sxm-80gb',
    host: 'a100s',
    gpus: [0, 1, 2, 3],
    tensorParallel: 4,
    port: 8100,
    engineArgs: { maxModelLen: 4096, maxNumBatchedTokens: 4096, loadFormat: 'dummy', extraArgs: ['--disable-custom-all-reduce'] },
    secrets: { HF_TOKEN: 'MY_HF_TOKEN' },
  });
  const spec = renderContainerSpec(target, { runId: 'r3' })!;
  assert.equal(spec.gpuDeviceIds, ['0', '1', '2', '3']);
  assert.is(spec.ipcMode, 'host');
  assert.is(spec.shmSizeBytes, null);
  assert.equal(spec.argv, [
    '--model', 'meta-llama/Llama-2-70b-hf',
    '--host', '0.0.0.0',
    '--port', '8100',
    '--tensor-parallel-size', '4',
    '--gpu-memory-utilization', '0.9',
    '--max-num-seqs', '256',
    '--max-model-len', '4096',
    '--no-enable-chunked-prefill',
    '--max-num-batched-tokens', '4096',
    '--no-enable-prefix-caching',
    '--load-format', 'dummy',
    '--disable-log-requests',
    '--disable-custom-all-reduce',
  ]);
  assert.is(spec.env.VLLM_USE_V1, '0', 'v0.8.5 from the tag: the V0 engine, whose scheduler prefills whole prompts');
  assert.equal(spec.secretEnv, [{ name: 'HF_TOKEN', fromEnv: 'MY_HF_TOKEN' }]);
  assert.is(spec.labels['fluidcap.gpus'], '0,1,2,3');

  const body = dockerCreateOptions(spec, { secretValues: { HF_TOKEN: 'hf_secret' }, resolveSource: (s) => s.replace('~', '/home/ubuntu') });
  assert.is(body.name, 'fluidcap-r3-vllm');
  assert.is(body.Image, 'vllm/vllm-openai:v0.8.5');
  assert.equal(body.Cmd, spec.argv);
  assert.equal(body.Env, ['HF_HOME=/root/.cache/huggingface', 'VLLM_USE_V1=0', 'HF_TOKEN=hf_secret']);
  assert.equal(body.Labels, spec.labels);
  assert.equal(body.HostConfig!.DeviceRequests, [{ Driver: 'nvidia', DeviceIDs: ['0', '1', '2', '3'], Capabilities: [['gpu']] }]);
  assert.is(body.HostConfig!.IpcMode, 'host');
  assert.is(body.HostConfig!.ShmSize, undefined);
  assert.is(body.HostConfig!.NetworkMode, 'host');
  assert.equal(body.HostConfig!.Binds, ['/home/ubuntu/.cache/huggingface:/root/.cache/huggingface']);
  assert.equal(body.HostConfig!.RestartPolicy, { Name: 'no' });
});

test('dry-run text: the docker run equivalent names secrets, never their values', () => {
  process.env.HF_TOKEN = 'hf_do_not_print_me';
  const spec = renderContainerSpec(h100('sarathi'), { runId: 'r4' })!;
  const line = formatDockerRun(spec);
  delete process.env.HF_TOKEN;
  assert.ok(line.startsWith('docker run -d --name fluidcap-r4-sarathi --network host --gpus \'"device=0"\' --shm-size 16g'), line);
  assert.match(line, / -e HF_TOKEN /);
  assert.match(line, /--label fluidcap\.run=r4/);
  assert.match(line, / --enable-chunked-prefill --max-num-batched-tokens 512 /);
  assert.not.match(JSON.stringify(spec) + line, /hf_do_not_print_me/);
});

test('sim engine: fluidcap sim serve flags, faults mapped one to one, no GPU request', () => {
  const target = targetSchema.parse({
    engine: 'sim',
    image: 'fluidcap/sim:dev',
    model: 'llama-3-8b',
    gpuProfile: 'h100-sxm-80gb',
    port: 9000,
    engineArgs: { chunkSize: 256 },
    sim: { timeScale: 0.1, scheduler: 'sarathi', faults: { exitAtStart: true, startDelay: '2s', crashAfter: 10, http429Fraction: '5%', seed: 7 } },
  });
  const spec = renderContainerSpec(target, { runId: 'r5', modelCatalog: (n) => (n === 'llama-3-8b' ? {} : undefined) })!;
  assert.equal(spec.argv, [
    '--host', '0.0.0.0', '--port', '9000', '--model', 'llama-3-8b', '--gpu', 'h100-sxm-80gb',
    '--scheduler', 'sarathi', '--time-scale', '0.1', '--tensor-parallel', '1', '--gpu-memory-utilization', '0.9', '--max-num-seqs', '256',
    '--chunk-size', '256',
    '--fault-exit-at-start', '--fault-crash-after', '10', '--fault-http-429-fraction', '0.05', '--start-delay', '2', '--fault-seed', '7',
  ]);
  assert.is(spec.gpuDeviceIds, null);
  assert.equal(spec.mounts, []);
  assert.throws(() => renderContainerSpec({ ...target, model: 'nope' }, { runId: 'r5', modelCatalog: () => undefined }), /target\.model must name a model in the simulated engine's catalog, got "nope" \(string\)/);
});

test('endpoint engine renders no container; a run id that cannot name a container is refused', () => {
  const endpoint = targetSchema.parse({ engine: 'endpoint', endpoint: { url: 'http://10.0.0.5:8000' } });
  assert.is(renderContainerSpec(endpoint, { runId: 'r6' }), null);
  assert.throws(() => renderContainerSpec(h100('vllm'), { runId: 'bad id/..' }), /run id must be letters, digits/);
});

test('prompt cache: off unless the run opts in (vLLM --no-enable-prefix-caching), recorded in the spec', () => {
  const off = renderContainerSpec(h100('vllm'), { runId: 'c1' })!;
  assert.is(off.promptCache, 'off');
  assert.ok(off.argv.includes('--no-enable-prefix-caching'));
  assert.not.ok(off.argv.includes('--enable-prefix-caching'));
  const on = renderContainerSpec(h100('vllm'), { runId: 'c2', promptCache: 'on' })!;
  assert.is(on.promptCache, 'on');
  assert.ok(on.argv.includes('--enable-prefix-caching'));
  assert.not.ok(on.argv.includes('--no-enable-prefix-caching'));
});

// The papers' vLLM baseline is vLLM's prefill-prioritizing scheduler without chunked prefill: on
// the pinned vLLM 0.8.5 that is the V0 engine (V1 chunks every prefill whatever the flag says).
test('papers: vLLM 0.8.x recipes pin the V0 engine; vllm without chunked prefill, sarathi with 512-token chunks', async () => {
  const dir = new URL('../../recipes/papers/', import.meta.url).pathname;
  const checked: string[] = [];
  for (const file of ['llama3-8b-h100-vllm.yaml', 'llama2-70b-a100-tp4-vllm.yaml', 'llama3-8b-h100-sarathi.yaml', 'llama3-8b-h100-vllm-arxiv.yaml', 'llama3-8b-h100-sarathi-arxiv.yaml']) {
    const recipe = await loadRecipe(dir + file);
    const spec = renderContainerSpec(recipe.target, { runId: 'paper' })!;
    assert.match(spec.image, /^vllm\/vllm-openai:v0\.8\.\d+$/, `${file}: the V0 pin holds for vLLM 0.8.x only`);
    assert.is(spec.env.VLLM_USE_V1, '0', `${file}: VLLM_USE_V1=0 selects the V0 engine`);
    const body = dockerCreateOptions(spec, { secretValues: { HF_TOKEN: 'x' }, resolveSource: (s) => s });
    assert.ok(body.Env!.includes('VLLM_USE_V1=0'), `${file}: the container gets the pin`);
    assert.ok(spec.argv.includes('--no-enable-prefix-caching'), `${file}: capacity runs compute every prompt`);
    if (recipe.target.engine === 'vllm') {
      assert.ok(spec.argv.includes('--no-enable-chunked-prefill'), file);
      assert.not.ok(spec.argv.includes('--enable-chunked-prefill'), file);
      const budget = Number(spec.argv[spec.argv.indexOf('--max-num-batched-tokens') + 1]);
      const maxLen = Number(spec.argv[spec.argv.indexOf('--max-model-len') + 1]);
      assert.ok(budget >= maxLen, `${file}: V0 without chunking needs a token budget >= max-model-len`);
    } else {
      assert.is(recipe.target.engine, 'sarathi');
      assert.ok(spec.argv.includes('--enable-chunked-prefill'), file);
      assert.is(spec.argv[spec.argv.indexOf('--max-num-batched-tokens') + 1], '512');
    }
    assert.match(formatDockerRun(spec), / -e VLLM_USE_V1=0 /);
    checked.push(file);
  }
  assert.is(checked.length, 5);
});

test('full Arxiv recipes: the engine is told the rope-scaled context (vLLM by --hf-overrides, the sim by its factor)', async () => {
  const dir = new URL('../../recipes/papers/', import.meta.url).pathname;
  for (const sys of ['vllm', 'sarathi']) {
    const real = renderContainerSpec((await loadRecipe(`${dir}llama3-8b-h100-${sys}-arxiv.yaml`)).target, { runId: 'paper' })!;
    const at = real.argv.indexOf('--hf-overrides');
    assert.ok(at > 0, `${sys}: --hf-overrides given`);
    // One argv element, JSON as vLLM parses it: rope_scaling × 8 stretches Llama-3's 8192 to the 65536 asked for.
    assert.equal(JSON.parse(real.argv[at + 1]), { rope_scaling: { rope_type: 'dynamic', factor: 8 } });
    assert.is(real.argv[real.argv.indexOf('--max-model-len') + 1], '65536');
    const sim = renderContainerSpec((await loadRecipe(`${dir}llama3-8b-h100-${sys}-arxiv-sim.yaml`)).target, { runId: 'paper' })!;
    assert.is(sim.argv[sim.argv.indexOf('--rope-scaling-factor') + 1], '8');
    assert.is(sim.argv[sim.argv.indexOf('--max-model-len') + 1], '65536');
  }
  // The 4K recipes stretch nothing.
  const plain = renderContainerSpec((await loadRecipe(`${dir}llama3-8b-h100-vllm.yaml`)).target, { runId: 'paper' })!;
  assert.not.ok(plain.argv.includes('--hf-overrides'));
});

const llama = (over: Record<string, unknown> = {}) =>
  targetSchema.parse({
    engine: 'llamacpp',
    model: 'stories260K',
    host: 'e2e',
    port: 18080,
    llamacpp: { modelFile: '/srv/models/stories260K.gguf' },
    engineArgs: { slots: 2, ctxSize: 2048, threads: 1 },
    ...over,
  });

test('llamacpp: llama-server flags, model file mounted read-only, no GPU, prompt cache off', () => {
  const spec = renderContainerSpec(llama(), { runId: 'l1' })!;
  assert.equal(spec, {
    runId: 'l1',
    engine: 'llamacpp',
    name: 'fluidcap-l1-llamacpp',
    image: 'fluidcap/llama-server:dev',
    argv: [
      '--host', '0.0.0.0',
      '--port', '18080',
      '--model', '/models/stories260K.gguf',
      '--alias', 'stories260K',
      '--parallel', '2',
      '--ctx-size', '2048',
      '--threads', '1',
      '--metrics',
      '--no-cache-prompt', '--cache-ram', '0',
    ],
    env: {},
    secretEnv: [],
    gpuDeviceIds: null,
    ipcMode: null,
    shmSizeBytes: null,
    mounts: [{ source: '/srv/models/stories260K.gguf', target: '/models/stories260K.gguf', readOnly: true }],
    labels: { 'fluidcap.run': 'l1', 'fluidcap.engine': 'llamacpp', 'fluidcap.model': 'stories260K', 'fluidcap.port': '18080' },
    networkMode: 'host',
    port: 18080,
    readyTimeoutS: 900,
    promptCache: 'off',
    healthPath: '/health',
    basis: { family: 'llamacpp', scheduler: null, version: null, versionSource: 'unknown', versionArgv: [], versionEnv: [] },
  });
  const body = dockerCreateOptions(spec, { secretValues: {}, resolveSource: (s) => s });
  assert.equal(body.HostConfig!.Binds, ['/srv/models/stories260K.gguf:/models/stories260K.gguf:ro']);
  assert.is(body.HostConfig!.DeviceRequests, undefined, 'a CPU engine asks Docker for no GPU');
  assert.is(body.Image, 'fluidcap/llama-server:dev');
  const line = formatDockerRun(spec);
  assert.match(line, / -v \/srv\/models\/stories260K\.gguf:\/models\/stories260K\.gguf:ro /);
  assert.ok(line.endsWith('--metrics --no-cache-prompt --cache-ram 0'), line);
});

test('llamacpp: defaults (4 slots, 8192 context, metrics on); the plan\'s longest request is one slot\'s context', () => {
  const t = targetSchema.parse({ engine: 'llamacpp', model: 'm', llamacpp: { modelFile: '~/models/m.gguf' } });
  assert.equal([t.engineArgs.slots, t.engineArgs.ctxSize, t.engineArgs.metrics, t.engineArgs.maxModelLen], [4, 8192, true, 2048]);
  const spec = renderContainerSpec(t, { runId: 'l2', promptCache: 'on' })!;
  assert.not.ok(spec.argv.includes('--threads'), 'threads left to llama-server when not given');
  assert.not.ok(spec.argv.includes('--no-cache-prompt'), 'prompt cache on: the server keeps its defaults');
  assert.equal(spec.mounts, [{ source: '~/models/m.gguf', target: '/models/m.gguf', readOnly: true }]);
  const noMetrics = renderContainerSpec(llama({ engineArgs: { metrics: false } }), { runId: 'l3' })!;
  assert.not.ok(noMetrics.argv.includes('--metrics'));
});

test('llamacpp: the model path from a local environment variable; unset or unsafe is a clear error', () => {
  const t = llama({ llamacpp: { modelFileEnv: 'FLUIDCAP_LLAMA_MODEL' } });
  const spec = renderContainerSpec(t, { runId: 'l4', env: { FLUIDCAP_LLAMA_MODEL: '/data/tiny.gguf' } })!;
  assert.equal(spec.mounts, [{ source: '/data/tiny.gguf', target: '/models/tiny.gguf', readOnly: true }]);
  assert.ok(spec.argv.includes('/models/tiny.gguf'));
  assert.throws(() => renderContainerSpec(t, { runId: 'l4', env: {}, recipeFile: 'recipes/x.yaml' }),
    /^recipes\/x\.yaml: target\.llamacpp\.modelFileEnv names the environment variable FLUIDCAP_LLAMA_MODEL, which is not set/);
  assert.throws(() => renderContainerSpec(t, { runId: 'l4', env: { FLUIDCAP_LLAMA_MODEL: 'rel/tiny.gguf' } }),
    /FLUIDCAP_LLAMA_MODEL must be an absolute path on the engine host \(or start with ~\/\), got "rel\/tiny\.gguf"/);
  assert.throws(() => renderContainerSpec(t, { runId: 'l4', env: { FLUIDCAP_LLAMA_MODEL: '/a:b/x.gguf' } }), /must not contain ":"/);
});

test('recipes/llamacpp-cpu.yaml: no machine path in the recipe; the model comes from FLUIDCAP_LLAMA_MODEL', async () => {
  const file = new URL('../../recipes/llamacpp-cpu.yaml', import.meta.url).pathname;
  const text = readFileSync(file, 'utf8');
  assert.not.match(text, /shared\/engines|\.gguf/, 'the recipe names a model file');
  const recipe = await loadRecipe(file);
  assert.is(recipe.target.engine, 'llamacpp');
  const spec = renderContainerSpec(recipe.target, { runId: 'cpu', env: { FLUIDCAP_LLAMA_MODEL: '/opt/models/stories260K.gguf' } })!;
  assert.equal(spec.mounts, [{ source: '/opt/models/stories260K.gguf', target: '/models/stories260K.gguf', readOnly: true }]);
  assert.is(spec.image, 'fluidcap/llama-server:dev');
  for (const flag of ['--parallel', '--ctx-size', '--threads', '--metrics', '--no-cache-prompt']) assert.ok(spec.argv.includes(flag), flag);
  // Every planned request must fit one slot: prompt + output within ctxSize / slots.
  const perSlot = recipe.target.engineArgs.ctxSize! / recipe.target.engineArgs.slots!;
  const w = recipe.workload as unknown as { lengths: { prompt: { max: number }; output: { max: number } } };
  assert.ok(w.lengths.prompt.max + w.lengths.output.max <= perSlot, 'workload lengths exceed one slot');
  const p = recipe.profile as unknown as { promptLengths: number[] };
  assert.ok(Math.max(...p.promptLengths) < perSlot, 'profile lengths exceed one slot');
  assert.is((recipe.workload as unknown as { prompts: { format: string } }).prompts.format, 'text', 'token ids would exceed the 512-token vocabulary');
});

test('target env: plain container variables, values as strings, beside secrets', () => {
  const t = targetSchema.parse({ engine: 'vllm', image: VLLM_IMAGE, model: 'm', env: { VLLM_USE_V1: 0, VLLM_LOGGING_LEVEL: 'DEBUG' }, secrets: { HF_TOKEN: 'HF_TOKEN' } });
  const spec = renderContainerSpec(t, { runId: 'e1' })!;
  assert.equal(spec.env, { HF_HOME: '/root/.cache/huggingface', VLLM_USE_V1: '0', VLLM_LOGGING_LEVEL: 'DEBUG' });
  const body = dockerCreateOptions(spec, { secretValues: { HF_TOKEN: 's' }, resolveSource: (s) => s });
  assert.equal(body.Env, ['HF_HOME=/root/.cache/huggingface', 'VLLM_USE_V1=0', 'VLLM_LOGGING_LEVEL=DEBUG', 'HF_TOKEN=s']);
});

test.run();
