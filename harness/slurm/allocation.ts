// One Slurm allocation for one run: submitted through the login host, waited for while it queues
// (the wait is measured and its reason reported), its node learnt, and released with scancel at
// teardown, on Ctrl-C (SIGINT/SIGTERM teardown) and on failure. A job that is still alive can be
// re-attached to (resume after fluidcap itself was killed).
import { InfraError, UserError } from '../util/errors.ts';
import type { SlurmAllocationRecord } from '../runDir/schema.ts';
import type { SlurmSettings } from '../provision/inventory.ts';
import type { ExecResult } from '../provision/sshConnection.ts';
import { teardownOnSignals } from '../provision/signals.ts';
import {
  isUnknownJob, parseSbatch, parseScontrolJob, parseSqueue, sbatchArgv, scancelArgv, scontrolShowJobArgv, secondsBetween, squeueArgv,
  type AllocationRequest, type JobDetails,
} from './slurmCli.ts';

/** Runs `command args…` on the login host (argv words, quoted by the SSH layer). */
export type SlurmExec = (command: string, args: string[], opts?: { timeoutS?: number }) => Promise<ExecResult>;

/**
 * What a run keeps of its allocation (manifest.json `slurm`, the sweep journal): `queuedS` is the
 * wait from submission to RUNNING as fluidcap saw it (0 for a re-attached job), `slurmQueuedS`
 * the same by Slurm's SubmitTime and StartTime when both are known.
 */
export type AllocationFacts = SlurmAllocationRecord;

export interface Allocation extends AllocationFacts {
  /** scancel, once; resolves when Slurm took the request (the job may still be COMPLETING). */
  release(): Promise<void>;
}

export interface AllocationDeps {
  exec: SlurmExec;
  sleep: (s: number) => Promise<void>;
  nowS: () => number;
}

const LIVE = new Set(['PENDING', 'CONFIGURING', 'RUNNING', 'RESIZING', 'REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED', 'SUSPENDED']);

function failed(what: string, r: ExecResult): string {
  const text = (r.stderr || r.stdout).trim().split('\n').slice(-3).join(' | ');
  return `${what} failed (exit ${r.code ?? r.signal}): ${text || 'no output'}`;
}

/** The job as squeue sees it, or null once Slurm no longer lists it. */
async function queueEntry(deps: AllocationDeps, jobId: string) {
  const [cmd, ...args] = squeueArgv(jobId);
  const r = await deps.exec(cmd, args, { timeoutS: 60 });
  if (r.code !== 0) {
    if (isUnknownJob(r.stderr)) return null;
    throw new InfraError(failed(`squeue for job ${jobId}`, r));
  }
  return parseSqueue(r.stdout).find((e) => e.jobId === jobId) ?? null;
}

async function details(deps: AllocationDeps, jobId: string): Promise<JobDetails | null> {
  const [cmd, ...args] = scontrolShowJobArgv(jobId);
  const r = await deps.exec(cmd, args, { timeoutS: 60 });
  return r.code === 0 ? parseScontrolJob(r.stdout) : null;
}

/** scancel the jobs; a job already gone is not an error. */
export async function cancelJobs(exec: SlurmExec, jobIds: string[]): Promise<void> {
  if (jobIds.length === 0) return;
  const [cmd, ...args] = scancelArgv(jobIds);
  const r = await exec(cmd, args, { timeoutS: 60 });
  if (r.code !== 0 && !/Invalid job id|already completing or completed/i.test(r.stderr)) throw new InfraError(failed(`scancel ${jobIds.join(' ')}`, r));
}

export interface AllocateOptions {
  settings: SlurmSettings;
  request: AllocationRequest;
  /** A job of an earlier session of this run: re-attached to when Slurm still runs or queues it. */
  priorJobId?: string | null;
  /** Called with the job id as soon as Slurm gave one (journal it before waiting). */
  onSubmitted?: (jobId: string) => void;
  signal?: AbortSignal;
  log: (line: string) => void;
  /** Seconds between squeue polls while the job waits (default 1). */
  pollS?: number;
}

