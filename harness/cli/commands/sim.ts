// `fluidcap sim serve`: the simulated engine as a long-running server (also the container image's
// entrypoint). Logs to stdout; exits 0 on SIGTERM/SIGINT, 1 on a simulated crash or start failure.
import type { Argv } from 'yargs';
import { BUG_AND_BAD_INPUT, exitCodesSection, type VerbFactory } from '../command.ts';
import type { SimServerOptions } from '../../sim/server.ts';
import { optionsFromArgs, serveOptions } from '../../sim/serveFlags.ts';

// Registers `sim serve`.
export const simCommand: VerbFactory = (setExit) => ({
  command: 'sim <action>',
  describe: 'the simulated engine: an OpenAI-compatible stand-in for vLLM / Sarathi-Serve',
  builder: (y: Argv) =>
    y.epilog(exitCodesSection([[0, 'the engine served until SIGTERM or SIGINT'], ...BUG_AND_BAD_INPUT])).command({
      command: 'serve',
      describe: 'serve the simulated engine until SIGTERM/SIGINT',
      builder: (y: Argv) =>
        serveOptions(y).epilog(
          '\n' +
          exitCodesSection([
            [0, 'stopped by SIGTERM or SIGINT'],
            // A real engine that crashes exits non-zero; the stand-in does as one does (faults.crashAfter, exitAtStart).
            [1, 'a simulated crash or start-up failure (--fault-*), as a failing engine exits; otherwise a bug in fluidcap'],
            BUG_AND_BAD_INPUT[1],
          ]),
        ),
      handler: async (argv: Record<string, unknown>) => {
        // Loaded here so other verbs do not pay for the engine's modules at start-up.
        const { SimStartupError, startSimServer } = await import('../../sim/server.ts');
        const options: SimServerOptions = { ...optionsFromArgs(argv), log: (line) => process.stdout.write(line + '\n') };
        let sim;
        try {
          sim = await startSimServer(options);
        } catch (err) {
          if (err instanceof SimStartupError) {
            process.stderr.write(`fluidcap sim: ${err.message}\n`);
            setExit(1);
            return;
          }
          throw err;
        }
        const onSignal = (signal: string) => {
          process.stdout.write(`fluidcap sim: ${signal} received, shutting down\n`);
          void sim.close();
        };
        const onTerm = () => onSignal('SIGTERM');
        const onInt = () => onSignal('SIGINT');
        process.once('SIGTERM', onTerm);
        process.once('SIGINT', onInt);
        const why = await sim.done;
        process.off('SIGTERM', onTerm);
        process.off('SIGINT', onInt);
        if (why === 'crashed') setExit(1);
      },
    }),
  handler: () => {},
});
