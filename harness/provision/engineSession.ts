// What a launch does the same way whether the engine runs as a container (launcher.ts) or as a
// process (processLauncher.ts): the host connection and everything acquired on it, stop() (once,
// also on signals and abort) through the teardown (engineTeardown.ts), the GPU and port checks,
// readiness, the start-up runtime check, the tunnel's cost, the recorded facts and the Engine
// handed to the caller. A launcher opens a session, does its own steps in between, and on any
// failure throws what `failed(err)` returns, so nothing is left running.
//
// Interface: openEngineSession(spec, host, opts, deps, how: SessionRuntime) → Promise<EngineSession>
import { mkdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { appendFileIn } from '../util/confinedFs.ts';
import { InfraError, UserError } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { ContainerSpec } from './containerSpec.ts';
import type { ProcessSpec } from './processSpec.ts';
import type { HostHandle } from './hostHandle.ts';
import { readGpuFacts, type GpuFacts } from './gpuFacts.ts';
import { waitReady, type ReadinessResult } from './readiness.ts';
import { teardownOnSignals } from './signals.ts';
import type { Engine, EngineFacts, LaunchOptions, StopReport, TunnelFacts } from './engineTypes.ts';
import type { LaunchDeps } from './launchDeps.ts';
import type { SshTunnel } from './sshTunnel.ts';
import type { RemovalReport } from './teardown.ts';
import type { LogRelayCost } from './logStream.ts';
import { engineHttp } from './engineHttp.ts';
import { secretValues } from './secretValues.ts';
import { describeRuntime, runtimeMismatch, type EngineRuntime } from './engineRuntime.ts';
import { readRuntimeAfterStart } from './runtimeAfterStart.ts';
import { waitGpusIdle } from './gpuIdle.ts';
import { watchExit, type ExitSources, type ExitWatch } from './exitWatch.ts';
import { describeTunnel, openMeasuredTunnel } from './tunnelAccess.ts';
import { sampleGpuTelemetry } from './gpuTelemetry.ts';
import { tearDown, type Acquired } from './engineTeardown.ts';

/** How the engine runs: what the host must offer and how teardown stops it. */
export interface SessionRuntime {
  runsAs: 'container' | 'process';
  /** The GPUs the engine uses on the host; empty when none are checked or sampled. */
  gpuIds: number[];
  /** Stops the run's engine on `host` and lists what is left (teardown's removal step). */
  removeEngine(host: HostHandle): Promise<RemovalReport>;
}

/** What the launched engine showed once ready: the parts of its facts both runtimes have. */
export interface SeenAtReady {
  baseUrl: string;
  tunnel: TunnelFacts | null;
  ready: Extract<ReadinessResult, { ready: true }>;
  runtime: EngineRuntime;
  gpu: GpuFacts | null;
  logFollowedVia: string;
}

/** The facts only one runtime has (image and container, or process). */
export type RuntimeFacts = Pick<EngineFacts, 'containerId' | 'image' | 'imageId' | 'imageDigest' | 'engineImage' | 'dockerVersion' | 'runtime' | 'process'>;

export interface EngineSession {
  handle: HostHandle;
  /** The secrets' values, read before the host was touched. */
  secrets: Record<string, string>;
  launchedAt: string;
  serverLogPath: string;
  names: { containerName: string; hostName: string };
  log(line: string): void;
  /** True once stop() began. */
  stopping(): boolean;
  /** Another connection to the same host (known key only), e.g. for following the log. */
  reopen(connect?: { readyTimeoutS?: number }): Promise<HostHandle>;
  /** Hands the engine's log follower to teardown, which closes it. */
  ownLogs(logs: { close(): Promise<void> }): void;
  /** Throws a UserError once the launch was aborted. */
  checkAbort(): void;
  /** Reads the host's GPUs and logs them. */
  readGpus(): Promise<GpuFacts>;
  /** Waits for the target's GPUs to be idle (when asked to); a UserError when they stay busy. */
  checkGpusIdle(): Promise<void>;
  checkPortFree(port: number): Promise<void>;
  /** Watches the started engine's end; stop() from now on expects it. */
  watchExit(src: Pick<ExitSources, 'waited' | 'inspect' | 'logs'>): ExitWatch;
  waitReady(url: string, exits: ExitWatch): Promise<ReadinessResult>;
  /** What the ready engine runs; a UserError (naming `what` it was started from) when that is not what the recipe asked. */
  checkRuntime(spec: ContainerSpec | ProcessSpec, url: string, what: string): Promise<EngineRuntime>;
  /** With `access: ssh-tunnel` over SSH: a tunnel to the engine's port, closed by teardown; else null. */
  openTunnel(port: number, remoteHost?: string): Promise<SshTunnel | null>;
  /** The URL load goes to: through the tunnel (its cost measured and logged) when there is one. */
  measureTunnel(tunnel: SshTunnel | null, directUrl: string): Promise<{ baseUrl: string; tunnel: TunnelFacts | null }>;
  facts(seen: SeenAtReady, runtimeFacts: RuntimeFacts): EngineFacts;
  /** `extra`: what only one runtime offers (a container's Docker for load agents). */
  engine(facts: EngineFacts, exits: ExitWatch, logRelayCost: () => LogRelayCost, extra?: Pick<Engine, 'loadSite'>): Engine;
  stop(): Promise<StopReport>;
  /** Tears down and returns the error to throw: a UserError as it is, anything else as an InfraError. */
  failed(err: unknown): Promise<Error>;
}

/**
 * Reads the secrets, connects to the host and arms stop() on signals and `opts.signal`. From
 * here on the caller must end in `engine(...)` or throw `await failed(err)`.
 */
export async function openEngineSession(spec: ContainerSpec | ProcessSpec, host: Host, opts: LaunchOptions, deps: LaunchDeps, how: SessionRuntime): Promise<EngineSession> {
  const log = opts.log ?? (() => {});
  const access = opts.access ?? 'direct';
  const launchedAt = deps.isoNow();
  const serverLogPath = join(opts.runDir, 'server.log');
  const names = { containerName: spec.name, hostName: host.name };
  const paths = engineHttp(spec);
  const { gpuIds, runsAs } = how;
  // A process needs no Docker on its host.
  const need = runsAs === 'process' ? { docker: false } : undefined;
  await mkdir(opts.runDir, { recursive: true });
  // Secrets first: a missing one is the user's to fix before anything is touched.
  const secrets = secretValues(spec.secretEnv, opts.env ?? process.env);

  const handle = await deps.openHost(host, opts.connect, need);
  const reopen = (connect: { readyTimeoutS?: number } = {}) => deps.openHost(host, { ...opts.connect, acceptNewHostKey: false, ...connect }, need);
  const telemetryStops = new Set<() => Promise<void>>();
  const acquired: Acquired<HostHandle> = { handle, telemetryStops, tunnel: null, logs: null };
  let watch: ExitWatch | null = null;
  let tunnel: SshTunnel | null = null;
  let stopping = false;
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
        runsAs,
        reconnectTimeoutS: opts.reconnectTimeoutS ?? 60,
        reconnect: () => reopen({ readyTimeoutS: 5 }),
        removeRunContainers: how.removeEngine,
        waitGpusIdle: idleCheck && ((h) => idleCheck(h, 'after stopping')),
        log,
      }, deps);
    })();
    return stopPromise;
  };
  unregisterSignals = teardownOnSignals(stop);
  const onAbort = () => void stop();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  return {
    handle, secrets, launchedAt, serverLogPath, names, log, reopen, stop,
    stopping: () => stopping,
    ownLogs(logs) {
      acquired.logs = logs;
    },
    checkAbort() {
      if (opts.signal?.aborted) throw new UserError(`launch of ${spec.name} on ${host.name} aborted`);
    },
    async readGpus() {
      const gpu = await gpuFactsOn(handle, 30)();
      log(gpu.available ? `GPUs on ${host.name}: ${gpu.gpus.map((g) => `${g.index}:${g.name}`).join(', ')} (driver ${gpu.gpus[0].driverVersion})` : `GPU facts on ${host.name}: ${gpu.reason}`);
      return gpu;
    },
    async checkGpusIdle() {
      if (!idleCheck) return;
      const idle = await idleCheck(handle, 'before launch');
      if (!idle.ok) throw new UserError(idle.message);
    },
    async checkPortFree(port) {
      if (await handle.portTaken(port)) {
        throw new UserError(`port ${port} on host ${host.name} is already taken (another server or a leftover engine listens there); stop it or choose another target.port`);
      }
    },
    watchExit(src) {
      const exits = watchExit({ ...src, lost: handle.lost, ...names, runsAs }, deps);
      watch = exits;
      if (stopping) exits.expectExit();
      return exits;
    },
    waitReady: (url, exits) => waitReady(url, { deadlineS: spec.readyTimeoutS, signal: opts.signal, ...paths }, {
      get: deps.httpGet,
      nowS: deps.nowS,
      sleep: deps.sleep,
      gone: async () => exits.observed()?.message ?? null,
    }),
    async checkRuntime(current, url, what) {
      const runtime = await readRuntimeAfterStart(current, serverLogPath, url, deps);
      log(`${current.name} runs: ${describeRuntime(runtime)}`);
      const mismatch = runtimeMismatch(current.basis, runtime);
      if (mismatch) throw new UserError(`${current.name} on ${host.name} (${what}): ${mismatch}. Nothing was measured.`);
      return runtime;
    },
    async openTunnel(port, remoteHost) {
      const conn = handle.connection;
      if (access !== 'ssh-tunnel' || conn === null) return null;
      // Registered as soon as it is open, so teardown closes it even if the launch fails later.
      tunnel = await deps.openTunnel(conn, port, remoteHost);
      acquired.tunnel = tunnel;
      return tunnel;
    },
    async measureTunnel(opened, directUrl) {
      if (opened === null) return { baseUrl: directUrl, tunnel: null };
      const measured = await openMeasuredTunnel(async () => opened, directUrl, paths.healthPath, deps.keepAliveLatencyMs);
      log(describeTunnel(measured.facts, { localPort: measured.tunnel.localPort, hostName: host.name, port: spec.port, path: paths.healthPath }));
      return { baseUrl: measured.tunnel.baseUrl, tunnel: measured.facts };
    },
    facts(seen, r) {
      const conn = handle.connection;
      return {
        engine: spec.engine,
        host: host.name,
        baseUrl: seen.baseUrl,
        access,
        containerName: spec.name,
        containerId: r.containerId,
        image: r.image,
        imageId: r.imageId,
        imageDigest: r.imageDigest,
        engineRuntime: seen.runtime,
        engineRuns: describeRuntime(seen.runtime),
        engineImage: r.engineImage,
        gpu: seen.gpu,
        dockerVersion: r.dockerVersion,
        models: seen.ready.models,
        timeToReadyS: seen.ready.timeToReadyS,
        launchedAt,
        readyAt: deps.isoNow(),
        sshHostKey: conn ? `${conn.hostKey.type} ${conn.hostKey.fingerprint}` : null,
        tunnel: seen.tunnel,
        logFollowedVia: seen.logFollowedVia,
        ...(r.runtime === undefined ? {} : { runtime: r.runtime, process: r.process }),
      };
    },
    engine(facts, exits, logRelayCost, extra) {
      return {
        ...extra,
        baseUrl: facts.baseUrl,
        facts,
        serverLogPath,
        onExit: (cb) => exits.onExit(cb),
        logRelayCost,
        ...(tunnel ? { tunnelRelayCost: tunnel.cost } : {}),
        startGpuTelemetry(file, intervalS = 1) {
          if (!facts.gpu?.available) return async () => {};
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
    },
    async failed(err) {
      opts.signal?.removeEventListener('abort', onAbort);
      const launchErr = err instanceof UserError ? err : new InfraError(`launching ${spec.name} on ${host.name} failed: ${(err as Error).message}`, { cause: err, host: host.name });
      const report = await stop();
      if (report.problems.length > 0) launchErr.message += `\n  teardown: ${report.problems.join('; ')}`;
      return launchErr;
    },
  };
}
