// The sweep plan: every configuration validated by the recipe parser and the run planner before
// anything starts (each problem naming the sweep file, the configuration, the field and the value),
// GPU ids chosen by the placement, and the dry-run listing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { parseSweep } from '../../harness/sweep/sweepFile.ts';
import { describeSweepPlan, planSweep, type SweepPlanDeps } from '../../harness/sweep/plan.ts';
import { findModel } from '../../harness/catalog/models.ts';

const BASE = `name: base
target:
  engine: vllm
  image: vllm/vllm-openai:v0.8.5
  model: meta-llama/Meta-Llama-3-8B
  host: h100
  gpus: [0]
  gpuProfile: h100-sxm-80gb
  engineArgs: { maxNumSeqs: 256, maxModelLen: 4096 }
workload:
  lengths: { preset: arxiv-4k }
  arrivals: { process: poisson }
  seed: 1
slo:
  fluidity: { tbtDeadline: 25ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }
`;

const deps: SweepPlanDeps = {
  hostsOf: (n) => ({ h100: ['gpu1', 'gpu2'], gpu1: ['gpu1'] } as Record<string, string[]>)[n] ?? (() => { throw new Error(`target.host must name a host or group, got "${n}"`); })(),
  modelContext: (m) => findModel(m)?.maxContextTokens ?? null,
  gpuProfiles: ['h100-sxm-80gb', 'a100-sxm-80gb'],
  fileExists: () => true,
};

function sweep(body: Record<string, unknown>) {
  const r = parseSweep({ recipe: 'base.yaml', ...body }, '/srv/s.yaml');
  if (!r.ok) throw new Error(r.problems.join('\n'));
  return r.sweep;
}

test('tensor parallelism × batch over a group with 8 GPUs per host: GPU ids, hosts and ports chosen, recipes valid', () => {
  const r = planSweep(sweep({ matrix: { tensorParallel: [1, 2], maxNumSeqs: [128, 256] }, gpusPerHost: 8, ports: { base: 8100 } }), BASE, deps);
  assert.ok(r.ok, r.ok ? '' : r.problems.join('\n'));
  if (!r.ok) return;
  const runs = r.plan.runs;
  assert.is(runs.length, 4);
  for (const run of runs) {
    const doc = parse(run.recipeText);
    assert.is(doc.target.gpus.length, doc.target.tensorParallel, run.config.id);
    assert.is(doc.target.host, run.placement.host);
    assert.is(doc.target.port, run.placement.port);
    assert.is(run.recipe.name, `base-${run.config.id}`);
  }
  assert.equal(runs.map((x) => x.placement.host), ['gpu1', 'gpu2', 'gpu1', 'gpu2']);
  assert.is(r.plan.parallel, 4);
  const text = describeSweepPlan(r.plan);
  assert.match(text, /^sweep s: 4 runs on 4 GPU sets, at most 4 at once\n/);
  assert.match(text, /c03-tensorParallel2-maxNumSeqs128 +tensorParallel=2 maxNumSeqs=128 +gpu1 +2,3 +810\d/);
});

test('every configuration\'s problems at once, each naming the sweep file, the configuration, the field and the value', () => {
  const r = planSweep(sweep({ matrix: { maxNumSeqs: [0, 64], gpuProfile: ['h100-sxm-80gb', 'b200'] } }), BASE, deps);
  assert.not.ok(r.ok);
  if (r.ok) return;
  const all = r.problems.join('\n');
  assert.match(all, /\/srv\/s\.yaml \[c01-maxNumSeqs0-gpuProfileh100_sxm_80gb: maxNumSeqs=0 gpuProfile=h100-sxm-80gb\]: target\.engineArgs\.maxNumSeqs must be .*got 0 \(number\)/);
  assert.match(all, /\[c02-maxNumSeqs0-gpuProfileb200: maxNumSeqs=0 gpuProfile=b200\]: target\.engineArgs\.maxNumSeqs/);
  // the GPU profile is checked once the parser passes: config 4 (64 seqs, b200)
  assert.match(all, /\[c04-maxNumSeqs64-gpuProfileb200: maxNumSeqs=64 gpuProfile=b200\]: target\.gpuProfile must name a profile in gpu-profiles\/ \(h100-sxm-80gb, a100-sxm-80gb\), got "b200" \(string\)/);
  assert.not.match(all, /c03-/);
});

