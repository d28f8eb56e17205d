// `fluidcap run <file> --dry-run --json` for every committed recipe (a real child process): exit 0,
// the resolved plan launches nothing, and the papers' recipes resolve to the papers' setups.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import pLimit from 'p-limit';
import type { RunPlan } from '../../harness/capacity/runPlan.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
// recipes/llamacpp-cpu.yaml takes its model path from the environment, as an operator sets it.
const childEnv: NodeJS.ProcessEnv = { ...process.env, FLUIDCAP_LLAMA_MODEL: '/models/stories260K.gguf' };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function recipeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? recipeFiles(join(dir, e.name)) : e.name.endsWith('.yaml') ? [join(dir, e.name)] : [],
  );
}

const files = recipeFiles(join(ROOT, 'recipes')).map((f) => relative(ROOT, f));
const limit = pLimit(3);
const plans = new Map<string, Promise<{ code: number; plan: RunPlan | null; stderr: string }>>();
for (const file of files) {
  plans.set(
    file,
    limit(
      () =>
        new Promise((done) => {
          execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'run', file, '--dry-run', '--json'], { cwd: ROOT, env: childEnv, timeout: 60_000 }, (err, stdout, stderr) => {
            const code = err ? ((err as { code?: number }).code ?? 1) : 0;
            done({ code, plan: code === 0 ? (JSON.parse(stdout) as RunPlan) : null, stderr });
          });
        }),
    ),
  );
}
const planOf = async (file: string): Promise<RunPlan> => {
  const r = await plans.get(file)!;
  if (!r.plan) throw new Error(`${file}: --dry-run exited ${r.code}:\n${r.stderr}`);
  return r.plan;
};
const argvOf = (plan: RunPlan): string[] => (plan.engine.kind === 'local-process' ? plan.engine.argv : plan.engine.kind === 'container' ? plan.engine.spec.argv : []);
const flag = (argv: string[], name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);

test('recipes/ holds the quickstart and the ten papers\' recipes (the Metron four on the 4K and on the full Arxiv trace)', () => {
  assert.ok(files.includes('recipes/quickstart.yaml'));
  assert.is(files.filter((f) => f.startsWith('recipes/papers/')).length, 10, files.join(', '));
});

for (const file of files) {
  test(`${file}: --dry-run prints a plan and exits 0`, async () => {
    const r = await plans.get(file)!;
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stderr, '');
    const plan = r.plan!;
    assert.ok(plan.profile.promptLengths.length >= 2);
    assert.ok(plan.profile.promptLengths.every((p) => p < plan.maxContextTokens));
    assert.ok(plan.search.qps.minQps < plan.search.qps.maxQps);
    assert.ok(Object.keys(plan.slo).length >= 1);
    // llama.cpp's image is built locally from the operator's binary (scripts/build-llama-image.mjs): no registry tag to pin.
    if (plan.engine.kind === 'container' && plan.engine.spec.engine === 'llamacpp') assert.is(plan.engine.spec.image, 'fluidcap/llama-server:dev');
    else if (plan.engine.kind === 'container') assert.match(plan.engine.spec.image, /^vllm\/vllm-openai:v\d+\.\d+\.\d+$/, 'real-host images are pinned');
  });
}

test('Llama-3-8B on H100, vLLM: no chunked prefill, Arxiv-4K, fluidity at 25 ms, real host and sim', async () => {
  for (const file of ['recipes/papers/llama3-8b-h100-vllm.yaml', 'recipes/papers/llama3-8b-h100-vllm-sim.yaml']) {
    const plan = await planOf(file);
    assert.is(plan.gpuProfile, 'h100-sxm-80gb');
    assert.is(plan.slo.fluidity?.tbtDeadlineS, 0.025, file);
    assert.is(plan.slo.fluidity?.minFluidity, 0.9);
    assert.is(plan.slo.fluidity?.percentile, 99);
    const argv = argvOf(plan);
    assert.is(flag(argv, '--max-num-batched-tokens'), '4096', file);
    assert.not.ok(argv.includes('--enable-chunked-prefill'), file);
  }
  const real = await planOf('recipes/papers/llama3-8b-h100-vllm.yaml');
  assert.is(real.engine.kind, 'container');
  assert.is(real.engine.kind === 'container' && real.engine.host, 'h100-1');
  assert.is(flag(argvOf(real), '--model'), 'meta-llama/Meta-Llama-3-8B');
  assert.is(flag(argvOf(real), '--load-format'), 'dummy');
  const sim = await planOf('recipes/papers/llama3-8b-h100-vllm-sim.yaml');
  assert.is(sim.engine.kind, 'local-process');
  assert.is(flag(argvOf(sim), '--scheduler'), 'vllm');
  assert.is(flag(argvOf(sim), '--model'), 'llama-3-8b');
});

test('Llama-3-8B on H100, Sarathi chunk 512: chunked prefill with a 512-token budget, real host and sim', async () => {
  const real = await planOf('recipes/papers/llama3-8b-h100-sarathi.yaml');
  assert.ok(argvOf(real).includes('--enable-chunked-prefill'));
  assert.is(flag(argvOf(real), '--max-num-batched-tokens'), '512');
  assert.is(real.slo.fluidity?.tbtDeadlineS, 0.025);
  const sim = await planOf('recipes/papers/llama3-8b-h100-sarathi-sim.yaml');
  assert.is(flag(argvOf(sim), '--scheduler'), 'sarathi');
  assert.is(flag(argvOf(sim), '--chunk-size'), '512');
  assert.is(sim.slo.fluidity?.tbtDeadlineS, 0.025);
});

test('Llama-2-70B TP4 on A100 with Vidur\'s SLOs (TTFT P90 < 2 s, TBT P99 < 200 ms), real host and sim', async () => {
  for (const file of ['recipes/papers/llama2-70b-a100-tp4-vllm.yaml', 'recipes/papers/llama2-70b-a100-tp4-sim.yaml']) {
    const plan = await planOf(file);
    assert.is(plan.gpuProfile, 'a100-sxm-80gb');
    assert.is(plan.gpuCount, 4);
    assert.equal({ p: plan.slo.ttft?.percentile, s: plan.slo.ttft?.maxS }, { p: 90, s: 2 }, file);
    assert.equal({ p: plan.slo.tbt?.percentile, s: plan.slo.tbt?.maxS }, { p: 99, s: 0.2 }, file);
    assert.is(plan.slo.fluidity, undefined);
  }
  const real = await planOf('recipes/papers/llama2-70b-a100-tp4-vllm.yaml');
  assert.is(flag(argvOf(real), '--tensor-parallel-size'), '4');
  assert.equal(real.engine.kind === 'container' && real.engine.spec.gpuDeviceIds, ['0', '1', '2', '3']);
  const sim = await planOf('recipes/papers/llama2-70b-a100-tp4-sim.yaml');
  assert.is(flag(argvOf(sim), '--tensor-parallel'), '4');
  assert.is(flag(argvOf(sim), '--model'), 'llama-2-70b');
});

test.run();
