// Every vLLM launch the repository describes, checked against vLLM's own option and variable
// tables: the argv and environment of every recipe (recipes/**), every configuration of every
// sweep (sweeps/*.yaml, expanded) and the README's example recipe, compared with
// ../shared/engines/flags/vllm-0.8.5.json or vllm-newest.json by image tag (reference data
// extracted from vLLM's source; skipped with a message when ../shared is absent). Beside it, what
// those recipes ask must be what runs: vLLM's prefill-first scheduler pinned to V0 on 0.8.5, a
// gated model given a token, a token budget vLLM accepts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { parseDocument } from 'yaml';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { parseRecipe, type Recipe } from '../../harness/recipe/parse.ts';
import { launchProblems } from '../../harness/recipe/launchChecks.ts';
import { loadSweepPlan } from '../../harness/sweep/runSweep.ts';
import { planRun } from '../../harness/capacity/runPlan.ts';
import { findModel } from '../../harness/catalog/models.ts';
import { forVersion, type ContainerSpec } from '../../harness/provision/containerSpec.ts';
import { versionFromTag } from '../../harness/provision/engineVersion.ts';
import { UserError } from '../../harness/util/errors.ts';
import { fluidcap } from '../pipeline/support.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const FLAGS_DIR = resolve(ROOT, '..', 'shared', 'engines', 'flags');

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? yamlFiles(join(dir, e.name)) : e.name.endsWith('.yaml') ? [join(dir, e.name)] : [],
  );
}

/** The README's example recipe: the yaml block under "## A recipe". */
export function readmeRecipe(): Recipe {
  const text = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const section = text.slice(text.indexOf('## A recipe'));
  const block = /```yaml\n([\s\S]*?)```/.exec(section)![1];
  const r = parseRecipe(parseDocument(block).toJS(), { file: 'README.md', dir: ROOT, sloText: {} });
  if (!r.ok) throw new Error(`README.md's example recipe: ${r.problems.join('; ')}`);
  return r.recipe;
}

const specOf = (recipe: Recipe): ContainerSpec | null => {
  const plan = planRun(recipe, { runId: 'check', modelContext: (m) => findModel(m)?.maxContextTokens ?? null, trace: null });
  return plan.engine.kind === 'container' ? plan.engine.spec : null;
};

/** Every vLLM (engine vllm or sarathi) container the repository describes, by where it is written. */
async function vllmLaunches(): Promise<{ where: string; recipe: Recipe; spec: ContainerSpec }[]> {
  const out: { where: string; recipe: Recipe; spec: ContainerSpec }[] = [];
  const add = (where: string, recipe: Recipe) => {
    if (recipe.target.engine !== 'vllm' && recipe.target.engine !== 'sarathi') return;
    out.push({ where, recipe, spec: specOf(recipe)! });
  };
  for (const file of yamlFiles(join(ROOT, 'recipes'))) add(relative(ROOT, file), await loadRecipe(file));
  for (const file of readdirSync(join(ROOT, 'sweeps')).filter((f) => f.endsWith('.yaml'))) {
    const text = readFileSync(join(ROOT, 'sweeps', file), 'utf8');
    if (!/^recipe:/m.test(text)) continue; // a base recipe: checked through its sweep
    const { plan } = await loadSweepPlan(join(ROOT, 'sweeps', file), (name) => [name]);
    for (const run of plan.runs) add(`sweeps/${file} ${run.config.id}`, run.recipe);
  }
  add('README.md', readmeRecipe());
  return out;
}

interface Reference {
  file: string;
  flags: Map<string, { takesValue: boolean | 'optional'; choices: unknown[] | null }>;
  env: Set<string>;
}

function loadReference(file: string): Reference {
  const data = JSON.parse(readFileSync(join(FLAGS_DIR, file), 'utf8')) as {
    flags: { name: string; aliases: string[]; negatable: boolean; takesValue: boolean | 'optional'; choices: unknown[] | null; positional?: boolean }[];
    env: { name: string }[];
  };
  const flags: Reference['flags'] = new Map();
  for (const f of data.flags) {
    if (f.positional) continue;
    for (const n of [f.name, ...f.aliases]) flags.set(n, { takesValue: f.takesValue, choices: f.choices });
    if (f.negatable) flags.set(`--no-${f.name.slice(2)}`, { takesValue: false, choices: null });
  }
  return { file, flags, env: new Set(data.env.map((e) => e.name)) };
}

