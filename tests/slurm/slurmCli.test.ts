// Slurm's command line: the argv fluidcap sends (quoted word by word over SSH) and the parsers,
// read against outputs captured from a real Slurm 22.05 (tests/slurm/fixtures, from the node
// scripts/ci/setup-slurm.sh declares: 4 GPUs of type h100, feature h100).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { parseInventory, type SlurmSettings } from '../../harness/provision/inventory.ts';
import {
  expandNodeList, expandRanges, gpuFlags, isUnknownJob, parseGres, parseSbatch, parseScontrolJob, parseSinfoNodes, parseSqueue,
  sbatchArgv, scancelArgv, secondsBetween, sinfoNodesArgv, squeueArgv, srunPrefix,
} from '../../harness/slurm/slurmCli.ts';
import { shellJoin } from '../../harness/util/shellQuote.ts';

const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');
const settings = (over: Partial<SlurmSettings> = {}): SlurmSettings => ({ partition: 'gpu', timeLimit: '02:00:00', gpuRequest: 'gres', maxConcurrent: 1, nodeSshPort: 22, ...over });

test('sbatch: a held sleeping job with partition, account, qos, time, GPUs and constraint as separate words', () => {
  const argv = sbatchArgv(settings({ account: 'lab-llm', qos: 'normal', gpuType: 'h100', constraint: 'h100&nvlink' }), { jobName: 'fluidcap sweep/c01;rm', gpus: 2 });
  assert.equal(argv, [
    'sbatch', '--parsable', '--job-name=fluidcap-sweep-c01-rm', '--partition=gpu', '--account=lab-llm', '--qos=normal', '--time=02:00:00',
    '--gres=gpu:h100:2', '--constraint=h100&nvlink', '--nodes=1', '--ntasks=1', '--output=/dev/null', '--wrap=exec sleep infinity',
  ]);
  // Over SSH the words are quoted: the & of the constraint and the wrap's spaces stay inside their words.
  assert.match(shellJoin(argv), / '--constraint=h100&nvlink' .* '--wrap=exec sleep infinity'$/);
});

test('GPU request styles: --gres=gpu[:type]:N, --gpus=[type:]N, nothing for no GPU', () => {
  assert.equal(gpuFlags(settings(), 4), ['--gres=gpu:4']);
  assert.equal(gpuFlags(settings({ gpuRequest: 'gpus' }), 1), ['--gpus=1']);
  assert.equal(gpuFlags(settings({ gpuRequest: 'gpus', gpuType: 'a100' }), 2), ['--gpus=a100:2']);
  assert.equal(gpuFlags(settings(), 0), []);
  assert.not.ok(sbatchArgv(settings(), { jobName: 'x', gpus: 1 }).some((w) => w.startsWith('--account') || w.startsWith('--qos') || w.startsWith('--constraint')));
});

test('squeue, scancel, srun and sinfo argv', () => {
  assert.equal(squeueArgv('42'), ['squeue', '--noheader', '--jobs=42', '--format=%i|%T|%N|%r|%V|%S']);
  assert.equal(scancelArgv(['42', '43']), ['scancel', '42', '43']);
  assert.equal(srunPrefix('42'), ['srun', '--jobid=42', '--overlap', '--nodes=1', '--ntasks=1']);
  assert.equal(sinfoNodesArgv('gpu').slice(0, 4), ['sinfo', '--noheader', '--Node', '--partition=gpu']);
});

test('sbatch --parsable: the job id, with or without a cluster name; anything else is null', () => {
  assert.is(parseSbatch(fixture('sbatch-parsable.txt')), '4');
  assert.is(parseSbatch('1234;cluster2\n'), '1234');
  assert.is(parseSbatch('sbatch: error: Batch job submission failed: Invalid partition name specified'), null);
});

test('squeue: a running job with its node and a pending one held for Resources', () => {
  const [pending, running] = parseSqueue(fixture('squeue-two-jobs.txt'));
  assert.equal(pending, { jobId: '5', state: 'PENDING', nodes: '', reason: 'Resources', submitTime: '2026-11-26T10:39:24', startTime: null });
  assert.equal(running, { jobId: '4', state: 'RUNNING', nodes: 'vm', reason: 'None', submitTime: '2026-11-26T10:39:24', startTime: '2026-11-26T10:39:25' });
  assert.equal(parseSqueue(fixture('squeue-completing.txt')), []);
  assert.ok(isUnknownJob(fixture('squeue-unknown-job.stderr.txt')));
  assert.not.ok(isUnknownJob('squeue: error: Unable to contact slurm controller'));
});

test('scontrol show job: state, node, times and the GPU indices of a running job; a pending one has no node', () => {
  const run = parseScontrolJob(fixture('scontrol-show-job-running.txt'))!;
  assert.equal(run, { jobId: '4', state: 'RUNNING', reason: 'None', nodes: ['vm'], submitTime: '2026-11-26T10:39:24', startTime: '2026-11-26T10:39:25', gpuIndices: [0, 1] });
  assert.is(secondsBetween(run.submitTime, run.startTime), 1);
  const pend = parseScontrolJob(fixture('scontrol-show-job-pending.txt'))!;
  assert.equal([pend.state, pend.reason, pend.nodes, pend.startTime, pend.gpuIndices], ['PENDING', 'Resources', [], null, []]);
  assert.is(parseScontrolJob('slurm_load_jobs error: Invalid job id specified'), null);
});

