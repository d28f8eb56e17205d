// `fluidcap clean`: removes containers fluidcap labelled and left behind on every inventory host
// (a run killed with SIGKILL, a host unreachable during teardown), and proves they are gone.
import { LOCAL_HOST, type Host, type Inventory } from './inventory.ts';
import { openHost } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import { removeRunContainers } from './teardown.ts';

export interface CleanResult {
  host: string;
  removed: string[];
  remaining: string[];
  error: string | null;
}

/** Removes every `fluidcap.run`-labelled container (or only `runId`'s) on each host, one result per host. */
export async function cleanLeftovers(
  inventory: Inventory | null,
  opts: { runId?: string; includeLocal?: boolean; connect?: ConnectOptions; extraHosts?: Host[] } = {},
): Promise<CleanResult[]> {
  const hosts: Host[] = [...(inventory?.hosts ?? []), ...(opts.extraHosts ?? [])];
  if (opts.includeLocal) hosts.push(LOCAL_HOST);
  return Promise.all(
    hosts.map(async (host): Promise<CleanResult> => {
      try {
        const handle = await openHost(host, opts.connect);
        try {
          const r = await removeRunContainers(handle.docker, opts.runId, { graceS: 5 });
          return { host: host.name, ...r, error: null };
        } finally {
          await handle.close();
        }
      } catch (err) {
        return { host: host.name, removed: [], remaining: [], error: (err as Error).message };
      }
    }),
  );
}
