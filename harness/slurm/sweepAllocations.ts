// A sweep's runs on Slurm entries of the inventory: each run becomes one allocation, at most the
// entry's maxConcurrent at once; Slurm decides where and when each runs. While a run holds its
// allocation, the entry's name stands for the allocated node (reached through the login host), so
// the run's recipe and the launcher see an ordinary SSH host.
import pLimit from 'p-limit';
import type { Inventory, InventoryHost } from '../provision/inventory.ts';
import { connectHost, type ConnectOptions, type HostConnection } from '../provision/sshConnection.ts';
import { allocate, type Allocation, type AllocationFacts } from './allocation.ts';

export interface SlurmRun {
  /** Configuration id, for the job name and logs. */
  id: string;
  /** The inventory entry the run is placed on. */
  host: string;
  gpus: number;
  /** The job of the run's earlier session (journal), to re-attach to. */
  priorJobId: string | null;
}

export interface HeldAllocation {
  facts: AllocationFacts;
  /** The inventory with the entry's name standing for the allocated node. */
  inventory: Inventory;
}

/** The inventory entry of kind slurm a placement's host names, or null. */
export function slurmEntry(inventory: Inventory | undefined, host: string): InventoryHost | null {
  const h = inventory?.hosts.find((x) => x.name === host);
  return h && h.kind === 'slurm' && h.slurm ? h : null;
}

/** The allocated node as an SSH host: the entry's credentials, the node's sshd, through the login host. */
export function nodeHost(entry: InventoryHost, node: string): InventoryHost {
  const { slurm, kind: _kind, ...login } = entry;
  return { ...login, address: node, port: slurm!.nodeSshPort, jump: { ...login } };
}

export class SweepAllocations {
  private logins = new Map<string, Promise<HostConnection>>();
  private limits = new Map<string, ReturnType<typeof pLimit>>();

  constructor(private readonly inventory: Inventory | undefined, private readonly opts: { connect?: ConnectOptions; signal?: AbortSignal; pollS?: number }) {}

  private login(entry: InventoryHost): Promise<HostConnection> {
    let c = this.logins.get(entry.name);
    if (!c) {
      c = connectHost(entry, this.opts.connect);
      c.catch(() => this.logins.delete(entry.name));
      this.logins.set(entry.name, c);
    }
    return c.then(async (conn) => {
      if (conn.isOpen()) return conn;
      this.logins.delete(entry.name);
      return this.login(entry);
    });
  }

  /** Runs `work` at most maxConcurrent at a time per entry; a run not on a Slurm entry runs at once. */
  limited<T>(host: string, work: () => Promise<T>): Promise<T> {
    const entry = slurmEntry(this.inventory, host);
    if (!entry) return work();
    let limit = this.limits.get(entry.name);
    if (!limit) this.limits.set(entry.name, (limit = pLimit(entry.slurm!.maxConcurrent)));
    return limit(work);
  }

  /**
   * Allocates for the run, runs `work` with the inventory standing for the node, then releases
   * (also when work throws or the sweep is interrupted).
   */
  async withAllocation<T>(
    run: SlurmRun,
    hooks: {
      log: (line: string) => void;
      onSubmitted: (jobId: string) => void;
      onRunning: (facts: AllocationFacts) => void;
      /** After scancel; `facts` is null for a job cancelled before it ran (Ctrl-C or a failure while it queued). */
      onReleased: (jobId: string, facts: AllocationFacts | null, heldS: number) => void;
    },
    work: (held: HeldAllocation) => Promise<T>,
  ): Promise<T> {
    const entry = slurmEntry(this.inventory, run.host)!;
    const conn = await this.login(entry);
    const exec = (command: string, args: string[], o?: { timeoutS?: number }) => conn.exec(command, args, o);
    let submitted: string | null = null;
    let alloc: Allocation;
    try {
      alloc = await allocate(
        {
          settings: entry.slurm!,
          request: { jobName: `fluidcap-${run.id}`, gpus: run.gpus },
          priorJobId: run.priorJobId,
          onSubmitted: (jobId) => {
            submitted = jobId;
            hooks.onSubmitted(jobId);
          },
          signal: this.opts.signal,
          log: hooks.log,
          pollS: this.opts.pollS,
        },
        { exec, sleep: (s) => new Promise((r) => setTimeout(r, s * 1000)), nowS: () => performance.now() / 1000 },
      );
    } catch (err) {
      // allocate() cancelled the job it submitted before rethrowing.
      if (submitted !== null) hooks.onReleased(submitted, null, 0);
      throw err;
    }
    const { release, ...facts } = alloc;
    hooks.onRunning(facts);
    const t0 = performance.now();
    try {
      const node = nodeHost(entry, facts.node);
      const inventory: Inventory = { ...this.inventory!, hosts: this.inventory!.hosts.map((h) => (h.name === entry.name ? node : h)) };
      return await work({ facts, inventory });
    } finally {
      await release().catch((e: Error) => hooks.log(`could not release Slurm job ${facts.jobId}: ${e.message}`));
      hooks.onReleased(facts.jobId, facts, +((performance.now() - t0) / 1000).toFixed(2));
    }
  }

  async close(): Promise<void> {
    const all = [...this.logins.values()];
    this.logins.clear();
    await Promise.allSettled(all.map(async (c) => (await c).close()));
  }
}
