// Starts one engine as a process on one host (`target.runtime: process`) and owns it until stop():
// the same steps as a container's launch (GPU facts and idle check, port check, server.log,
// readiness, exit watch, start-up log check, optional SSH tunnel, teardown in reverse), with a
// process group and its state directory (processState.ts) where a container and its labels would
// be. No Docker is needed on the host. With `opts.launcherPrefix` the command starts behind it
// (`srun --jobid=... --overlap`), possibly on another machine: then only the prefix's own program
// is checked on the host.
//
// Interface (stable): launchProcessEngine(spec, host, opts, deps?) → Promise<Engine>; launchEngine
// (launcher.ts) calls it for a ProcessSpec.
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { appendFileIn } from '../util/confinedFs.ts';
import { InfraError, UserError, describeValue } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { HostHandle } from './hostHandle.ts';
import { readGpuFacts } from './gpuFacts.ts';
import { relayLog } from './logStream.ts';
import { waitReady } from './readiness.ts';
import { teardownOnSignals } from './signals.ts';
import { EngineLaunchError, type Engine, type EngineFacts, type LaunchOptions, type StopReport } from './engineTypes.ts';
import { realLaunchDeps, type LaunchDeps } from './launchDeps.ts';
import type { SshTunnel } from './sshTunnel.ts';
import { engineHttp } from './engineHttp.ts';
import { secretValues } from './secretValues.ts';
import { describeRuntime, runtimeMismatch } from './engineRuntime.ts';
import { readRuntimeAfterStart } from './runtimeAfterStart.ts';
import { waitGpusIdle } from './gpuIdle.ts';
import { watchExit, type ExitWatch } from './exitWatch.ts';
import { startupFailure } from './startupFailure.ts';
import { describeTunnel, openMeasuredTunnel } from './tunnelAccess.ts';
import { sampleGpuTelemetry } from './gpuTelemetry.ts';
import { tearDown, type Acquired } from './engineTeardown.ts';
import { processCommandLine, type ProcessSpec } from './processSpec.ts';
import { envLines, formatLabels, parsePid, stateDirOf } from './processState.ts';
import { checkScript, exitCodeScript, followScript, startScript } from './processScripts.ts';
import { expandTilde, stateRootOn, stopStateDir, streamCommand } from './processHost.ts';

const noDocker = { docker: false };

