// What `fluidcap hosts check` says of a Slurm entry, read on its login host: the partitions and
// their nodes, the GPU types the nodes declare as gres, which nodes take new work, and whether the
// entry's own partition, GPU type and features exist there.
import type { InventoryHost, SlurmSettings } from '../provision/inventory.ts';
import type { HostCheck, SlurmCheck } from '../provision/checkHosts.ts';
import { connectHost, type ConnectOptions } from '../provision/sshConnection.ts';
import type { SlurmExec } from './allocation.ts';
import { parseSinfoNodes, sinfoNodesArgv, type NodeInfo } from './slurmCli.ts';

export type { SlurmCheck };

/** The check from sinfo's lines (pure). */
export function summarizeSlurm(nodes: NodeInfo[], s: SlurmSettings): SlurmCheck {
  const byPartition = new Map<string, NodeInfo[]>();
  for (const n of nodes) byPartition.set(n.partition, [...(byPartition.get(n.partition) ?? []), n]);
  const partitions = [...byPartition.entries()].map(([name, list]) => ({
    name,
    nodes: list.length,
    freeNodes: list.filter((n) => n.free).map((n) => n.node),
    gpus: sumGpus(list),
    default: list.some((n) => n.defaultPartition),
  }));
  const seen = new Map<string, NodeInfo>();
  for (const n of nodes) seen.set(n.node, n);
  const gpuTypes = sumGpus([...seen.values()]);
  const mine = byPartition.get(s.partition) ?? [];
  const problems: string[] = [];
  if (mine.length === 0) problems.push(`partition ${s.partition} is not among the cluster's partitions (${partitions.map((p) => p.name).join(', ') || 'none listed'})`);
  else {
    if (s.gpuType && !mine.some((n) => (n.gpus[s.gpuType!] ?? 0) > 0)) problems.push(`no node of partition ${s.partition} declares GPUs of type ${s.gpuType} (it has ${Object.keys(sumGpus(mine)).join(', ') || 'none'})`);
    const wanted = s.constraint?.split(/[&|]/) ?? [];
    // Features joined by | need only one of them; by & every one, on one node.
    const anyOf = s.constraint?.includes('|');
    const fits = (n: NodeInfo) => (anyOf ? wanted.some((f) => n.features.includes(f)) : wanted.every((f) => n.features.includes(f)));
    if (wanted.length > 0 && !mine.some(fits)) problems.push(`no node of partition ${s.partition} has the features ${s.constraint}`);
  }
  return { partitions, gpuTypes, freeNodes: mine.filter((n) => n.free).map((n) => n.node), problems };
}

function sumGpus(list: NodeInfo[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const n of list) for (const [t, c] of Object.entries(n.gpus)) out[t] = (out[t] ?? 0) + c;
  return out;
}

/** Runs sinfo on the login host and summarizes it. */
export async function checkSlurm(exec: SlurmExec, s: SlurmSettings): Promise<SlurmCheck> {
  const [cmd, ...args] = sinfoNodesArgv();
  const r = await exec(cmd, args, { timeoutS: 60 });
  if (r.code !== 0) {
    const why = r.code === 127 ? 'sinfo is not on the login host\'s PATH' : (r.stderr || r.stdout).trim().split('\n').slice(-2).join(' | ');
    return { partitions: [], gpuTypes: {}, freeNodes: [], problems: [`sinfo failed: ${why}`] };
  }
  return summarizeSlurm(parseSinfoNodes(r.stdout), s);
}

/** `hosts check` of a Slurm entry: SSH to the login host (no Docker or GPU expected there), then sinfo. */
export async function checkSlurmEntry(host: InventoryHost, connect?: ConnectOptions): Promise<HostCheck> {
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
