// parseRecipe (pure): defaults and units resolved once, every problem reported at once with its
// path and value as the user wrote it; and loadRecipe on the committed recipes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseRecipe, type RecipeSource } from '../../harness/recipe/parse.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { formatPath } from '../../harness/recipe/problems.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const source: RecipeSource = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };

const minimal = () => ({
  name: 'unit',
  target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb' },
  workload: { lengths: { preset: 'arxiv-4k' } },
  slo: { fluidity: { tbtDeadline: '25ms' } },
});

function problemsOf(raw: unknown): string[] {
  const r = parseRecipe(raw, source);
  assert.not.ok(r.ok, 'expected the recipe to be refused');
  return r.ok ? [] : r.problems;
}

test('a minimal recipe resolves with defaults, durations in seconds, source kept', () => {
  const r = parseRecipe(minimal(), source);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  const { recipe } = r;
  assert.is(recipe.source, source);
  assert.equal(recipe.search.qps, { startQps: 0.1, minQps: 0.1, maxQps: 1000 });
  assert.is(recipe.search.tolerance, 0.025);
  assert.is(recipe.search.maxProbes, 12);
  assert.is(recipe.search.earlyStop, true);
  assert.is(recipe.search.kneeWarmupMax, 10);
  assert.is(recipe.search.probe.requests, 300);
  assert.is(recipe.search.probe.durationLimitS, 600);
  assert.is(recipe.search.probe.warmupFraction, 0.1);
  assert.is(recipe.profile.repeats, 3);
  assert.is(recipe.profile.promptLengths, undefined);
  assert.is(recipe.slo.fluidity?.tbtDeadlineS, 0.025);
  assert.is(recipe.slo.fluidity?.ttftSlackS, 0.3);
  assert.is(recipe.target.host, 'local');
  assert.is(recipe.workload.seed, 42);
});

test('a duration without its unit is refused in every section, naming both readings', () => {
  const raw = {
    ...minimal(),
    target: { ...(minimal().target as object), readyTimeout: 900 },
    search: { probe: { duration: '600', requestTimeout: 45 } },
    profile: { noiseFloor: 0.005 },
    slo: { fluidity: { tbtDeadline: 50, ttftSlack: 0 }, ttft: { percentile: 90, max: 2 } },
  };
  const r = parseRecipe(raw, source);
  assert.not.ok(r.ok);
  const problems = (r as { problems: string[] }).problems;
  const expected: [string, string][] = [
    ['target.readyTimeout', '900'],
    ['search.probe.duration', '600'],
    ['search.probe.requestTimeout', '45'],
    ['profile.noiseFloor', '0.005'],
    ['slo.fluidity.tbtDeadline', '50'],
    ['slo.ttft.max', '2'],
  ];
  assert.is(problems.length, expected.length, problems.join('\n'));
  for (const [path, n] of expected) {
    const line = problems.find((p) => p.includes(`: ${path} `));
    assert.ok(line, `no problem names ${path}:\n${problems.join('\n')}`);
    assert.ok(line!.includes(`needs a unit: ${n} alone could mean ${n}ms or ${n}s (write "${n}ms" or "${n}s")`), line);
  }
  // 0 is 0 in any unit: ttftSlack 0 passes.
  assert.not.ok(problems.some((p) => p.includes('ttftSlack')), 'a bare 0 needs no unit');
});

test('a resumed run reads its recipe as it started: bare numbers it held stay seconds', () => {
  const raw = { ...minimal(), search: { probe: { requestTimeout: 45 } }, slo: { fluidity: { tbtDeadline: 0.05 }, ttft: { percentile: 90, max: 2 } } };
  assert.not.ok(parseRecipe(raw, source).ok, 'a new run refuses them');
  const r = parseRecipe(raw, source, { storedRun: true });
  if (!r.ok) throw new Error(r.problems.join('\n'));
  assert.is(r.recipe.search.probe.requestTimeoutS, 45);
  assert.is(r.recipe.slo.fluidity?.tbtDeadlineS, 0.05);
  assert.is(r.recipe.slo.ttft?.maxS, 2);
  // Every other problem is still reported.
  const bad = parseRecipe({ ...raw, workload: { seed: -1 } }, source, { storedRun: true });
  assert.not.ok(bad.ok);
  assert.ok(!bad.ok && bad.problems.every((p) => !p.includes('needs a unit')) && bad.problems.some((p) => p.includes('workload')), JSON.stringify(bad));
});

