// The plan-size fuzzer (scripts/fuzz-plan-sizes.ts) at a CI-sized count: every generated probe,
// profile, matrix and run plan either stays within util/sizeBounds.ts or is refused with a
// UserError; none ends in another error. The full run (10,000 cases) is
// `tsx scripts/fuzz-plan-sizes.ts`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fuzzPlanSizes } from '../../scripts/fuzz-plan-sizes.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { FAST_RECIPE } from '../pipeline/support.ts';

test('500 generated plans from 10^-3 to 10^308: within the bounds or a UserError, under 1 GiB', async () => {
  const recipe = await loadRecipe(FAST_RECIPE);
  const r = fuzzPlanSizes({ cases: 500, seed: Number(process.env.FLUIDCAP_FUZZ_SEED ?? 20261126), recipe });
  assert.is(r.cases, 500);
  assert.equal(r.failures, []);
  assert.ok(r.refused > 50 && r.accepted > 50, `${r.refused} refused, ${r.accepted} accepted: the generator misses one side of the bounds`);
  assert.ok(r.peakRssMiB < 1024, `peak RSS ${r.peakRssMiB} MiB`);
});

test.run();
