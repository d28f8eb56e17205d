// `fluidcap sweep` through a real Slurm (scripts/ci/setup-slurm.sh: one node, this machine, with 4
// stand-in h100 GPUs as gres): an inventory entry of kind slurm whose login host is the e2e sshd,
// two configurations of the simulated engine as processes (runtime: process, started on the node
// behind `srun --jobid --overlap`, a step of the allocation), each asking for all 4 GPUs, so Slurm
// holds the second behind the first. Ctrl-C while the first probes and the second waits in the
// queue leaves no job in squeue, no engine process and no container; --resume finishes both and
// reports the queue wait of the one held behind the other. A second case runs one configuration
// in a container on the allocated node (Docker reached over SSH through the login host). The GPUs
// are Slurm's count only. A third runs llama.cpp's llama-server binary (from the build cache) as a
// process step of its allocation.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, freePort } from './e2eEnv.ts';
import { pinHostKey, simSweepRecipe } from './sweepSupport.ts';
import { SHARED_RECIPE_TAIL, llamaEnv } from './llamacppSupport.ts';
import { BIN, ROOT, childEnv, fluidcap, readJsonl, runDirsIn } from '../pipeline/support.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';
import { RUN_LABEL } from '../../harness/provision/containerSpec.ts';
import { findLocalSlurm } from '../slurm/localSlurmProbe.ts';

const env = e2eEnv('slurm');

const found = env ? findLocalSlurm() : null;
const slurm = found && 'node' in found ? found : null;
const llama = env && slurm ? llamaEnv('slurm e2e with llama-server as a process') : null;
if (found && 'why' in found) {
  if (process.env.FLUIDCAP_E2E === 'require') test('slurm: a local Slurm is up (FLUIDCAP_E2E=require)', () => assert.unreachable(`no Slurm (run scripts/ci/setup-slurm.sh):\n${found.why}`));
  else console.log(`SKIP slurm e2e: ${found.why.split('\n')[0]}; run scripts/ci/setup-slurm.sh`);
}

/** Our jobs Slurm still lists (any state but the finished ones it keeps for MinJobAge). */
function liveJobs(prefix: string): string[] {
  const out = execFileSync('squeue', ['--noheader', '--format=%j|%T'], { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.startsWith(prefix) && !/\|(COMPLETED|CANCELLED|FAILED|TIMEOUT)$/.test(l));
}

/** Processes of this machine whose argv holds every one of the words (from /proc). */
function processesWith(words: string[]): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (words.every((w) => argv.includes(w))) out.push(`${pid}: ${argv.join(' ')}`);
    } catch {
      // ended meanwhile
    }
  }
  return out;
}