/** Launches the engine process and resolves once it is ready; on any failure nothing is left running. */
export async function launchProcessEngine(spec: ProcessSpec, host: Host, opts: LaunchOptions, deps: LaunchDeps = realLaunchDeps): Promise<Engine> {
  const log = opts.log ?? (() => {});
  const access = opts.access ?? 'direct';
  const prefix = opts.launcherPrefix ?? [];
  const launchedAt = deps.isoNow();
  const serverLogPath = join(opts.runDir, 'server.log');
  const names = { containerName: spec.name, hostName: host.name };
  const paths = engineHttp(spec);
  const gpuIds = prefix.length === 0 ? (spec.gpuDeviceIds?.map(Number) ?? []) : [];
  const graceS = opts.stopGraceS ?? 10;
  await mkdir(opts.runDir, { recursive: true });
  // Secrets first: a missing one is the user's to fix before anything is touched.
  const secrets = secretValues(spec.secretEnv, opts.env ?? process.env);

  const handle = await deps.openHost(host, opts.connect, noDocker);
  const telemetryStops = new Set<() => Promise<void>>();
  const acquired: Acquired<HostHandle> = { handle, telemetryStops, tunnel: null, logs: null };
  let watch: ExitWatch | null = null;
  let stopping = false;
  let stateDir: string | null = null;
  const gpuFactsOn = (h: HostHandle, timeoutS: number) => () => readGpuFacts((c, a) => h.exec(c, a, { timeoutS }), host.nvidiaSmi);
  const gpuIdle = opts.gpuIdle;
  const idleCheck = gpuIds.length > 0 && gpuIdle
    ? (h: HostHandle, when: string) => waitGpusIdle(gpuFactsOn(h, 30), { hostName: host.name, ids: gpuIds, maxUsedMiB: gpuIdle.maxUsedMiB, timeoutS: gpuIdle.timeoutS, when }, deps)
    : null;

  let stopPromise: Promise<StopReport> | null = null;
  let unregisterSignals = () => {};
  const stop = (): Promise<StopReport> => {
    stopPromise ??= (() => {
      stopping = true;
      watch?.expectExit();
      unregisterSignals();
      return tearDown(acquired, {
        ...names,
        runId: spec.runId,
        runsAs: 'process',
        reconnectTimeoutS: opts.reconnectTimeoutS ?? 60,
        reconnect: () => deps.openHost(host, { ...opts.connect, acceptNewHostKey: false, readyTimeoutS: 5 }, noDocker),
        removeRunContainers: async (h) => {
          if (stateDir === null) return { removed: [], remaining: [] };
          const outcome = await stopStateDir(h, stateDir, graceS);
          if (outcome.kind === 'remaining') return { removed: [], remaining: [`${spec.name} (process group ${outcome.pgid} in ${stateDir})`] };
          return { removed: outcome.kind === 'stopped' ? [spec.name] : [], remaining: [] };
        },
        waitGpusIdle: idleCheck && ((h) => idleCheck(h, 'after stopping')),
        log,
      }, deps);
    })();
    return stopPromise;
  };
  unregisterSignals = teardownOnSignals(stop);
  const onAbort = () => void stop();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  try {
    const checkAbort = () => {
      if (opts.signal?.aborted) throw new UserError(`launch of ${spec.name} on ${host.name} aborted`);
    };
    const home = await handle.home();
    const tilde = (w: string) => expandTilde(w, home);
    const command = spec.command.map(tilde);
    const argv = processCommandLine({ command, argv: spec.argv.map(tilde) }, prefix);
    const plainEnv = Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, tilde(v)]));
    const envText = envLines({ ...plainEnv, ...secrets }, (name) => (name in secrets ? `target.secrets.${name}` : `target.env.${name}`));
    const dir = stateDirOf(await stateRootOn(handle, opts.stateRoot), spec.runId);

    const gpu = prefix.length === 0 ? await gpuFactsOn(handle, 30)() : null;
    if (gpu) log(gpu.available ? `GPUs on ${host.name}: ${gpu.gpus.map((g) => `${g.index}:${g.name}`).join(', ')} (driver ${gpu.gpus[0].driverVersion})` : `GPU facts on ${host.name}: ${gpu.reason}`);
    if (idleCheck) {
      const idle = await idleCheck(handle, 'before launch');
      if (!idle.ok) throw new UserError(idle.message);
    }
    checkAbort();
    await checkProgramAndFiles(handle, spec, prefix, command[0], tilde);
    // A leftover of this same run (an earlier attempt) is ours to stop.
    stateDir = dir;
    await stopStateDir(handle, dir, 2);
    if (prefix.length === 0 && (await handle.portTaken(spec.port))) {
      throw new UserError(`port ${spec.port} on host ${host.name} is already taken (another server or a leftover engine listens there); stop it or choose another target.port`);
    }
    checkAbort();

    const labels = formatLabels({ runId: spec.runId, name: spec.name, engine: spec.engine, port: spec.port, labels: spec.labels, argv, startedAt: launchedAt });
    appendFileIn(dirname(serverLogPath), serverLogPath, `# fluidcap: ${spec.name} (process: ${command.join(' ')}) on ${host.name}, started ${deps.isoNow()}\n`);
    const started = await handle.exec(...splitArgv(startScript(dir, labels, argv)), { stdin: envText, timeoutS: 60 });
    const pgid = started.code === 0 ? parsePid(started.stdout) : null;
    if (pgid === null) {
      throw new InfraError(`starting ${spec.name} on ${host.name} failed (exit ${started.code}): ${(started.stderr || started.stdout).trim().slice(0, 400)}`, { host: host.name });
    }
    log(`started ${spec.name} on ${host.name} as process group ${pgid} (state in ${dir})`);

    // The log is read over a connection of its own, as a container's is (logConnection.ts).
    const own = handle.connection === null ? handle : await deps.openHost(host, { ...opts.connect, acceptNewHostKey: false }, noDocker);
    const follow = await streamCommand(own, followScript(dir, pgid)).catch(async (err: Error) => {
      if (own !== handle) await own.close();
      throw err;
    });
    const relay = relayLog(follow.stdout, serverLogPath, opts.logBounds);
    const via = own === handle ? 'local tail' : `own SSH connection → ${own.connection!.label}`;
    acquired.logs = {
      close: async () => {
        await relay.close();
        follow.close();
        if (own !== handle) await own.close();
      },
    };
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
        if (stopping) return {};
        await deps.sleep(2);
      }
    });
    const logsAtExit = { ended: follow.ended.then(() => relay.catchUp()), tail: () => relay.tail() };
    const exits = watchExit({ waited, inspect: async () => null, logs: logsAtExit, lost: handle.lost, ...names, runsAs: 'process' }, deps);
    watch = exits;
    if (stopping) exits.expectExit();

    const directUrl = `http://${opts.engineAddress ?? handle.address}:${spec.port}`;
    const conn = handle.connection;
    // Through a tunnel the engine is reached as the host reaches it: readiness goes that way too
    // (behind a launcher prefix the engine's machine may not be reachable from here at all).
    const tunnelled = access === 'ssh-tunnel' && conn !== null;
    let sshTunnel: SshTunnel | null = null;
    // Registered as soon as it is open, so teardown closes it even if the launch fails later.
    if (tunnelled) acquired.tunnel = sshTunnel = await deps.openTunnel(conn, spec.port, opts.engineAddress ?? '127.0.0.1');
    const readyUrl = sshTunnel?.baseUrl ?? directUrl;
    const ready = await waitReady(readyUrl, { deadlineS: spec.readyTimeoutS, signal: opts.signal, ...paths }, {
      get: deps.httpGet,
      nowS: deps.nowS,
      sleep: deps.sleep,
      gone: async () => exits.observed()?.message ?? null,
    });
    if (!ready.ready) throw withCommandHint(startupFailure(ready, exits.observed(), relay.tail(), names), exits.observed(), spec, prefix);
    log(`${spec.name} ready after ${ready.timeToReadyS.toFixed(2)} s`);
    const runtime = await readRuntimeAfterStart(spec, serverLogPath, readyUrl, deps);
    log(`${spec.name} runs: ${describeRuntime(runtime)}`);
    const mismatch = runtimeMismatch(spec.basis, runtime);
    if (mismatch) throw new UserError(`${spec.name} on ${host.name} (command ${command.join(' ')}): ${mismatch}. Nothing was measured.`);

    let baseUrl = directUrl;
    let tunnel: EngineFacts['tunnel'] = null;
    if (sshTunnel !== null) {
      const opened = sshTunnel;
      const measured = await openMeasuredTunnel(async () => opened, directUrl, paths.healthPath, deps.keepAliveLatencyMs);
      baseUrl = measured.tunnel.baseUrl;
      tunnel = measured.facts;
      log(describeTunnel(tunnel, { localPort: measured.tunnel.localPort, hostName: host.name, port: spec.port, path: paths.healthPath }));
    }

    const facts: EngineFacts = {
      engine: spec.engine,
      host: host.name,
      baseUrl,
      access,
      containerName: spec.name,
      containerId: null,
      image: null,
      imageId: null,
      imageDigest: null,
      engineRuntime: runtime,
      engineRuns: describeRuntime(runtime),
      engineImage: null,
      gpu,
      dockerVersion: null,
      models: ready.models,
      timeToReadyS: ready.timeToReadyS,
      launchedAt,
      readyAt: deps.isoNow(),
      sshHostKey: conn ? `${conn.hostKey.type} ${conn.hostKey.fingerprint}` : null,
      tunnel,
      logFollowedVia: via,
      runtime: 'process',
      process: { stateDir: dir, pgid, argv, launcherPrefix: [...prefix] },
    };

    return {
      baseUrl,
      facts,
      serverLogPath,
      onExit: (cb) => exits.onExit(cb),
      logRelayCost: () => relay.cost(),
      startGpuTelemetry(file, intervalS = 1) {
        if (!gpu?.available) return async () => {};
        const stopSampling = sampleGpuTelemetry(file, { intervalS, gpuIds, halted: () => stopping }, {
          readFacts: gpuFactsOn(handle, 10),
          appendLine: async (f, line) => appendFileIn(dirname(f), f, line),
          nowS: deps.nowS,
          isoNow: deps.isoNow,
          sleep: deps.sleep,
        });
        const stopTelemetry = async () => {
          telemetryStops.delete(stopTelemetry);
          await stopSampling();
        };
        telemetryStops.add(stopTelemetry);
        return stopTelemetry;
      },
      stop,
    };
  } catch (err) {
    opts.signal?.removeEventListener('abort', onAbort);
    const launchErr = err instanceof UserError ? err : new InfraError(`launching ${spec.name} on ${host.name} failed: ${(err as Error).message}`, { cause: err, host: host.name });
    const report = await stop();
    if (report.problems.length > 0) launchErr.message += `\n  teardown: ${report.problems.join('; ')}`;
    throw launchErr;
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
