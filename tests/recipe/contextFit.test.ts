// A workload whose prompt + output would exceed the model's context is refused unless the recipe
// accepts the cut (workload.lengths.maxTotalTokens within the context): cut without a word, most
// requests of a 256–10000-token workload would sit at a 4096-token cap and the run would measure
// another workload. Presets and Vidur traces keep the cap their paper gives them and still run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseRecipe, type Recipe } from '../../harness/recipe/parse.ts';
import { fileLookups } from '../../harness/recipe/load.ts';
import { lookupProblems } from '../../harness/recipe/lookups.ts';
import { planProblems, planRun } from '../../harness/capacity/runPlan.ts';
import { loadRunRecipe, resolveRun } from '../../harness/capacity/resolveRun.ts';
import { findModel } from '../../harness/catalog/models.ts';
import { planProbe } from '../../harness/load/plan.ts';

const modelContext = (m: string) => findModel(m)?.maxContextTokens ?? null;
const source = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };

function recipe(lengths: unknown, engineArgs: Record<string, unknown> = { maxModelLen: 4096 }, model = 'llama-3-8b'): Recipe {
  const r = parseRecipe(
    { name: 'fit', target: { engine: 'sim', model, gpuProfile: 'h100-sxm-80gb', engineArgs }, workload: { lengths, seed: 7 }, slo: { fluidity: { tbtDeadline: '50ms' } } },
    source,
  );
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.recipe;
}

const WIDE = { prompt: { min: 256, max: 10000 }, output: { min: 32, max: 96 } };

test('prompts of 256–10000 tokens under maxModelLen 4096 are refused, with the share cut and the way to accept it', () => {
  const problems = planProblems(recipe(WIDE), { modelContext });
  assert.is(problems.length, 1, problems.join('\n'));
  const p = problems[0];
  // The share: P(U(256, 10000) + U(32, 96) > 4096) ≈ 61%.
  const pct = Number(/about (\d+)% of requests/.exec(p)?.[1]);
  assert.ok(pct >= 59 && pct <= 63, p);
  assert.match(p, /^recipes\/x\.yaml: workload\.lengths: about \d+% of requests would have prompt \+ output above the 4096-token context \(target\.engineArgs\.maxModelLen\)/);
  assert.match(p, /got prompt 256–10000, output 32–96 tokens/);
  assert.match(p, /accept the cut with workload\.lengths\.maxTotalTokens: 4096/);
  assert.throws(() => planRun(recipe(WIDE), { runId: 'x', modelContext, trace: null }), /workload\.lengths: about/);
});

