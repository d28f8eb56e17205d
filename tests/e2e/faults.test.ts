// The fault matrix, end to end: `fluidcap run` on the simulated engine in Docker over a real sshd,
// with a fault injected mid-run. For each: what fluidcap does (exit code and message), that no
// data already written is lost (finished probes byte for byte, the journal), and that no container
// with the run's label is left. SIGKILL-then-resume is covered by tests/pipeline/resume.test.ts
// (local engine) and tests/e2e/llamacppDocker.test.ts (llama.cpp in Docker over SSH).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, freePort, type E2eEnv } from './e2eEnv.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers, removeRunContainers } from '../../harness/provision/teardown.ts';
import { BIN, FAST_RECIPE, ROOT, childEnv, fluidcap, isAlive, readJson, readJsonl, runDirsIn } from '../pipeline/support.ts';
import { llamaDockerRecipe, llamaEnv, startFluidcap } from './llamacppSupport.ts';
import { shown } from '../support/hooks.ts';

const env = e2eEnv('fault matrix');
const llama = env ? llamaEnv('fault matrix on llama.cpp') : null;

type Exit = { code: number | null; signal: NodeJS.Signals | null };
interface Started {
  child: ChildProcess;
  exited: Promise<Exit>;
  stderr: () => string;
}
const children: ChildProcess[] = [];

