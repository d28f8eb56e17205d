// The shape every verb module exports: a yargs command built with a callback that records the
// exit code, so main.ts stays the single place that sets it. `verb()` lets the handler receive
// the argument types its builder declares, so no verb casts its arguments.
import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';

export type SetExit = (code: number) => void;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type VerbFactory = (setExit: SetExit) => CommandModule<any, any>;

/** A verb's exit codes, each with what it means for that verb: its `--help` ends with them. */
export type ExitCodes = readonly (readonly [code: number | string, meaning: string])[];

/** What 1 and 2 mean for every verb (main.ts decides them: a bug, and a UserError). */
export const BUG_AND_BAD_INPUT: ExitCodes = [
  [1, 'a bug in fluidcap (the message has a stack trace: please report it)'],
  [2, 'bad input: a flag or a file, named in the message with its field and value'],
];

/** The "Exit codes:" section of a verb's `--help`, one code a row, wrapped under its meaning (yargs' 80 columns). */
export function exitCodesSection(codes: ExitCodes, width = 80): string {
  const sorted = [...codes].sort((a, b) => parseInt(String(a[0]), 10) - parseInt(String(b[0]), 10));
  const indent = 7;
  const rows = sorted.flatMap(([code, meaning]) => {
    const lines: string[] = [];
    let line = `  ${String(code).padEnd(indent - 3)} `;
    for (const word of meaning.split(' ')) {
      if (line.length + word.length > width - 1 && line.trim() !== String(code)) {
        lines.push(line.trimEnd());
        line = ' '.repeat(indent);
      }
      line += `${word} `;
    }
    return [...lines, line.trimEnd()];
  });
  return ['Exit codes:', ...rows].join('\n');
}

/** A verb whose handler is typed by its builder's options. */
export function verb<A>(spec: {
  command: string;
  describe: string;
  /** Every exit code the verb can end with besides 1 and 2 (which every verb has; a row here for 2 says what it means for this verb). */
  exits: ExitCodes;
  builder: (y: Argv) => Argv<A>;
  handler: (args: ArgumentsCamelCase<A>, setExit: SetExit) => void | Promise<void>;
}): VerbFactory {
  return (setExit) => {
    const command: CommandModule<object, A> = {
      command: spec.command,
      describe: spec.describe,
      // A verb's own meaning of 1 or 2 replaces the common one.
      builder: (y) => spec.builder(y).epilog(exitCodesSection([...spec.exits, ...BUG_AND_BAD_INPUT.filter(([c]) => !spec.exits.some(([own]) => own === c))])),
      handler: (args) => spec.handler(args, setExit),
    };
    // yargs registers commands of any argument type; the handler above stays typed by the builder.
    return command as CommandModule;
  };
}
