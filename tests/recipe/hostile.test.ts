// Hostile and careless recipes: every problem found while parsing, before a results directory
// exists, with the recipe's own wording and a bounded quote of the bad value.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseRecipe, type RecipeSource } from '../../harness/recipe/parse.ts';

const source: RecipeSource = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };

const minimal = (over: { target?: Record<string, unknown>; [k: string]: unknown } = {}) => ({
  name: 'unit',
  workload: { lengths: { preset: 'arxiv-4k' } },
  slo: { fluidity: { tbtDeadline: '25ms' } },
  ...over,
  target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', ...over.target },
});

function problemsOf(raw: unknown): string[] {
  const r = parseRecipe(raw, source);
  assert.not.ok(r.ok, 'expected the recipe to be refused');
  return r.ok ? [] : r.problems;
}

const TIMER = 'must be a duration of at most 2147483.647s (about 24.8 days, the longest timer Node can set)';

test('durations that overflow a timer, infinities and sub-microsecond deadlines are refused', () => {
  assert.equal(problemsOf(minimal({ target: { readyTimeout: '1000h' } })), [`recipes/x.yaml: target.readyTimeout ${TIMER}, got "1000h" (string)`]);
  assert.equal(problemsOf(minimal({ target: { readyTimeout: '1e309s' } })), [`recipes/x.yaml: target.readyTimeout ${TIMER}, got "1e309s" (string)`]);
  assert.equal(problemsOf(minimal({ search: { probe: { duration: 1e309 } } })), ["recipes/x.yaml: search.probe.duration must be a duration such as 25ms, 2s or 10m, got Infinity (number)"]);
  assert.equal(problemsOf(minimal({ profile: { noiseFloor: '1e-320s' } })), ['recipes/x.yaml: profile.noiseFloor must be a duration of 0 or at least 1us, got "1e-320s" (string)']);
  const slo = problemsOf(minimal({ slo: { fluidity: { tbtDeadline: '1e-320' } } }));
  assert.is(slo.length, 1);
  assert.match(slo[0], /^recipes\/x\.yaml: slo\.fluidity\.tbtDeadline must be a duration/);
  assert.ok(parseRecipe(minimal({ target: { readyTimeout: '596h' } }), source).ok, '596 h still fits a timer');
});

test.run();
