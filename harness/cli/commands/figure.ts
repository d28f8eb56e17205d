// `fluidcap figure <name>`: one paper figure (SVG charts, the CSV behind each, and the paper's
// numbers beside ours) from probes run for it, on the simulated engine unless --hosts is given.
// Ctrl-C stops the probe in progress, keeps what it received and prints the resume command.
import { verb } from '../command.ts';
import { withInterrupts } from '../interrupts.ts';

export const figureCommand = verb({
  command: 'figure [name]',
  describe: 'draw a paper figure (metron-fig5d from a probe of each endpoint an --endpoints file names; metron-fig3 from probes run for it; metron-fig6 from a capacity search per SLO definition; vidur-fig5, vidur-fig6 from a sweep on the twin; deepspeed-throughput from batches sent at once)',
  exits: [
    [0, 'the figure drawn'],
    [3, 'infrastructure fault (SSH, Docker, an engine that died, the results disk)'],
    [130, 'interrupted (Ctrl-C, SIGTERM): data kept, the resume command printed'],
  ],
  builder: (y) =>
    y
      .positional('name', { type: 'string', describe: 'metron-fig5d | metron-fig3 | metron-fig6 | vidur-fig5 | vidur-fig6 | deepspeed-throughput' })
      .option('hosts', { type: 'string', describe: 'inventory YAML: run the paper recipes on these GPU hosts instead of the simulated engine' })
      .option('out', { type: 'string', default: 'results', describe: 'directory that receives the figure directory' })
      .option('resume', { type: 'string', describe: 'continue an interrupted figure directory (finished runs are reused)' })
      .option('time-scale', { type: 'number', default: 0.5, describe: 'simulated engine: real seconds per modelled second (deadlines and rates scale with it)' })
      .option('qps', { type: 'number', describe: 'request rate of each system\'s probe, in the paper\'s time (default 6; metron-fig6: the search\'s first rate, 0.6)' })
      .option('requests', { type: 'number', describe: 'requests per probe, the first 10% warm-up (default 200; metron-fig6: 100)' })
      .option('grid', { type: 'string', describe: 'metron-fig6: comma-separated rates in the paper\'s time (default 0.3,0.6,1.2,2.4,4.8,9.6)' })
      .option('check', { type: 'boolean', default: false, describe: 'run every figure at reduced sizes and print one table of the papers\' printed values and claims beside ours (holds / does not hold / not comparable here)' })
      .option('endpoints', { type: 'string', describe: 'metron-fig5d: YAML file naming the OpenAI-compatible endpoints to measure (name, url, model, apiKeyEnv; optional workload and profile)' })
      .option('sweep', { type: 'string', describe: 'vidur-fig5 / vidur-fig6: the sweep file the twin evaluates (default sweeps/vidur-fig5.yaml)' })
      .option('capacity', { type: 'string', describe: "vidur-fig5 / vidur-fig6: slo (the SLOs hold; default) or scheduling-delay (Vidur's: P99 scheduling delay under 5 s)" }),
  handler: async (args, setExit) => {
    const { runFigure, checkFigureOptions } = await import('../../figures/runFigure.ts');
    const { loadInventory } = await import('../../provision/inventory.ts');
    const { UserError } = await import('../../util/errors.ts');
    if (args.check) {
      if (args.name || args.resume) throw new UserError('--check runs every figure: give it no figure name and no --resume');
      const { runFigureCheck } = await import('../../figures/check.ts');
      const inventory = args.hosts ? await loadInventory(args.hosts) : undefined;
      await withInterrupts('stopping the current probe and releasing the engine', async (signal) => {
        const c = await runFigureCheck({ outDir: args.out, timeScale: args.timeScale, inventory, endpointsFile: args.endpoints, signal, log: (line) => process.stderr.write(`${line}\n`) });
        const drawn = c.figures.filter((f) => f.error === null).length;
        process.stdout.write(`${c.table}\n${drawn} of ${c.figures.length} figures drawn in ${c.wallS.toFixed(0)} s → ${c.dir} (check.md, check.csv)\n`);
        if (c.status === 'interrupted') setExit(130);
        else if (drawn < c.figures.length) setExit(1);
      });
      return;
    }
    if (!args.name && !args.resume) throw new UserError('figure needs a name (metron-fig5d, metron-fig3, metron-fig6, vidur-fig5, vidur-fig6, deepspeed-throughput) or --resume <figureDir>');
    if (args.sweep !== undefined && !args.name?.startsWith('vidur-')) throw new UserError(`--sweep is for vidur-fig5 and vidur-fig6, got figure ${JSON.stringify(args.name ?? '')}`);
    if (args.endpoints !== undefined && args.name !== 'metron-fig5d') throw new UserError(`--endpoints is for metron-fig5d, got figure ${JSON.stringify(args.name ?? '')}`);
    if (args.capacity !== undefined && !args.name?.startsWith('vidur-')) throw new UserError(`--capacity is for vidur-fig5 and vidur-fig6, got figure ${JSON.stringify(args.name ?? '')}`);
    const { capacityRuleOf } = await import('../../twin/twinSearch.ts');
    const capacity = args.capacity === undefined ? undefined : capacityRuleOf(args.capacity);
    const grid = args.grid === undefined ? undefined : args.grid.split(',').map((r) => Number(r.trim()));
    const requests = args.requests ?? (args.name === 'metron-fig6' ? 100 : 200);
    // metron-fig6 runs the full Arxiv trace, whose capacities (0.6 QPS in the paper) lie far below the others' rates.
    const rateQps = args.qps ?? (args.name === 'metron-fig6' ? 0.6 : 6);
    if (!args.resume) checkFigureOptions({ name: args.name ?? '', timeScale: args.timeScale, rateQps, requests, grid });
    const inventory = args.hosts ? await loadInventory(args.hosts) : undefined;
    await withInterrupts('stopping the current probe and releasing the engine', async (signal) => {
      const outcome = await runFigure({
        name: args.name ?? '',
        outDir: args.out,
        resumeDir: args.resume,
        inventory,
        timeScale: args.timeScale,
        rateQps,
        requests,
        grid,
        sweepFile: args.sweep,
        endpointsFile: args.endpoints,
        capacity,
        signal,
        log: (line) => process.stderr.write(`${line}\n`),
      });
      if (outcome.status === 'interrupted') {
        process.stderr.write(`fluidcap: figure interrupted; data kept in ${outcome.dir}\nresume with: fluidcap figure --resume ${outcome.dir}\n`);
        setExit(130);
        return;
      }
      for (const a of outcome.artifacts) {
        process.stdout.write(`${a.name} → ${outcome.dir}\n${a.summary.map((l) => `  ${l}`).join('\n')}\n  files: ${a.files.map((f) => f.file).join(', ')}\n`);
      }
    });
  },
});