test("without maxModelLen the catalog's context bounds the workload, and a maxTotalTokens above it does not accept the cut", () => {
  const p = planProblems(recipe({ prompt: { min: 256, max: 10000 }, output: 64 }, {}, 'llama-2-7b'), { modelContext });
  assert.match(p.join('\n'), /above the 4096-token context \(llama-2-7b's context\)/);
  const above = planProblems(recipe({ ...WIDE, maxTotalTokens: 8192 }), { modelContext });
  assert.match(above.join('\n'), /\(workload\.lengths\.maxTotalTokens 8192 is above it\)/);
});

test('accepted cuts and workloads that fit run: an explicit cap, presets, a Vidur trace, lengths within the context', async () => {
  const accepted = recipe({ ...WIDE, maxTotalTokens: 4096 });
  assert.equal(planProblems(accepted, { modelContext }), []);
  // The accepted cap is what the probe sends: nothing above it.
  const plan = planRun(accepted, { runId: 'x', modelContext, trace: null });
  const probe = planProbe({ workload: plan.workload, rateQps: 4, requests: 300, maxContextTokens: plan.maxContextTokens });
  assert.ok(probe.requests.every((r) => r.promptTokens + r.maxTokens <= 4096));
  // Vidur's proportional cut rounds each part up: a cut request ends a token or two below the cap.
  const atCap = probe.requests.filter((r) => r.promptTokens + r.maxTokens > 4090).length;
  assert.ok(atCap > 150 && atCap < 220, `the cut is applied, as accepted: ${atCap} of 300 at the cap`);
  for (const preset of ['arxiv-4k', 'bwb-4k', 'chat-1m']) assert.equal(planProblems(recipe({ preset }, {}, 'llama-2-7b'), { modelContext }), [], preset);
  assert.equal(planProblems(recipe({ prompt: { median: 400, p90: 900, max: 3000 }, output: { min: 16, max: 500 } }), { modelContext }), []);

  // A Vidur-format trace (the Splitwise conversation trace's columns) with rows beyond the context,
  // capped at 4096 as the paper does, under a 2048-token context: cut as Vidur cuts it, not refused.
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-context-fit-'));
  try {
    const rows = [[0, 374, 44], [4.3, 396, 109], [5.1, 3900, 300], [7.7, 1800, 600]];
    writeFileSync(join(dir, 'conv.csv'), ['arrived_at,num_prefill_tokens,num_decode_tokens', ...rows.map((r) => r.join(','))].join('\n') + '\n');
    const file = join(dir, 'trace.yaml');
    writeFileSync(
      file,
      [
        'name: trace-fit',
        'target: { engine: sim, model: llama-3-8b, gpuProfile: h100-sxm-80gb, engineArgs: { maxModelLen: 2048 } }',
        'workload: { lengths: { trace: conv.csv, maxTotalTokens: 4096 } }',
        'slo: { fluidity: { tbtDeadline: 50ms } }',
      ].join('\n'),
    );
    const traced = await loadRunRecipe(file, { hosts: 'unchecked' });
    assert.is(resolveRun(traced, 'trace-fit').trace!.rows, 4);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the full Arxiv-Summarization preset: prompts past 8192 tokens, none cut under the rope-scaled 65536-token context its paper recipes give', async () => {
  // The paper recipe as shipped: the engine is told the stretched context, the plan takes it.
  const shipped = await loadRunRecipe(join(import.meta.dirname, '..', '..', 'recipes', 'papers', 'llama3-8b-h100-vllm-arxiv-sim.yaml'), { hosts: 'unchecked' });
  const plan = planRun(shipped, { runId: 'x', modelContext, trace: null });
  assert.is(plan.maxContextTokens, 65536);
  const probe = planProbe({ workload: plan.workload, rateQps: 1, requests: 3000, maxContextTokens: plan.maxContextTokens });
  // The same draws with no context at all: equal pair for pair means no request was cut.
  const uncut = planProbe({ workload: plan.workload, rateQps: 1, requests: 3000, maxContextTokens: 1 << 24 });
  assert.equal(probe.requests.map((r) => [r.promptTokens, r.maxTokens]), uncut.requests.map((r) => [r.promptTokens, r.maxTokens]));
  const prompts = probe.requests.map((r) => r.promptTokens).sort((a, b) => a - b);
  const past8k = prompts.filter((p) => p > 8192).length / prompts.length;
  // Lognormal through median 7827 and p90 18549: about 48% of prompts lie past 8192 tokens.
  assert.ok(past8k > 0.42 && past8k < 0.54, `share of prompts past 8192: ${past8k}`);
  assert.ok(prompts.at(-1)! > 32768, `the longest prompt ${prompts.at(-1)} reaches past four times Llama-3's context`);
  assert.ok(probe.requests.every((r) => r.promptTokens + r.maxTokens <= 65536));

  // Without the stretched context the preset is refused, naming what to set; with rope scaling alone
  // (no maxModelLen) the context is the catalog's 8192 × the factor.
  const short = planProblems(recipe({ preset: 'arxiv-summarization' }, {}), { modelContext });
  assert.is(short.length, 1, short.join('\n'));
  assert.match(short[0], /^recipes\/x\.yaml: workload\.lengths\.preset arxiv-summarization draws prompt \+ output up to 65536 tokens, above the 8192-token context \(llama-3-8b's context\)/);
  assert.match(short[0], /set target\.engineArgs\.maxModelLen: 65536 \(with target\.engineArgs\.ropeScaling/);
  assert.equal(planProblems(recipe({ preset: 'arxiv-summarization' }, { ropeScaling: { factor: 8 } }), { modelContext }), []);
  const four = planProblems(recipe({ preset: 'arxiv-summarization' }, { ropeScaling: { factor: 4 } }), { modelContext });
  assert.match(four.join('\n'), /above the 32768-token context \(llama-3-8b's context × target\.engineArgs\.ropeScaling\.factor 4\)/);
});

test('rope scaling stretches the bound on maxModelLen; without it a maxModelLen past the trained context is refused', () => {
  const raw = (engineArgs: object) => ({ name: 'x', target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', engineArgs }, workload: { lengths: { preset: 'arxiv-summarization' } } });
  const lookups = fileLookups('/nowhere');
  assert.equal(lookupProblems(raw({ maxModelLen: 65536 }), 'recipes/x.yaml', lookups), [
    "recipes/x.yaml: target.engineArgs.maxModelLen must be <= llama-3-8b's context of 8192 tokens (target.engineArgs.ropeScaling stretches it), got 65536 (number)",
  ]);
  assert.equal(lookupProblems(raw({ maxModelLen: 65536, ropeScaling: { factor: 8 } }), 'recipes/x.yaml', lookups), []);
  assert.match(lookupProblems(raw({ maxModelLen: 65537, ropeScaling: { factor: 8 } }), 'recipes/x.yaml', lookups).join('\n'), /8192 tokens × target\.engineArgs\.ropeScaling\.factor 8 = 65536, got 65537/);
  const llama = parseRecipe(
    { name: 'x', target: { engine: 'llamacpp', model: 'llama-3-8b', llamacpp: { modelFile: '/m.gguf' }, engineArgs: { ropeScaling: { factor: 2 } } }, workload: { lengths: { preset: 'chat-1m' } }, slo: { fluidity: { tbtDeadline: '50ms' } } },
    source,
  );
  assert.match((llama as { problems: string[] }).problems.join('\n'), /target\.engineArgs\.ropeScaling.*is only for engines vllm, sarathi and sim/);
});

test.run();
