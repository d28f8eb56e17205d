// Starts one engine on one host and owns it until stop(): GPU facts and idle check, port check,
// image (digest recorded), container create/start, server.log, readiness, exit watch, optional SSH
// tunnel. Each of those is a part with its own file; this module puts them in order. What a
// process's launch does alike (the connection, teardown in reverse, readiness, the facts, the
// Engine) is the session's (engineSession.ts).
//
// Interface (stable):
//   launchEngine(plan: ContainerSpec | ProcessSpec | EndpointPlan, host: Host, opts: LaunchOptions, deps?: LaunchDeps) → Promise<Engine>
//   (a ProcessSpec, `target.runtime: process`, is started by processLauncher.ts)
//   Engine { baseUrl, facts, serverLogPath, onExit(cb) → unsubscribe, startGpuTelemetry(file, intervalS?) → stop,
//            stop() → Promise<StopReport> (idempotent) }
import { appendFileIn } from '../util/confinedFs.ts';
import { dirname } from 'node:path';
import { UserError } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { ContainerSpec } from './containerSpec.ts';
import { dockerCreateOptions } from './dockerCreateOptions.ts';
import { followLogsApart } from './logConnection.ts';
import { createRunContainer, removeRunContainers } from './teardown.ts';
import { EngineLaunchError, type EndpointPlan, type Engine, type LaunchOptions } from './engineTypes.ts';
import { realLaunchDeps, type LaunchDeps } from './launchDeps.ts';
import { endpointEngine } from './endpointEngine.ts';
import { ensureImage } from './engineImage.ts';
import { defaultImageCacheDir, imageFlagProblem, learnImage, type ImageFacts } from './imageFacts.ts';
import { forVersion } from './containerSpec.ts';
import { parseVersion } from './engineVersion.ts';
import { startupFailure } from './startupFailure.ts';
import { openEngineSession } from './engineSession.ts';
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
  const session = await openEngineSession(spec, host, opts, deps, {
    runsAs: 'container',
    gpuIds: spec.gpuDeviceIds?.map(Number) ?? [],
    removeEngine: (h) => removeRunContainers(h.docker, spec.runId, { graceS: opts.stopGraceS ?? 10 }),
  });
  const { handle, log, serverLogPath } = session;

  try {
    const version = await handle.docker.version();
    const gpu = await session.readGpus();
    await session.checkGpusIdle();
    session.checkAbort();
    // A leftover of this same run (an earlier attempt) is ours to replace.
    await removeRunContainers(handle.docker, spec.runId, { graceS: 2 });
    await session.checkPortFree(spec.port);
    const image = await ensureImage(handle.docker, spec.image, { hostName: host.name, pullTimeoutS: opts.pullTimeoutS ?? 1800, log, sleep: deps.sleep });
    session.checkAbort();
    const learnt = await learnImage(handle.docker, {
      image: spec.image, imageId: image.imageId, family: spec.basis.family, runId: spec.runId,
      cacheDir: opts.imageCacheDir ?? defaultImageCacheDir(), hostName: host.name, log,
    });
    spec = specForImage(spec, learnt);
    log(`image ${spec.image}: ${learnt.family} ${learnt.version ?? '(no version printed)'}, ${learnt.flags.length} flags in its --help; every flag of the launch is among them`);
    session.checkAbort();
    const home = await handle.home();
    const createOpts = dockerCreateOptions(spec, {
      secretValues: session.secrets,
      resolveSource: (s) => (s === '~' ? home : s.startsWith('~/') ? `${home}/${s.slice(2)}` : s),
    });
    const container = await createRunContainer(handle.docker, createOpts);
    appendFileIn(dirname(serverLogPath), serverLogPath, `# fluidcap: ${spec.name} (${spec.image}) on ${host.name}, created ${deps.isoNow()}\n`);
    await container.start();
    log(`started ${spec.name} on ${host.name}`);
    const logs = await followLogsApart(handle, () => session.reopen(), container.id, serverLogPath, opts.logBounds);
    session.ownLogs(logs);
    log(`following ${spec.name}'s log over its ${logs.via}`);
    const waited = container.wait();
    // Once the engine stopped, its last lines are read past the relay's rate bound.
    const logsAtExit = { ended: waited.then(() => logs.catchUp(), () => logs.ended), tail: () => logs.tail() };
    const exits = session.watchExit({ waited, inspect: () => container.inspect(), logs: logsAtExit });

    const directUrl = `http://${handle.address}:${spec.port}`;
    const ready = await session.waitReady(directUrl, exits);
    if (!ready.ready) throw startupFailure(ready, exits.observed(), logs.tail(), session.names);
    log(`${spec.name} ready after ${ready.timeToReadyS.toFixed(2)} s`);
    const runtime = await session.checkRuntime(spec, directUrl, `image ${spec.image}`);
    const { baseUrl, tunnel } = await session.measureTunnel(await session.openTunnel(spec.port), directUrl);

    const facts = session.facts({ baseUrl, tunnel, ready, runtime, gpu, logFollowedVia: logs.via }, {
      containerId: container.id,
      image: spec.image,
      imageId: image.imageId,
      imageDigest: image.imageDigest,
      engineImage: { family: learnt.family, version: learnt.version, helpFlags: learnt.flags.length, argv: spec.argv, envNames: Object.keys(spec.env) },
      dockerVersion: version.Version ?? null,
    });
    // Load agents start beside the container, through the same Docker (capacity/agentSession.ts).
    const loadSite = { docker: session.handle.docker, hostName: host.name, port: spec.port, address: session.handle.address, lost: session.handle.lost };
    return session.engine(facts, exits, () => logs.cost(), { loadSite });
  } catch (err) {
    throw await session.failed(err);
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
