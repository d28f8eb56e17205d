// Watching a started engine for its end: the container exiting (with its exit code, OOM flag and
// last log lines) or the host's connection dropping. The first end is reported once to every
// listener; once teardown begins, ends are expected and no longer reported.
import type { EngineExit } from './engineTypes.ts';

export interface ExitSources {
  /** Resolves when the container stops (Docker's wait); rejects when the connection fails. */
  waited: Promise<{ StatusCode?: number }>;
  /** The container's state after it stopped; null when it cannot be read. */
  inspect(): Promise<{ State?: { ExitCode?: number; OOMKilled?: boolean } } | null>;
  /** The log stream's end and its last lines. */
  logs: { ended: Promise<void>; tail(): string[] };
  /** Resolves with a reason when the host's connection is lost. */
  lost: Promise<Error>;
  containerName: string;
  hostName: string;
  /** What the engine runs as, in messages (default container). */
  runsAs?: 'container' | 'process';
}

export interface ExitWatch {
  /** The end seen so far, also during teardown (readiness checks it); null while running. */
  observed(): EngineExit | null;
  /** Calls cb once with the first unexpected end (at once, if it already happened); returns an unsubscribe. */
  onExit(cb: (exit: EngineExit) => void): () => void;
  /** Teardown began: ends from now on are expected, not reported. */
  expectExit(): void;
}

/** Starts watching; `sleep` bounds the wait for the log stream to flush the last lines. */
export function watchExit(src: ExitSources, deps: { sleep(s: number): Promise<void> }): ExitWatch {
  let observed: EngineExit | null = null;
  let reported: EngineExit | null = null;
  let expected = false;
  const listeners = new Set<(e: EngineExit) => void>();
  const report = (e: EngineExit) => {
    if (expected || reported) return;
    reported = e;
    for (const cb of listeners) cb(e);
  };

  void src.waited
    .then(
      async (r): Promise<EngineExit> => {
        const info = await src.inspect().catch(() => null);
        // The last lines may still be in flight when Docker reports the exit.
        await Promise.race([src.logs.ended, deps.sleep(1)]);
        const exitCode = r.StatusCode ?? info?.State?.ExitCode ?? null;
        const oomKilled = info?.State?.OOMKilled ?? false;
        return {
          kind: 'exited',
          exitCode,
          oomKilled,
          lastLogLines: src.logs.tail(),
          message: `engine ${src.runsAs ?? 'container'} ${src.containerName} on ${src.hostName} exited with code ${exitCode}${oomKilled ? ' (OOM killed)' : ''}`,
        };
      },
      (err: Error): EngineExit => ({ kind: 'connection-lost', message: `lost the connection to ${src.hostName} while watching ${src.containerName}: ${err.message}` }),
    )
    .then((e) => {
      // The container's own account (exit code, log lines) wins over a bare connection loss.
      observed = e;
      report(e);
    });
  void src.lost.then((reason) => {
    const e: EngineExit = { kind: 'connection-lost', message: `SSH connection to ${src.hostName} lost: ${reason.message}` };
    observed ??= e;
    report(e);
  });

  return {
    observed: () => observed,
    onExit(cb) {
      if (reported) {
        const e = reported;
        queueMicrotask(() => cb(e));
      } else listeners.add(cb);
      return () => listeners.delete(cb);
    },
    expectExit() {
      expected = true;
    },
  };
}
