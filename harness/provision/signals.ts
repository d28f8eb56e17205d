// Teardown on SIGINT/SIGTERM: a leaked container holds a GPU someone else is waiting for. While any
// engine is live, one handler per signal runs every registered teardown; afterwards, if nobody else
// listens for the signal, it is re-raised so the process ends the way the user asked.
type Teardown = () => Promise<unknown>;

const live = new Set<Teardown>();
let installed = false;

async function onSignal(signal: NodeJS.Signals): Promise<void> {
  // Engines whose teardown already began (the work's own abort) have left the set: nothing to say.
  if (live.size > 0) process.stderr.write(`fluidcap: ${signal}: tearing down ${live.size} engine(s)\n`);
  await Promise.allSettled([...live].map((t) => t()));
  uninstall();
  if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
}

const handlers = { SIGINT: () => void onSignal('SIGINT'), SIGTERM: () => void onSignal('SIGTERM') };

function uninstall(): void {
  if (!installed) return;
  process.off('SIGINT', handlers.SIGINT);
  process.off('SIGTERM', handlers.SIGTERM);
  installed = false;
}

/** Runs every registered teardown now (a forced exit is coming); resolves when all have settled. */
export async function tearDownAllNow(): Promise<void> {
  await Promise.allSettled([...live].map((t) => t()));
}

/** Registers a teardown to run on SIGINT/SIGTERM; the returned function unregisters it. */
export function teardownOnSignals(teardown: Teardown): () => void {
  live.add(teardown);
  if (!installed) {
    process.on('SIGINT', handlers.SIGINT);
    process.on('SIGTERM', handlers.SIGTERM);
    installed = true;
  }
  return () => {
    live.delete(teardown);
    if (live.size === 0) uninstall();
  };
}
