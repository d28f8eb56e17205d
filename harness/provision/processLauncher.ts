// Starts one engine as a process on one host (`target.runtime: process`) and owns it until stop():
// the same steps as a container's launch, shared through engineSession.ts (GPU facts and idle
// check, port check, readiness, exit watch, start-up log check, optional SSH tunnel, teardown in
// reverse), with a process group and its state directory (processState.ts) where a container and
// its labels would be. No Docker is needed on the host. With `opts.launcherPrefix` the command starts behind it
// (`srun --jobid=... --overlap`), possibly on another machine: then only the prefix's own program
// is checked on the host.
//
// Interface (stable): launchProcessEngine(spec, host, opts, deps?) → Promise<Engine>; launchEngine
// (launcher.ts) calls it for a ProcessSpec.
import { dirname } from 'node:path';
import { appendFileIn } from '../util/confinedFs.ts';
import { InfraError, UserError, describeValue } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { HostHandle } from './hostHandle.ts';
import { relayLog } from './logStream.ts';
import type { EngineLaunchError, Engine, LaunchOptions } from './engineTypes.ts';
import { realLaunchDeps, type LaunchDeps } from './launchDeps.ts';
import type { ExitWatch } from './exitWatch.ts';
import { startupFailure } from './startupFailure.ts';
import { openEngineSession } from './engineSession.ts';
import { processCommandLine, type ProcessSpec } from './processSpec.ts';
import { envLines, formatLabels, parsePid, stateDirOf } from './processState.ts';
import { checkScript, exitCodeScript, followScript, startScript } from './processScripts.ts';
import { expandTilde, stateRootOn, stopStateDir, streamCommand } from './processHost.ts';

/** Launches the engine process and resolves once it is ready; on any failure nothing is left running. */
export async function launchProcessEngine(spec: ProcessSpec, host: Host, opts: LaunchOptions, deps: LaunchDeps = realLaunchDeps): Promise<Engine> {
  const prefix = opts.launcherPrefix ?? [];
  const graceS = opts.stopGraceS ?? 10;
  let stateDir: string | null = null;
  const session = await openEngineSession(spec, host, opts, deps, {
    runsAs: 'process',
    gpuIds: prefix.length === 0 ? (spec.gpuDeviceIds?.map(Number) ?? []) : [],
    removeEngine: async (h) => {
      if (stateDir === null) return { removed: [], remaining: [] };
      const outcome = await stopStateDir(h, stateDir, graceS);
      if (outcome.kind === 'remaining') return { removed: [], remaining: [`${spec.name} (process group ${outcome.pgid} in ${stateDir})`] };
      return { removed: outcome.kind === 'stopped' ? [spec.name] : [], remaining: [] };
    },
  });
  const { handle, log, serverLogPath, secrets } = session;

  try {
    const home = await handle.home();
    const tilde = (w: string) => expandTilde(w, home);
    const command = spec.command.map(tilde);
    const argv = processCommandLine({ command, argv: spec.argv.map(tilde) }, prefix);
    const plainEnv = Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, tilde(v)]));
    const envText = envLines({ ...plainEnv, ...secrets }, (name) => (name in secrets ? `target.secrets.${name}` : `target.env.${name}`));
    const dir = stateDirOf(await stateRootOn(handle, opts.stateRoot), spec.runId);

    const gpu = prefix.length === 0 ? await session.readGpus() : null;
    await session.checkGpusIdle();
    session.checkAbort();
    await checkProgramAndFiles(handle, spec, prefix, command[0], tilde);
    // A leftover of this same run (an earlier attempt) is ours to stop.
    stateDir = dir;
    const leftover = await stopStateDir(handle, dir, 2);
    if (leftover.kind === 'remaining') {
      throw new InfraError(`an earlier engine of run ${spec.runId} on ${host.name} (process group ${leftover.pgid}, ${dir}) survived SIGKILL; it cannot be replaced`, { host: host.name });
    }
    if (prefix.length === 0) await session.checkPortFree(spec.port);
    session.checkAbort();

    const labels = formatLabels({ runId: spec.runId, name: spec.name, engine: spec.engine, port: spec.port, labels: spec.labels, argv, startedAt: session.launchedAt });
    appendFileIn(dirname(serverLogPath), serverLogPath, `# fluidcap: ${spec.name} (process: ${command.join(' ')}) on ${host.name}, started ${deps.isoNow()}\n`);
    const started = await handle.exec(...splitArgv(startScript(dir, labels, argv)), { stdin: envText, timeoutS: 60 });
    const pgid = started.code === 0 ? parsePid(started.stdout) : null;
    if (pgid === null) {
      throw new InfraError(`starting ${spec.name} on ${host.name} failed (exit ${started.code}): ${(started.stderr || started.stdout).trim().slice(0, 400)}`, { host: host.name });
    }
    log(`started ${spec.name} on ${host.name} as process group ${pgid} (state in ${dir})`);

    // The log is read over a connection of its own, as a container's is (logConnection.ts).
    const own = handle.connection === null ? handle : await session.reopen();
    const follow = await streamCommand(own, followScript(dir, pgid)).catch(async (err: Error) => {
      if (own !== handle) await own.close();
      throw err;
    });
    const relay = relayLog(follow.stdout, serverLogPath, opts.logBounds);
    const via = own === handle ? 'local tail' : `own SSH connection → ${own.connection!.label}`;
    session.ownLogs({
      close: async () => {
        await relay.close();
        follow.close();
        if (own !== handle) await own.close();
      },
    });
    log(`following ${spec.name}'s log over its ${via}`);
    // The follower ends once the group's leader has exited; then the exit file says how. It also
    // ends when its own connection drops while the engine runs: then the group is polled instead.
    const waited = follow.ended.then(async () => {
      for (;;) {
        if (handle.connection !== null && !handle.connection.isOpen()) throw new Error('connection closed');
        const r = await handle.exec(...splitArgv(exitCodeScript(dir, pgid)), { timeoutS: 10 });
        const out = r.stdout.trim();
        if (out !== 'running') {
          const code = Number.parseInt(out, 10);
          return Number.isInteger(code) ? { StatusCode: code } : {};
        }
        if (session.stopping()) return {};
        await deps.sleep(2);
      }
    });
    const logsAtExit = { ended: follow.ended.then(() => relay.catchUp()), tail: () => relay.tail() };
    const exits = session.watchExit({ waited, inspect: async () => null, logs: logsAtExit });

    const directUrl = `http://${opts.engineAddress ?? handle.address}:${spec.port}`;
    // Through a tunnel the engine is reached as the host reaches it: readiness goes that way too
    // (behind a launcher prefix the engine's machine may not be reachable from here at all).
    const sshTunnel = await session.openTunnel(spec.port, opts.engineAddress ?? '127.0.0.1');
    const readyUrl = sshTunnel?.baseUrl ?? directUrl;
    const ready = await session.waitReady(readyUrl, exits);
    if (!ready.ready) throw withCommandHint(startupFailure(ready, exits.observed(), relay.tail(), session.names), exits.observed(), spec, prefix);
    log(`${spec.name} ready after ${ready.timeToReadyS.toFixed(2)} s`);
    const runtime = await session.checkRuntime(spec, readyUrl, `command ${command.join(' ')}`);
    const { baseUrl, tunnel } = await session.measureTunnel(sshTunnel, directUrl);

    const facts = session.facts({ baseUrl, tunnel, ready, runtime, gpu, logFollowedVia: via }, {
      containerId: null,
      image: null,
      imageId: null,
      imageDigest: null,
      engineImage: null,
      dockerVersion: null,
      runtime: 'process',
      process: { stateDir: dir, pgid, argv, launcherPrefix: [...prefix] },
    });
    return session.engine(facts, exits, () => relay.cost());
  } catch (err) {
    throw await session.failed(err);
  }
}

