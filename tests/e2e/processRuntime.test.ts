// End-to-end: engines run as processes (`target.runtime: process`) through the real sshd, no Docker
// involved: the simulated engine started by node from this checkout, and llama.cpp's llama-server
// binary when the build cache has it. Readiness and requests, the state directory and its labels,
// teardown of the whole process group (checked by its group id), a crash mid-run detected, a failed
// start-up reported and cleaned up, and leftovers found and stopped as `fluidcap clean` does.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { e2eEnv, e2eHost, freePort } from './e2eEnv.ts';
import { llamaEnv } from './llamacppSupport.ts';
import { targetSchema, type TargetInput } from '../../harness/provision/targetSpec.ts';
import { renderProcessSpec } from '../../harness/provision/processSpec.ts';
import { launchEngine, EngineLaunchError, type EngineExit } from '../../harness/provision/launcher.ts';
import { cleanLeftovers } from '../../harness/provision/cleanLeftovers.ts';
import { parseLabels } from '../../harness/provision/processState.ts';
import { UserError } from '../../harness/util/errors.ts';

const env = e2eEnv('engines as processes');
const llama = env ? llamaEnv('llama-server as a process') : null;
const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));
const SIM_COMMAND = [process.execPath, join(ROOT, 'bin', 'fluidcap.js'), 'sim', 'serve'];

/** True while any process is in the group (signal 0 to the negative group id). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Processes whose group id is pgid (from /proc, the e2e host being this machine). */
function groupMembers(pgid: number): number[] {
  return readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((d) => {
    try {
      return readFileSync(`/proc/${d}/stat`, 'utf8').split(') ').pop()!.split(' ')[2] === String(pgid);
    } catch {
      return false;
    }
  }).map(Number);
}

function environOf(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return [];
  }
}

