// A run may take another run's prefill fit (what a confirming probe of the gate does with the
// night it confirms) only for the same engine under the same recipe but its search. The rule on
// parsed manifests (pure), then on the simulated engine over real HTTP: a profile-only run, a
// second run of the same recipe pinned to another search that takes its fit without profiling,
// and one with the engine 30% slower that profiles again and says why.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fitReuseMismatch, type FitSource } from '../../harness/capacity/fitReuse.ts';
import { runCapacity } from '../../harness/capacity/runCapacity.ts';
import { runPaths } from '../../harness/runDir/layout.ts';

const manifest = (over: { search?: object; timeScale?: number; host?: Record<string, unknown>; tokenIdRange?: unknown; toolVersion?: string } = {}): FitSource => ({
  toolVersion: over.toolVersion ?? '0.1.0',
  recipe: {
    name: 'q',
    target: { engine: 'sim', model: 'llama-3-8b', sim: { timeScale: over.timeScale ?? 1, scheduler: 'vllm' } },
    profile: { promptLengths: [128, 512], repeats: 3 },
    search: over.search ?? { qps: { startQps: 8, minQps: 0.5, maxQps: 64 } },
    slo: { fluidity: { tbtDeadlineS: 0.05 } },
    source: { file: '/a/recipe.yaml' },
  },
  host: over.host ?? { engine: 'sim', launch: 'local-process', pid: 1, baseUrl: 'http://127.0.0.1:1' },
  prompts: { format: 'token-ids', model: 'llama-3-8b', tokenIdRange: over.tokenIdRange ?? null, idOverheadTokens: 0, extraBody: {}, cache: { mode: 'off' } },
});

test('the same engine and recipe but the search (and where the recipe lies, the pid, the URL) may reuse the fit', () => {
  const pinned = manifest({ search: { qps: { startQps: 40, minQps: 20, maxQps: 80 }, maxProbes: 1 } });
  (pinned.recipe as { source: object }).source = { file: '/b/confirm/pinned-recipe-40.yaml' };
  pinned.host = { engine: 'sim', launch: 'local-process', pid: 2, baseUrl: 'http://127.0.0.1:2' };
  assert.is(fitReuseMismatch(manifest(), pinned), null);
});

test('another engine speed, image, GPU, prompt preparation or tool version may not', () => {
  assert.is(fitReuseMismatch(manifest(), manifest({ timeScale: 1.3 })), "the recipe's target section differs");
  const docker = (imageId: string, uuid = 'GPU-1') => ({ engine: 'vllm', host: 'gpu1', image: 'vllm/vllm-openai:v0.8', imageId, imageDigest: null, gpu: { gpus: [{ name: 'H100', uuid }] }, containerId: imageId + 'c' });
  assert.is(fitReuseMismatch(manifest({ host: docker('sha256:a') }), manifest({ host: docker('sha256:a') })), null);
  assert.match(fitReuseMismatch(manifest({ host: docker('sha256:a') }), manifest({ host: docker('sha256:b') }))!, "the engine's imageId differs");
  assert.match(fitReuseMismatch(manifest({ host: docker('sha256:a') }), manifest({ host: docker('sha256:a', 'GPU-2') }))!, "the engine's gpus differs");
  assert.match(fitReuseMismatch(manifest(), manifest({ tokenIdRange: [1000, 2000] }))!, 'prompts were prepared differently');
  assert.match(fitReuseMismatch(manifest(), manifest({ toolVersion: '0.2.0' }))!, 'tool version differs');
  assert.match(fitReuseMismatch(manifest(), { ...manifest(), host: null })!, 'engine facts');
});

const recipe = (timeScale: number, start: number) => `name: reuse
target:
  engine: sim
  model: llama-3-8b
  gpuProfile: h100-sxm-80gb
  engineArgs: { maxNumSeqs: 8, maxModelLen: 4096 }
  sim: { scheduler: vllm, timeScale: ${timeScale} }
workload:
  api: completions
  lengths:
    prompt: { dist: uniform, min: 128, max: 512 }
    output: { dist: uniform, min: 16, max: 32 }
  arrivals: { process: poisson }
  seed: 3
profile:
  promptLengths: [256, 1024, 2048]
  repeats: 2
  minR2: 0
  maxRepeatCv: 100
search:
  qps: { start: ${start}, min: 1, max: 64 }
  tolerance: 0.1
  maxProbes: 1
  probe: { requests: 16, minDuration: 2s, duration: 4s, warmup: 10%, clientTolerance: 250ms }
slo:
  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.1s, minFluidity: 0.9, percentile: 99 }
`;

test('on the simulated engine: a pinned run takes the fit of its source run; a slower engine is profiled again', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-fitreuse-'));
  try {
    const file = (name: string, text: string) => (writeFileSync(join(dir, name), text), join(dir, name));
    const run = async (recipeFile: string, out: string, reuseFitFrom?: string) => {
      const lines: string[] = [];
      const r = await runCapacity({ recipeFile, outDir: join(dir, out), log: (l) => lines.push(l), profileOnly: true, reuseFitFrom });
      assert.is(r.status, 'completed', r.reason);
      return { runDir: r.runDir, lines };
    };
    const source = await run(file('night.yaml', recipe(1, 8)), 'night');
    const pinned = await run(file('pinned.yaml', recipe(1, 20)), 'confirm', source.runDir);
    const sourceFit = readFileSync(runPaths(source.runDir).fit, 'utf8');
    assert.is(readFileSync(runPaths(pinned.runDir).fit, 'utf8'), sourceFit, 'the fit is the source run\'s');
    assert.is(readFileSync(runPaths(pinned.runDir).prefill, 'utf8'), readFileSync(runPaths(source.runDir).prefill, 'utf8'), 'and so are the prefills it was fitted to');
    assert.ok(pinned.lines.some((l) => l.startsWith(`reusing the prefill profile of ${source.runDir}`)), pinned.lines.join('\n'));
    const events = readFileSync(runPaths(pinned.runDir).events, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(events.filter((e) => e.type === 'profile-finished').map((e) => e.reusedFrom), [source.runDir]);

    const slower = await run(file('slower.yaml', recipe(1.3, 20)), 'slower', source.runDir);
    assert.ok(slower.lines.some((l) => l === `not reusing the prefill profile of ${source.runDir}: the recipe's target section differs; profiling the engine`), slower.lines.join('\n'));
    assert.is.not(readFileSync(runPaths(slower.runDir).fit, 'utf8'), sourceFit, 'the slower engine has a fit of its own');
    const slowerEvents = readFileSync(runPaths(slower.runDir).events, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(slowerEvents.filter((e) => e.type === 'profile-finished').map((e) => e.reusedFrom), [undefined]);
    assert.ok(readdirSync(join(dir, 'slower')).length === 1);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