test('without gpusPerHost a run keeps its recipe\'s GPU ids, so vLLM\'s GPU count must match TP there', () => {
  const r = planSweep(sweep({ matrix: { tensorParallel: [1, 2] } }), BASE, deps);
  assert.not.ok(r.ok);
  if (!r.ok) assert.match(r.problems.join('\n'), /\[c02-tensorParallel2: tensorParallel=2\]: target\.gpus must list exactly tensorParallel \(2\) GPU ids, got \[0\]/);
});

test('the planner\'s own checks run too: a simulated model missing from the catalog; an unknown host', () => {
  const sim = BASE.replace('engine: vllm', 'engine: sim').replace(/  image: .*\n/, '');
  const r = planSweep(sweep({ matrix: { model: ['llama-3-8b', 'no-such-model'] } }), sim, deps);
  assert.not.ok(r.ok);
  if (!r.ok) assert.equal(r.problems, ['/srv/s.yaml [c02-modelno_such_model: model=no-such-model]: target.model must name a model of the simulated engine\'s catalog (llama-2-7b, llama-3-8b, llama-2-70b, llama-3-70b, tiny), got "no-such-model" (string)']);
  const h = planSweep(sweep({ matrix: { host: ['gpu1', 'gpu9'] } }), BASE, deps);
  assert.not.ok(h.ok);
  if (!h.ok) assert.equal(h.problems, ['/srv/s.yaml: c02-hostgpu9: target.host must name a host or group, got "gpu9"']);
});

test('one pass over every configuration: schema, catalog and units together; a resumed sweep reads bare seconds as it started', () => {
  const bare = BASE.replace('tbtDeadline: 25ms', 'tbtDeadline: 0.025').replace('gpuProfile: h100-sxm-80gb', 'gpuProfile: h800');
  const r = planSweep(sweep({ matrix: { maxNumSeqs: [128, -1] } }), bare, deps);
  assert.not.ok(r.ok);
  const all = r.ok ? '' : r.problems.join('\n');
  assert.match(all, /\[c01-maxNumSeqs128: maxNumSeqs=128\]: slo\.fluidity\.tbtDeadline needs a unit: 0\.025 alone could mean 0\.025ms or 0\.025s/);
  assert.match(all, /\[c02-maxNumSeqs_1: maxNumSeqs=-1\]: target\.engineArgs\.maxNumSeqs /);
  assert.match(all, /\[c02-maxNumSeqs_1: maxNumSeqs=-1\]: target\.gpuProfile must name a profile in gpu-profiles\//);
  const resumed = planSweep(sweep({ matrix: { maxNumSeqs: [128, 256] } }), BASE.replace('tbtDeadline: 25ms', 'tbtDeadline: 0.025'), { ...deps, storedRun: true });
  assert.ok(resumed.ok, resumed.ok ? '' : resumed.problems.join('\n'));
  if (resumed.ok) assert.is(resumed.plan.runs[0].recipe.slo.fluidity?.tbtDeadlineS, 0.025);
});

test('an exclude that leaves nothing is refused', () => {
  const r = planSweep(sweep({ matrix: { maxNumSeqs: [64] }, exclude: [{ maxNumSeqs: 64 }] }), BASE, deps);
  assert.equal(r, { ok: false, problems: ['/srv/s.yaml: exclude leaves no configuration of the matrix to run'] });
});

test('a base recipe that is a scalar or a list, or whose target is a scalar or list, is a problem naming it, not a crash', () => {
  const s = sweep({ matrix: { maxNumSeqs: [64, 128] } });
  const problems = (base: string) => {
    const r = planSweep(s, base, deps);
    assert.not.ok(r.ok, base);
    return r.ok ? [] : r.problems;
  };
  assert.equal(problems('5\n'), ['/srv/base.yaml: a base recipe must be a mapping of fields (name, target, workload, …), got 5 (number)']);
  assert.equal(problems('[1, 2]\n'), ['/srv/base.yaml: a base recipe must be a mapping of fields (name, target, workload, …), got [1,2] (array)']);
  assert.equal(problems('name: x\ntarget: 5\n'), ['/srv/base.yaml: target must be a mapping (the sweep sets target.engineArgs.maxNumSeqs in it), got 5 (number)']);
  assert.equal(problems(BASE.replace(/engineArgs:.*$/m, 'engineArgs: [1]')), ['/srv/base.yaml: target.engineArgs must be a mapping (the sweep sets target.engineArgs.maxNumSeqs in it), got [1] (array)']);
});

test.run();
