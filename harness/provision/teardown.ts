// Creating and removing a run's containers, and proving the removal: every labelled container is
// created here, so a removal first waits for the creates still in flight on the same Docker client
// (the daemon lists a container only once its create is done, and finishes a create whose caller
// has gone: a teardown that only listed, then closed the connection, left it behind). Then stop
// (grace for the engine to free its GPUs), force remove, and list by the run's label until nothing
// is left.
import type Docker from 'dockerode';
import { RUN_LABEL } from './containerSpec.ts';

export interface RemovalReport {
  removed: string[];
  /** Containers still listed with the label after removal: non-empty means a leak. */
  remaining: string[];
}

const statusOf = (err: unknown) => (err as { statusCode?: number }).statusCode;

/** How long a removal waits for the run's creates in flight (a daemon under load takes seconds). */
export const CREATE_WAIT_S = 30;

interface CreateInFlight {
  runId: string;
  name: string;
  settled: Promise<unknown>;
}

// Per Docker client: a teardown removes through the client the launch created through, and a
// reconnected client starts empty (what its lost predecessor created is listed by then).
const inFlight = new WeakMap<Docker, Set<CreateInFlight>>();

/**
 * Creates a container labelled with its run (`Labels[RUN_LABEL]` is required), registered until
 * the daemon has answered so that removeRunContainers on this client waits for it.
 */
export function createRunContainer(docker: Docker, options: Docker.ContainerCreateOptions): Promise<Docker.Container> {
  const runId = options.Labels?.[RUN_LABEL];
  if (runId === undefined) throw new Error(`createRunContainer: ${options.name ?? options.Image} has no ${RUN_LABEL} label`);
  const created = docker.createContainer(options);
  const pending = inFlight.get(docker) ?? new Set<CreateInFlight>();
  inFlight.set(docker, pending);
  const entry: CreateInFlight = { runId, name: options.name ?? `a container of ${options.Image}`, settled: created.then(() => {}, () => {}) };
  pending.add(entry);
  void entry.settled.then(() => pending.delete(entry));
  return created;
}

/** The creates of `runId` (every run's when undefined) in flight on `docker`. */
function createsInFlight(docker: Docker, runId: string | undefined): CreateInFlight[] {
  return [...(inFlight.get(docker) ?? [])].filter((c) => runId === undefined || c.runId === runId);
}

/**
 * Waits until no create of the run is in flight on `docker`, for at most `waitS` (creates issued
 * meanwhile are waited for too); returns the names still being created then.
 */
export async function settleRunCreates(docker: Docker, runId: string | undefined, waitS = CREATE_WAIT_S): Promise<string[]> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), waitS * 1000)));
  try {
    for (let pending = createsInFlight(docker, runId); pending.length > 0; pending = createsInFlight(docker, runId)) {
      if ((await Promise.race([Promise.all(pending.map((c) => c.settled)), timedOut])) === 'timeout') return pending.map((c) => c.name);
    }
    return [];
  } finally {
    clearTimeout(timer);
  }
}

/** Containers carrying `fluidcap.run` (= runId when given), running or not. */
export async function listRunContainers(docker: Docker, runId?: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [runId === undefined ? RUN_LABEL : `${RUN_LABEL}=${runId}`] } });
}

/**
 * Stops and removes every container of the run (or every fluidcap container), once the creates in
 * flight on this client have been answered, then verifies for up to `verifyS`: a daemon under load
 * takes seconds to remove, and a removal another caller began (409) is waited for, not repeated.
 */
export async function removeRunContainers(docker: Docker, runId?: string, opts: { graceS?: number; createWaitS?: number; verifyS?: number } = {}): Promise<RemovalReport> {
  const removed: string[] = [];
  const unanswered = (await settleRunCreates(docker, runId, opts.createWaitS)).map((name) => `${name} (its create was not answered within ${opts.createWaitS ?? CREATE_WAIT_S} s)`);
  const t0 = performance.now();
  for (let attempt = 0; attempt === 0 || performance.now() - t0 < (opts.verifyS ?? 20) * 1000; attempt++) {
    const listed = await listRunContainers(docker, runId);
    if (listed.length === 0) return { removed, remaining: unanswered };
    await Promise.all(
      listed.map(async (info) => {
        const c = docker.getContainer(info.Id);
        if (info.State === 'running' && attempt === 0) await c.stop({ t: opts.graceS ?? 10 }).catch(() => {});
        if (info.State === 'removing') return;
        try {
          await c.remove({ force: true, v: true });
          removed.push(info.Names[0]?.replace(/^\//, '') ?? info.Id.slice(0, 12));
        } catch (err) {
          // 404: already gone; 409: removal already in progress. Both end in the check below.
          if (statusOf(err) !== 404 && statusOf(err) !== 409) throw err;
        }
      }),
    );
    await new Promise((r) => setTimeout(r, Math.min(200 * attempt, 1000)));
  }
  const remaining = (await listRunContainers(docker, runId)).map((i) => i.Names[0]?.replace(/^\//, '') ?? i.Id.slice(0, 12));
  return { removed, remaining: [...remaining, ...unanswered] };
}
