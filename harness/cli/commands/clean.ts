// `fluidcap clean <inventory.yaml>`: removes containers fluidcap labelled and left behind.
import { verb } from '../command.ts';

import { EXIT } from '../../util/errors.ts';
export const cleanCommand = verb({
  command: 'clean <inventory>',
  describe: 'remove containers that fluidcap labelled and left behind on the inventory hosts',
  exits: [
    [0, 'nothing labelled is left'],
    [3, 'a host could not be reached, or a container could not be removed (named in the output)'],
  ],
  builder: (y) =>
    y
      .positional('inventory', { type: 'string', demandOption: true, describe: 'inventory YAML file' })
      .option('run', { type: 'string', describe: 'only this run id (label fluidcap.run=<id>)' })
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
        process.stdout.write(`${r.host}: ${what}${r.remaining.length > 0 ? `; STILL THERE: ${r.remaining.join(', ')}` : ''}\n`);
      }
    }
    if (results.some((r) => r.error !== null || r.remaining.length > 0)) setExit(EXIT.infra);
  },
});