function splitArgv(argv: string[]): [string, string[]] {
  return [argv[0], argv.slice(1)];
}

/**
 * Before anything starts: the program the host runs (the prefix's, else the command's) exists
 * and may be executed, and (without a prefix) llama.cpp's model file can be read. A UserError
 * names the recipe field and its value.
 */
async function checkProgramAndFiles(handle: HostHandle, spec: ProcessSpec, prefix: string[], program: string, tilde: (w: string) => string): Promise<void> {
  const modelAt = spec.engine === 'llamacpp' && prefix.length === 0 ? spec.argv.indexOf('--model') : -1;
  const files = modelAt >= 0 ? [tilde(spec.argv[modelAt + 1])] : [];
  const first = prefix.length > 0 ? prefix[0] : program;
  const r = await handle.exec(...splitArgv(checkScript(first, files)), { timeoutS: 30 });
  const lines = r.stdout.trim().split('\n');
  const field = prefix.length > 0 ? 'the launcher prefix' : 'target.process.command[0]';
  const value = prefix.length > 0 ? prefix[0] : spec.command[0];
  const on = `host ${handle.host.name}`;
  if (lines[0] === 'program missing') {
    throw new UserError(`${field} names no program on ${on}${first.includes('/') ? '' : " (none on the SSH session's PATH, which a login shell's profile may not set: give its absolute path)"}, got ${describeValue(value)}`);
  }
  if (lines[0] === 'program not-executable') throw new UserError(`${field} must name an executable file on ${on}, got ${describeValue(value)}`);
  if (lines[0] !== 'program ok') throw new InfraError(`checking ${describeValue(first)} on ${on} failed (exit ${r.code}): ${r.stderr.trim().slice(0, 200)}`, { host: handle.host.name });
  if (files.length > 0 && lines[1] !== 'file 0 ok') {
    throw new UserError(`target.llamacpp.modelFile (or the file modelFileEnv names) must be a readable file on ${on}, got ${describeValue(spec.argv[modelAt + 1])}`);
  }
}

// A shell's 126/127 means the command (behind a prefix, on the node) could not be run at all.
function withCommandHint(err: EngineLaunchError, exit: ReturnType<ExitWatch['observed']>, spec: ProcessSpec, prefix: string[]): EngineLaunchError {
  const code = exit?.kind === 'exited' ? exit.exitCode : null;
  if (code === 127 || code === 126) {
    err.message += `\n  exit code ${code}: the shell ${code === 127 ? 'found no such program' : 'could not execute it'}: target.process.command[0] ${describeValue(spec.command[0])}${prefix.length > 0 ? ` behind the launcher prefix ${describeValue(prefix.join(' '))}` : ''}`;
  }
  return err;
}
