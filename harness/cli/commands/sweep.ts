// `fluidcap sweep <sweep.yaml> [--hosts inventory.yaml] [--out results/] [--resume <sweepDir>] [--dry-run]`:
// a matrix of recipes placed on the inventory's hosts and GPU sets, run in parallel, one run
// directory each, and the sweep report. Ctrl-C stops every run in progress (each keeps its data and
// releases its engine), prints the resume command and exits 130; a second Ctrl-C exits at once.
import type { VerbFactory } from '../command.ts';
import { UserError } from '../../util/errors.ts';
import { withInterrupts } from '../interrupts.ts';

interface SweepArgs {
  sweep?: string;
  hosts?: string;
  out: string;
  resume?: string;
  dryRun: boolean;
  json: boolean;
  acceptNewHostKey: boolean;
}

export const sweepCommand: VerbFactory = (setExit) => ({
  command: 'sweep [sweep]',
  describe: 'run a matrix of recipes across the inventory\'s hosts and GPU sets; one capacity search per configuration',
  builder: (y) =>
    y
      .positional('sweep', { type: 'string', describe: 'sweep YAML file (a base recipe and a matrix over its fields)' })
      .option('hosts', { type: 'string', describe: 'inventory YAML naming the GPU hosts and groups' })
      .option('out', { type: 'string', default: 'results', describe: 'directory that receives the sweep directory' })
      .option('resume', { type: 'string', describe: 'continue an interrupted sweep directory (finished runs are skipped)' })
      .option('dry-run', { type: 'boolean', default: false, describe: 'print the expanded matrix and its placement and exit' })
      .option('json', { type: 'boolean', default: false, describe: 'print the plan (--dry-run) or the per-configuration rows as JSON' })
      .option('accept-new-host-key', { type: 'boolean', default: false, describe: 'pin the key of a host missing from known_hosts' })
      .epilog('Exit codes: 0 every run found a capacity; 1 a run ended on invalid probes; 2 bad input; 3 a run failed (infrastructure); 130 interrupted (the resume command is printed).'),
  handler: async (raw) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { prepareSweep, runSweep } = await import('../../sweep/runSweep.ts');
    const { describeSweepPlan } = await import('../../sweep/plan.ts');
    const { loadInventory } = await import('../../provision/inventory.ts');
    const args = raw as unknown as SweepArgs;
    if (!args.sweep && !args.resume) throw new UserError('sweep needs a sweep file (or --resume <sweepDir>)');
    if (args.sweep && args.resume) throw new UserError('sweep takes a sweep file or --resume <sweepDir>, not both (the sweep directory names its sweep file)');
    const inventory = args.hosts ? await loadInventory(args.hosts) : undefined;
    if (args.dryRun) {
      if (!args.sweep) throw new UserError('--dry-run needs a sweep file');
      const { plan } = await prepareSweep(args.sweep, inventory);
      if (args.json) {
        const runs = plan.runs.map((r) => ({ ...r.placement, values: r.config.values, recipe: r.recipe.name }));
        process.stdout.write(JSON.stringify({ name: plan.name, parallel: plan.parallel, slots: plan.slots, runs }, null, 2) + '\n');
      } else process.stdout.write(describeSweepPlan(plan));
      return;
    }
    await withInterrupts('stopping every run in progress and releasing their engines', async (signal) => {
      const outcome = await runSweep({
        sweepFile: args.sweep,
        resumeDir: args.resume,
        outDir: args.out,
        inventory,
        connect: { acceptNewHostKey: args.acceptNewHostKey },
        signal,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      const c = outcome.counts;
      if (args.json) {
        process.stdout.write(JSON.stringify({ sweepDir: outcome.sweepDir, status: outcome.status, counts: c, rows: outcome.rows }, null, 2) + '\n');
      } else {
        const { sweepMarkdown } = await import('../../sweep/sweepReport.ts');
        process.stdout.write(sweepMarkdown(outcome.sweepDir.split('/').pop() ?? '', outcome.rows).split('\n## Runs without')[0].trimEnd() + '\n');
        const { SWEEP_FILES } = await import('../../runDir/layout.ts');
        process.stdout.write(`\nresults: ${outcome.sweepDir} (${SWEEP_FILES.reportMd}, ${SWEEP_FILES.reportHtml}, ${SWEEP_FILES.reportCsv}, ${SWEEP_FILES.runsDir}/)\n`);
      }
      if (outcome.status === 'interrupted') {
        process.stderr.write(`fluidcap: sweep interrupted (${c.completed} completed, ${c.interrupted} interrupted, ${c.notStarted} not started); data kept in ${outcome.sweepDir}\n`);
        process.stderr.write(`resume with: fluidcap sweep --resume ${outcome.sweepDir}${args.hosts ? ` --hosts ${args.hosts}` : ''}\n`);
        setExit(130);
      } else if (c.failed > 0) {
        for (const r of outcome.rows.filter((r) => r.status === 'failed')) process.stderr.write(`fluidcap: ${r.id} failed: ${r.reason}\n`);
        setExit(3);
      } else if (c.invalid > 0) setExit(1);
    });
  },
});
