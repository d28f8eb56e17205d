// Brings up the engine a run plan names, whichever way it is launched (local child process,
// container on a host through Docker over SSH or the local socket, a process on a host over SSH,
// or an existing endpoint), and
// gives the pipeline one shape to use and release.
import { startLocalSim } from '../provision/localProcess.ts';
import { launchEngine, type Engine, type EngineExit, type LaunchOptions } from '../provision/launcher.ts';
import { resolveHosts, type Inventory } from '../provision/inventory.ts';
import type { ConnectOptions } from '../provision/sshConnection.ts';
import type { RunPlan } from './runPlan.ts';
import type { LogRelayCounters, TunnelRelayCounters } from '../load/health.ts';
import { runPaths } from '../runDir/layout.ts';
import { UserError } from '../util/errors.ts';
import { openSessionAgents, type SessionAgents } from './agentSession.ts';

export interface EngineSession {
  baseUrl: string;
  /** Model name requests carry (from the plan, or the endpoint's first listed model). */
  servedModel: string;
  apiKey: string | undefined;
  facts: Record<string, unknown>;
  timeToReadyS: number | null;
  /** Called once if the engine dies before stop() (the probe in progress ends with errors). */
  onExit(cb: (message: string) => void): void;
  /** Samples GPU telemetry into `file` while a probe runs, when the host has nvidia-smi. */
  startGpuTelemetry(file: string): () => Promise<void>;
  /** What relaying the engine's log has cost so far (cumulative), where a log is followed. */
  logRelayCost?: () => LogRelayCounters;
  /** What the SSH tunnel probes go through has relayed so far (cumulative), with `access: ssh-tunnel`. */
  tunnelRelayCost?: () => TunnelRelayCounters;
  /** The load agents probes are sent from; absent when this process sends them. */
  agents?: SessionAgents;
  /** Releases the engine; `verified` says no container with the run's label is left. */
  stop(): Promise<{ verified: boolean; problems: string[] }>;
}

/** For an engine with runtime process: what the caller (the Slurm launcher) puts around its start (LaunchOptions). */
export type ProcessLaunch = Pick<LaunchOptions, 'launcherPrefix' | 'engineAddress' | 'stateRoot'>;

export interface SessionOptions {
  runDir: string;
  processLaunch?: ProcessLaunch;
  inventory?: Inventory;
  connect?: ConnectOptions;
  log: (line: string) => void;
  signal?: AbortSignal;
}

/** Launches (or attaches to) the plan's engine and resolves once it answers. */
export async function startEngineSession(plan: RunPlan, opts: SessionOptions): Promise<EngineSession> {
  const launch = plan.engine;
  if (launch.kind === 'local-process') {
    opts.log(`starting the simulated engine locally: fluidcap sim serve ${launch.argv.join(' ')}`);
    const local = await startLocalSim(launch.argv, { logPath: runPaths(opts.runDir).serverLog, readyTimeoutS: plan.session.readyTimeoutS });
    let stopped = false;
    return {
      baseUrl: local.baseUrl,
      servedModel: plan.servedModel,
      apiKey: undefined,
      facts: { engine: 'sim', launch: 'local-process', pid: local.pid, baseUrl: local.baseUrl, gpu: { available: false, reason: 'simulated engine: no GPU' }, loadFrom: 'client (this process)' },
      timeToReadyS: local.timeToReadyS,
      onExit(cb) {
        void local.exited.then(({ exitCode, signal }) => {
          // After the user's interrupt an exit is no death: the probe it ends is interrupted anyway.
          if (!stopped && !opts.signal?.aborted) cb(`the simulated engine exited (code ${exitCode ?? 'none'}${signal ? `, signal ${signal}` : ''})`);
        });
      },
      startGpuTelemetry: () => async () => {},
      async stop() {
        stopped = true;
        await local.stop();
        return { verified: true, problems: [] };
      },
    };
  }

  const host = launch.kind === 'endpoint' ? resolveHosts(undefined, 'local')[0] : resolveHosts(opts.inventory, launch.host)[0];
  // A Slurm entry's address is its login host: engines go to an allocated node, which only a sweep asks for.
  if (!host.local && host.kind === 'slurm') {
    throw new UserError(`target.host ${host.name} is a Slurm cluster in ${opts.inventory?.file}: run it as a sweep (fluidcap sweep), which asks Slurm for an allocation per configuration; a sweep file with an empty matrix and one include entry runs one recipe`);
  }
  const apiKey = launch.kind === 'endpoint' && launch.apiKeyEnv ? process.env[launch.apiKeyEnv] : undefined;
  const engine: Engine = await launchEngine(launch.kind === 'endpoint' ? { engine: 'endpoint', url: launch.url } : launch.spec, host, {
    runDir: opts.runDir,
    log: opts.log,
    signal: opts.signal,
    connect: opts.connect,
    access: plan.session.access,
    gpuIdle: plan.session.gpuIdle,
    ...(launch.kind === 'process' ? opts.processLaunch : {}),
  });
  const servedModel = plan.session.requestedModel ?? engine.facts.models[0] ?? plan.servedModel;
  let agents: SessionAgents | undefined;
  if (plan.load.from === 'agent' && engine.loadSite && launch.kind === 'container') {
    try {
      agents = await openSessionAgents(plan.load, engine.loadSite, { runId: plan.runId, containerName: launch.spec.name, inventory: opts.inventory, connect: opts.connect, log: opts.log });
    } catch (err) {
      await engine.stop();
      throw err;
    }
    opts.log(`probes are sent by ${agents.describe}`);
  }
  return {
    agents,
    baseUrl: engine.baseUrl,
    servedModel,
    apiKey,
    facts: { ...engine.facts, loadFrom: agents ? agents.describe : 'client (this process)' },
    timeToReadyS: engine.facts.timeToReadyS,
    onExit(cb) {
      engine.onExit((e: EngineExit) => cb(e.message));
    },
    startGpuTelemetry: (file) => engine.startGpuTelemetry(file),
    logRelayCost: engine.logRelayCost,
    tunnelRelayCost: engine.tunnelRelayCost,
    async stop() {
      const agentProblems = (await agents?.close()) ?? [];
      const report = await engine.stop();
      const problems = [...agentProblems, ...report.problems];
      return { verified: report.remaining.length === 0 && problems.length === 0, problems };
    },
  };
}