test('node lists and index ranges expand as Slurm compresses them', () => {
  assert.equal(expandNodeList('gpu[07-08,10],login1'), ['gpu07', 'gpu08', 'gpu10', 'login1']);
  assert.equal(expandNodeList('(null)'), []);
  assert.equal(expandRanges('0-1,3'), [0, 1, 3]);
});

test('sinfo: partitions, GPU types by gres, GPUs in use and whether a node takes work', () => {
  const [n] = parseSinfoNodes(fixture('sinfo-nodes.txt'));
  assert.equal(n, { node: 'vm', partition: 'fluidcap', defaultPartition: true, state: 'mixed', gpus: { h100: 4 }, gpusUsed: 2, features: ['h100'], free: true });
  const full = parseSinfoNodes('a01|gpu|allocated|gpu:a100:8(S:0-1)|gpu:a100:8(IDX:0-7)|a100,nvlink|64/0/0/64\nb01|gpu|drained|gpu:2|gpu:0|(null)|0/8/0/8\n');
  assert.equal(full.map((x) => [x.node, x.gpus, x.gpusUsed, x.features, x.free]), [['a01', { a100: 8 }, 8, ['a100', 'nvlink'], false], ['b01', { gpu: 2 }, 0, [], false]]);
  assert.equal(parseGres('gpu:h100:4(S:0-1),gpu:a100:2,shard:8'), { h100: 4, a100: 2 });
});

test('inventory: a slurm entry takes its defaults; every wrong field is named with its value', () => {
  const base = { name: 'cluster', kind: 'slurm', address: 'login.example.edu', user: 'alice', key: '/k' };
  const ok = parseInventory({ hosts: [{ ...base, slurm: { partition: 'gpu', timeLimit: '1-00:00:00', constraint: 'h100' } }] }, 'inv.yaml');
  assert.ok(ok.ok);
  if (ok.ok) assert.equal(ok.inventory.hosts[0].slurm, { partition: 'gpu', timeLimit: '1-00:00:00', constraint: 'h100', gpuRequest: 'gres', maxConcurrent: 1, nodeSshPort: 22 });
  const bad = parseInventory({
    hosts: [
      { ...base, slurm: { partition: 'gpu; rm -rf ~', timeLimit: 'two hours', gpuRequest: 'gpu', constraint: 'h100 && a100', maxConcurrent: 0 } },
      { ...base, name: 'c2' },
      { ...base, name: 'c3', kind: undefined, slurm: { partition: 'gpu', timeLimit: '60' } },
    ],
  }, 'inv.yaml');
  assert.not.ok(bad.ok);
  if (bad.ok) return;
  const text = bad.problems.join('\n');
  assert.match(text, 'inv.yaml: hosts[cluster].slurm.partition must be letters, digits, ".", "_" or "-", got "gpu; rm -rf ~"');
  assert.match(text, 'hosts[cluster].slurm.timeLimit must be a Slurm time limit');
  assert.match(text, 'hosts[cluster].slurm.gpuRequest must be one of "gres", "gpus", got "gpu"');
  assert.match(text, 'hosts[cluster].slurm.constraint must be node features joined by & or |');
  assert.match(text, 'hosts[cluster].slurm.maxConcurrent must be at least 1, got 0');
  assert.match(text, 'hosts[c2].slurm must be set for kind: slurm');
  assert.match(text, 'hosts[c3].kind must be slurm when the host has a slurm section');
});


test('inside an allocation a container takes the GPUs Slurm gave the job; a process step and a count that differs keep the recipe', async () => {
  const { recipeInAllocation } = await import('../../harness/capacity/runPlan.ts');
  const { parseRecipe } = await import('../../harness/recipe/parse.ts');
  const parsed = (target: Record<string, unknown>) => {
    const raw = { name: 'x', workload: { lengths: { preset: 'arxiv-4k' } }, slo: { fluidity: { tbtDeadline: '25ms' } }, target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', gpus: [0, 1], ...target } };
    const p = parseRecipe(raw, { file: 'x.yaml', dir: '/nowhere', sloText: {} });
    if (!p.ok) throw new Error(p.problems.join('\n'));
    return p.recipe;
  };
  const recipe = parsed({ image: 'fluidcap/sim:dev' });
  assert.equal(recipeInAllocation(recipe, [2, 3]).target.gpus, [2, 3]);
  assert.equal(recipe.target.gpus, [0, 1], 'the recipe itself is not changed');
  assert.equal(recipeInAllocation(recipe, [2]).target.gpus, [0, 1]);
  assert.equal(recipeInAllocation(recipe, undefined).target.gpus, [0, 1]);
  const proc = parsed({ runtime: 'process', process: { command: ['node'] } });
  assert.equal(recipeInAllocation(proc, [2, 3]).target.gpus, [0, 1]);
});

test.run();
