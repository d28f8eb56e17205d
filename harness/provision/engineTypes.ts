// What a launched engine looks like to the rest of the harness: its facts, how it exits, what its
// teardown reports. Kept apart from launcher.ts so the launcher's parts share them without
// importing the launcher; launcher.ts re-exports them as its stable interface.
import { InfraError, UserError } from '../util/errors.ts';
import type { ContainerSpec } from './containerSpec.ts';
import type { ConnectOptions } from './sshConnection.ts';
import type { GpuFacts } from './gpuFacts.ts';
import type { LogBounds, LogRelayCost } from './logStream.ts';
import type { EngineRuntime } from './engineRuntime.ts';
import type { TunnelRelayCost } from './sshTunnel.ts';
import type Docker from 'dockerode';

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
  /** Where image facts (version, --help flags) are cached per image id; default ~/.cache/fluidcap/images. */
  imageCacheDir?: string;
  /** How long teardown keeps trying to reach a host whose connection dropped. */
  reconnectTimeoutS?: number;
  /** Stop grace before Docker kills the engine. */
  stopGraceS?: number;
  /** Bounds on the engine log's relay into server.log (logStream.ts defaults). */
  logBounds?: LogBounds;
  /**
   * Runtime process only: words put in front of the engine's command on the host, e.g.
   * `['srun', '--jobid=123', '--overlap', '--ntasks=1']` to start it inside a Slurm allocation.
   * With a prefix the engine may run on another machine than the SSH host: the host's own port,
   * GPU and file checks are skipped.
   */
  launcherPrefix?: string[];
  /**
   * Runtime process only: the address the engine listens on as the SSH host reaches it (a compute
   * node's name behind a launcher prefix). Default: the host itself. Load goes to it directly, or
   * with `access: ssh-tunnel` through the host, readiness included.
   */
  engineAddress?: string;
  /** Runtime process only: the state root on the host (default processState.ts DEFAULT_STATE_ROOT). */
  stateRoot?: string;
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
  /** What the started engine said it runs (start-up log, /version). */
  engineRuntime?: EngineRuntime;
  /** The same in words, as the report shows it. */
  engineRuns?: string;
  /** What the image said about itself (version, --help) and the argv and env names it was started with. */
  engineImage?: { family: string; version: string | null; helpFlags: number; argv: string[]; envNames: string[] } | null;
  gpu: GpuFacts | null;
  dockerVersion: string | null;
  models: string[];
  timeToReadyS: number | null;
  launchedAt: string;
  readyAt: string | null;
  sshHostKey: string | null;
  /** Added latency of the SSH tunnel (keep-alive GET of the health path), when access is ssh-tunnel. */
  tunnel: TunnelFacts | null;
  /** Which connection the engine's log is followed over (absent in older runs). */
  logFollowedVia?: string;
  /** How the engine runs (absent in older runs: container). */
  runtime?: 'container' | 'process';
  /** Runtime process: its state directory on the host, process group and whole argv. */
  process?: ProcessFacts;
}

export interface ProcessFacts {
  stateDir: string;
  pgid: number;
  argv: string[];
  launcherPrefix: string[];
}

export interface TunnelFacts {
  tunnelMsP50: number | null;
  directMsP50: number | null;
  addedMsP50: number | null;
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
  /** What following the engine's log has cost so far; absent when nothing is followed (an endpoint). */
  logRelayCost?: () => LogRelayCost;
  /** What the SSH tunnel load goes through has relayed so far; absent without `access: ssh-tunnel`. */
  tunnelRelayCost?: () => TunnelRelayCost;
  /** Where load agents beside the engine start: its host's Docker (over the held connection) and its port; absent for an endpoint. */
  loadSite?: { docker: Docker; hostName: string; port: number; address: string; lost: Promise<Error> };
  stop(): Promise<StopReport>;
}

/** A launch that failed with the engine's own evidence attached. */
export class EngineLaunchError extends InfraError {
  constructor(
    message: string,
    readonly details: { host: string; exitCode?: number | null; oomKilled?: boolean; lastLogLines?: string[] },
  ) {
    super(message, { host: details.host, lastLogLines: details.lastLogLines });
  }
}
