// `fluidcap profile <recipe.yaml>`: prefill profiling only. The engine is provisioned as for a
// run, the isolated prefills are measured and fitted (profile/prefill.jsonl, profile/fit.json),
// and the engine is released; no load probes.
import { verb } from '../command.ts';
import { RUN_FILES, runPaths } from '../../runDir/layout.ts';
import { readJsonFile } from '../../runDir/jsonFiles.ts';
import type { FitFile } from '../../runDir/schema.ts';
import { createProgress } from '../../capacity/progress.ts';
import { withInterrupts } from '../interrupts.ts';
import { cleanCommand } from './run.ts';


const ms = (s: number) => `${(s * 1000).toFixed(2)} ms`;

export const profileCommand = verb({
  command: 'profile <recipe>',
  describe: 'measure isolated prefills and fit the prefill-time curve D_p(P) (no load probes)',
  exits: [
    [0, 'the prefill fit written'],
    [3, 'infrastructure fault (SSH, Docker, an engine that died, the results disk)'],
    [130, 'interrupted (Ctrl-C, SIGTERM): data kept, the resume command printed'],
  ],
  builder: (y) =>
    y
      .positional('recipe', { type: 'string', demandOption: true, describe: 'recipe YAML file' })
      .option('hosts', { type: 'string', describe: 'inventory YAML naming the GPU hosts' })
      .option('out', { type: 'string', default: 'results', describe: 'directory that receives the run directory' })
      .option('json', { type: 'boolean', default: false, describe: `print ${RUN_FILES.fit}` })
      .option('accept-new-host-key', { type: 'boolean', default: false, describe: 'pin the key of a host missing from known_hosts' }),
  handler: async (args, setExit) => {
    // Loaded here, not at start-up: every other verb (and --help) starts without them.
    const { runCapacity } = await import('../../capacity/runCapacity.ts');
    const { loadInventory } = await import('../../provision/inventory.ts');
    const inventory = args.hosts ? await loadInventory(args.hosts) : undefined;
    const progress = createProgress(process.stderr);
    let started: { runId: string; containerHost: string | null } | null = null;
    await withInterrupts('stopping the profile and releasing the engine', async (signal) => {
      const outcome = await runCapacity({
        onStart: (run) => (started = run),
        recipeFile: args.recipe,
        outDir: args.out,
        inventory,
        connect: { acceptNewHostKey: args.acceptNewHostKey },
        signal,
        log: (line) => progress.log(line),
        progress,
        profileOnly: true,
      });
      if (outcome.status !== 'completed') {
        process.stderr.write(`fluidcap: profile ${outcome.status} (${outcome.reason}); data kept in ${outcome.runDir}\n`);
        setExit(130);
        return;
      }
      const fit = readJsonFile(runPaths(outcome.runDir).fit) as FitFile;
      if (args.json) {
        process.stdout.write(JSON.stringify(fit, null, 2) + '\n');
        return;
      }
      const lines = [
        `D_p(P) = ${fit.a.toExponential(4)} + ${fit.b.toExponential(4)}·P + ${fit.c.toExponential(4)}·P² s  (R² ${fit.r2.toFixed(4)}, ${fit.n} points)`,
        'prompt tokens   median      fitted',
        ...(fit.lengths ?? []).map((l) => `${String(l.promptTokens).padStart(13)}   ${ms(l.medianS ?? l.meanS).padStart(9)}   ${ms(l.fittedS).padStart(9)}`),
        `results: ${outcome.runDir} (${RUN_FILES.prefill}, ${RUN_FILES.fit})`,
      ];
      process.stdout.write(lines.join('\n') + '\n');
    }, { cleanHint: () => cleanCommand(started, args.hosts) });
  },
});
