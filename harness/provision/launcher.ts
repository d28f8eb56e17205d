// Starts one engine on one host and owns it until stop(): GPU facts and idle check, port check,
// image (digest recorded), container create/start, server.log, readiness, exit watch, optional SSH
// tunnel; teardown in reverse order, verified by listing the run's label, and re-connecting first
// when the SSH connection dropped (a leaked container holds a GPU).
//
// Interface (stable):
//   launchEngine(plan: ContainerSpec | EndpointPlan, host: Host, opts: LaunchOptions) → Promise<Engine>
//   Engine { baseUrl, facts, serverLogPath, onExit(cb) → unsubscribe, startGpuTelemetry(file, intervalS?) → stop,
//            stop() → Promise<StopReport> (idempotent) }
import { mkdir, appendFile } from 'node:fs/promises';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { UserError } from '../util/errors.ts';
import type { Host } from './inventory.ts';
import type { ContainerSpec } from './containerSpec.ts';
import { dockerCreateOptions } from './dockerCreateOptions.ts';
import { openHost, type HostHandle } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import { busyGpus, readGpuFacts, type GpuFacts } from './gpuFacts.ts';
import { followLogs, type LogFollower } from './logStream.ts';
import { waitReady } from './readiness.ts';
import { removeRunContainers, type RemovalReport } from './teardown.ts';
import { teardownOnSignals } from './signals.ts';
import { keepAliveLatencyMs, openTunnel, type SshTunnel } from './sshTunnel.ts';

/** An existing OpenAI-compatible server: nothing is launched or stopped. */
export interface EndpointPlan {
  engine: 'endpoint';
  url: string;
}

export interface LaunchOptions {
  runDir: string;
  log?: (line: string) => void;
  /** Aborting stops the launch (and a launched engine). */
  signal?: AbortSignal;
  connect?: ConnectOptions;
  /** Where secret values are read from (default process.env); never logged. */
  env?: NodeJS.ProcessEnv;
  access?: 'direct' | 'ssh-tunnel';
  gpuIdle?: { maxUsedMiB: number; timeoutS: number };
  pullTimeoutS?: number;
  /** How long teardown keeps trying to reach a host whose connection dropped. */
  reconnectTimeoutS?: number;
  /** Stop grace before Docker kills the engine. */
  stopGraceS?: number;
}

export type EngineExit =
  | { kind: 'exited'; exitCode: number | null; oomKilled: boolean; lastLogLines: string[]; message: string }
  | { kind: 'connection-lost'; message: string };

export interface EngineFacts {
  engine: ContainerSpec['engine'] | 'endpoint';
  host: string;
  baseUrl: string;
  access: 'direct' | 'ssh-tunnel';
  containerName: string | null;
  containerId: string | null;
  image: string | null;
  /** The image's content id (sha256 of its config). */
  imageId: string | null;
  /** `repo@sha256:...` when the image came from a registry; null for a locally built image. */
  imageDigest: string | null;
  gpu: GpuFacts | null;
  dockerVersion: string | null;
  models: string[];
  timeToReadyS: number | null;
  launchedAt: string;
  readyAt: string | null;
  sshHostKey: string | null;
  /** Added latency of the SSH tunnel (keep-alive GET /health), when access is ssh-tunnel. */
  tunnel: { tunnelMsP50: number | null; directMsP50: number | null; addedMsP50: number | null } | null;
}

export interface StopReport {
  removed: string[];
  remaining: string[];
  gpuIdle: { ok: boolean; message: string } | null;
  problems: string[];
}

export interface Engine {
  baseUrl: string;
  facts: EngineFacts;
  serverLogPath: string;
  onExit(cb: (exit: EngineExit) => void): () => void;
  startGpuTelemetry(file: string, intervalS?: number): () => Promise<void>;
  stop(): Promise<StopReport>;
}

/** A launch that failed with the engine's own evidence attached. */
export class EngineLaunchError extends UserError {
  constructor(
    message: string,
    readonly details: { host: string; exitCode?: number | null; oomKilled?: boolean; lastLogLines?: string[] },
  ) {
    super(message);
  }
}

