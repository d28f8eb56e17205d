// `fluidcap hosts check <inventory.yaml>`: SSH, Docker and GPU facts and problems for each host;
// for a Slurm entry, its login host's partitions, GPU types and free nodes.
import { verb } from '../command.ts';
import { EXIT } from '../../util/errors.ts';
import type { HostCheck } from '../../provision/checkHosts.ts';

function formatCheck(c: HostCheck, runtime: 'container' | 'process'): string {
  const lines = [`${c.host}: ${c.ok ? 'ok' : 'PROBLEMS'}`];
  if (c.ssh) lines.push(`  ssh     host key ${c.ssh.hostKey}; connect ${c.ssh.connectMs} ms, exec ${c.ssh.execMs} ms`);
  if (c.docker) lines.push(`  docker  ${c.docker.version} (API ${c.docker.apiVersion}), runtimes ${c.docker.runtimes.join(', ') || 'none'}, ping ${c.docker.pingMs} ms`);
  else if (c.ssh && runtime === 'process') lines.push('  docker  not checked (engines run as processes)');
  if (c.gpu?.available) {
    for (const g of c.gpu.gpus) {
      lines.push(`  gpu ${g.index}   ${g.name}, ${g.memoryUsedMiB}/${g.memoryTotalMiB} MiB used, driver ${g.driverVersion}, util ${g.utilizationPct ?? 'n/a'}%, ${g.powerW ?? 'n/a'} W`);
    }
  } else if (c.gpu) lines.push(`  gpu     ${c.gpu.reason}`);
  if (c.slurm) {
    const gpus = (g: Record<string, number>) => Object.entries(g).map(([t, n]) => `${n} ${t}`).join(', ') || 'no GPUs';
    lines.push(`  slurm   GPU types ${gpus(c.slurm.gpuTypes)}; free nodes in the entry's partition: ${c.slurm.freeNodes.join(', ') || 'none'}`);
    for (const p of c.slurm.partitions) lines.push(`  partition ${p.name}${p.default ? ' (default)' : ''}: ${p.nodes} node(s), ${gpus(p.gpus)}, free ${p.freeNodes.join(', ') || 'none'}`);
  }
  if (c.leftovers.length > 0) lines.push(`  fluidcap containers ${c.leftovers.join(', ')} (a run in progress, or leftovers: fluidcap clean)`);
  for (const p of c.problems) lines.push(`  problem: ${p}`);
  return lines.join('\n');
}

export const hostsCommand = verb({
  command: 'hosts <action> <inventory>',
  describe: 'check each inventory host: SSH, Docker and GPU facts, or a Slurm entry\'s partitions, GPU types and free nodes (action: check)',
  exits: [
    [0, 'every host is ready'],
    [3, 'a host has a problem (listed under it)'],
  ],
  builder: (y) =>
    y
      .positional('action', { choices: ['check'] as const, describe: 'what to do with the hosts' })
      .positional('inventory', { type: 'string', demandOption: true, describe: 'inventory YAML file' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON array' })
      .option('local', { type: 'boolean', default: false, describe: 'also check this machine (local Docker socket)' })
      .option('runtime', { choices: ['container', 'process'] as const, default: 'container' as const, describe: 'how engines will run on the hosts: process checks them without Docker (recipes with target.runtime: process)' })
      .option('accept-new-host-key', { type: 'boolean', default: false, describe: 'pin the key of a host missing from known_hosts' }),
  handler: async (argv, setExit) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { loadInventory } = await import('../../provision/inventory.ts');
    const { checkHosts } = await import('../../provision/checkHosts.ts');
    const inventory = await loadInventory(argv.inventory);
    const { checkSlurmEntry } = await import('../../slurm/checkSlurm.ts');
    const checks = await checkHosts(inventory, { includeLocal: argv.local, runtime: argv.runtime, connect: { acceptNewHostKey: argv.acceptNewHostKey }, slurmEntry: checkSlurmEntry });
    process.stdout.write(argv.json ? `${JSON.stringify(checks, null, 2)}\n` : `${checks.map((c) => formatCheck(c, argv.runtime)).join('\n')}\n`);
    // A host that fails its check is an infrastructure fault (unreachable, no Docker, unknown key).
    if (checks.some((c) => !c.ok)) setExit(EXIT.infra);
  },
});
