// The load agents of a run's engine session: where they may run (the engine's host, or the
// inventory hosts the recipe's `load.hosts` names), the agent image made sure of on each of those
// hosts once, before any probe, and a fresh set of agent containers per probe.
import type { Engine } from '../provision/launcher.ts';
import { resolveHosts, type Inventory } from '../provision/inventory.ts';
import { openHost, type HostHandle } from '../provision/hostHandle.ts';
import type { ConnectOptions } from '../provision/sshConnection.ts';
import { removeRunContainers } from '../provision/teardown.ts';
import { ensureAgentImage, localAgentVersion } from '../agent/image.ts';
import { startAgents, type AgentSite, type StartedAgents } from '../agent/container.ts';
import type { LoadPlan } from '../runDir/schema.ts';

export interface SessionAgents {
  version: string;
  count: number;
  /** `2 load agents on hostA, hostB` for the console and the manifest. */
  describe: string;
  /** Starts the agents of probe `index` (named after the engine's container); throws once `signal` (the user's interrupt) is aborted. */
  start(index: number, signal?: AbortSignal): Promise<StartedAgents>;
  /** Removes the run's containers on the agent hosts other than the engine's and closes them. */
  close(): Promise<string[]>;
}

/** Opens the agent hosts and makes sure of the image on each; on failure closes what it opened. */
export async function openSessionAgents(
  load: LoadPlan,
  site: NonNullable<Engine['loadSite']>,
  opts: { runId: string; containerName: string; inventory?: Inventory; connect?: ConnectOptions; log: (line: string) => void },
): Promise<SessionAgents> {
  const version = localAgentVersion();
  const extra: HostHandle[] = [];
  const close = async () => {
    const problems: string[] = [];
    for (const h of extra.splice(0)) {
      const r = await removeRunContainers(h.docker, opts.runId, { graceS: 2 }).catch((err: Error) => ({ remaining: [err.message] }));
      if (r.remaining.length > 0) problems.push(`${h.host.name}: left ${r.remaining.join(', ')}`);
      await h.close().catch(() => {});
    }
    return problems;
  };
  try {
    const sites: AgentSite[] = [];
    const hostNames = load.hosts === null ? [site.hostName] : load.hosts.flatMap((n) => resolveHosts(opts.inventory, n).map((h) => h.name));
    for (const name of hostNames) {
      if (name === site.hostName) {
        sites.push({ docker: site.docker, hostName: name, engineUrl: `http://127.0.0.1:${site.port}`, lost: site.lost });
        continue;
      }
      const handle = await openHost(resolveHosts(opts.inventory, name)[0], opts.connect);
      extra.push(handle);
      sites.push({ docker: handle.docker, hostName: name, engineUrl: `http://${site.address}:${site.port}`, lost: handle.lost });
    }
    const images = await Promise.all(sites.map((s) => ensureAgentImage(s.docker, { version, hostName: s.hostName, log: opts.log })));
    const used = sites.slice(0, load.agents);
    const describe = `${load.agents} load agent${load.agents === 1 ? '' : 's'} ${load.hosts === null ? `beside the engine on ${site.hostName}` : `on ${[...new Set(used.map((s) => s.hostName))].join(', ')}`} (version ${version})`;
    return {
      version,
      count: load.agents,
      describe,
      start: (index, signal) => startAgents(sites, { count: load.agents, image: images[0], runId: opts.runId, namePrefix: `${opts.containerName}-agent-p${String(index).padStart(2, '0')}`, signal }),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}
