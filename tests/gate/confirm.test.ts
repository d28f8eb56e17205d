// Confirming probes: the candidate's recipe pinned to one rate is still a valid recipe (the loader
// accepts it), searches exactly that rate once, for the budget's length, and keeps everything else.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pinnedRecipe } from '../../harness/gate/confirm.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-confirm-'));

test('the quickstart pinned to 37.99 QPS for 45 s: one probe there, 1710 requests, the rest unchanged', async () => {
  const file = join(ROOT, 'recipes', 'quickstart.yaml');
  const text = pinnedRecipe(readFileSync(file, 'utf8'), file, 37.99, 45);
  const pinned = join(tmp, 'pinned.yaml');
  writeFileSync(pinned, text);
  const recipe = await loadRecipe(pinned);
  const original = await loadRecipe(file);
  assert.is(recipe.search.qps.startQps, 37.99);
  assert.ok(recipe.search.qps.minQps < 37.99 && recipe.search.qps.maxQps > 37.99);
  assert.is(recipe.search.maxProbes, 1);
  assert.is(recipe.search.probe.requests, 1710);
  assert.equal(recipe.slo, original.slo);
  assert.equal(recipe.target, original.target);
  assert.equal(recipe.workload, original.workload);
  assert.is(recipe.name, original.name, 'the same configuration');
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
