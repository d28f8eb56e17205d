// `fluidcap clean`: removes containers fluidcap labelled and left behind on every inventory host
// (a run killed with SIGKILL, a host unreachable during teardown), stops engine processes whose
// state directories are left there (runtime process), and proves both are gone. A host without
// Docker (no socket at its docker.socket) is cleaned of processes only, and says so.
import { LOCAL_HOST, type Host, type Inventory } from './inventory.ts';
import { explainDockerFailure, openHost } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import { removeRunContainers } from './teardown.ts';
import { stopLeftoverProcesses } from './processHost.ts';

export interface CleanResult {
  host: string;
  removed: string[];
  remaining: string[];
  error: string | null;
  /** Why containers were not looked for (no Docker on the host); null when they were. */
  containersSkipped?: string | null;
  /** Entries of the engine state root that name no run (left untouched). */
  refusedStateEntries?: string[];
}

/** Removes every `fluidcap.run`-labelled container and engine process (or only `runId`'s) on each host, one result per host. */
export async function cleanLeftovers(
  inventory: Inventory | null,
  opts: { runId?: string; includeLocal?: boolean; connect?: ConnectOptions; extraHosts?: Host[]; stateRoot?: string } = {},
): Promise<CleanResult[]> {
  const hosts: Host[] = [...(inventory?.hosts ?? []), ...(opts.extraHosts ?? [])];
  if (opts.includeLocal) hosts.push(LOCAL_HOST);
  return Promise.all(
    hosts.map(async (host): Promise<CleanResult> => {
      try {
        const handle = await openHost(host, opts.connect, { docker: false });
        try {
          const processes = await stopLeftoverProcesses(handle, { runId: opts.runId, root: opts.stateRoot, graceS: 5 });
          const result: CleanResult = { host: host.name, removed: processes.removed, remaining: processes.remaining, error: null, containersSkipped: null, refusedStateEntries: processes.refused };
          const dockerDown = await handle.docker.ping().then(() => null, (err: Error) => err);
          if (dockerDown !== null) {
            const absent = handle.connection === null
              ? (dockerDown as NodeJS.ErrnoException).code === 'ENOENT'
              : (await handle.exec('test', ['-e', host.docker.socket]).catch(() => null))?.code === 1;
            if (absent) result.containersSkipped = `no Docker socket at ${host.docker.socket}`;
            else result.error = handle.connection ? await explainDockerFailure(handle.connection, host.docker.socket, dockerDown) : `cannot reach the local Docker daemon at ${host.docker.socket}: ${dockerDown.message}`;
            return result;
          }
          const r = await removeRunContainers(handle.docker, opts.runId, { graceS: 5 });
          return { ...result, removed: [...result.removed, ...r.removed], remaining: [...result.remaining, ...r.remaining] };
        } finally {
          await handle.close();
        }
      } catch (err) {
        return { host: host.name, removed: [], remaining: [], error: (err as Error).message };
      }
    }),
  );
}
