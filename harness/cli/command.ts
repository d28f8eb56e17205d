// The shape every verb module exports: a yargs command built with a callback that records the
// exit code, so main.ts stays the single place that sets it.
import type { CommandModule } from 'yargs';

export type SetExit = (code: number) => void;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type VerbFactory = (setExit: SetExit) => CommandModule<any, any>;