function start(cmd: string, args: string[], opts: { group?: boolean } = {}): Started {
  const child = spawn(cmd, args, { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'], detached: opts.group ?? false });
  children.push(child);
  let err = '';
  child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
  const exited = new Promise<Exit>((done) => child.on('close', (code, signal) => done({ code, signal })));
  return { child, exited, stderr: () => err };
}
const startRun = (args: string[], opts: { group?: boolean } = {}) => start(process.execPath, [BIN, ...args], opts);

type Event = { type: string; index?: number; qps?: number; dir?: string; movedTo?: string; status?: string };
const events = (runDir: string) => readJsonl(join(runDir, 'events.jsonl')) as Event[];

/** Waits until the run in `outDir` has started `count` probes (and let the last one send a little). */
async function untilProbe(outDir: string, count: number, run: Started, timeoutMs = 120_000): Promise<string> {
  const t0 = performance.now();
  let gone = false;
  void run.exited.then(() => (gone = true));
  for (;;) {
    const runs = existsSync(outDir) ? runDirsIn(outDir).filter((d) => !d.startsWith('.')) : [];
    if (runs.length === 1 && existsSync(join(outDir, runs[0], 'events.jsonl'))) {
      const dir = join(outDir, runs[0]);
      if (events(dir).filter((e) => e.type === 'probe-started').length >= count) {
        await new Promise((r) => setTimeout(r, 500));
        return dir;
      }
    }
    if (gone) throw new Error(`fluidcap exited before probe ${count} started:\n${run.stderr().slice(-3000)}`);
    if (performance.now() - t0 > timeoutMs) throw new Error(`probe ${count} did not start within ${timeoutMs} ms:\n${run.stderr().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Each finished probe's summary.json, by directory, to compare before and after a fault. */
function finishedSummaries(runDir: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const e of events(runDir)) if (e.type === 'probe-finished') out.set(e.dir!, readFileSync(join(runDir, e.dir!, 'summary.json'), 'utf8'));
  return out;
}

function assertKept(runDir: string, before: Map<string, string>) {
  for (const [dir, text] of before) assert.is(readFileSync(join(runDir, dir, 'summary.json'), 'utf8'), text, `${dir}/summary.json changed`);
  readJson(join(runDir, 'manifest.json')); // still whole JSON
}

async function assertNoContainer(runDir: string) {
  const runId = runDir.split('/').pop()!;
  const left = await listRunContainers(localDocker(), runId);
  if (left.length > 0) await removeRunContainers(localDocker(), runId, { graceS: 1 });
  assert.equal(left.map((c) => c.Names[0]), [], `containers left with fluidcap.run=${runId}`);
}

async function assertResumes(runDir: string, args: string[], before: Map<string, string>) {
  const r = await fluidcap(['run', '--resume', runDir, ...args], { timeoutMs: 240_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  assert.match(r.stderr, /reusing the prefill profile/);
  assertKept(runDir, before);
  assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'completed');
  assert.ok(existsSync(join(runDir, 'capacity.json')));
  await assertNoContainer(runDir);
}

/** The fast pipeline recipe with its engine in a container on `host` (and optional sim faults). */
function dockerRecipe(env: E2eEnv, file: string, port: number, faults = '') {
  const sim = `sim: { scheduler: vllm, timeScale: 1${faults ? `, faults: { ${faults} }` : ''} }\n  image: ${env.image}\n  host: e2e\n  port: ${port}\n  readyTimeout: 60s`;
  // Four probes at most: every fault lands in the first two, and a resumed run only has to finish.
  const text = readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', sim).replace('maxProbes: 8', 'maxProbes: 4');
  assert.ok(text.includes(`image: ${env.image}`) && text.includes('maxProbes: 4'));
  // This matrix is the client's: it finds the engine as the run's one container. Load agents'
  // own faults (an agent killed, its run resumed) are in agent.test.ts.
  writeFileSync(file, `${text}load: { from: client }\n`);
  return file;
}

if (env) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-faults-'));
  const inventory = join(work, 'inventory.yaml');
  const inventoryFor = (port: number, knownHosts: string) => `hosts:\n  - name: e2e\n    address: ${env.sshHost}\n    port: ${port}\n    user: ${env.user}\n    key: ${env.key}\n    knownHosts: ${knownHosts}\n`;
  writeFileSync(inventory, inventoryFor(env.sshPort, env.knownHosts));
  const t0 = performance.now();
  let n = 0;
  const fresh = async (faults = '') => {
    const dir = join(work, `case-${++n}`);
    mkdirSync(dir);
    return { dir, out: join(dir, 'results'), recipe: dockerRecipe(env, join(dir, 'recipe.yaml'), await freePort(), faults) };
  };

  // A private sshd (same host key, own port and pid file): killing it cannot cut other tests' connections.
  const sshdDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-faults-sshd-'));
  let sshdPort = 0;
  const pidFile = join(sshdDir, 'sshd.pid');
  const privateInventory = join(sshdDir, 'inventory.yaml');
  const startSshd = async () => {
    rmSync(pidFile, { force: true });
    execFileSync('/usr/sbin/sshd', ['-f', join(sshdDir, 'sshd_config'), '-E', join(sshdDir, 'sshd.log')]);
    for (let i = 0; i < 50 && !existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 100));
  };
  const sshdListener = () => Number(readFileSync(pidFile, 'utf8').trim());
  const sshdChildren = () => execFileSync('ps', ['-o', 'pid=', '--ppid', String(sshdListener())], { encoding: 'utf8' }).split('\n').map(Number).filter((p) => p > 0);

  test.before(shown(async () => {
    sshdPort = await freePort();
    writeFileSync(join(sshdDir, 'sshd_config'), readFileSync(env.sshdConfig, 'utf8').replace(/^Port .*$/m, `Port ${sshdPort}`).replace(/^PidFile .*$/m, `PidFile ${pidFile}`));
    const hostKeyLine = readFileSync(env.knownHosts, 'utf8').trim();
    writeFileSync(join(sshdDir, 'known_hosts'), hostKeyLine.replace(/^\[127\.0\.0\.1\]:\d+/, `[127.0.0.1]:${sshdPort}`) + '\n');
    writeFileSync(privateInventory, inventoryFor(sshdPort, join(sshdDir, 'known_hosts')));
    await startSshd();
  }));

  test('engine exits at start: exit 3 with its exit code and last log lines, run recorded as failed, no container', async () => {
    const c = await fresh('exitAtStart: true');
    const r = await fluidcap(['run', c.recipe, '--hosts', inventory, '--out', c.out], { timeoutMs: 120_000 });
    assert.is(r.code, 3, r.stderr.slice(-3000));
    assert.match(r.stderr, /infrastructure fault on e2e: engine fluidcap-\S+ on e2e exited during start-up with code \d+ \(OOM killed: no\); last \d+ log lines:/);
    assert.match(r.stderr, /fault-exit-at-start/);
    const runDir = join(c.out, runDirsIn(c.out)[0]);
    assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'failed');
    assert.is(events(runDir).at(-1)!.type, 'run-finished');
    await assertNoContainer(runDir);
  });

  test('engine crashes during the prefill profile (crashAfter: 12): exit 3 "engine died" with its last log lines, no container', async () => {
    const c = await fresh('crashAfter: 12');
    const r = await fluidcap(['run', c.recipe, '--hosts', inventory, '--out', c.out], { timeoutMs: 120_000 });
    assert.is(r.code, 3, r.stderr.slice(-3000));
    assert.match(r.stderr, /infrastructure fault on e2e: the engine died during prefill profiling: /);
    assert.match(r.stderr, /simulated crash after 12 requests/);
    assert.not.match(r.stderr, /requests failed|internal error/);
    const runDir = join(c.out, runDirsIn(c.out)[0]);
    assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'failed');
    assert.not.ok(events(runDir).some((e) => e.type === 'profile-finished'));
    await assertNoContainer(runDir);
  });

  test('engine killed mid-probe (docker kill): exit 3 naming host and log, the probe moved aside with engineDied, resume finishes', async () => {
    const c = await fresh();
    const run = startRun(['run', c.recipe, '--hosts', inventory, '--out', c.out]);
    const runDir = await untilProbe(c.out, 2, run);
    const before = finishedSummaries(runDir);
    const [container] = await listRunContainers(localDocker(), runDir.split('/').pop()!);
    await localDocker().getContainer(container.Id).kill();
    const exit = await run.exited;
    assert.is(exit.code, 3, run.stderr().slice(-3000));
    assert.match(run.stderr(), /infrastructure fault on e2e: the engine died during probe 2 at \S+ QPS: engine container \S+ on e2e exited with code 137/);
    assert.match(run.stderr(), /log lines of the engine:\n/);
    const ev = events(runDir);
    assert.not.ok(ev.some((e) => e.type === 'probe-finished' && e.index === 2), 'probe 2 was judged on a dead engine');
    const moved = ev.find((e) => e.type === 'probe-interrupted' && e.index === 2)!;
    assert.ok(readJson<{ engineDied: string | null }>(join(runDir, moved.movedTo!, 'summary.json')).engineDied);
    assertKept(runDir, before);
    await assertNoContainer(runDir);
    await assertResumes(runDir, ['--hosts', inventory], before);
  });

  test('SSH connection dropped mid-probe (its sshd child killed): exit 3, teardown reconnects and removes the container', async () => {
    const c = await fresh();
    const run = startRun(['run', c.recipe, '--hosts', privateInventory, '--out', c.out]);
    const runDir = await untilProbe(c.out, 2, run);
    const before = finishedSummaries(runDir);
    const kids = sshdChildren();
    assert.ok(kids.length >= 1, 'no per-connection sshd process');
    for (const pid of kids) process.kill(pid, 'SIGKILL');
    const exit = await run.exited;
    assert.is(exit.code, 3, run.stderr().slice(-3000));
    assert.match(run.stderr(), /infrastructure fault on e2e: the engine died during probe \d+ at \S+ QPS: (SSH connection to e2e lost|lost the connection to e2e)/);
    assert.match(run.stderr(), /reconnected to e2e for teardown/);
    assertKept(runDir, before);
    assert.is(events(runDir).at(-1)!.type, 'run-finished');
    await assertNoContainer(runDir);
  });

  test('sshd restarted mid-probe: exit 3, teardown waits for it and removes the container, resume finishes', async () => {
    const c = await fresh();
    const run = startRun(['run', c.recipe, '--hosts', privateInventory, '--out', c.out]);
    const runDir = await untilProbe(c.out, 2, run);
    const before = finishedSummaries(runDir);
    const kids = sshdChildren();
    process.kill(sshdListener(), 'SIGTERM');
    for (const pid of kids) process.kill(pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 3000));
    await startSshd();
    const exit = await run.exited;
    assert.is(exit.code, 3, run.stderr().slice(-3000));
    assert.match(run.stderr(), /reconnected to e2e for teardown/);
    assertKept(runDir, before);
    await assertNoContainer(runDir);
    await assertResumes(runDir, ['--hosts', privateInventory], before);
  });

  test('results disk full mid-probe (tmpfs): exit 3 with the resume command, nothing written is lost; freed and resumed, the run finishes', async () => {
    const c = await fresh();
    const disk = join(c.dir, 'disk');
    mkdirSync(disk);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=4m', 'tmpfs', disk]);
    try {
      const out = join(disk, 'results');
      const run = startRun(['run', c.recipe, '--hosts', inventory, '--out', out]);
      const runDir = await untilProbe(out, 2, run);
      const before = finishedSummaries(runDir);
      const manifest = readFileSync(join(runDir, 'manifest.json'), 'utf8');
      try {
        execFileSync('dd', ['if=/dev/zero', `of=${join(disk, 'filler')}`, 'bs=64k'], { stdio: 'ignore' });
      } catch {
        // dd ends with "No space left on device": the disk is full, as wanted.
      }
      const exit = await run.exited;
      assert.is(exit.code, 3, run.stderr().slice(-3000));
      assert.match(run.stderr(), /the results disk refused a write in \S+ \(.*ENOSPC.*\); the data written so far is kept: free space, then resume with: fluidcap run --resume /);
      assert.not.match(run.stderr(), /internal error/);
      assertKept(runDir, before);
      const now = readFileSync(join(runDir, 'manifest.json'), 'utf8');
      assert.ok(now === manifest || JSON.parse(now).status === 'failed', 'manifest.json was damaged');
      await assertNoContainer(runDir);
      rmSync(join(disk, 'filler'));
      await assertResumes(runDir, ['--hosts', inventory], before);
    } finally {
      execFileSync('umount', ['-l', disk]);
    }
  });

  test('read-only results directory (tmpfs mounted ro): exit 3 naming the path, not an internal error', async () => {
    const c = await fresh();
    const disk = join(c.dir, 'ro');
    mkdirSync(disk);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'ro,size=1m', 'tmpfs', disk]);
    try {
      const r = await fluidcap(['run', c.recipe, '--hosts', inventory, '--out', disk], { timeoutMs: 120_000 });
      assert.is(r.code, 3, r.stderr.slice(-3000));
      assert.match(r.stderr, /infrastructure fault: the disk refused a write: mkdir \S+: EROFS \(a read-only file system\)/);
      assert.not.match(r.stderr, /internal error|^\s+at /m);
    } finally {
      execFileSync('umount', ['-l', disk]);
    }
  });

  test('two concurrent resumes of one killed run: one runs, the other exits 2 naming it; no probe is run twice', async () => {
    const c = await fresh();
    const run = startRun(['run', c.recipe, '--hosts', inventory, '--out', c.out]);
    const runDir = await untilProbe(c.out, 2, run);
    run.child.kill('SIGKILL');
    await run.exited;
    const before = finishedSummaries(runDir);
    const [a, b] = [startRun(['run', '--resume', runDir, '--hosts', inventory]), startRun(['run', '--resume', runDir, '--hosts', inventory])];
    const [ea, eb] = await Promise.all([a.exited, b.exited]);
    const codes = [ea.code, eb.code].sort();
    assert.equal(codes, [0, 2], `exit codes ${ea.code} / ${eb.code}\n${a.stderr().slice(-1500)}\n${b.stderr().slice(-1500)}`);
    const refused = ea.code === 2 ? a : b;
    assert.match(refused.stderr(), /is in use by fluidcap pid \d+ on host \S+ since \S+ \(lock file .*run\.lock\)/);
    const finished = events(runDir).filter((e) => e.type === 'probe-finished').map((e) => e.index);
    assert.is(new Set(finished).size, finished.length, `a probe finished twice: ${finished.join(', ')}`);
    for (const e of events(runDir).filter((x) => x.type === 'probe-finished')) {
      const ids = readJsonl(join(runDir, e.dir!, 'timelines.jsonl')).map((r) => r.id);
      assert.is(new Set(ids).size, ids.length, `duplicate request ids in ${e.dir}`);
    }
    assertKept(runDir, before);
    assert.not.ok(existsSync(join(runDir, 'run.lock')), 'the lock outlived the run');
    await assertNoContainer(runDir);
  });

  test('timeout -s INT (signals the process, then its group): one interrupt, teardown, exit 130, run-finished recorded', async () => {
    const c = await fresh();
    const run = start('timeout', ['--preserve-status', '-s', 'INT', '14', process.execPath, BIN, 'run', c.recipe, '--hosts', inventory, '--out', c.out]);
    const exit = await run.exited;
    assert.is(exit.code, 130, run.stderr().slice(-3000));
    assert.not.match(run.stderr(), /second SIGINT/);
    assert.match(run.stderr(), /resume with: fluidcap run --resume /);
    const runDir = join(c.out, runDirsIn(c.out)[0]);
    const last = events(runDir).at(-1)!;
    assert.is(last.type, 'run-finished');
    assert.is(last.status, 'interrupted');
    assert.ok(events(runDir).some((e) => e.type === 'engine-stopped'));
    await assertNoContainer(runDir);
  });

  test('Ctrl-C, then a deliberate second Ctrl-C 1.2 s later: exit 130 within the 10 s bound, no container left', async () => {
    const c = await fresh();
    const run = startRun(['run', c.recipe, '--hosts', inventory, '--out', c.out]);
    const runDir = await untilProbe(c.out, 1, run);
    run.child.kill('SIGINT');
    await new Promise((r) => setTimeout(r, 1200));
    const t = performance.now();
    run.child.kill('SIGINT');
    const exit = await run.exited;
    const afterS = (performance.now() - t) / 1000;
    // A second Ctrl-C after the run already released everything meets no handler: the process ends
    // by SIGINT, which a shell reports as 130 too.
    assert.ok(exit.code === 130 || exit.signal === 'SIGINT', `exit ${exit.code} ${exit.signal}\n${run.stderr().slice(-3000)}`);
    assert.ok(afterS < 12, `exited ${afterS.toFixed(1)} s after the second Ctrl-C`);
    assert.match(run.stderr(), /run interrupted|second SIGINT: removing the engine, for at most 10 s/);
    assert.not.match(run.stderr(), /exiting now/);
    if (!/fluidcap clean /.test(run.stderr())) await assertNoContainer(runDir);
    else await removeRunContainers(localDocker(), runDir.split('/').pop()!, { graceS: 1 });
  });

  if (llama) {
    test('llama.cpp\'s server killed mid-probe (docker kill): exit 3 with its log lines, the probe moved aside, no container', async () => {
      const c = join(work, 'llama');
      mkdirSync(c);
      const recipe = join(c, 'recipe.yaml');
      // Sent from the client, as the rest of the matrix: the engine is then the run's one container.
      writeFileSync(recipe, `${llamaDockerRecipe('llamacpp-fault', llama.image, await freePort())}load: { from: client }\n`);
      const out = join(c, 'results');
      const run = startFluidcap(['run', recipe, '--hosts', inventory, '--out', out], { FLUIDCAP_LLAMA_MODEL: llama.model });
      children.push(run.child);
      const runDir = await untilProbe(out, 2, run);
      const before = finishedSummaries(runDir);
      const [container] = await listRunContainers(localDocker(), runDir.split('/').pop()!);
      await localDocker().getContainer(container.Id).kill();
      const exit = await run.exited;
      assert.is(exit.code, 3, run.stderr().slice(-3000));
      assert.match(run.stderr(), /infrastructure fault on e2e: the engine died during probe 2 at \S+ QPS: engine container \S+ on e2e exited with code 137/);
      const ev = events(runDir);
      assert.not.ok(ev.some((e) => e.type === 'probe-finished' && e.index === 2), 'probe 2 was judged on a dead engine');
      assert.ok(ev.some((e) => e.type === 'probe-interrupted' && e.index === 2));
      assertKept(runDir, before);
      await assertNoContainer(runDir);
    });
  }

  test.after(() => {
    for (const ch of children) if (ch.pid && ch.exitCode === null && ch.signalCode === null && isAlive(ch.pid)) ch.kill('SIGKILL');
    if (existsSync(pidFile)) process.kill(sshdListener(), 'SIGTERM');
    console.log(`  fault matrix: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    rmSync(work, { recursive: true, force: true });
    rmSync(sshdDir, { recursive: true, force: true });
  });
}

test.run();
