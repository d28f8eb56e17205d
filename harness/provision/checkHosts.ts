// `fluidcap hosts check`: for each inventory host, what a run would rely on — SSH (host key,
// round trip), Docker (version, runtimes, socket permission), GPUs (nvidia-smi facts), leftovers.
import { LOCAL_HOST, type Host, type Inventory, type InventoryHost } from './inventory.ts';
import { openHost } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import { readGpuFacts, type GpuFacts } from './gpuFacts.ts';
import { listRunContainers } from './teardown.ts';
import { connectHost } from './sshConnection.ts';
import { checkSlurm, type SlurmCheck } from '../slurm/checkSlurm.ts';

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
export async function checkHosts(inventory: Inventory | null, opts: { connect?: ConnectOptions; includeLocal?: boolean; extraHosts?: Host[] } = {}): Promise<HostCheck[]> {
  const hosts: Host[] = [...(inventory?.hosts ?? []), ...(opts.extraHosts ?? [])];
  if (opts.includeLocal) hosts.push(LOCAL_HOST);
  return Promise.all(hosts.map((h) => checkHost(h, opts.connect)));
}

async function checkHost(host: Host, connect?: ConnectOptions): Promise<HostCheck> {
  if (!host.local && host.kind === 'slurm' && host.slurm) return checkSlurmEntry(host, connect);
  const result: HostCheck = { host: host.name, ok: false, problems: [], ssh: null, docker: null, gpu: null, leftovers: [] };
  const t0 = performance.now();
  let handle;
  try {
    handle = await openHost(host, connect);
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
    const t2 = performance.now();
    await handle.docker.ping();
    const pingMs = performance.now() - t2;
    const [version, info] = await Promise.all([handle.docker.version(), handle.docker.info()]);
    const runtimes = Object.keys((info as { Runtimes?: Record<string, unknown> }).Runtimes ?? {});
    result.docker = { version: version.Version, apiVersion: version.ApiVersion, runtimes, pingMs: +pingMs.toFixed(1) };
    result.gpu = await readGpuFacts((c, a) => handle.exec(c, a, { timeoutS: 30 }), host.nvidiaSmi);
    if (!result.gpu.available) result.problems.push(`GPU: ${result.gpu.reason}`);
    else if (!runtimes.includes('nvidia')) result.problems.push('Docker has no nvidia runtime (install nvidia-container-toolkit) — GPU device requests will fail');
    result.leftovers = (await listRunContainers(handle.docker)).map((c) => `${c.Names[0]?.replace(/^\//, '')} (${c.State})`);
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

// A login host need not run Docker or have GPUs: it is checked for SSH and Slurm only.
async function checkSlurmEntry(host: InventoryHost, connect?: ConnectOptions): Promise<HostCheck> {
  const result: HostCheck = { host: host.name, ok: false, problems: [], ssh: null, docker: null, gpu: null, leftovers: [] };
  const t0 = performance.now();
  let conn;
  try {
    conn = await connectHost(host, connect);
  } catch (err) {
    result.problems.push((err as Error).message);
    return result;
  }
  try {
    const connectMs = performance.now() - t0;
    const t1 = performance.now();
    await conn.exec('true', []);
    result.ssh = { hostKey: `${conn.hostKey.type} ${conn.hostKey.fingerprint} (${conn.hostKey.verdict})`, connectMs: +connectMs.toFixed(1), execMs: +(performance.now() - t1).toFixed(1) };
    result.slurm = await checkSlurm((c, a, o) => conn.exec(c, a, o), host.slurm!);
    result.problems.push(...result.slurm.problems);
    result.ok = result.problems.length === 0;
  } catch (err) {
    result.problems.push((err as Error).message);
  } finally {
    await conn.close();
  }
  return result;
}
