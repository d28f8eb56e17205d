// Load through an SSH tunnel, with its cost measured: the keep-alive latency of the engine's health
// path through the tunnel and (when reachable from here) directly, so a report can say how much
// the tunnel added.
import type { TunnelFacts } from './engineTypes.ts';

/** Tunnel minus direct latency, when both were measured. */
export function tunnelFacts(tunnelMsP50: number | null, directMsP50: number | null): TunnelFacts {
  return { tunnelMsP50, directMsP50, addedMsP50: tunnelMsP50 !== null && directMsP50 !== null ? tunnelMsP50 - directMsP50 : null };
}

/** The log line that shows the tunnel and what it costs. */
export function describeTunnel(t: TunnelFacts, where: { localPort: number; hostName: string; port: number; path: string }): string {
  const ms = (v: number | null) => (v === null ? 'n/a' : v.toFixed(2));
  return `ssh tunnel 127.0.0.1:${where.localPort} → ${where.hostName}:${where.port}; keep-alive GET ${where.path} p50 ${ms(t.tunnelMsP50)} ms` +
    (t.directMsP50 !== null ? ` vs direct ${ms(t.directMsP50)} ms (added ${ms(t.addedMsP50)} ms)` : ' (direct path not reachable from here)');
}

/** Opens the tunnel and measures it; the caller owns closing it. */
export async function openMeasuredTunnel<T extends { localPort: number; baseUrl: string }>(
  open: () => Promise<T>,
  directUrl: string,
  path: string,
  latencyMs: (baseUrl: string, path: string) => Promise<number | null>,
): Promise<{ tunnel: T; facts: TunnelFacts }> {
  const tunnel = await open();
  const tunnelMsP50 = await latencyMs(tunnel.baseUrl, path);
  const directMsP50 = await latencyMs(directUrl, path);
  return { tunnel, facts: tunnelFacts(tunnelMsP50, directMsP50) };
}
