// The launcher's side effects in one object (clock, sleep, HTTP, host connections, tunnels), so
// its parts can be driven by tests on a fake clock and the real ones are named in one place.
import { openHost, type HostHandle } from './hostHandle.ts';
import type { ConnectOptions } from './sshConnection.ts';
import type { Host } from './inventory.ts';
import { keepAliveLatencyMs, openTunnel, type SshTunnel } from './sshTunnel.ts';
import { httpRequest } from '../util/httpRequest.ts';
import type { HostConnection } from './sshConnection.ts';

/** A monotonic clock in seconds, a sleep on it, and the wall-clock time for recorded facts. */
export interface LaunchClock {
  nowS(): number;
  /** Resolves after `seconds`, or at once when `signal` aborts (its timer then no longer holds the process open). */
  sleep(seconds: number, signal?: AbortSignal): Promise<void>;
  /** ISO 8601 wall-clock time: only for facts a person reads (launchedAt, readyAt). */
  isoNow(): string;
}

export interface LaunchDeps extends LaunchClock {
  /** One GET; resolves with the status, rejects on connection errors or after timeoutS. */
  httpGet(url: string, timeoutS: number): Promise<{ status: number; body: string }>;
  openHost(host: Host, opts?: ConnectOptions, need?: { docker?: boolean }): Promise<HostHandle>;
  openTunnel(conn: HostConnection, remotePort: number, remoteHost?: string): Promise<SshTunnel>;
  /** Median keep-alive GET latency of baseUrl + path in ms; null when unreachable. */
  keepAliveLatencyMs(baseUrl: string, path: string): Promise<number | null>;
}

export const realClock: LaunchClock = {
  nowS: () => performance.now() / 1000,
  sleep: (s, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(resolve, s * 1000);
      signal?.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
    }),
  isoNow: () => new Date().toISOString(),
};

export const realLaunchDeps: LaunchDeps = {
  ...realClock,
  async httpGet(url, timeoutS) {
    const a = await httpRequest(url, { timeoutS });
    return { status: a.status, body: a.text };
  },
  openHost,
  openTunnel,
  keepAliveLatencyMs: (baseUrl, path) => keepAliveLatencyMs(baseUrl, path),
};
