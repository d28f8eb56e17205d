// `fluidcap analyze <runDir | timelines.jsonl>`: recompute every metric from archived timelines,
// no server needed. Exit codes: 0 = every line was valid; 2 = bad input: some lines were bad
// (reported on stderr, the metrics of the valid lines still printed), or nothing usable
// (missing/empty/all-bad file, bad flag: one clear message, no stack trace). 1 is kept for our
// bugs, as in every verb. An SLO that fails is a result, not an error: it is printed (and in
// --json) but does not change the exit code.
import { verb } from '../command.ts';
import { UserError, describeValue } from '../../util/errors.ts';
import { checkDurationS } from '../../util/duration.ts';
import { analyzeTarget } from '../../analyze/analyzeRun.ts';
import { PERCENTILE_METHODS, type PercentileMethod } from '../../metrics/percentile.ts';
import { RUN_FILES } from '../../runDir/layout.ts';
import { TOKEN_ARRIVALS, type TokenArrivals } from '../../timeline/record.ts';


function durationFlag(flag: string, value: string | undefined, positive: boolean): number | undefined {
  if (value === undefined) return undefined;
  const checked = checkDurationS(value);
  if ('bare' in checked && checked.bare !== undefined) throw new UserError(`--${flag} ${checked.problem}, got ${describeValue(value)}`);
  const s = 's' in checked ? checked.s : null;
  if (s === null || s < 0 || (positive && s === 0)) {
    throw new UserError(
      `--${flag} must be a duration such as 25ms, 2s or 10m${positive ? ' > 0' : ' >= 0'}, got ${describeValue(value)}`,
    );
  }
  return s;
}

// Read as text so a bad value is quoted as typed ("abc"), not as yargs' NaN.
function numberFlag(flag: string, value: unknown, ok: (v: number) => boolean, expected: string): number | undefined {
  if (value === undefined) return undefined;
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : typeof value === 'number' ? value : NaN;
  if (!Number.isFinite(n) || !ok(n)) {
    throw new UserError(`--${flag} must be ${expected}, got ${describeValue(Number.isFinite(n) ? n : value)}`);
  }
  return n;
}

// stdout with backpressure; a closed pipe (`| head`) ends output quietly instead of crashing.
function stdoutWriter(): (text: string) => Promise<void> {
  let closed = false;
  process.stdout.on('error', () => {
    closed = true;
  });
  return (text) =>
    new Promise((resolve) => {
      if (closed || process.stdout.destroyed) return resolve();
      if (process.stdout.write(text)) resolve();
      else {
        process.stdout.once('drain', resolve);
        process.stdout.once('close', resolve);
      }
    });
}

export const analyzeCommand = verb({
  command: 'analyze <target>',
  describe: `recompute every metric from archived timelines (a run directory or one ${RUN_FILES.timelines})`,
  exits: [
    [0, 'every line was valid (an SLO that fails is a result, not an error)'],
    [2, 'bad input: some lines bad (each on stderr with file:line, field and value; the metrics of the valid lines still printed), nothing usable, or a bad flag'],
  ],
  builder: (y) =>
    y
      .positional('target', { type: 'string', demandOption: true, describe: `run directory (results/<run>) or a ${RUN_FILES.timelines} file` })
      .option('tbt-deadline', { type: 'string', describe: 'TBT deadline D_d for the fluidity-index, e.g. 25ms' })
      .option('ttft-deadline', { type: 'string', describe: 'fixed first-token deadline D_p for every request (instead of the prefill fit + slack)' })
      .option('ttft-slack', { type: 'string', describe: "slack added to the fit's predicted prefill (default: the run's, else 0.3s)" })
      .option('percentile', { type: 'string', describe: 'fluidity SLO percentile of requests (default 99)' })
      .option('min-fluidity', { type: 'string', describe: 'fluidity each of those requests must reach (default 0.9)' })
      .option('tie-rule', { type: 'string', describe: "how a token exactly on its deadline counts in the fluidity-index: met (Metron's code) or missed (the paper's Algorithm 1); default: the run's, else met" })
      .option('arrivals', { type: 'string', describe: "which arrival of a token is measured: engine (emitted, with or without text) or visible (its text seen); default: the run's, else engine" })
      .option('percentile-method', { type: 'string', default: 'nearest-rank', describe: 'nearest-rank | linear (exact, stated in the output)' })
      .option('capacity', { type: 'boolean', default: false, describe: 'also print the capacity these probes support under the SLO, its bracket, and which rates would need probing (and why)' })
      .option('json', { type: 'boolean', default: false, describe: 'print {"requests":[...],"summary":{...}}: one object per request as in the run’s timelines (README "Results layout"); with --capacity, summary.capacity' }),
  handler: async (argv, setExit) => {
    if (!(PERCENTILE_METHODS as readonly string[]).includes(argv.percentileMethod)) {
      throw new UserError(`--percentile-method must be one of ${PERCENTILE_METHODS.join(', ')}, got ${describeValue(argv.percentileMethod)}`);
    }
    if (argv.arrivals !== undefined && !(TOKEN_ARRIVALS as readonly string[]).includes(argv.arrivals)) {
      throw new UserError(`--arrivals must be one of ${TOKEN_ARRIVALS.join(', ')}, got ${describeValue(argv.arrivals)}`);
    }
    if (argv.tieRule !== undefined && argv.tieRule !== 'met' && argv.tieRule !== 'missed') {
      throw new UserError(`--tie-rule must be met or missed, got ${describeValue(argv.tieRule)}`);
    }
    const overrides = {
      tieRule: argv.tieRule as 'met' | 'missed' | undefined,
      tbtDeadlineS: durationFlag('tbt-deadline', argv.tbtDeadline, true),
      ttftDeadlineS: durationFlag('ttft-deadline', argv.ttftDeadline, true),
      ttftSlackS: durationFlag('ttft-slack', argv.ttftSlack, false),
      percentile: numberFlag('percentile', argv.percentile, (v) => v > 0 && v <= 100, 'a percentile > 0 and <= 100'),
      minFluidity: numberFlag('min-fluidity', argv.minFluidity, (v) => v >= 0 && v <= 1, 'a number within 0..1'),
    };
    for (const k of Object.keys(overrides) as (keyof typeof overrides)[]) if (overrides[k] === undefined) delete overrides[k];
    const outcome = await analyzeTarget(
      { target: argv.target, json: argv.json, method: argv.percentileMethod as PercentileMethod, overrides, capacity: argv.capacity, arrivals: argv.arrivals as TokenArrivals | undefined },
      { write: stdoutWriter(), warn: (line) => process.stderr.write(`${line}\n`) },
    );
    if (outcome.exitCode !== 0) setExit(outcome.exitCode);
  },
});
