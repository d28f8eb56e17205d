// Finds the one-node Slurm that scripts/ci/setup-slurm.sh starts on this machine, for the tests
// that run against it. When there is none, says why in words a CI log can be read by: sinfo's own
// error, whether each daemon's pid file names a live process, and the last lines of the setup's
// log and of the daemons' logs (a CI excerpt shows a failing test's message, not the setup's).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSinfoNodes, sinfoNodesArgv } from '../../harness/slurm/slurmCli.ts';

export type LocalSlurm = { partition: string; node: string };

const ROOT = join(import.meta.dirname, '..', '..');

function tail(path: string, lines: number): string {
  if (!existsSync(path)) return `${path}: absent`;
  try {
    const all = readFileSync(path, 'utf8').trimEnd().split('\n');
    return `${path} (last ${Math.min(lines, all.length)} of ${all.length} lines):\n${all.slice(-lines).map((l) => `  ${l}`).join('\n')}`;
  } catch (err) {
    return `${path}: ${(err as Error).message}`;
  }
}

function daemon(name: string, pidFile: string): string {
  if (!existsSync(pidFile)) return `${name}: no ${pidFile}`;
  const pid = readFileSync(pidFile, 'utf8').trim();
  return `${name}: pid ${pid} ${existsSync(`/proc/${pid}`) ? 'running' : 'not running'}`;
}

/** What a reader of a CI log needs to see why no Slurm answered. */
export function slurmDiagnosis(why: string): string {
  return [
    why,
    [daemon('slurmctld', '/run/slurmctld.pid'), daemon('slurmd', '/run/slurmd.pid')].join('; '),
    tail(join(ROOT, '.tmp', 'e2e', 'slurm-setup.log'), 15),
    tail('/var/log/slurm/slurmctld.log', 6),
    tail('/var/log/slurm/slurmd.log', 6),
  ].join('\n');
}

/** The partition whose node has 4 h100 GPUs, or why there is none (with the diagnosis). */
export function findLocalSlurm(): LocalSlurm | { why: string } {
  let why: string;
  try {
    const [cmd, ...args] = sinfoNodesArgv();
    const nodes = parseSinfoNodes(execFileSync(cmd, args, { encoding: 'utf8', timeout: 15_000, stdio: ['ignore', 'pipe', 'pipe'] }));
    const n = nodes.find((x) => (x.gpus.h100 ?? 0) >= 4);
    if (n) return { partition: n.partition, node: n.node };
    why = `no node with 4 h100 gres in sinfo (${nodes.length} nodes: ${nodes.map((x) => `${x.node} ${x.state} ${JSON.stringify(x.gpus)}`).join(', ') || 'none'})`;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    why = `sinfo failed: ${(e.stderr || e.message).trim().split('\n').slice(0, 3).join(' | ')}`;
  }
  return { why: slurmDiagnosis(why) };
}