test('durations accept 25ms / 2s / 10m and fractions accept 10% or 0.1', () => {
  const raw = {
    ...minimal(),
    search: { qps: { start: 2, min: 1, max: 8 }, probe: { duration: '10m', requestTimeout: '45s', stallTimeout: '2s', warmup: '25%', clientTolerance: '5ms' } },
    profile: { requestTimeout: '1.5m', noiseFloor: '0ms' },
    slo: { fluidity: { tbtDeadline: '50ms', ttftSlack: '0.3s' }, ttft: { percentile: 90, max: '2s' }, tbt: 'p99 <= 200ms' },
  };
  const r = parseRecipe(raw, source);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  const p = r.recipe.search.probe;
  assert.is(p.durationLimitS, 600);
  assert.is(p.requestTimeoutS, 45);
  assert.is(p.stallTimeoutS, 2);
  assert.is(p.warmupFraction, 0.25);
  assert.is(p.clientToleranceS, 0.005);
  assert.equal(r.recipe.search.qps, { startQps: 2, minQps: 1, maxQps: 8 });
  assert.is(r.recipe.profile.requestTimeoutS, 90);
  assert.is(r.recipe.profile.fitBounds.noiseFloorS, 0);
  assert.is(r.recipe.slo.fluidity?.tbtDeadlineS, 0.05);
  assert.equal(r.recipe.slo.ttft && { p: r.recipe.slo.ttft.percentile, s: r.recipe.slo.ttft.maxS }, { p: 90, s: 2 });
  assert.equal(r.recipe.slo.tbt && { p: r.recipe.slo.tbt.percentile, s: r.recipe.slo.tbt.maxS }, { p: 99, s: 0.2 });
  assert.is(r.recipe.slo.tbt?.source, 'tbt p99 <= 200ms');
});

test('every problem at once, each as `file: path message, got value (type)`', () => {
  const raw = {
    name: 'has space',
    target: { engine: 'sim', model: 'llama-3-8b', gpus: [0, 'one'] },
    workload: { lengths: { preset: 'arxiv-4k' }, arrivals: { process: 'gamma' } },
    profile: { promptLengths: [128, -256], repeats: 0 },
    search: { qps: { start: 100, min: 1, max: 8 }, probe: { warmup: '150%' } },
    slo: { fluidity: { tbtDeadline: '25ms', percentile: 120 } },
  };
  const problems = problemsOf(raw);
  const want: [string, string][] = [
    ['name', '"has space" (string)'],
    ['target.gpus[1]', '"one" (string)'],
    ['workload.arrivals.burstiness', ''],
    ['profile.promptLengths[1]', '-256 (number)'],
    ['profile.repeats', '0 (number)'],
    ['search.qps.start', '100 (number)'],
    ['search.probe.warmup', '"150%" (string)'],
    ['slo.fluidity.percentile', '120 (number)'],
  ];
  for (const [path, value] of want) {
    const line = problems.find((p) => p.startsWith(`recipes/x.yaml: ${path} `));
    assert.ok(line, `no problem for ${path} in:\n${problems.join('\n')}`);
    if (value) assert.ok(line!.endsWith(`got ${value}`), line);
  }
  assert.is(problems.length, want.length, problems.join('\n'));
});

test('search.kneeWarmupMax: a duration, 0s turns the knee warm-up off, a bare word is refused with its path', () => {
  const of = (v: unknown) => parseRecipe({ ...minimal(), search: { kneeWarmupMax: v } }, source);
  const two = of('2.5s');
  assert.ok(two.ok && two.recipe.search.kneeWarmupMax === 2.5);
  const off = of('0s');
  assert.ok(off.ok && off.recipe.search.kneeWarmupMax === 0);
  const bad = problemsOf({ ...minimal(), search: { kneeWarmupMax: 'long' } });
  assert.is(bad.length, 1, bad.join('\n'));
  assert.ok(bad[0].startsWith('recipes/x.yaml: search.kneeWarmupMax ') && bad[0].endsWith('got "long" (string)'), bad[0]);
});

test('min > max names search.qps.max with the bound and the value, as SPEC §3 shows', () => {
  const problems = problemsOf({ ...minimal(), search: { qps: { min: 1, max: 0.5 } } });
  assert.equal(problems, ['recipes/x.yaml: search.qps.max must be > search.qps.min (1), got 0.5 (number)']);
});