/**
 * Submits (or re-attaches to) an allocation and resolves once it runs, with its node. On abort,
 * failure or a job that ends before running, the job is cancelled and the promise rejects.
 */
export async function allocate(opts: AllocateOptions, deps: AllocationDeps): Promise<Allocation> {
  const { settings, log } = opts;
  let jobId: string | null = null;
  let reattached = false;
  if (opts.priorJobId) {
    const entry = await queueEntry(deps, opts.priorJobId);
    if (entry && LIVE.has(entry.state)) {
      jobId = opts.priorJobId;
      reattached = true;
      log(`re-attaching to Slurm job ${jobId} (${entry.state.toLowerCase()}${entry.nodes ? ` on ${entry.nodes}` : ''})`);
    } else log(`Slurm job ${opts.priorJobId} of the earlier session is gone; asking for a new allocation`);
  }
  const t0 = deps.nowS();
  if (jobId === null) {
    const [cmd, ...args] = sbatchArgv(settings, opts.request);
    const r = await deps.exec(cmd, args, { timeoutS: 120 });
    const id = r.code === 0 ? parseSbatch(r.stdout) : null;
    if (id === null) {
      const why = failed(`sbatch in partition ${settings.partition}`, r);
      // sbatch refusing the request (a partition, account or QoS that does not exist) is the inventory's to fix.
      throw /Invalid (partition|account|qos)|Requested node configuration is not available|Invalid generic resource|Invalid feature/i.test(r.stderr)
        ? new UserError(`${why} (check the slurm section of the inventory entry)`)
        : new InfraError(why);
    }
    jobId = id;
    log(`submitted Slurm job ${jobId} (partition ${settings.partition}, ${opts.request.gpus} GPU${opts.request.gpus === 1 ? '' : 's'})`);
  }
  const id = jobId;
  opts.onSubmitted?.(id);
  let released: Promise<void> | null = null;
  let unregister = () => {};
  const release = () => {
    released ??= (async () => {
      unregister();
      await cancelJobs(deps.exec, [id]);
      log(`released Slurm job ${id}`);
    })();
    return released;
  };
  unregister = teardownOnSignals(release);

  try {
    let lastReason = '';
    for (;;) {
      if (opts.signal?.aborted) throw new UserError(`waiting for Slurm job ${id} aborted`);
      const entry = await queueEntry(deps, id);
      if (entry === null || !LIVE.has(entry.state)) {
        throw new InfraError(`Slurm job ${id} ended before it ran (${entry ? entry.state : 'no longer listed'}${entry?.reason && entry.reason !== 'None' ? `: ${entry.reason}` : ''})`);
      }
      if (entry.state === 'RUNNING' && entry.nodes) break;
      if (entry.reason !== lastReason) {
        log(`Slurm job ${id} ${entry.state.toLowerCase()} (${entry.reason}) after ${(deps.nowS() - t0).toFixed(1)} s`);
        lastReason = entry.reason;
      }
      await deps.sleep(opts.pollS ?? 1);
    }
    const queuedS = reattached ? 0 : deps.nowS() - t0;
    const d = await details(deps, id);
    const node = d?.nodes[0] ?? (await queueEntry(deps, id))?.nodes ?? '';
    if (!node) throw new InfraError(`Slurm job ${id} runs, but neither squeue nor scontrol named its node`);
    const facts: AllocationFacts = {
      jobId: id,
      partition: settings.partition,
      node,
      gpuIndices: d?.gpuIndices ?? [],
      queuedS: +queuedS.toFixed(2),
      slurmQueuedS: secondsBetween(d?.submitTime ?? null, d?.startTime ?? null),
      reattached,
    };
    log(`Slurm job ${id} runs on ${node}${facts.gpuIndices.length ? ` (GPUs ${facts.gpuIndices.join(',')})` : ''} after ${facts.queuedS.toFixed(1)} s in the queue`);
    return { ...facts, release };
  } catch (err) {
    await release().catch((e: Error) => log(`scancel ${id}: ${e.message}`));
    throw err;
  }
}
