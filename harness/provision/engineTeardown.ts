// Stopping a launched engine in reverse order of acquisition: GPU telemetry, the SSH tunnel, the
// container (verified by listing the run's label), the log stream, then the GPUs' return to idle
// and the host connection. When the connection dropped, it reconnects first, for a while: a leaked
// container holds a GPU someone else is waiting for.
import type { RemovalReport } from './teardown.ts';
import type { StopReport } from './engineTypes.ts';

/** What a teardown needs of a host connection. */
export interface TeardownHost {
  /** Null for the local host (nothing to lose). */
  connection: { isOpen(): boolean } | null;
  close(): Promise<void>;
}

/** Everything the launch acquired so far; later fields stay null when the launch failed early. */
export interface Acquired<H extends TeardownHost> {
  handle: H;
  telemetryStops: Iterable<() => Promise<void>>;
  tunnel: { close(): Promise<void> } | null;
  logs: { close(): Promise<void> } | null;
}

export interface TeardownSteps<H extends TeardownHost> {
  hostName: string;
  containerName: string;
  runId: string;
  reconnectTimeoutS: number;
  /** What the engine runs as, in messages (default container). */
  runsAs?: 'container' | 'process';
  /** A fresh connection to the host (throws while it is unreachable). */
  reconnect(): Promise<H>;
  /** Stops and removes the run's containers on `host`, and lists what is left. */
  removeRunContainers(host: H): Promise<RemovalReport>;
  /** Waits for the target's GPUs to be idle; null when the target names no GPU or no check was asked for. */
  waitGpusIdle: ((host: H) => Promise<{ ok: boolean; message: string }>) | null;
  log(line: string): void;
}

/** Releases everything in `acquired`; problems are reported (and logged), never thrown. */
export async function tearDown<H extends TeardownHost>(
  acquired: Acquired<H>,
  steps: TeardownSteps<H>,
  clock: { nowS(): number; sleep(s: number): Promise<void> },
): Promise<StopReport> {
  const { handle } = acquired;
  const problems: string[] = [];
  await Promise.allSettled([...acquired.telemetryStops].map((s) => s()));
  if (acquired.tunnel) await acquired.tunnel.close().catch(() => {});

  let active: H | null = handle.connection === null || handle.connection.isOpen() ? handle : null;
  if (active === null) {
    const deadline = clock.nowS() + steps.reconnectTimeoutS;
    let lastErr = '';
    while (active === null && clock.nowS() < deadline) {
      try {
        active = await steps.reconnect();
        steps.log(`reconnected to ${steps.hostName} for teardown`);
      } catch (err) {
        lastErr = (err as Error).message;
        await clock.sleep(1);
      }
    }
    if (active === null) {
      problems.push(`cannot reach ${steps.hostName} to remove ${steps.containerName} (${lastErr}); it may still hold GPUs: run \`fluidcap clean <inventory>\` once the host is reachable`);
    }
  }

  let removal: RemovalReport = { removed: [], remaining: [steps.containerName] };
  if (active) {
    try {
      removal = await steps.removeRunContainers(active);
      if (removal.remaining.length > 0) {
        const what = steps.runsAs === 'process' ? 'engine processes still running for' : 'containers still listed with';
        problems.push(`${what} ${steps.runId} on ${steps.hostName}: ${removal.remaining.join(', ')}`);
      }
    } catch (err) {
      problems.push(`${steps.runsAs === 'process' ? 'stopping' : 'removing'} ${steps.containerName} on ${steps.hostName} failed: ${(err as Error).message}`);
    }
  }
  if (acquired.logs) await acquired.logs.close().catch(() => {});

  let gpuIdle: StopReport['gpuIdle'] = null;
  if (active && steps.waitGpusIdle) {
    gpuIdle = await steps.waitGpusIdle(active).catch((e: Error) => ({ ok: false, message: e.message }));
    if (!gpuIdle.ok) problems.push(gpuIdle.message);
  }
  if (active && active !== handle) await active.close().catch(() => {});
  await handle.close().catch(() => {});
  for (const p of problems) steps.log(p);
  return { removed: removal.removed, remaining: removal.remaining, gpuIdle, problems };
}
