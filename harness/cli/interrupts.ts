// Ctrl-C for long verbs: the first SIGINT/SIGTERM aborts the work (which stops cleanly, keeps its
// data and releases the engine); a second one exits at once.

/** Runs `work` with an AbortSignal tied to SIGINT/SIGTERM; handlers are removed afterwards. */
export async function withInterrupts<T>(what: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  let interrupts = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupts += 1;
    if (interrupts > 1) {
      process.stderr.write(`\nfluidcap: second ${signal}: exiting now (the engine may be left running: fluidcap clean)\n`);
      process.exit(130);
    }
    process.stderr.write(`\nfluidcap: ${signal}: ${what} (again to force)\n`);
    abort.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await work(abort.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
