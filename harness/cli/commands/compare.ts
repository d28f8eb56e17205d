// `fluidcap compare <runDir...> [--baseline <runDir>] [--max-drop 0.05] [--json]`: runs side by
// side; with a baseline, each run's relative change, and exit 1 when any run's capacity fell more
// than --max-drop below it (what a nightly job checks).
import { resolve } from 'node:path';
import { verb } from '../command.ts';
import { UserError, describeValue } from '../../util/errors.ts';
import { readRunCore } from '../../report/loadRun.ts';
import { RUN_FILES } from '../../runDir/layout.ts';
import { compareRuns, formatComparison, runRowOf } from '../../report/compareRuns.ts';


export const compareCommand = verb({
  command: 'compare <runDirs..>',
  describe: 'Compare finished runs side by side; with --baseline, fail when capacity drops more than --max-drop',
  builder: (y) =>
    y
      .positional('runDirs', { type: 'string', array: true, demandOption: true, describe: `run directories (results/<runId>) holding ${RUN_FILES.capacity}` })
      .option('baseline', { type: 'string', describe: 'run directory the others are compared with' })
      .option('max-drop', { default: 0.05, describe: 'largest allowed capacity drop below the baseline, as a fraction (0.05 = 5%)' })
      .option('json', { type: 'boolean', default: false, describe: 'print {"baselineRunId","maxDrop","runs":[...],"drops":[...],"passed"}' })
      .epilog('Exit codes: 0 no run dropped more than --max-drop below the baseline (or no baseline); 1 some run did (each named); 2 a bad flag or a directory that is not a finished run.'),
  handler: (argv, setExit) => {
    // yargs gives a number, or the text when it is not one: both are checked here.
    const given: unknown = argv.maxDrop;
    const maxDrop = typeof given === 'string' && given.trim() !== '' ? Number(given) : given;
    if (typeof maxDrop !== 'number' || !Number.isFinite(maxDrop) || maxDrop < 0 || maxDrop >= 1) {
      throw new UserError(`--max-drop must be a fraction >= 0 and < 1 (0.05 = 5%), got ${describeValue(given)}`);
    }
    if (argv.baseline !== undefined && typeof argv.baseline !== 'string') {
      throw new UserError(`--baseline must name one run directory, got ${describeValue(argv.baseline)}`);
    }
    // Every directory is checked before anything prints, so one bad path is one clear error.
    const seen = new Set<string>();
    const dirs = argv.runDirs.map(String).filter((d) => (seen.has(resolve(d)) ? false : (seen.add(resolve(d)), true)));
    const baseline = argv.baseline !== undefined ? runRowOf(readRunCore(argv.baseline)) : null;
    const rows = dirs.filter((d) => !baseline || resolve(d) !== resolve(baseline.runDir)).map((d) => runRowOf(readRunCore(d)));
    const comparison = compareRuns(rows, { baseline, maxDrop });
    if (argv.json) {
      process.stdout.write(JSON.stringify(comparison, null, 2) + '\n');
    } else {
      const { table, verdict } = formatComparison(comparison);
      process.stdout.write(table.join('\n') + '\n');
      if (verdict.length) process.stdout.write('\n' + verdict.join('\n') + '\n');
    }
    if (!comparison.passed) setExit(1);
  },
});
