// `fluidcap sweep <sweep.yaml> [--hosts inventory.yaml] [--out results/] [--resume <sweepDir>] [--dry-run]`:
// a matrix of recipes placed on the inventory's hosts and GPU sets, run in parallel, one run
// directory each, and the sweep report. Ctrl-C stops every run in progress (each keeps its data and
// releases its engine), prints the resume command and exits 130; a second Ctrl-C exits at once.
// With --twin the same matrix is evaluated on the simulated twin in virtual time and ranked by QPS
// per $/hour; --top N writes a sweep file of the best N for a real sweep.
import { BUG_AND_BAD_INPUT, exitCodesSection, type VerbFactory } from '../command.ts';
import { EXIT, UserError } from '../../util/errors.ts';
import { withInterrupts } from '../interrupts.ts';

interface SweepArgs {
  sweep?: string;
  hosts?: string;
  out: string;
  resume?: string;
  dryRun: boolean;
  json: boolean;
  acceptNewHostKey: boolean;
  twin: boolean;
  top?: number;
  capacity: string;
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
      .option('twin', { type: 'boolean', default: false, describe: 'evaluate the matrix on the simulated twin (virtual time, seconds per configuration) and rank it by QPS per $/hour; no engine, no host' })
      .option('top', { type: 'number', describe: 'with --twin: also write top-N.yaml, a sweep file of the N best configurations for a real sweep' })
      .option('capacity', { type: 'string', default: 'slo', describe: "with --twin: what a probe must meet: slo (the recipe's SLO) or scheduling-delay (Vidur's: P99 scheduling delay under 5 s; the SLOs only reported)" })
      .epilog(
        exitCodesSection([
          [0, 'every run found a capacity (--twin: every configuration was evaluated)'],
          ...BUG_AND_BAD_INPUT.map(([c, m]) => [c, c === 1 ? `${m}; with --twin, the twin failing on a configuration (its reason is in the table)` : m] as const),
          [3, 'a run failed (infrastructure), or a run ended on probes the client could not trust, as `run` exits'],
          [130, 'interrupted (Ctrl-C, SIGTERM): the resume command is printed'],
        ]),
      ),
  handler: async (raw) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { prepareSweep, runSweep } = await import('../../sweep/runSweep.ts');
    const { describeSweepPlan } = await import('../../sweep/plan.ts');
    const { loadInventory } = await import('../../provision/inventory.ts');
    const args = raw as unknown as SweepArgs;
    if (args.top !== undefined && !args.twin) throw new UserError('--top needs --twin (it writes the best configurations the twin found)');
    if (args.capacity !== 'slo' && !args.twin) throw new UserError('--capacity needs --twin (a real sweep judges the recipe\'s SLO)');
    if (args.twin) return twinSweep(args, setExit);
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
        const { sweepSummaryLines } = await import('../../sweep/sweepReport.ts');
        process.stdout.write(`sweep ${outcome.sweepDir.split('/').pop() ?? ''}:\n${sweepSummaryLines(outcome.rows).join('\n')}\n`);
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
      } else if (c.invalid > 0) setExit(EXIT.infra);
    });
  },
});

// The twin's evaluation of the matrix: a ranking in seconds, every number marked as the twin's.
async function twinSweep(args: SweepArgs, setExit: (code: number) => void): Promise<void> {
  if (!args.sweep) throw new UserError('sweep --twin needs a sweep file');
  for (const [flag, set] of [['--resume', args.resume !== undefined], ['--hosts', args.hosts !== undefined], ['--dry-run', args.dryRun]] as const) {
    if (set) throw new UserError(`sweep --twin does not take ${flag} (the twin runs no engine and places nothing)`);
  }
  if (args.top !== undefined && !(Number.isInteger(args.top) && args.top >= 1)) throw new UserError(`--top must be a whole number >= 1, got ${JSON.stringify(args.top)}`);
  const { runTwinSweep, TWIN_SWEEP_FILES } = await import('../../twin/twinSweep.ts');
  const { realSweepMeasures } = await import('../../twin/twinSweepRank.ts');
  const { capacityRuleOf } = await import('../../twin/twinSearch.ts');
  const outcome = await runTwinSweep({ sweepFile: args.sweep, outDir: args.out, top: args.top, capacity: capacityRuleOf(args.capacity), log: (line) => process.stderr.write(`${line}\n`) });
  if (args.json) {
    process.stdout.write(JSON.stringify({ source: 'twin', dir: outcome.dir, wallS: outcome.wallS, configurations: outcome.rows }, null, 2) + '\n');
  } else {
    const ranked = outcome.rows.filter((r) => r.rank !== null);
    const n = (v: number | null) => (v === null ? '-' : String(+v.toPrecision(4)));
    process.stdout.write(`Ranked on the twin (simulated engine in virtual time; no number below came from an engine):\n`);
    // Configurations identical on the twin to a better-ranked one are folded into its line.
    const shown = ranked.filter((r) => r.identicalTo === null);
    for (const r of shown.slice(0, 10)) {
      const same = ranked.filter((x) => x.identicalTo === r.id).map((x) => x.id.split('-')[0]);
      process.stdout.write(`  ${String(r.rank).padStart(3)}. ${r.label}: ${n(r.capacityQps)} QPS, ${n(r.qpsPerUsdPerHour)} QPS per $/h, $${n(r.usdPerMillionTokens)} per 1M tokens${same.length ? ` (identical: ${same.join(', ')})` : ''}\n`);
    }
    if (shown.length > 10) process.stdout.write(`  ... ${shown.length - 10} more in the ranking\n`);
    const count = (s: string) => outcome.rows.filter((r) => r.status === s).length;
    process.stdout.write(`${outcome.rows.length} configurations: ${ranked.length} ranked (${shown.length} the twin can tell apart), ${count('no-capacity')} without a capacity, ${count('infeasible')} infeasible, ${count('failed')} failed\n`);
    process.stdout.write(`twin wall time: ${outcome.wallS.toFixed(1)} s\n`);
    process.stdout.write(`results: ${outcome.dir}/${TWIN_SWEEP_FILES.page} (and ${outcome.files.filter((f) => f !== TWIN_SWEEP_FILES.page).join(', ')})\n`);
    if (outcome.top) {
      process.stdout.write(
        `measure the top ${outcome.top.runs} with ${realSweepMeasures(outcome.firstRecipe.target.engine, outcome.firstRecipe.target.host ?? null)}: fluidcap sweep ${outcome.dir}/${outcome.top.file}${outcome.firstRecipe.target.engine === 'sim' ? '' : ' [--hosts inventory.yaml]'}\n`,
      );
    }
  }
  if (outcome.failed > 0) setExit(1);
}
