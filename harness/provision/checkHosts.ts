// `fluidcap hosts check`: for each inventory host, what a run would rely on — SSH (host key,
// round trip), Docker (version, runtimes, socket permission), GPUs (nvidia-smi facts), leftovers.
// A host that will only run engines as processes (`runtime: process`) is checked without Docker.
import { LOCAL_HOST, type Host, type Inventory, type InventoryHost } from './inventory.ts';
import { explainDockerFailure, explainLocalDockerFailure, openHost, type HostHandle } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import { readGpuFacts, type GpuFacts } from './gpuFacts.ts';
import { listRunContainers } from './teardown.ts';


/** What sinfo on a Slurm entry's login host says (harness/slurm/checkSlurm.ts fills it). */
export interface SlurmCheck {
  partitions: { name: string; nodes: number; freeNodes: string[]; gpus: Record<string, number>; default: boolean }[];
  /** GPUs by type over every node (a node in several partitions counted once). */
  gpuTypes: Record<string, number>;
  /** Nodes of the entry's partition that take new GPU work now. */
  freeNodes: string[];
  problems: string[];
}

export interface HostCheck {
  host: string;
  ok: boolean;
  problems: string[];
  ssh: { hostKey: string; connectMs: number; execMs: number } | null;
  docker: { version: string; apiVersion: string; runtimes: string[]; pingMs: number } | null;
  gpu: GpuFacts | null;
  leftovers: string[];
  /** A Slurm entry: what sinfo on its login host says (its nodes are checked only inside an allocation). */
  slurm?: SlurmCheck;
}

/** Checks every host in parallel; a failing host is a result with problems, never an exception. */
export async function checkHosts(
  inventory: Inventory | null,
  opts: {
    connect?: ConnectOptions;
    includeLocal?: boolean;
    extraHosts?: Host[];
    slurmEntry?: (host: InventoryHost, connect?: ConnectOptions) => Promise<HostCheck>;
    /** How engines will run on the hosts: in containers (Docker needed, the default) or as processes (not). */
    runtime?: 'container' | 'process';
  } = {},
): Promise<HostCheck[]> {
  const hosts: Host[] = [...(inventory?.hosts ?? []), ...(opts.extraHosts ?? [])];
  if (opts.includeLocal) hosts.push(LOCAL_HOST);
  return Promise.all(
    hosts.map((h) => {
      if (h.local || h.kind !== 'slurm') return checkHost(h, opts.connect, opts.runtime ?? 'container');
      // A login host need not run Docker or have GPUs: the Slurm check (harness/slurm) reads the cluster instead.
      if (opts.slurmEntry) return opts.slurmEntry(h, opts.connect);
      return Promise.resolve({ host: h.name, ok: false, problems: ['a Slurm entry is checked by fluidcap hosts check'], ssh: null, docker: null, gpu: null, leftovers: [] });
    }),
  );
}

async function checkHost(host: Host, connect: ConnectOptions | undefined, runtime: 'container' | 'process'): Promise<HostCheck> {
  const result: HostCheck = { host: host.name, ok: false, problems: [], ssh: null, docker: null, gpu: null, leftovers: [] };
  const t0 = performance.now();
  let handle: HostHandle;
  try {
    // SSH first, Docker after: a host without Docker still shows its key and round trip.
    handle = await openHost(host, connect, { docker: false });
  } catch (err) {
    result.problems.push((err as Error).message);
    return result;
  }
  try {
    const connectMs = performance.now() - t0;
    if (handle.connection) {
      const t1 = performance.now();
      await handle.exec('true', []);
      result.ssh = {
        hostKey: `${handle.connection.hostKey.type} ${handle.connection.hostKey.fingerprint} (${handle.connection.hostKey.verdict})`,
        connectMs: +connectMs.toFixed(1),
        execMs: +(performance.now() - t1).toFixed(1),
      };
    }
    const runtimes = runtime === 'container' ? await dockerFacts(handle, result) : null;
    result.gpu = await readGpuFacts((c, a) => handle.exec(c, a, { timeoutS: 30 }), host.nvidiaSmi);
    if (!result.gpu.available) result.problems.push(`GPU: ${result.gpu.reason}`);
    else if (runtimes && !runtimes.includes('nvidia')) result.problems.push('Docker has no nvidia runtime (install nvidia-container-toolkit) — GPU device requests will fail');
    // No GPU is a fact worth showing, not a reason the host cannot run the simulated engine; fluidcap
    // containers are listed (they may be a run in progress) and `fluidcap clean` removes leftovers.
    result.ok = result.problems.every((p) => p.startsWith('GPU:'));
  } catch (err) {
    result.problems.push((err as Error).message);
  } finally {
    await handle.close();
  }
  return result;
}

/** Docker's version, runtimes and fluidcap's containers into `result`; its runtimes, or null (a problem recorded) when Docker cannot be used. */
async function dockerFacts(handle: HostHandle, result: HostCheck): Promise<string[] | null> {
  const t0 = performance.now();
  try {
    await handle.docker.ping();
  } catch (err) {
    const why = handle.connection
      ? await explainDockerFailure(handle.connection, handle.host.docker.socket, err as Error)
      : explainLocalDockerFailure(handle.host.docker.socket, err as Error);
    result.problems.push(`${why}; engines in containers and load agents need Docker (a host that only runs engines as processes: fluidcap hosts check --runtime process)`);
    return null;
  }
  const pingMs = performance.now() - t0;
  const [version, info] = await Promise.all([handle.docker.version(), handle.docker.info()]);
  const runtimes = Object.keys((info as { Runtimes?: Record<string, unknown> }).Runtimes ?? {});
  result.docker = { version: version.Version, apiVersion: version.ApiVersion, runtimes, pingMs: +pingMs.toFixed(1) };
  result.leftovers = (await listRunContainers(handle.docker)).map((c) => `${c.Names[0]?.replace(/^\//, '')} (${c.State})`);
  return runtimes;
}
