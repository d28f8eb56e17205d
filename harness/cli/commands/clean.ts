// `fluidcap clean <inventory.yaml>`: removes containers fluidcap labelled and left behind, and
// stops engine processes (runtime process) whose state directories are left on the hosts.
import { verb } from '../command.ts';

import { EXIT } from '../../util/errors.ts';
export const cleanCommand = verb({
  command: 'clean <inventory>',
  describe: 'remove containers that fluidcap labelled, and stop engine processes it started, left behind on the inventory hosts',
  exits: [
    [0, 'nothing labelled is left'],
    [3, 'a host could not be reached, or a container or engine process could not be removed (named in the output)'],
  ],
  builder: (y) =>
    y
      .positional('inventory', { type: 'string', demandOption: true, describe: 'inventory YAML file' })
      .option('run', { type: 'string', describe: 'only this run id (label fluidcap.run=<id>, or its engine state directory)' })
      .option('local', { type: 'boolean', default: false, describe: 'also clean this machine (local Docker socket)' })
      .option('json', { type: 'boolean', default: false, describe: 'print one JSON array' }),
  handler: async (argv, setExit) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { loadInventory } = await import('../../provision/inventory.ts');
    const { cleanLeftovers } = await import('../../provision/cleanLeftovers.ts');
    const inventory = await loadInventory(argv.inventory);
    const results = await cleanLeftovers(inventory, { runId: argv.run, includeLocal: argv.local });
    if (argv.json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    else {
      for (const r of results) {
        const what = r.error ? `FAILED: ${r.error}` : r.removed.length === 0 ? 'nothing to remove' : `removed ${r.removed.join(', ')}`;
        const notes = [r.containersSkipped ? `containers not looked for (${r.containersSkipped})` : null, r.refusedStateEntries?.length ? `left alone in the engine state directory: ${r.refusedStateEntries.join(', ')}` : null].filter((n) => n !== null);
        process.stdout.write(`${r.host}: ${what}${r.remaining.length > 0 ? `; STILL THERE: ${r.remaining.join(', ')}` : ''}${notes.length > 0 ? `; ${notes.join('; ')}` : ''}\n`);
      }
    }
    if (results.some((r) => r.error !== null || r.remaining.length > 0)) setExit(EXIT.infra);
  },
});
