// Engines run as processes, the host side: the state root resolved on the host, the start, stop
// and leftover listing of state directories, and a command whose output is read as it comes (the
// log follower). Every command is an argv of processScripts.ts; the host's exec quotes each word.
import { spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { InfraError } from '../util/errors.ts';
import { shellJoin } from '../util/shellQuote.ts';
import type { HostHandle } from './hostHandle.ts';
import { listScript, stopScript } from './processScripts.ts';
import { DEFAULT_STATE_ROOT, parseStopOutcome, stateDirOf, stateEntries, type StopOutcome } from './processState.ts';

/** `~/x` as the host user's home would have it; other words unchanged. */
export function expandTilde(word: string, home: string): string {
  return word === '~' ? home : word.startsWith('~/') ? `${home.replace(/\/+$/, '')}/${word.slice(2)}` : word;
}

/** The absolute state root on the host. */
export async function stateRootOn(handle: Pick<HostHandle, 'home'>, root = DEFAULT_STATE_ROOT): Promise<string> {
  return expandTilde(root, await handle.home());
}

async function run(handle: HostHandle, argv: string[], opts: { stdin?: string; timeoutS?: number } = {}) {
  return handle.exec(argv[0], argv.slice(1), opts);
}

/** Stops the process group a state directory names (TERM, KILL after graceS) and removes the directory once it is gone. */
export async function stopStateDir(handle: HostHandle, stateDir: string, graceS: number): Promise<StopOutcome> {
  const r = await run(handle, stopScript(stateDir, graceS), { timeoutS: graceS + 30 });
  const outcome = parseStopOutcome(r.stdout);
  if (r.code !== 0 || outcome === null) {
    throw new InfraError(`stopping the engine of ${stateDir} on ${handle.host.name} failed (exit ${r.code}): ${(r.stderr || r.stdout).trim().slice(0, 400)}`, { host: handle.host.name });
  }
  return outcome;
}

export interface LeftoverReport {
  /** Names (fluidcap-<runId>-<engine>, or the run id) of groups stopped or found gone. */
  removed: string[];
  remaining: string[];
  /** Entries of the state root that are no run directory (never touched). */
  refused: string[];
}

/** Stops every engine process (or only runId's) the host's state root lists. */
export async function stopLeftoverProcesses(handle: HostHandle, opts: { runId?: string; root?: string; graceS?: number } = {}): Promise<LeftoverReport> {
  const root = await stateRootOn(handle, opts.root);
  const listed = await run(handle, listScript(root), { timeoutS: 30 });
  if (listed.code !== 0) throw new InfraError(`listing ${root} on ${handle.host.name} failed: ${listed.stderr.trim()}`, { host: handle.host.name });
  const { runIds, refused } = stateEntries(listed.stdout, opts.runId);
  const report: LeftoverReport = { removed: [], remaining: [], refused };
  for (const runId of runIds) {
    const outcome = await stopStateDir(handle, stateDirOf(root, runId), opts.graceS ?? 5);
    if (outcome.kind === 'remaining') report.remaining.push(`${runId} (process group ${outcome.pgid})`);
    else if (outcome.kind === 'stopped') report.removed.push(`${runId} (process group ${outcome.pgid}${outcome.killed ? ', killed' : ''})`);
  }
  return report;
}

export interface StreamedCommand {
  stdout: Readable;
  /** Resolves when the command ended (its output is then complete). */
  ended: Promise<void>;
  close(): void;
}

/** Runs argv on the host and hands its stdout over as it comes (stderr is dropped). */
export function streamCommand(handle: HostHandle, argv: string[]): Promise<StreamedCommand> {
  const conn = handle.connection;
  if (conn === null) {
    const child = spawn(argv[0], argv.slice(1), { stdio: ['ignore', 'pipe', 'ignore'] });
    const ended = new Promise<void>((resolve) => child.once('close', () => resolve()));
    return Promise.resolve({ stdout: child.stdout, ended, close: () => void child.kill('SIGTERM') });
  }
  return new Promise((resolve, reject) => {
    if (!conn.isOpen()) return reject(new InfraError(`SSH connection to ${handle.host.name} is closed`, { host: handle.host.name }));
    conn.client.exec(shellJoin(argv), (err, channel) => {
      if (err) return reject(new InfraError(`cannot run a command on ${handle.host.name}: ${err.message}`, { cause: err, host: handle.host.name }));
      channel.stderr.resume();
      const ended = new Promise<void>((res) => channel.once('close', () => res()));
      resolve({ stdout: channel, ended, close: () => channel.close() });
    });
  });
}
