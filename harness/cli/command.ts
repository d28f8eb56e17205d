// The shape every verb module exports: a yargs command built with a callback that records the
// exit code, so main.ts stays the single place that sets it. `verb()` lets the handler receive
// the argument types its builder declares, so no verb casts its arguments.
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';

export type SetExit = (code: number) => void;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type VerbFactory = (setExit: SetExit) => CommandModule<any, any>;

/** A verb whose handler is typed by its builder's options. */
export function verb<A>(spec: {
  command: string;
  describe: string;
  builder: (y: Argv) => Argv<A>;
  handler: (args: ArgumentsCamelCase<A>, setExit: SetExit) => void | Promise<void>;
}): VerbFactory {
  return (setExit) => {
    const command: CommandModule<object, A> = {
      command: spec.command,
      describe: spec.describe,
      builder: spec.builder,
      handler: (args) => spec.handler(args, setExit),
    };
    // yargs registers commands of any argument type; the handler above stays typed by the builder.
    return command as CommandModule;
  };
}
