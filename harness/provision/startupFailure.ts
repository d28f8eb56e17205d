// The error a launch ends with when the engine never became ready: its exit code, OOM flag and
// last log lines when it exited, else what readiness last saw and the log tail.
import { EngineLaunchError, type EngineExit } from './engineTypes.ts';
import type { ReadinessResult } from './readiness.ts';

type NotReady = Extract<ReadinessResult, { ready: false }>;

/** Builds the launch error from the readiness outcome, the watched exit and the log tail. */
export function startupFailure(notReady: NotReady, exit: EngineExit | null, logTail: string[], names: { containerName: string; hostName: string }): EngineLaunchError {
  const { containerName, hostName } = names;
  if (notReady.reason === 'exited' && exit !== null && exit.kind === 'exited') {
    const tail = exit.lastLogLines.length > 0 ? exit.lastLogLines.map((l) => `    ${l}`).join('\n') : '    (no output)';
    return new EngineLaunchError(
      `engine ${containerName} on ${hostName} exited during start-up with code ${exit.exitCode} (OOM killed: ${exit.oomKilled ? 'yes' : 'no'}); last ${exit.lastLogLines.length} log lines:\n${tail}`,
      { host: hostName, exitCode: exit.exitCode, oomKilled: exit.oomKilled, lastLogLines: exit.lastLogLines },
    );
  }
  return new EngineLaunchError(
    `engine ${containerName} on ${hostName} did not become ready: ${notReady.detail}; last log lines:\n${logTail.map((l) => `    ${l}`).join('\n')}`,
    { host: hostName, lastLogLines: logTail },
  );
}
