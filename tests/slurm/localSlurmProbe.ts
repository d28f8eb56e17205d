// Finds the one-node Slurm that scripts/ci/setup-slurm.sh starts on this machine, for the tests
// that run against it. When there is none, says why in words a CI log can be read by: sinfo's own
// error, whether each daemon's pid file names a live process, and the last lines of the setup's
// log and of the daemons' logs (a CI excerpt shows a failing test's message, not the setup's).
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
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

/**
 * The partition whose node has 4 h100 GPUs, or why there is none (with the diagnosis). Where the
 * Slurm tests are required (FLUIDCAP_E2E=require, as in CI), a Slurm that is not answering is set up
 * once more first: the setup is idempotent and takes seconds, and a daemon lost between CI's setup
 * and the tests would otherwise fail every Slurm test for a reason that is not the product's.
 */
export function findLocalSlurm(): LocalSlurm | { why: string } {
  const first = probe();
  if ('node' in first || process.env.FLUIDCAP_E2E !== 'require') return first;
  const log = join(ROOT, '.tmp', 'e2e', 'slurm-setup.log');
  let setup: string;
  try {
    const out = execFileSync('bash', [join(ROOT, 'scripts', 'ci', 'setup-slurm.sh')], { encoding: 'utf8', timeout: 180_000, stdio: ['ignore', 'pipe', 'pipe'] });
    setup = `setup-slurm.sh run again by the tests: ${out.trim().split('\n').at(-1)}`;
  } catch (err) {
    const e = err as Error & { stdout?: string; stderr?: string };
    setup = `setup-slurm.sh run again by the tests failed:\n${`${e.stdout ?? ''}${e.stderr ?? ''}`.trim() || e.message}`;
  }
  try {
    mkdirSync(dirname(log), { recursive: true });
    appendFileSync(log, `${setup}\n`);
  } catch {
    // the log is only for reading
  }
  const second = probe();
  return 'node' in second ? second : { why: `${first.why.split('\n')[0]}\n${setup}\n--- after that ---\n${second.why}` };
}

function probe(): LocalSlurm | { why: string } {
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
