// Ctrl-C for long verbs. The first SIGINT/SIGTERM aborts the work, which stops cleanly, keeps its
// data and releases the engine. The same signal again within a second is the same interrupt
// delivered twice (GNU `timeout -s INT` signals the process and then its group; a terminal may
// too) and counts once. A deliberate second one waits a bounded time for the engine's removal,
// then exits 130 and prints the `fluidcap clean` command for what it could not confirm; a third
// exits at once.
import { performance } from 'node:perf_hooks';
import { EXIT } from '../util/errors.ts';
import { tearDownAllNow } from '../provision/signals.ts';

/** Deliveries of one signal closer than this are one interrupt. */
export const SAME_SIGNAL_WINDOW_MS = 1000;

export interface InterruptOptions {
  /** The command that removes what this work may leave running (null: nothing to clean). */
  cleanHint?: () => string | null;
  /** How long a second Ctrl-C waits for teardown before exiting. */
  forceWaitS?: number;
  /** Injected in tests; the CLI uses the real process. */
  deps?: { nowMs(): number; write(text: string): void; exit(code: number): void; tearDownNow(): Promise<unknown> };
}

/** Runs `work` with an AbortSignal tied to SIGINT/SIGTERM; handlers are removed afterwards. */
export async function withInterrupts<T>(what: string, work: (signal: AbortSignal) => Promise<T>, opts: InterruptOptions = {}): Promise<T> {
  const deps = opts.deps ?? {
    nowMs: () => performance.now(),
    write: (text: string) => void process.stderr.write(text),
    exit: (code: number) => process.exit(code),
    tearDownNow: tearDownAllNow,
  };
  const forceWaitS = opts.forceWaitS ?? 10;
  const abort = new AbortController();
  const lastAt = new Map<string, number>();
  let interrupts = 0;
  let exited = false;
  let settled = false;
  const giveUp = (why: string) => {
    if (exited) return;
    exited = true;
    const hint = opts.cleanHint?.() ?? null;
    deps.write(`fluidcap: ${why}; exiting without confirming the engine is gone${hint ? `: check and remove it with\n  ${hint}` : ''}\n`);
    deps.exit(EXIT.interrupted);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    const t = deps.nowMs();
    const prev = lastAt.get(signal);
    lastAt.set(signal, t);
    if (prev !== undefined && t - prev < SAME_SIGNAL_WINDOW_MS) return;
    interrupts += 1;
    if (interrupts === 1) {
      deps.write(`\nfluidcap: ${signal}: ${what} (again to force)\n`);
      abort.abort();
    } else if (interrupts === 2) {
      deps.write(`\nfluidcap: second ${signal}: removing the engine, for at most ${forceWaitS} s (again to exit at once)\n`);
      void deps.tearDownNow();
      setTimeout(() => {
        if (!settled) giveUp(`teardown did not finish within ${forceWaitS} s`);
      }, forceWaitS * 1000).unref();
    } else giveUp(`third ${signal}`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await work(abort.signal);
  } finally {
    settled = true;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