async function complete(baseUrl: string, model: string, prompt = 'once upon a time') {
  const res = await fetch(`${baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 8, stream: true, ignore_eos: true }),
  });
  const body = await res.text();
  return { status: res.status, chunks: body.split('\n\n').filter((b) => b.startsWith('data: {')).length, done: body.includes('data: [DONE]') };
}

if (env) {
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-process-'));
  const stateRoot = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-state-'));
  const host = e2eHost(env, { docker: { socket: '/nonexistent/docker.sock' } });
  const simSpec = (runId: string, port: number, extra: Partial<TargetInput> = {}) =>
    renderProcessSpec(targetSchema.parse({ engine: 'sim', runtime: 'process', process: { command: SIM_COMMAND }, model: 'tiny', port, sim: { timeScale: 0.1 }, readyTimeout: '90s', ...extra }), { runId });

  test('sim as a process over SSH (no Docker socket on the host): ready, requests, labels, teardown kills the whole group', async () => {
    const runId = `e2e-${process.pid}-proc`;
    const lines: string[] = [];
    const engine = await launchEngine(simSpec(runId, await freePort()), host, { runDir: join(runDir, 'a'), stateRoot, log: (l) => lines.push(l) });
    const pgid = engine.facts.process!.pgid;
    try {
      assert.is(engine.facts.runtime, 'process');
      assert.equal(engine.facts.models, ['tiny']);
      assert.ok(groupAlive(pgid), 'the process group runs');
      const stateDir = join(stateRoot, runId);
      assert.is(engine.facts.process!.stateDir, stateDir);
      const labels = parseLabels(readFileSync(join(stateDir, 'labels.json'), 'utf8'));
      assert.ok(!('problem' in labels), JSON.stringify(labels));
      if (!('problem' in labels)) {
        assert.is(labels.name, `fluidcap-${runId}-sim`);
        assert.is(labels.labels['fluidcap.run'], runId);
        assert.equal(labels.argv.slice(0, SIM_COMMAND.length), SIM_COMMAND);
      }
      for (const r of await Promise.all([0, 1].map((i) => complete(engine.baseUrl, 'tiny', `probe ${i}`)))) {
        assert.is(r.status, 200);
        assert.ok(r.chunks >= 2 && r.done, JSON.stringify(r));
      }
      assert.match(engine.facts.engineRuns ?? '', /V0/);
    } finally {
      const report = await engine.stop();
      assert.equal(report.problems, []);
      assert.equal(report.remaining, []);
      assert.equal(report.removed, [`fluidcap-${runId}-sim`]);
    }
    assert.not.ok(groupAlive(pgid), `no process left in group ${pgid}`);
    assert.not.ok(existsSync(join(stateRoot, runId)), 'state directory removed');
    assert.match(readFileSync(engine.serverLogPath, 'utf8'), /fluidcap sim: listening on http:\/\//, 'engine output relayed into server.log');
  });

  test('behind a launcher prefix and an SSH tunnel: a crash mid-run is reported once with its exit code; teardown leaves no process', async () => {
    const runId = `e2e-${process.pid}-crash`;
    // `env VAR=1` stands where srun would: a program that runs the rest of the argv.
    const prefix = ['env', 'FLUIDCAP_E2E_PREFIX=1'];
    const engine = await launchEngine(simSpec(runId, await freePort(), { sim: { timeScale: 0.1, faults: { crashAfter: 1 } } }), host, {
      runDir: join(runDir, 'b'), stateRoot, launcherPrefix: prefix, access: 'ssh-tunnel', engineAddress: '127.0.0.1',
    });
    const pgid = engine.facts.process!.pgid;
    assert.equal(engine.facts.process!.argv.slice(0, 2 + SIM_COMMAND.length), [...prefix, ...SIM_COMMAND]);
    assert.ok(groupMembers(pgid).some((pid) => environOf(pid).includes('FLUIDCAP_E2E_PREFIX=1')), 'the engine ran behind the prefix');
    assert.ok(engine.facts.tunnel !== null && engine.baseUrl.startsWith('http://127.0.0.1:') && !engine.baseUrl.endsWith(`:${engine.facts.process!.argv[engine.facts.process!.argv.indexOf('--port') + 1]}`), engine.baseUrl);
    const exits: EngineExit[] = [];
    const exited = new Promise<void>((r) => engine.onExit((e) => (exits.push(e), r())));
    try {
      await complete(engine.baseUrl, 'tiny').catch(() => null);
      await complete(engine.baseUrl, 'tiny').catch(() => null);
      await exited;
      assert.is(exits.length, 1);
      const e = exits[0];
      assert.is(e.kind, 'exited');
      if (e.kind === 'exited') {
        assert.is(e.exitCode, 1);
        assert.match(e.message, new RegExp(`engine process fluidcap-${runId}-sim on e2e exited with code 1`));
      }
    } finally {
      const report = await engine.stop();
      assert.equal(report.remaining, []);
    }
    assert.not.ok(groupAlive(pgid), `no process left in group ${pgid}`);
  });

  test('start-up failures: a missing program is a UserError naming the field; an engine exiting before ready reports its exit and log', async () => {
    const missing = renderProcessSpec(targetSchema.parse({ engine: 'sim', runtime: 'process', process: { command: ['/opt/nowhere/bin/sim-engine', 'serve'] }, model: 'tiny', port: await freePort() }), { runId: `e2e-${process.pid}-missing` });
    const err1 = await launchEngine(missing, host, { runDir: join(runDir, 'c'), stateRoot }).then(() => null, (e: Error) => e);
    assert.ok(err1 instanceof UserError && !(err1 instanceof EngineLaunchError), String(err1));
    assert.match(err1!.message, /target\.process\.command\[0\] names no program on host e2e, got "\/opt\/nowhere\/bin\/sim-engine"/, err1!.message);

    const runId = `e2e-${process.pid}-early`;
    const early = simSpec(runId, await freePort(), { sim: { faults: { exitAtStart: true } } });
    const err2 = await launchEngine(early, host, { runDir: join(runDir, 'd'), stateRoot }).then(() => null, (e: Error) => e);
    assert.ok(err2 instanceof EngineLaunchError, String(err2));
    assert.match(err2!.message, new RegExp(`engine fluidcap-${runId}-sim on e2e exited during start-up with code 1`));
    assert.is((err2 as EngineLaunchError).details.exitCode, 1);
    assert.not.ok(existsSync(join(stateRoot, runId)), 'nothing left in the state root');
  });

  test('leftovers: fluidcap clean finds a running engine by its state directory and stops its group (a host without Docker: processes only)', async () => {
    const runId = `e2e-${process.pid}-left`;
    const engine = await launchEngine(simSpec(runId, await freePort()), host, { runDir: join(runDir, 'e'), stateRoot });
    const pgid = engine.facts.process!.pgid;
    try {
      const [result] = await cleanLeftovers(null, { extraHosts: [host], stateRoot });
      assert.equal(result, {
        host: 'e2e', removed: [`${runId} (process group ${pgid})`], remaining: [], error: null,
        containersSkipped: 'no Docker socket at /nonexistent/docker.sock', refusedStateEntries: [],
      });
      assert.not.ok(groupAlive(pgid), `no process left in group ${pgid}`);
    } finally {
      await engine.stop();
    }
    assert.equal(readdirSync(stateRoot), [], 'state root empty');
  });

  if (llama) {
    test("llama.cpp's llama-server binary as a process: ready, one request, teardown kills the group", async () => {
      const runId = `e2e-${process.pid}-llama`;
      const target = targetSchema.parse({
        engine: 'llamacpp', runtime: 'process', process: { command: [llama.server] }, model: 'stories260K',
        llamacpp: { modelFile: llama.model }, engineArgs: { slots: 2, ctxSize: 1024, threads: 1 }, port: await freePort(), readyTimeout: '60s',
      });
      const engine = await launchEngine(renderProcessSpec(target, { runId }), host, { runDir: join(runDir, 'f'), stateRoot });
      const pgid = engine.facts.process!.pgid;
      try {
        assert.ok(engine.facts.process!.argv.includes(llama.model), 'the host path of the model file, not a container path');
        const r = await complete(engine.baseUrl, 'stories260K');
        assert.is(r.status, 200);
        assert.ok(r.chunks >= 1 && r.done, JSON.stringify(r));
      } finally {
        const report = await engine.stop();
        assert.equal(report.remaining, []);
        assert.equal(report.problems, []);
      }
      assert.not.ok(groupAlive(pgid), `no process left in group ${pgid}`);
    });
  }
}

test.run();
