// uvu runs a suite's before hooks inside a try whose `finally` returns, so an error thrown by one
// is dropped: the suite prints "(0 / N)" and nothing else, which left an end-to-end engine that
// never became ready unexplained. A hook wrapped here prints its error before uvu drops it.
export function shown(hook: () => Promise<void> | void): () => Promise<void> {
  return async () => {
    try {
      await hook();
    } catch (err) {
      console.error(`  before hook failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      throw err;
    }
  };
}
