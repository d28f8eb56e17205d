// The command line: the only module that reads process.argv or sets the exit code. Each verb
// lives in commands/<verb>.ts and returns an exit code; user errors print one line, no stack.
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { UserError } from '../util/errors.ts';
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
    .fail((msg, err) => {
      throw err ?? new UserError(msg);
    });
  await cli.parseAsync();
  return exitCode;
}

try {
  process.exitCode = await main(hideBin(process.argv));
} catch (err) {
  if (err instanceof UserError) {
    process.stderr.write(`fluidcap: ${err.message}\n`);
    process.exitCode = 2;
  } else {
    const e = err as Error;
    process.stderr.write(`fluidcap: internal error: ${e?.stack ?? String(err)}\n`);
    process.exitCode = 1;
  }
}
