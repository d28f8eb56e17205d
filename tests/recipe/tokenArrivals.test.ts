// How a recipe resolves the running-count request and the token-arrival switch: continuous usage
// by default for vLLM-served engines (vllm, sarathi, sim), opt-in for llamacpp and endpoint, an
// explicit search.probe.continuousUsage always winning; search.probe.tokenArrivals engine | visible.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRecipe, type RecipeSource } from '../../harness/recipe/parse.ts';
import { resolveRun } from '../../harness/capacity/resolveRun.ts';
import { continuousUsageDefault } from '../../harness/capacity/runPlan.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { simServeArgvProblems } from '../../harness/sim/serveFlags.ts';

const source: RecipeSource = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };
const base = (probe: Record<string, unknown> = {}, target: Record<string, unknown> = {}) => ({
  name: 'unit',
  target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', ...target },
  workload: { lengths: { preset: 'arxiv-4k' } },
  search: { probe },
  slo: { fluidity: { tbtDeadline: '25ms' } },
});

function plan(raw: unknown) {
  const r = parseRecipe(raw, source);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return resolveRun(r.recipe, 'unit-1');
}

test('continuous usage is asked of vllm, sarathi, sim and endpoint by default, not of llamacpp; the recipe overrides', () => {
  assert.equal(['vllm', 'sarathi', 'sim', 'llamacpp', 'endpoint'].map((e) => continuousUsageDefault(e as never)), [true, true, true, false, true]);
  const sim = plan(base());
  assert.is(sim.probe.continuousUsage, true);
  assert.is(sim.probe.tokenArrivals, 'engine');
  const endpoint = plan(base({}, { engine: 'endpoint', model: undefined, gpuProfile: undefined, endpoint: { url: 'http://127.0.0.1:9' } }));
  assert.is(endpoint.probe.continuousUsage, true);
  assert.is(plan(base({ continuousUsage: false })).probe.continuousUsage, false);
  assert.is(plan(base({ continuousUsage: false }, { engine: 'endpoint', model: undefined, gpuProfile: undefined, endpoint: { url: 'http://127.0.0.1:9' } })).probe.continuousUsage, false);
  assert.is(plan(base({ tokenArrivals: 'visible' })).probe.tokenArrivals, 'visible');
});

test('a bad tokenArrivals is refused naming the field and the value', () => {
  const r = parseRecipe(base({ tokenArrivals: 'text' }), source);
  assert.not.ok(r.ok);
  if (!r.ok) assert.ok(r.problems.some((p) => p.includes('search.probe.tokenArrivals') && p.includes('"text"')), r.problems.join('\n'));
});

test('target.sim.stream vllm becomes sim serve flags; a fraction without it is refused by the flag check', () => {
  const r = parseRecipe(base({}, { sim: { stream: 'vllm', emptyTextFraction: 0.25 } }), source);
  if (!r.ok) throw new Error(r.problems.join('\n'));
  const argv = renderContainerSpec(r.recipe.target, { runId: 'unit-1', recipeFile: 'x.yaml' })!.argv;
  assert.equal(argv.slice(argv.indexOf('--stream'), argv.indexOf('--stream') + 4), ['--stream', 'vllm', '--empty-text-fraction', '0.25']);
  assert.equal(simServeArgvProblems(['--merge-fraction', '0.1']), ['--merge-fraction applies only with --stream vllm, got 0.1 (number) with --stream plain']);
  assert.equal(simServeArgvProblems(['--stream', 'vllm', '--merge-fraction', '0.1']), []);
});

test.run();
