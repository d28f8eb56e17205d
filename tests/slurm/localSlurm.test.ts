// Allocations and the hosts check against the real Slurm scripts/ci/setup-slurm.sh starts on this
// machine (commands run locally here; over SSH in tests/e2e/slurm.test.ts). Skips without one.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import type { SlurmSettings } from '../../harness/provision/inventory.ts';
import type { ExecResult } from '../../harness/provision/sshConnection.ts';
import { allocate, cancelJobs, type AllocationDeps } from '../../harness/slurm/allocation.ts';
import { checkSlurm, summarizeSlurm } from '../../harness/slurm/checkSlurm.ts';
import { parseSinfoNodes, parseSqueue, squeueArgv } from '../../harness/slurm/slurmCli.ts';
import { findLocalSlurm } from './localSlurmProbe.ts';

const exec = (command: string, args: string[]): Promise<ExecResult> =>
  new Promise((resolve) => {
    execFile(command, args, { timeout: 60_000 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: string | number }) | null;
      resolve({ stdout: String(stdout), stderr: String(stderr), code: e === null ? 0 : typeof e.code === 'number' ? e.code : 127, signal: null });
    });
  });

test('summary of sinfo: partitions, GPU types, free nodes and what the entry asks that the cluster lacks (pure)', () => {
  const nodes = parseSinfoNodes('a01|gpu*|mixed|gpu:a100:8|gpu:a100:2(IDX:0-1)|a100,nvlink|8/56/0/64\na02|gpu*|allocated|gpu:a100:8|gpu:a100:8(IDX:0-7)|a100,nvlink|64/0/0/64\nh01|h100|idle|gpu:h100:4|gpu:h100:0(IDX:N/A)|h100|0/32/0/32\n');
  const s: SlurmSettings = { partition: 'gpu', timeLimit: '60', gpuRequest: 'gres', maxConcurrent: 1, nodeSshPort: 22 };
  const ok = summarizeSlurm(nodes, { ...s, gpuType: 'a100', constraint: 'a100&nvlink' });
  assert.equal(ok.gpuTypes, { a100: 16, h100: 4 });
  assert.equal(ok.freeNodes, ['a01']);
  assert.equal(ok.partitions.map((p) => [p.name, p.nodes, p.freeNodes, p.default]), [['gpu', 2, ['a01'], true], ['h100', 1, ['h01'], false]]);
  assert.equal(ok.problems, []);
  const bad = summarizeSlurm(nodes, { ...s, gpuType: 'h100', constraint: 'h100' });
  assert.equal(bad.problems, ['no node of partition gpu declares GPUs of type h100 (it has a100)', 'no node of partition gpu has the features h100']);
  assert.match(summarizeSlurm(nodes, { ...s, partition: 'big' }).problems[0], 'partition big is not among the cluster\'s partitions (gpu, h100)');
});

const found = findLocalSlurm();
if ('why' in found) {
  if (process.env.FLUIDCAP_E2E === 'require') test('a local Slurm is up (FLUIDCAP_E2E=require)', () => assert.unreachable(`no Slurm (run scripts/ci/setup-slurm.sh):\n${found.why}`));
  else console.log(`SKIP local Slurm tests: ${found.why.split('\n')[0]} (run scripts/ci/setup-slurm.sh)`);
} else {
  const partition = found.partition;
  const settings: SlurmSettings = { partition, timeLimit: '5', gpuRequest: 'gpus', gpuType: 'h100', constraint: 'h100', maxConcurrent: 1, nodeSshPort: 22 };
  const deps: AllocationDeps = { exec, sleep: (s) => new Promise((r) => setTimeout(r, s * 1000)), nowS: () => performance.now() / 1000 };
  const state = async (jobId: string) => parseSqueue((await exec(squeueArgv(jobId)[0], squeueArgv(jobId).slice(1))).stdout)[0]?.state ?? 'GONE';

  test('allocate: a job runs on the node with its GPU indices; resume re-attaches to it; release cancels it', async () => {
    const lines: string[] = [];
    const a = await allocate({ settings, request: { jobName: 'fluidcap-test-alloc', gpus: 2 }, log: (l) => lines.push(l), pollS: 0.5 }, deps);
    try {
      assert.is(await state(a.jobId), 'RUNNING');
      assert.is(a.gpuIndices.length, 2);
      assert.ok(a.node.length > 0 && !a.reattached);
      const again = await allocate({ settings, request: { jobName: 'fluidcap-test-alloc', gpus: 2 }, priorJobId: a.jobId, log: (l) => lines.push(l) }, deps);
      assert.equal([again.jobId, again.reattached, again.queuedS, again.node], [a.jobId, true, 0, a.node]);
      assert.ok(lines.some((l) => l.startsWith(`re-attaching to Slurm job ${a.jobId} (running on`)), lines.join('\n'));
    } finally {
      await a.release();
    }
    assert.not.equal(await state(a.jobId), 'RUNNING');
    // Once gone, the earlier job is not re-attached to: a new one is asked for (and cancelled here).
    const fresh = await allocate({ settings, request: { jobName: 'fluidcap-test-alloc', gpus: 1 }, priorJobId: a.jobId, log: (l) => lines.push(l), pollS: 0.5 }, deps);
    await fresh.release();
    assert.not.equal(fresh.jobId, a.jobId);
    assert.ok(lines.some((l) => l === `Slurm job ${a.jobId} of the earlier session is gone; asking for a new allocation`), lines.join('\n'));
  });

  test('allocate: a request the cluster cannot meet is a user error naming the inventory; an abort while queued cancels the job', async () => {
    const err = await allocate({ settings: { ...settings, constraint: 'no-such-feature' }, request: { jobName: 'fluidcap-test-bad', gpus: 1 }, log: () => {} }, deps).catch((e: Error) => e);
    assert.instance(err, Error);
    assert.match((err as Error).message, /sbatch in partition .* failed .*check the slurm section of the inventory entry/);
    // With the node's 4 GPUs held by a first job, a second asking for 4 waits until aborted, then is cancelled.
    const blocker = await allocate({ settings, request: { jobName: 'fluidcap-test-blocker', gpus: 4 }, log: () => {}, pollS: 0.3 }, deps);
    const ctl = new AbortController();
    let jobId = '';
    const lines: string[] = [];
    try {
      const waiting = allocate({ settings, request: { jobName: 'fluidcap-test-held', gpus: 4 }, signal: ctl.signal, log: (l) => lines.push(l), pollS: 0.3, onSubmitted: (id) => (jobId = id) }, deps);
      const t0 = performance.now();
      while (!lines.some((l) => / pending \(/.test(l)) && performance.now() - t0 < 60_000) await new Promise((r) => setTimeout(r, 100));
      assert.is(await state(jobId), 'PENDING', lines.join('\n'));
      ctl.abort();
      const e = await waiting.then(() => null, (x: Error) => x);
      assert.match(e?.message ?? 'it ran', /aborted/);
      assert.not.ok(['PENDING', 'RUNNING'].includes(await state(jobId)), 'cancelled');
    } finally {
      await blocker.release();
      await cancelJobs(exec, [jobId].filter(Boolean));
    }
  });

  test('checkSlurm: the local partition, its h100 GPUs and this node free', async () => {
    const c = await checkSlurm(exec, settings);
    assert.equal(c.problems, []);
    assert.ok((c.gpuTypes.h100 ?? 0) >= 4, JSON.stringify(c));
    assert.ok(c.partitions.some((p) => p.name === partition));
  });
}

test.run();