const sleep = (s: number) => new Promise<void>((r) => setTimeout(r, s * 1000));
const nowS = () => performance.now() / 1000;
const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

async function httpGet(url: string, timeoutS: number): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutS * 1000) });
  return { status: res.status, body: await res.text() };
}

/** The image's id and registry digest, pulling it when the host does not have it. */
async function ensureImage(handle: HostHandle, image: string, log: (l: string) => void, pullTimeoutS: number) {
  const docker = handle.docker;
  const inspect = async () => docker.getImage(image).inspect();
  let info: Docker.ImageInspectInfo;
  try {
    info = await inspect();
  } catch (err) {
    if (statusOf(err) !== 404) throw err;
    log(`image ${image} not on ${handle.host.name}; pulling`);
    try {
      const stream = await docker.pull(image);
      await Promise.race([
        new Promise<void>((resolve, reject) => docker.modem.followProgress(stream, (e: Error | null) => (e ? reject(e) : resolve()))),
        sleep(pullTimeoutS).then(() => {
          (stream as { destroy?: () => void }).destroy?.();
          throw new Error(`no pull finished within ${pullTimeoutS} s`);
        }),
      ]);
      info = await inspect();
    } catch (pullErr) {
      const why = ((pullErr as { json?: { message?: string } }).json?.message ?? (pullErr as Error).message).trim();
      throw new UserError(`image ${image} is not on host ${handle.host.name} and pulling it failed: ${why}`);
    }
  }
  const repo = image.split('@')[0].replace(/:[^/:]+$/, '');
  const digest = info.RepoDigests?.find((d) => d.startsWith(`${repo}@`)) ?? info.RepoDigests?.[0] ?? null;
  return { imageId: info.Id, imageDigest: digest };
}

async function waitGpusIdle(handle: HostHandle, ids: number[], maxUsedMiB: number, timeoutS: number, when: string): Promise<{ ok: boolean; message: string }> {
  const t0 = nowS();
  for (;;) {
    const facts = await readGpuFacts((c, a) => handle.exec(c, a, { timeoutS: 30 }), handle.host.nvidiaSmi);
    if (!facts.available) return { ok: true, message: facts.reason };
    const busy = busyGpus(facts.gpus, ids, maxUsedMiB);
    if (busy.length === 0) return { ok: true, message: `GPUs ${ids.join(',')} idle ${when}` };
    if (nowS() - t0 > timeoutS) {
      const desc = busy.map((g) => `GPU ${g.index} uses ${g.memoryUsedMiB} MiB`).join(', ');
      return { ok: false, message: `GPUs on ${handle.host.name} not idle ${when} after ${timeoutS} s: ${desc} (over ${maxUsedMiB} MiB; another process may hold them)` };
    }
    await sleep(2);
  }
}

function endpointEngine(plan: EndpointPlan, host: Host, opts: LaunchOptions): Engine {
  const launchedAt = new Date().toISOString();
  const baseUrl = plan.url.replace(/\/+$/, '').replace(/\/v1$/, '');
  return {
    baseUrl,
    serverLogPath: join(opts.runDir, 'server.log'),
    facts: {
      engine: 'endpoint', host: host.name, baseUrl, access: 'direct', containerName: null, containerId: null, image: null,
      imageId: null, imageDigest: null, gpu: null, dockerVersion: null, models: [], timeToReadyS: null, launchedAt,
      readyAt: null, sshHostKey: null, tunnel: null,
    },
    onExit: () => () => {},
    startGpuTelemetry: () => async () => {},
    stop: async () => ({ removed: [], remaining: [], gpuIdle: null, problems: [] }),
  };
}