test('a missing required field says "is required"; a missing enum says which values it takes', () => {
  const { target, ...noTarget } = minimal();
  void target;
  assert.equal(problemsOf(noTarget), ['recipes/x.yaml: target is required (expected object)']);
  const problems = problemsOf({ ...minimal(), target: { model: 'llama-3-8b' } });
  assert.equal(problems, ['recipes/x.yaml: target.engine is required (one of "sim", "vllm", "sarathi", "llamacpp", "endpoint")']);
});

test('unknown fields: one problem per key, with its full path and value', () => {
  const problems = problemsOf({ ...minimal(), search: { qpsMax: 32, probes: { n: 1 } }, colour: 'red' });
  assert.equal(problems.sort(), [
    'recipes/x.yaml: colour is not a known field, got "red" (string)',
    'recipes/x.yaml: search.probes is not a known field, got {"n":1} (object)',
    'recipes/x.yaml: search.qpsMax is not a known field, got 32 (number)',
  ]);
});

test('engine rules need the whole target: vllm without image, sarathi with maxNumBatchedTokens, sim with endpoint', () => {
  const vllm = problemsOf({ ...minimal(), target: { engine: 'vllm', model: 'meta-llama/Meta-Llama-3-8B' } });
  assert.ok(vllm.some((p) => p.startsWith('recipes/x.yaml: target.image is required for engine vllm')), vllm.join('\n'));
  const sarathi = problemsOf({
    ...minimal(),
    target: { engine: 'sarathi', image: 'vllm/vllm-openai:v0.8.5', model: 'm', engineArgs: { maxNumBatchedTokens: 8192 } },
  });
  assert.ok(sarathi.some((p) => p.includes('target.engineArgs.maxNumBatchedTokens') && p.endsWith('got 8192 (number)')), sarathi.join('\n'));
  const sim = problemsOf({ ...minimal(), target: { ...minimal().target, endpoint: { url: 'http://x:1' } } });
  assert.ok(sim.some((p) => p.startsWith('recipes/x.yaml: target.endpoint is only for engine endpoint')), sim.join('\n'));
});

test('bad durations: text, negative and zero are refused with the duration hint', () => {
  const problems = problemsOf({
    ...minimal(),
    search: { probe: { duration: 'forever', requestTimeout: '-1s', stallTimeout: 0 } },
    slo: { fluidity: { tbtDeadline: '-25ms', ttftSlack: 'x' } },
  });
  for (const path of ['search.probe.duration', 'search.probe.requestTimeout', 'search.probe.stallTimeout', 'slo.fluidity.tbtDeadline', 'slo.fluidity.ttftSlack']) {
    const line = problems.find((p) => p.startsWith(`recipes/x.yaml: ${path} `));
    assert.ok(line, `no problem for ${path}:\n${problems.join('\n')}`);
    assert.match(line!, /duration/);
  }
  assert.ok(problems.some((p) => p.includes('a duration such as 25ms, 2s or 10m')));
});

test('parse never mutates its input and gives the same answer twice', () => {
  const raw = { ...minimal(), search: { qps: { min: 1, max: 4 }, probe: { duration: '2s' } } };
  const before = JSON.stringify(raw);
  const a = parseRecipe(raw, source);
  const b = parseRecipe(raw, source);
  assert.is(JSON.stringify(raw), before);
  assert.equal(a, b);
});

test('formatPath writes paths as YAML users read them', () => {
  assert.is(formatPath(['search', 'qps', 'max']), 'search.qps.max');
  assert.is(formatPath([2], ['profile', 'promptLengths']), 'profile.promptLengths[2]');
  assert.is(formatPath([]), '(top level)');
});

test('every committed recipe under recipes/ and the pipeline test fixtures loads', async () => {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.yaml')) files.push(join(dir, e.name));
    }
  };
  walk(join(ROOT, 'recipes'));
  for (const f of readdirSync(join(ROOT, 'tests', 'fixtures', 'recipes'))) if (f.endsWith('.yaml')) files.push(join(ROOT, 'tests', 'fixtures', 'recipes', f));
  assert.ok(files.length >= 2, files.join(', '));
  for (const file of files) {
    const recipe = await loadRecipe(file);
    assert.is(recipe.source.file, file);
    assert.ok(readFileSync(file, 'utf8').includes(recipe.name), file);
  }
});

test.run();