/** What vLLM's parser at that reference would refuse in an argv and environment. */
function referenceProblems(ref: Reference, spec: ContainerSpec): string[] {
  const problems: string[] = [];
  for (let i = 0; i < spec.argv.length; i++) {
    const [flag, inline] = spec.argv[i].split(/=(.*)/s, 2);
    if (!flag.startsWith('-')) {
      problems.push(`unexpected argument ${spec.argv[i]}`);
      continue;
    }
    const known = ref.flags.get(flag.replace(/_/g, '-'));
    if (!known) {
      problems.push(`${flag} is not a flag of ${ref.file}`);
      continue;
    }
    if (known.takesValue === true && inline === undefined) {
      const value = spec.argv[++i];
      if (value === undefined) problems.push(`${flag} needs a value`);
      else if (known.choices && !known.choices.map(String).includes(value)) problems.push(`${flag} ${value}: not one of ${known.choices.join(', ')}`);
    }
  }
  for (const name of Object.keys(spec.env)) if (name.startsWith('VLLM_') && !ref.env.has(name)) problems.push(`${name} is not a variable of ${ref.file}`);
  return problems;
}

const referenceFor = (image: string) => (versionFromTag(image)?.startsWith('0.8.') ? 'vllm-0.8.5.json' : 'vllm-newest.json');

test('every vLLM argv and environment of the recipes, sweeps and README parses as vLLM at its image tag would parse it', async () => {
  if (!existsSync(FLAGS_DIR)) {
    console.log(`  SKIP vLLM reference check: ${FLAGS_DIR} is absent (the engines' flag tables live beside the repository)`);
    return;
  }
  const launches = await vllmLaunches();
  const wheres = launches.map((l) => l.where);
  assert.ok(wheres.includes('README.md') && wheres.some((w) => w.startsWith('sweeps/cluster-vllm.yaml')) && wheres.includes('recipes/papers/llama3-8b-h100-vllm.yaml'), wheres.join(', '));
  const refs = new Map(['vllm-0.8.5.json', 'vllm-newest.json'].map((f) => [f, loadReference(f)]));
  const problems = launches.flatMap(({ where, spec }) => referenceProblems(refs.get(referenceFor(spec.image))!, spec).map((p) => `${where}: ${p}`));
  assert.equal(problems, []);
  // The same launches on the newest image: chunked prefill runs (once the V0 pin is gone); the prefill-first baseline is refused.
  for (const { where, recipe, spec } of launches) {
    const newest = { ...spec, image: 'vllm/vllm-openai:v0.26.0', env: Object.fromEntries(Object.entries(spec.env).filter(([k]) => k !== 'VLLM_USE_V1')) };
    if (recipe.target.engine === 'sarathi') {
      assert.equal(referenceProblems(refs.get('vllm-newest.json')!, forVersion(newest, { version: '0.26.0', source: 'tag' })), [], where);
    } else {
      assert.throws(() => forVersion(newest, { version: '0.26.0', source: 'tag' }), /closest policy it has is chunked prefill/, where);
    }
  }
});

test('the reference check catches what vLLM would refuse', () => {
  if (!existsSync(FLAGS_DIR)) return;
  const ref = loadReference('vllm-newest.json');
  const spec = { argv: ['--disable-log-requests', '--dtype', 'nonsense', '--max-num-seqs'], env: { VLLM_USE_V1: '0' } } as unknown as ContainerSpec;
  const problems = referenceProblems(ref, spec);
  assert.equal(problems.map((p) => p.split(':')[0].split(' ')[0]), ['--disable-log-requests', '--dtype', '--max-num-seqs', 'VLLM_USE_V1']);
});