if (env && slurm) {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-slurm-'));
  const base = `slurm${process.pid}`;
  // All 4 GPUs each: Slurm holds a second configuration behind the first.
  const placement = { host: 'cluster', gpus: '[0, 1, 2, 3]' };
  const search = { maxQps: 32, tolerance: 0.5, maxProbes: 3, requests: 16, duration: '10s' };

  test('sweep on a Slurm entry: Ctrl-C leaves no job and no container, --resume finishes, the held configuration\'s queue wait is reported', async () => {
    const t0 = performance.now();
    // The node is reached through the login host by its Slurm name: its key is pinned under that name too.
    const knownHosts = pinHostKey(env, dir, [{ address: env.sshHost, port: env.sshPort }, { address: slurm.node, port: env.sshPort }]);
    assert.is(slurm.node, hostname().split('.')[0], 'the node is this machine');
    const inv = join(dir, 'inventory.yaml');
    writeFileSync(
      inv,
      `hosts:
  - name: cluster
    kind: slurm
    address: ${env.sshHost}
    port: ${env.sshPort}
    user: ${env.user}
    key: ${env.key}
    knownHosts: ${knownHosts}
    slurm: { partition: ${slurm.partition}, timeLimit: "15", gpuType: h100, constraint: h100, maxConcurrent: 2, nodeSshPort: ${env.sshPort} }
`,
    );
    // hosts check reads the cluster on the login host: its partition, GPU types and free node.
    const check = await fluidcap(['hosts', 'check', inv], { timeoutMs: 60_000 });
    assert.is(check.code, 0, check.stdout + check.stderr);
    assert.match(check.stdout, new RegExp(`slurm {3}GPU types 4 h100; free nodes in the entry's partition: ${slurm.node}`));
    assert.match(check.stdout, new RegExp(`partition ${slurm.partition} \\(default\\): 1 node\\(s\\), 4 h100, free ${slurm.node}`));

    writeFileSync(join(dir, 'base.yaml'), simSweepRecipe(base, { ...placement, runtime: 'process', process: `{ command: [${process.execPath}, ${join(ROOT, 'bin', 'fluidcap.js')}, sim, serve] }` }, search));
    const portBase = await freePort(1);
    writeFileSync(join(dir, 'sweep.yaml'), `recipe: base.yaml\nmatrix:\n  maxNumSeqs: [4, 16]\nports: { base: ${portBase} }\nparallel: 2\n`);
    const out = join(dir, 'results');

    // First pass: Ctrl-C once one configuration probes and the other waits in Slurm's queue.
    const child = spawn(process.execPath, [BIN, 'sweep', join(dir, 'sweep.yaml'), '--hosts', inv, '--out', out], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stderr!.on('data', (b: Buffer) => (output += b.toString()));
    child.stdout!.on('data', (b: Buffer) => (output += b.toString()));
    const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    let sweepDir = '';
    const state = () => {
      const dirs = existsSync(out) ? readdirSync(out, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name) : [];
      if (dirs.length !== 1) return { probing: 0, pending: false };
      sweepDir = join(out, dirs[0]);
      const runs = existsSync(join(sweepDir, 'runs')) ? runDirsIn(join(sweepDir, 'runs')) : [];
      const probing = runs.filter((r) => {
        const events = join(sweepDir, 'runs', r, 'events.jsonl');
        return existsSync(events) && readFileSync(events, 'utf8').includes('"probe-started"');
      }).length;
      return { probing, pending: liveJobs(`fluidcap-c0`).some((l) => l.endsWith('|PENDING')) };
    };
    const deadline = performance.now() + 240_000;
    for (let s = state(); !(s.probing >= 1 && s.pending) && child.exitCode === null && performance.now() < deadline; s = state()) await new Promise((r) => setTimeout(r, 250));
    assert.equal(state(), { probing: 1, pending: true }, `one run probing, the other queued: ${output.slice(-2000)}`);
    const tInterrupt = performance.now();
    process.kill(-child.pid!, 'SIGINT');
    const code = await exited;
    const interruptS = (performance.now() - tInterrupt) / 1000;
    assert.is(code, 130, output.slice(-2000));
    assert.equal(liveJobs('fluidcap-c0'), [], 'no Slurm job left after Ctrl-C');
    assert.equal(processesWith(['sim', 'serve', String(portBase)]), [], 'no engine process left after Ctrl-C');
    assert.equal((await listRunContainers(localDocker())).filter((c) => (c.Labels?.[RUN_LABEL] ?? '').startsWith(base)), [], 'no container left after Ctrl-C');
    const first = readJsonl(join(sweepDir, 'sweep.jsonl'));
    const submitted = first.filter((l) => l.type === 'allocation-submitted');
    assert.is(submitted.length, 2, 'both configurations were submitted to Slurm');
    assert.is(first.filter((l) => l.type === 'allocation-released').length, 2, 'both allocations released, the queued one too');

    // Second pass: --resume asks Slurm again and finishes both; one waits behind the other.
    const resumedFrom = first.length;
    const tResume = performance.now();
    const r = await fluidcap(['sweep', '--resume', sweepDir, '--hosts', inv], { timeoutMs: 600_000 });
    assert.is(r.code, 0, (r.stdout + r.stderr).slice(-3000));
    const after = readJsonl(join(sweepDir, 'sweep.jsonl')).slice(resumedFrom);
    assert.ok(after.filter((l) => l.type === 'run-finished').every((l) => l.status === 'completed'), JSON.stringify(after));
    const running = after.filter((l) => l.type === 'allocation-running');
    const released = after.filter((l) => l.type === 'allocation-released');
    assert.is(running.length, 2);
    assert.is(released.length, 2);
    // The second allocation ran only once the first was released: Slurm held it (4 GPUs each, 4 on the node).
    const order = after.filter((l) => l.type === 'allocation-running' || l.type === 'allocation-released').map((l) => `${l.type}:${l.jobId}`);
    assert.equal(order, [`allocation-running:${running[0].jobId}`, `allocation-released:${running[0].jobId}`, `allocation-running:${running[1].jobId}`, `allocation-released:${running[1].jobId}`]);
    assert.ok((running[1].queuedS as number) > 0, JSON.stringify(running[1]));
    const text = r.stdout + r.stderr;
    assert.match(text, new RegExp(`Slurm job ${running[1].jobId} pending \\((Resources|Priority)\\)`));
    assert.match(text, new RegExp(`Slurm job ${running[1].jobId}: [\\d.]+ s in the queue, [\\d.]+ s allocated on ${slurm.node}`));
    // The sweep report puts each configuration's queue wait beside its hold (both sessions' jobs).
    const report = readFileSync(join(sweepDir, 'report.md'), 'utf8');
    assert.match(report, new RegExp(`\\| ${running[1].jobId}(?: \\(\\d jobs\\))? \\| ${slurm.node} \\| [\\d.]+ \\| [\\d.]+ \\|`), report);
    for (const d of runDirsIn(join(sweepDir, 'runs'))) {
      const m = JSON.parse(readFileSync(join(sweepDir, 'runs', d, 'manifest.json'), 'utf8')) as { slurm?: { jobId: string; node: string; gpuIndices: number[] }[]; host?: { process?: { launcherPrefix: string[] } } };
      assert.ok(m.slurm && m.slurm.length >= 1 && m.slurm.every((a) => a.node === slurm.node && a.gpuIndices.length === 4), `${d}: ${JSON.stringify(m.slurm)}`);
      // The engine was a step of the run's last allocation.
      assert.equal(m.host?.process?.launcherPrefix.slice(0, 2), ['srun', `--jobid=${m.slurm!.at(-1)!.jobId}`], JSON.stringify(m.host?.process));
    }
    assert.equal(liveJobs('fluidcap-c0'), [], 'no Slurm job left after the sweep');
    assert.equal(processesWith(['sim', 'serve', String(portBase)]), [], 'no engine process left after the sweep');
    assert.equal((await listRunContainers(localDocker())).filter((c) => (c.Labels?.[RUN_LABEL] ?? '').startsWith(base)), []);
    const total = (performance.now() - t0) / 1000;
    const resumeS = (performance.now() - tResume) / 1000;
    console.log(`slurm e2e: ${total.toFixed(0)} s (to Ctrl-C ${((tInterrupt - t0) / 1000).toFixed(0)} s, teardown ${interruptS.toFixed(0)} s, resume ${resumeS.toFixed(0)} s); queue wait of the held configuration ${running[1].queuedS} s`);
  });

  test('a container on the allocated node: the run completes in its allocation, the job is released and the container removed', async () => {
    const t0 = performance.now();
    const inv = join(dir, 'inventory.yaml');
    const recipe = simSweepRecipe(`${base}c`, { ...placement, image: env.image }, { ...search, maxProbes: 2 });
    writeFileSync(join(dir, 'container.yaml'), recipe);
    writeFileSync(join(dir, 'sweep-container.yaml'), `recipe: container.yaml\nmatrix:\n  maxNumSeqs: [8]\nports: { base: ${await freePort(1)} }\n`);
    const out = join(dir, 'results-container');
    const r = await fluidcap(['sweep', join(dir, 'sweep-container.yaml'), '--hosts', inv, '--out', out], { timeoutMs: 300_000 });
    assert.is(r.code, 0, (r.stdout + r.stderr).slice(-3000));
    const sweepDir = join(out, runDirsIn(out)[0]);
    const lines = readJsonl(join(sweepDir, 'sweep.jsonl'));
    assert.equal(lines.filter((l) => String(l.type).startsWith('allocation-')).map((l) => l.type), ['allocation-submitted', 'allocation-running', 'allocation-released']);
    const [runDir] = runDirsIn(join(sweepDir, 'runs'));
    const m = JSON.parse(readFileSync(join(sweepDir, 'runs', runDir, 'manifest.json'), 'utf8')) as { slurm?: { node: string }[]; host?: { containerId?: string; host?: string } };
    assert.equal(m.slurm?.map((a) => a.node), [slurm.node]);
    assert.ok(typeof m.host?.containerId === 'string', JSON.stringify(m.host));
    assert.equal(liveJobs('fluidcap-c0'), [], 'no Slurm job left');
    assert.equal((await listRunContainers(localDocker())).filter((c) => (c.Labels?.[RUN_LABEL] ?? '').startsWith(`${base}c`)), [], 'no container left');
    console.log(`slurm e2e, container: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  });

  if (llama) {
    test("llama.cpp's llama-server as a process in an allocation: the run completes as a step of the job, which is released, and no engine process is left", async () => {
      const t0 = performance.now();
      const inv = join(dir, 'inventory.yaml');
      const name = `${base}l`;
      const target = `name: ${name}
target:
  engine: llamacpp
  host: cluster
  gpus: [0, 1, 2, 3]
  runtime: process
  process: { command: [${llama.server}] }
  model: stories260K
  llamacpp: { modelFile: ${llama.model} }
  engineArgs: { slots: 2, ctxSize: 1024, threads: 1 }
  readyTimeout: 60s
`;
      writeFileSync(join(dir, 'llama.yaml'), target + SHARED_RECIPE_TAIL.replace('maxProbes: 9', 'maxProbes: 2'));
      const port = await freePort(1);
      writeFileSync(join(dir, 'sweep-llama.yaml'), `recipe: llama.yaml\nmatrix:\n  target.engineArgs.slots: [2]\nports: { base: ${port} }\n`);
      const out = join(dir, 'results-llama');
      const r = await fluidcap(['sweep', join(dir, 'sweep-llama.yaml'), '--hosts', inv, '--out', out], { timeoutMs: 300_000 });
      assert.is(r.code, 0, (r.stdout + r.stderr).slice(-3000));
      const sweepDir = join(out, runDirsIn(out)[0]);
      const lines = readJsonl(join(sweepDir, 'sweep.jsonl'));
      assert.equal(lines.filter((l) => String(l.type).startsWith('allocation-')).map((l) => l.type), ['allocation-submitted', 'allocation-running', 'allocation-released']);
      const [runDir] = runDirsIn(join(sweepDir, 'runs'));
      const m = JSON.parse(readFileSync(join(sweepDir, 'runs', runDir, 'manifest.json'), 'utf8')) as { status: string; slurm?: { jobId: string; node: string }[]; host?: { process?: { launcherPrefix: string[]; argv: string[] } } };
      assert.is(m.status, 'completed');
      assert.equal(m.slurm?.map((a) => a.node), [slurm.node]);
      assert.equal(m.host?.process?.launcherPrefix.slice(0, 2), ['srun', `--jobid=${m.slurm![0].jobId}`], JSON.stringify(m.host?.process));
      assert.ok(m.host?.process?.argv.includes(llama.model), 'the host path of the model file');
      // What the process check below looks for is what the engine was started with.
      const argv = m.host!.process!.argv;
      assert.is(argv[argv.indexOf('--port') + 1], String(port), JSON.stringify(argv));
      assert.equal(liveJobs('fluidcap-c0'), [], 'no Slurm job left');
      assert.equal(processesWith([llama.server, '--port', String(port)]), [], 'no llama-server left');
      console.log(`slurm e2e, llama-server as a process: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    });
  }
}

test.run();
