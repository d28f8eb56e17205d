// Removing a run's containers and proving it: stop (grace for the engine to free its GPUs), force
// remove, then list by the run's label until nothing is left.
import type Docker from 'dockerode';
import { RUN_LABEL } from './containerSpec.ts';

export interface RemovalReport {
  removed: string[];
  /** Containers still listed with the label after removal: non-empty means a leak. */
  remaining: string[];
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** Containers carrying `fluidcap.run` (= runId when given), running or not. */
export async function listRunContainers(docker: Docker, runId?: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [runId === undefined ? RUN_LABEL : `${RUN_LABEL}=${runId}`] } });
}

/** Stops and removes every container of the run (or every fluidcap container), then verifies. */
export async function removeRunContainers(docker: Docker, runId?: string, opts: { graceS?: number } = {}): Promise<RemovalReport> {
  const removed: string[] = [];
  for (let attempt = 0; attempt < 5; attempt++) {
    const listed = await listRunContainers(docker, runId);
    if (listed.length === 0) return { removed, remaining: [] };
    await Promise.all(
      listed.map(async (info) => {
        const c = docker.getContainer(info.Id);
        if (info.State === 'running' && attempt === 0) await c.stop({ t: opts.graceS ?? 10 }).catch(() => {});
        try {
          await c.remove({ force: true, v: true });
          removed.push(info.Names[0]?.replace(/^\//, '') ?? info.Id.slice(0, 12));
        } catch (err) {
          // 404: already gone; 409: removal already in progress. Both end in the check below.
          if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 200 * attempt));
  }
  const remaining = (await listRunContainers(docker, runId)).map((i) => i.Names[0]?.replace(/^\//, '') ?? i.Id.slice(0, 12));
  return { removed, remaining };
}
