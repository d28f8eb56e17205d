// The papers' setups rendered to container specs and checked field by field: H100 + Llama-3-8B on
// vLLM and on Sarathi-Serve (chunk 512), A100 + Llama-2-70B with tensor parallelism 4; plus the
// Docker create body and the printed `docker run` equivalent.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec, formatDockerRun } from '../../harness/provision/containerSpec.ts';
import { dockerCreateOptions } from '../../harness/provision/dockerCreateOptions.ts';

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
    '--load-format', 'dummy',
    '--disable-custom-all-reduce',
  ]);
  assert.equal(spec.secretEnv, [{ name: 'HF_TOKEN', fromEnv: 'MY_HF_TOKEN' }]);
  assert.is(spec.labels['fluidcap.gpus'], '0,1,2,3');

  const body = dockerCreateOptions(spec, { secretValues: { HF_TOKEN: 'hf_secret' }, resolveSource: (s) => s.replace('~', '/home/ubuntu') });
  assert.is(body.name, 'fluidcap-r3-vllm');
  assert.is(body.Image, 'vllm/vllm-openai:v0.8.5');
  assert.equal(body.Cmd, spec.argv);
  assert.equal(body.Env, ['HF_HOME=/root/.cache/huggingface', 'HF_TOKEN=hf_secret']);
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

test.run();
