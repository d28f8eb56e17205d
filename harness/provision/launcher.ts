// Starts one engine on one host and owns it until stop(): GPU facts and idle check, port check,
// image (digest recorded), container create/start, server.log, readiness, exit watch, optional SSH
// tunnel. Each of those is a part with its own file; this module puts them in order and hands
// everything acquired to the teardown (engineTeardown.ts), which releases it in reverse.
//
// Interface (stable):
//   launchEngine(plan: ContainerSpec | ProcessSpec | EndpointPlan, host: Host, opts: LaunchOptions, deps?: LaunchDeps) → Promise<Engine>
//   (a ProcessSpec, `target.runtime: process`, is started by processLauncher.ts)
//   Engine { baseUrl, facts, serverLogPath, onExit(cb) → unsubscribe, startGpuTelemetry(file, intervalS?) → stop,
//            stop() → Promise<StopReport> (idempotent) }
import { mkdir } from 'node:fs/promises';
import { appendFileIn } from '../util/confinedFs.ts';
import { dirname, join } from 'node:path';
import { InfraError, UserError } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { ContainerSpec } from './containerSpec.ts';
import { dockerCreateOptions } from './dockerCreateOptions.ts';
import type { HostHandle } from './hostHandle.ts';
import { readGpuFacts } from './gpuFacts.ts';
import { followLogsApart } from './logConnection.ts';
import { waitReady } from './readiness.ts';
import { removeRunContainers } from './teardown.ts';
import { teardownOnSignals } from './signals.ts';
import { EngineLaunchError, type EndpointPlan, type Engine, type EngineFacts, type LaunchOptions, type StopReport } from './engineTypes.ts';
import { realLaunchDeps, type LaunchDeps } from './launchDeps.ts';
import { engineHttp } from './engineHttp.ts';
import { secretValues } from './secretValues.ts';
import { endpointEngine } from './endpointEngine.ts';
import { ensureImage } from './engineImage.ts';
import { defaultImageCacheDir, imageFlagProblem, learnImage, type ImageFacts } from './imageFacts.ts';
import { forVersion } from './containerSpec.ts';
import { parseVersion } from './engineVersion.ts';
import { describeRuntime, runtimeMismatch } from './engineRuntime.ts';
import { readRuntimeAfterStart } from './runtimeAfterStart.ts';
import { waitGpusIdle } from './gpuIdle.ts';
import { watchExit, type ExitWatch } from './exitWatch.ts';
import { startupFailure } from './startupFailure.ts';
import { describeTunnel, openMeasuredTunnel } from './tunnelAccess.ts';
import { sampleGpuTelemetry } from './gpuTelemetry.ts';
import { tearDown, type Acquired } from './engineTeardown.ts';
import { launchProcessEngine } from './processLauncher.ts';
import type { ProcessSpec } from './processSpec.ts';

// The launcher is provisioning's public face: callers import these types from here.
export { EngineLaunchError };
export type { EndpointPlan, Engine, EngineExit, EngineFacts, LaunchOptions, StopReport } from './engineTypes.ts';
export type { LaunchDeps } from './launchDeps.ts';

