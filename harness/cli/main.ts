// The command line: the only module that reads process.argv or sets the exit code. Each verb
// lives in commands/<verb>.ts and returns an exit code; user and infrastructure errors print their
// message alone (exit 2 and 3), anything else is our bug and prints its stack (exit 1).
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { EXIT, InfraError, UserError, fileSystemFault } from '../util/errors.ts';
import { BUG_AND_BAD_INPUT, exitCodesSection } from './command.ts';
import { analyzeCommand } from './commands/analyze.ts';
import { simCommand } from './commands/sim.ts';
import { probeCommand } from './commands/probe.ts';
import { hostsCommand } from './commands/hosts.ts';
import { cleanCommand } from './commands/clean.ts';
import { runCommand } from './commands/run.ts';
import { profileCommand } from './commands/profile.ts';
import { reportCommand } from './commands/report.ts';
import { compareCommand } from './commands/compare.ts';
import { sweepCommand } from './commands/sweep.ts';
import { figureCommand } from './commands/figure.ts';

async function main(argv: string[]): Promise<number> {
  let exitCode = 0;
  const setExit = (code: number) => {
    exitCode = code;
  };
  const cli = yargs(argv)
    .scriptName('fluidcap')
    .usage('$0 <command> [options]')
    .command(runCommand(setExit))
    .command(profileCommand(setExit))
    .command(probeCommand(setExit))
    .command(analyzeCommand(setExit))
    .command(reportCommand(setExit))
    .command(compareCommand(setExit))
    .command(sweepCommand(setExit))
    .command(figureCommand(setExit))
    .command(simCommand(setExit))
    .command(hostsCommand(setExit))
    .command(cleanCommand(setExit))
    .demandCommand(1, 'Name a command: run, profile, probe, analyze, report, compare, sweep, figure, sim, hosts, clean.')
    .strict()
    .help()
    .alias('h', 'help')
    .version()
    // Every description starts in lower case, yargs' own two included (README "Commands").
    .describe('help', 'show help')
    .describe('version', 'show the version number')
    .epilog(
      exitCodesSection([
        [0, 'done'],
        ...BUG_AND_BAD_INPUT,
        [3, 'infrastructure fault: SSH, Docker, the results disk, an engine that died, probes the client could not trust'],
        ['4-6', '`compare` only: a regression, a refused run, an undecided answer'],
        [130, 'interrupted (Ctrl-C, SIGTERM): resumable'],
      ]) + '\nEach command\'s --help lists its own.',
    )
    .fail((msg, err) => {
      throw err ?? new UserError(msg);
    });
  await cli.parseAsync();
  return exitCode;
}

/**
 * `--tbt-deadline -5ms` as `--tbt-deadline=-5ms`: yargs reads a value that starts with a dash and
 * is not a plain number as short flags (`-5 -m -s`, "Unknown arguments: 5, m, s"), so the option's
 * own check never sees it. Joined, the value reaches that check and its message names the option.
 */
function joinDashValues(argv: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = argv[i + 1];
    if (a === '--') {
      out.push(...argv.slice(i));
      break;
    }
    if (/^--[a-z][\w-]*$/i.test(a) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

try {
  process.exitCode = await main(joinDashValues(hideBin(process.argv)));
} catch (caught) {
  const err = fileSystemFault(caught) ?? caught;
  if (err instanceof InfraError) {
    const tail = err.lastLogLines.length > 0 && !err.message.includes(err.lastLogLines[err.lastLogLines.length - 1])
      ? `\nlast ${err.lastLogLines.length} log lines of the engine:\n${err.lastLogLines.map((l) => `    ${l}`).join('\n')}`
      : '';
    process.stderr.write(`fluidcap: infrastructure fault${err.host ? ` on ${err.host}` : ''}: ${err.message}${tail}\n`);
    process.exitCode = EXIT.infra;
  } else if (err instanceof UserError) {
    process.stderr.write(`fluidcap: ${err.message}\n`);
    process.exitCode = EXIT.badInput;
  } else {
    const e = err as Error;
    process.stderr.write(`fluidcap: internal error: ${e?.stack ?? String(err)}\n`);
    process.exitCode = EXIT.bug;
  }
}