/** Launches the engine and resolves once it is ready; on any failure nothing is left running. */
export async function launchEngine(plan: ContainerSpec | EndpointPlan, host: Host, opts: LaunchOptions): Promise<Engine> {
  if (plan.engine === 'endpoint') return endpointEngine(plan, host, opts);
  const spec = plan;
  const log = opts.log ?? (() => {});
  const env = opts.env ?? process.env;
  const access = opts.access ?? 'direct';
  const launchedAt = new Date().toISOString();
  const serverLogPath = join(opts.runDir, 'server.log');
  await mkdir(opts.runDir, { recursive: true });

  // Secrets first: a missing one is the user's to fix before anything is touched.
  const secretValues: Record<string, string> = {};
  for (const s of spec.secretEnv) {
    const v = env[s.fromEnv];
    if (v === undefined || v === '') throw new UserError(`target.secrets.${s.name} names the environment variable ${s.fromEnv}, which is not set`);
    secretValues[s.name] = v;
  }

  const handle = await openHost(host, opts.connect);
  let container: Docker.Container | null = null;
  let logs: LogFollower | null = null;
  let tunnel: SshTunnel | null = null;
  let stopping = false;
  let exitInfo: EngineExit | null = null;
  const exitListeners = new Set<(e: EngineExit) => void>();
  const telemetryStops = new Set<() => Promise<void>>();
  let stopPromise: Promise<StopReport> | null = null;
  let unregisterSignals = () => {};
  const gpuIds = spec.gpuDeviceIds?.map(Number) ?? [];

  const emitExit = (e: EngineExit) => {
    if (stopping || exitInfo) return;
    exitInfo = e;
    for (const cb of exitListeners) cb(e);
  };

  // Teardown in reverse order of acquisition; reconnects when the SSH connection is gone.
  const stop = (): Promise<StopReport> => {
    stopPromise ??= (async () => {
      stopping = true;
      unregisterSignals();
      const problems: string[] = [];
      await Promise.allSettled([...telemetryStops].map((s) => s()));
      if (tunnel) await tunnel.close().catch(() => {});
      let removal: RemovalReport = { removed: [], remaining: [] };
      let active: HostHandle | null = handle.connection === null || handle.connection.isOpen() ? handle : null;
      if (active === null) {
        const deadline = nowS() + (opts.reconnectTimeoutS ?? 60);
        let lastErr = '';
        while (active === null && nowS() < deadline) {
          try {
            active = await openHost(host, { ...opts.connect, acceptNewHostKey: false, readyTimeoutS: 5 });
            log(`reconnected to ${host.name} for teardown`);
          } catch (err) {
            lastErr = (err as Error).message;
            await sleep(1);
          }
        }
        if (active === null) {
          problems.push(`cannot reach ${host.name} to remove ${spec.name} (${lastErr}); it may still hold GPUs: run \`fluidcap clean <inventory>\` once the host is reachable`);
        }
      }
      if (active) {
        try {
          removal = await removeRunContainers(active.docker, spec.runId, { graceS: opts.stopGraceS ?? 10 });
          if (removal.remaining.length > 0) problems.push(`containers still listed with ${spec.runId} on ${host.name}: ${removal.remaining.join(', ')}`);
        } catch (err) {
          problems.push(`removing ${spec.name} on ${host.name} failed: ${(err as Error).message}`);
          removal = { removed: [], remaining: [spec.name] };
        }
      } else {
        removal = { removed: [], remaining: [spec.name] };
      }
      if (logs) await logs.close().catch(() => {});
      let gpuIdle: StopReport['gpuIdle'] = null;
      if (active && gpuIds.length > 0 && opts.gpuIdle) {
        gpuIdle = await waitGpusIdle(active, gpuIds, opts.gpuIdle.maxUsedMiB, opts.gpuIdle.timeoutS, 'after stopping').catch((e: Error) => ({ ok: false, message: e.message }));
        if (!gpuIdle.ok) problems.push(gpuIdle.message);
      }
      if (active && active !== handle) await active.close().catch(() => {});
      await handle.close().catch(() => {});
      for (const p of problems) log(p);
      return { removed: removal.removed, remaining: removal.remaining, gpuIdle, problems };
    })();
    return stopPromise;
  };
  unregisterSignals = teardownOnSignals(stop);
  const onAbort = () => void stop();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  const failLaunch = async (err: unknown): Promise<never> => {
    const report = await stop();
    if (report.problems.length > 0 && err instanceof Error) err.message += `\n  teardown: ${report.problems.join('; ')}`;
    throw err;
  };

  try {
    const checkAbort = () => {
      if (opts.signal?.aborted) throw new UserError(`launch of ${spec.name} on ${host.name} aborted`);
    };
    const version = await handle.docker.version();
    const gpu = await readGpuFacts((c, a) => handle.exec(c, a, { timeoutS: 30 }), host.nvidiaSmi);
    log(gpu.available ? `GPUs on ${host.name}: ${gpu.gpus.map((g) => `${g.index}:${g.name}`).join(', ')} (driver ${gpu.gpus[0].driverVersion})` : `GPU facts on ${host.name}: ${gpu.reason}`);
    if (gpuIds.length > 0 && opts.gpuIdle) {
      const idle = await waitGpusIdle(handle, gpuIds, opts.gpuIdle.maxUsedMiB, opts.gpuIdle.timeoutS, 'before launch');
      if (!idle.ok) throw new UserError(idle.message);
    }
    checkAbort();
    // A leftover of this same run (an earlier attempt) is ours to replace.
    await removeRunContainers(handle.docker, spec.runId, { graceS: 2 });
    if (await handle.portTaken(spec.port)) {
      throw new UserError(`port ${spec.port} on host ${host.name} is already taken (another server or a leftover engine listens there); stop it or choose another target.port`);
    }
    const image = await ensureImage(handle, spec.image, log, opts.pullTimeoutS ?? 1800);
    checkAbort();
    const home = await handle.home();
    const createOpts = dockerCreateOptions(spec, {
      secretValues,
      resolveSource: (s) => (s === '~' ? home : s.startsWith('~/') ? `${home}/${s.slice(2)}` : s),
    });
    container = await handle.docker.createContainer(createOpts);
    await appendFile(serverLogPath, `# fluidcap: ${spec.name} (${spec.image}) on ${host.name}, created ${new Date().toISOString()}\n`);
    await container.start();
    log(`started ${spec.name} on ${host.name}`);
    logs = await followLogs(handle.docker, container, serverLogPath);

    const exitWatch = container.wait().then(
      async (r: { StatusCode?: number }) => {
        const info = await container!.inspect().catch(() => null);
        await Promise.race([logs!.ended, sleep(1)]);
        const exitCode = r.StatusCode ?? info?.State?.ExitCode ?? null;
        const oomKilled = info?.State?.OOMKilled ?? false;
        const lastLogLines = logs!.tail();
        return {
          kind: 'exited' as const,
          exitCode,
          oomKilled,
          lastLogLines,
          message: `engine container ${spec.name} on ${host.name} exited with code ${exitCode}${oomKilled ? ' (OOM killed)' : ''}`,
        };
      },
      (err: Error) => ({ kind: 'connection-lost' as const, message: `lost the connection to ${host.name} while watching ${spec.name}: ${err.message}` }),
    );
    let observedExit: EngineExit | null = null;
    void exitWatch.then((e) => {
      observedExit = e;
      emitExit(e);
    });
    void handle.lost.then((reason) => {
      const e: EngineExit = { kind: 'connection-lost', message: `SSH connection to ${host.name} lost: ${reason.message}` };
      observedExit ??= e;
      emitExit(e);
    });

    const directUrl = `http://${handle.address}:${spec.port}`;
    const ready = await waitReady(directUrl, { deadlineS: spec.readyTimeoutS, signal: opts.signal }, {
      get: httpGet,
      nowS,
      sleep,
      gone: async () => (observedExit === null ? null : observedExit.message),
    });
    if (!ready.ready) {
      if (ready.reason === 'exited' && observedExit !== null && (observedExit as EngineExit).kind === 'exited') {
        const e = observedExit as Extract<EngineExit, { kind: 'exited' }>;
        const tail = e.lastLogLines.length > 0 ? e.lastLogLines.map((l) => `    ${l}`).join('\n') : '    (no output)';
        throw new EngineLaunchError(
          `engine ${spec.name} on ${host.name} exited during start-up with code ${e.exitCode} (OOM killed: ${e.oomKilled ? 'yes' : 'no'}); last ${e.lastLogLines.length} log lines:\n${tail}`,
          { host: host.name, exitCode: e.exitCode, oomKilled: e.oomKilled, lastLogLines: e.lastLogLines },
        );
      }
      const lastLogLines = logs.tail();
      throw new EngineLaunchError(
        `engine ${spec.name} on ${host.name} did not become ready: ${ready.detail}; last log lines:\n${lastLogLines.map((l) => `    ${l}`).join('\n')}`,
        { host: host.name, lastLogLines },
      );
    }
    log(`${spec.name} ready after ${ready.timeToReadyS.toFixed(2)} s`);

    let baseUrl = directUrl;
    let tunnelFacts: EngineFacts['tunnel'] = null;
    if (access === 'ssh-tunnel' && handle.connection) {
      tunnel = await openTunnel(handle.connection, spec.port);
      baseUrl = tunnel.baseUrl;
      const tunnelMsP50 = await keepAliveLatencyMs(tunnel.baseUrl);
      const directMsP50 = await keepAliveLatencyMs(directUrl);
      const addedMsP50 = tunnelMsP50 !== null && directMsP50 !== null ? tunnelMsP50 - directMsP50 : null;
      tunnelFacts = { tunnelMsP50, directMsP50, addedMsP50 };
      log(`ssh tunnel 127.0.0.1:${tunnel.localPort} → ${host.name}:${spec.port}; keep-alive GET /health p50 ${tunnelMsP50?.toFixed(2)} ms` +
        (directMsP50 !== null ? ` vs direct ${directMsP50.toFixed(2)} ms (added ${addedMsP50!.toFixed(2)} ms)` : ' (direct path not reachable from here)'));
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
      gpu,
      dockerVersion: version.Version ?? null,
      models: ready.models,
      timeToReadyS: ready.timeToReadyS,
      launchedAt,
      readyAt: new Date().toISOString(),
      sshHostKey: handle.connection ? `${handle.connection.hostKey.type} ${handle.connection.hostKey.fingerprint}` : null,
      tunnel: tunnelFacts,
    };

    return {
      baseUrl,
      facts,
      serverLogPath,
      onExit(cb) {
        if (exitInfo) queueMicrotask(() => cb(exitInfo!));
        else exitListeners.add(cb);
        return () => exitListeners.delete(cb);
      },
      startGpuTelemetry(file, intervalS = 1) {
        if (!gpu.available) return async () => {};
        let running = true;
        const t0 = nowS();
        const loop = (async () => {
          while (running && !stopping) {
            const facts = await readGpuFacts((c, a) => handle.exec(c, a, { timeoutS: 10 }), host.nvidiaSmi).catch(() => null);
            if (facts?.available) {
              const gpus = gpuIds.length > 0 ? facts.gpus.filter((g) => gpuIds.includes(g.index)) : facts.gpus;
              await appendFile(file, JSON.stringify({ tS: +(nowS() - t0).toFixed(3), at: new Date().toISOString(), gpus }) + '\n');
            }
            if (running) await sleep(intervalS);
          }
        })();
        const stopTelemetry = async () => {
          running = false;
          telemetryStops.delete(stopTelemetry);
          await loop;
        };
        telemetryStops.add(stopTelemetry);
        return stopTelemetry;
      },
      stop,
    };
  } catch (err) {
    opts.signal?.removeEventListener('abort', onAbort);
    if (err instanceof UserError) return failLaunch(err);
    return failLaunch(new UserError(`launching ${spec.name} on ${host.name} failed: ${(err as Error).message}`, { cause: err }));
  }
}