/** Launches the engine and resolves once it is ready; on any failure nothing is left running. */
export async function launchEngine(plan: ContainerSpec | ProcessSpec | EndpointPlan, host: Host, opts: LaunchOptions, deps: LaunchDeps = realLaunchDeps): Promise<Engine> {
  if (plan.engine === 'endpoint') return endpointEngine(plan, host, opts.runDir, deps.isoNow());
  if (plan.runtime === 'process') return launchProcessEngine(plan, host, opts, deps);
  // Rewritten once the image's own version is known.
  let spec = plan;
  const log = opts.log ?? (() => {});
  const access = opts.access ?? 'direct';
  const launchedAt = deps.isoNow();
  const serverLogPath = join(opts.runDir, 'server.log');
  const names = { containerName: spec.name, hostName: host.name };
  const paths = engineHttp(spec);
  const gpuIds = spec.gpuDeviceIds?.map(Number) ?? [];
  await mkdir(opts.runDir, { recursive: true });
  // Secrets first: a missing one is the user's to fix before anything is touched.
  const secrets = secretValues(spec.secretEnv, opts.env ?? process.env);

  const handle = await deps.openHost(host, opts.connect);
  const telemetryStops = new Set<() => Promise<void>>();
  const acquired: Acquired<HostHandle> = { handle, telemetryStops, tunnel: null, logs: null };
  let watch: ExitWatch | null = null;
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
        reconnectTimeoutS: opts.reconnectTimeoutS ?? 60,
        reconnect: () => deps.openHost(host, { ...opts.connect, acceptNewHostKey: false, readyTimeoutS: 5 }),
        removeRunContainers: (h) => removeRunContainers(h.docker, spec.runId, { graceS: opts.stopGraceS ?? 10 }),
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
    const version = await handle.docker.version();
    const gpu = await gpuFactsOn(handle, 30)();
    log(gpu.available ? `GPUs on ${host.name}: ${gpu.gpus.map((g) => `${g.index}:${g.name}`).join(', ')} (driver ${gpu.gpus[0].driverVersion})` : `GPU facts on ${host.name}: ${gpu.reason}`);
    if (idleCheck) {
      const idle = await idleCheck(handle, 'before launch');
      if (!idle.ok) throw new UserError(idle.message);
    }
    checkAbort();
    // A leftover of this same run (an earlier attempt) is ours to replace.
    await removeRunContainers(handle.docker, spec.runId, { graceS: 2 });
    if (await handle.portTaken(spec.port)) {
      throw new UserError(`port ${spec.port} on host ${host.name} is already taken (another server or a leftover engine listens there); stop it or choose another target.port`);
    }
    const image = await ensureImage(handle.docker, spec.image, { hostName: host.name, pullTimeoutS: opts.pullTimeoutS ?? 1800, log, sleep: deps.sleep });
    checkAbort();
    const learnt = await learnImage(handle.docker, {
      image: spec.image, imageId: image.imageId, family: spec.basis.family, runId: spec.runId,
      cacheDir: opts.imageCacheDir ?? defaultImageCacheDir(), hostName: host.name, log,
    });
    spec = specForImage(spec, learnt);
    log(`image ${spec.image}: ${learnt.family} ${learnt.version ?? '(no version printed)'}, ${learnt.flags.length} flags in its --help; every flag of the launch is among them`);
    checkAbort();
    const home = await handle.home();
    const createOpts = dockerCreateOptions(spec, {
      secretValues: secrets,
      resolveSource: (s) => (s === '~' ? home : s.startsWith('~/') ? `${home}/${s.slice(2)}` : s),
    });
    const container = await handle.docker.createContainer(createOpts);
    appendFileIn(dirname(serverLogPath), serverLogPath, `# fluidcap: ${spec.name} (${spec.image}) on ${host.name}, created ${deps.isoNow()}\n`);
    await container.start();
    log(`started ${spec.name} on ${host.name}`);
    const logs = await followLogsApart(handle, () => deps.openHost(host, { ...opts.connect, acceptNewHostKey: false }), container.id, serverLogPath, opts.logBounds);
    acquired.logs = logs;
    log(`following ${spec.name}'s log over its ${logs.via}`);
    const waited = container.wait();
    // Once the engine stopped, its last lines are read past the relay's rate bound.
    const logsAtExit = { ended: waited.then(() => logs.catchUp(), () => logs.ended), tail: () => logs.tail() };
    const exits = watchExit({ waited, inspect: () => container.inspect(), logs: logsAtExit, lost: handle.lost, ...names }, deps);
    watch = exits;
    if (stopping) exits.expectExit();

    const directUrl = `http://${handle.address}:${spec.port}`;
    const ready = await waitReady(directUrl, { deadlineS: spec.readyTimeoutS, signal: opts.signal, ...paths }, {
      get: deps.httpGet,
      nowS: deps.nowS,
      sleep: deps.sleep,
      gone: async () => exits.observed()?.message ?? null,
    });
    if (!ready.ready) throw startupFailure(ready, exits.observed(), logs.tail(), names);
    log(`${spec.name} ready after ${ready.timeToReadyS.toFixed(2)} s`);
    const runtime = await readRuntimeAfterStart(spec, serverLogPath, directUrl, deps);
    log(`${spec.name} runs: ${describeRuntime(runtime)}`);
    const mismatch = runtimeMismatch(spec.basis, runtime);
    if (mismatch) throw new UserError(`${spec.name} on ${host.name} (image ${spec.image}): ${mismatch}. Nothing was measured.`);

    let baseUrl = directUrl;
    let tunnel: EngineFacts['tunnel'] = null;
    const conn = handle.connection;
    if (access === 'ssh-tunnel' && conn) {
      // Registered as soon as it is open, so teardown closes it even if measuring fails.
      const open = async () => (acquired.tunnel = await deps.openTunnel(conn, spec.port));
      const measured = await openMeasuredTunnel(open, directUrl, paths.healthPath, deps.keepAliveLatencyMs);
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
      containerId: container.id,
      image: spec.image,
      imageId: image.imageId,
      imageDigest: image.imageDigest,
      engineRuntime: runtime,
      engineRuns: describeRuntime(runtime),
      engineImage: { family: learnt.family, version: learnt.version, helpFlags: learnt.flags.length, argv: spec.argv, envNames: Object.keys(spec.env) },
      gpu,
      dockerVersion: version.Version ?? null,
      models: ready.models,
      timeToReadyS: ready.timeToReadyS,
      launchedAt,
      readyAt: deps.isoNow(),
      sshHostKey: conn ? `${conn.hostKey.type} ${conn.hostKey.fingerprint}` : null,
      tunnel,
      logFollowedVia: logs.via,
    };

    return {
      baseUrl,
      facts,
      serverLogPath,
      onExit: (cb) => exits.onExit(cb),
      logRelayCost: () => logs.cost(),
      loadSite: { docker: handle.docker, hostName: host.name, port: spec.port, address: handle.address, lost: handle.lost },
      startGpuTelemetry(file, intervalS = 1) {
        if (!gpu.available) return async () => {};
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

/**
 * The spec as the image needs it: vLLM's version-dependent flags and env written for the version
 * the image holds, then every flag checked against the image's own --help. Throws a UserError
 * naming the flag, the image and its version.
 */
export function specForImage(spec: ContainerSpec, learnt: ImageFacts): ContainerSpec {
  let out: ContainerSpec;
  if (spec.basis.family === 'vllm') {
    const v = learnt.version === null ? null : parseVersion(learnt.version);
    if (v === null) {
      throw new UserError(`image ${spec.image} printed no vLLM version (${JSON.stringify(learnt.version)}): fluidcap cannot tell whether it has the V0 engine the recipe's scheduler needs; use an official vllm/vllm-openai image`);
    }
    out = forVersion(spec, { version: `${v.major}.${v.minor}.${v.patch}`, source: 'image', hasDisableLogRequests: learnt.flags.includes('--disable-log-requests') });
  } else {
    out = { ...spec, basis: { ...spec.basis, version: learnt.version, versionSource: 'image' } };
  }
  const problem = imageFlagProblem(out, learnt);
  if (problem) throw problem;
  return out;
}