test("vLLM's prefill-first baseline on 0.8.5 runs on V0 (VLLM_USE_V1=0, whole prompts) in the README, the cluster sweep and the papers' recipes", async () => {
  const launches = (await vllmLaunches()).filter((l) => l.recipe.target.engine === 'vllm');
  assert.ok(launches.length >= 5, `${launches.length} launches`);
  for (const { where, spec } of launches) {
    assert.is(spec.env.VLLM_USE_V1, '0', `${where}: V1 (0.8's default) would chunk every prefill`);
    assert.ok(spec.argv.includes('--no-enable-chunked-prefill'), where);
    assert.ok(spec.argv.includes('--disable-log-requests'), `${where}: 0.8.5 logs every prompt otherwise`);
    assert.is(spec.basis.versionSource, 'tag');
  }
});

test('the README example and the cluster sweep pass a Hugging Face token for the gated Llama-3-8B; a recipe without one is refused (a warning at --dry-run)', async () => {
  assert.equal(launchProblems(readmeRecipe(), { HF_TOKEN: 'hf_x' }), []);
  const base = await loadRecipe(join(ROOT, 'sweeps', 'cluster-base.yaml'), { env: { HF_TOKEN: 'hf_x' } });
  assert.equal(base.target.secrets, { HF_TOKEN: 'HF_TOKEN' });

  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-gated-'));
  const file = join(dir, 'no-token.yaml');
  writeFileSync(file, readFileSync(join(ROOT, 'sweeps', 'cluster-base.yaml'), 'utf8').replace(/^ {2}secrets:.*\n/m, '').replace('host: h100', 'host: local'));
  const refused = await loadRecipe(file, { env: {} }).then(() => null, (e: Error) => e);
  assert.ok(refused instanceof UserError);
  assert.match(refused.message, /no-token\.yaml: target\.secrets must pass a Hugging Face token .* for the gated model "meta-llama\/Meta-Llama-3-8B" \(string\)/);
  const warnings: string[] = [];
  await loadRecipe(file, { onWarning: (w) => warnings.push(w) });
  assert.is(warnings.length, 1);
  assert.match(warnings[0], /gated model .* \(a run refuses this\)$/);

  const dry = await fluidcap(['run', file, '--dry-run'], { timeoutMs: 60_000 });
  assert.is(dry.code, 0, dry.stderr);
  assert.match(dry.stderr, /fluidcap: warning: .*target\.secrets must pass a Hugging Face token/);
  assert.match(dry.stdout, /# engine version: vLLM 0\.8\.5 \(from the image tag\); the launch reads it from the image/);
  assert.match(dry.stdout, /-e VLLM_USE_V1=0 .*--no-enable-chunked-prefill .*--disable-log-requests/);
});

test("a token budget below maxNumSeqs is refused (vLLM would not start), naming the field and the value", () => {
  const target = (engine: string, engineArgs: Record<string, unknown>) => ({
    name: 'x', target: { engine, image: 'vllm/vllm-openai:v0.8.5', model: 'tiny', engineArgs },
    workload: { lengths: { prompt: { dist: 'fixed', tokens: 8 }, output: { dist: 'fixed', tokens: 8 } } }, slo: { ttft: { percentile: 90, max: '2s' } },
  });
  const problems = (engine: string, engineArgs: Record<string, unknown>) => {
    const r = parseRecipe(target(engine, engineArgs), { file: 'r.yaml', dir: ROOT, sloText: {} });
    return r.ok ? [] : r.problems;
  };
  assert.equal(problems('sarathi', { maxNumSeqs: 256, chunkSize: 128 }), [
    'r.yaml: target.engineArgs.chunkSize must be >= engineArgs.maxNumSeqs (256): vLLM refuses to start when max_num_batched_tokens (the chunk) is below max_num_seqs, got 128 (number)',
  ]);
  assert.equal(problems('sarathi', { maxNumSeqs: 1024 }), [
    'r.yaml: target.engineArgs.chunkSize must be >= engineArgs.maxNumSeqs (1024): vLLM refuses to start when max_num_batched_tokens (the chunk) is below max_num_seqs (the chunk defaults to 512)',
  ]);
  assert.equal(problems('vllm', { maxNumSeqs: 256, maxNumBatchedTokens: 128 }), [
    'r.yaml: target.engineArgs.maxNumBatchedTokens must be >= engineArgs.maxNumSeqs (256): vLLM refuses to start when max_num_batched_tokens is below max_num_seqs, got 128 (number)',
  ]);
  assert.equal(problems('sarathi', { maxNumSeqs: 256, chunkSize: 256 }), []);
});

test.run();
