// Readiness: poll the health path, then the model list, until a deadline, while checking that the engine is
// still alive, so a crash at start fails at once instead of after the whole deadline. Side effects
// (HTTP, clock, sleep, liveness) come in through `deps`.

export interface ReadinessDeps {
  /** One GET; resolves with the status, rejects on connection errors. */
  get(url: string, timeoutS: number): Promise<{ status: number; body: string }>;
  /** Seconds on a monotonic clock. */
  nowS(): number;
  sleep(seconds: number): Promise<void>;
  /** A reason when the engine is gone (container exited, connection lost); null while alive. */
  gone(): Promise<string | null>;
}

export type ReadinessResult =
  | { ready: true; timeToReadyS: number; models: string[] }
  | { ready: false; reason: 'exited'; detail: string; elapsedS: number }
  | { ready: false; reason: 'timeout'; detail: string; elapsedS: number }
  | { ready: false; reason: 'aborted'; detail: string; elapsedS: number };

/**
 * Waits until the engine answers its health path (default /health; llama.cpp's server says 503
 * while loading) with 200, or 404 where it has none, and its model list names a model.
 */
export async function waitReady(
  baseUrl: string,
  opts: { deadlineS: number; pollS?: number; signal?: AbortSignal; healthPath?: string; modelsPath?: string },
  deps: ReadinessDeps,
): Promise<ReadinessResult> {
  const t0 = deps.nowS();
  const healthPath = opts.healthPath ?? '/health';
  const modelsPath = opts.modelsPath ?? '/v1/models';
  const pollS = opts.pollS ?? 0.5;
  let last = 'no answer yet';
  for (;;) {
    const elapsedS = deps.nowS() - t0;
    if (opts.signal?.aborted) return { ready: false, reason: 'aborted', detail: 'launch aborted', elapsedS };
    const gone = await deps.gone();
    if (gone !== null) return { ready: false, reason: 'exited', detail: gone, elapsedS: deps.nowS() - t0 };
    if (elapsedS > opts.deadlineS) {
      return { ready: false, reason: 'timeout', detail: `not ready after ${opts.deadlineS} s (last: ${last})`, elapsedS };
    }
    try {
      const health = await deps.get(`${baseUrl}${healthPath}`, 2);
      // 404: a server without the path (Sarathi-Serve has no /health); its model list alone decides.
      if (health.status === 200 || health.status === 404) {
        const models = await deps.get(`${baseUrl}${modelsPath}`, 5);
        if (models.status === 200) {
          const ids = ((JSON.parse(models.body) as { data?: { id?: string }[] }).data ?? []).map((m) => String(m.id));
          if (ids.length > 0) return { ready: true, timeToReadyS: deps.nowS() - t0, models: ids };
          last = `${modelsPath} listed no model`;
        } else last = `${modelsPath} answered ${models.status}${health.status === 404 ? ` (and ${healthPath} 404)` : ''}`;
      } else last = `${healthPath} answered ${health.status}`;
    } catch (err) {
      last = (err as Error).message;
    }
    await deps.sleep(pollS);
  }
}
