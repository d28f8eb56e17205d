// Load through an SSH local port forward, for engines whose port is not reachable directly. Each
// accepted local connection becomes a direct-tcpip channel on the host's one SSH connection; the
// load generator must use keep-alive connections (a new connection per request cost 44 ms p50
// through a tunnel on loopback sshd, keep-alive 1.1 ms).
import { createServer, type AddressInfo, type Socket } from 'node:net';
import http from 'node:http';
import type { HostConnection } from './sshConnection.ts';

export interface SshTunnel {
  localPort: number;
  baseUrl: string;
  /** What the tunnel has relayed so far (cumulative; a probe reports the difference). */
  cost(): TunnelRelayCost;
  close(): Promise<void>;
}

/** The tunnel's cumulative counters. */
export interface TunnelRelayCost {
  /** Bytes passed from the engine to local connections (the tokens) and from them to the engine. */
  bytesFromEngine: number;
  bytesToEngine: number;
  /** Channels opened, one per accepted connection, and the seconds spent waiting for them to open. */
  channels: number;
  openS: number;
}

/** Listens on 127.0.0.1:0 and forwards every connection to remoteHost:remotePort as the host sees it (default: the host itself). */
export async function openTunnel(conn: HostConnection, remotePort: number, remoteHost = '127.0.0.1'): Promise<SshTunnel> {
  const sockets = new Set<Socket>();
  // Bytes are read off the local sockets' own counters (live ones when asked, closed ones kept
  // here), so counting adds nothing to the path every token takes.
  const closed = { fromEngine: 0, toEngine: 0 };
  let channels = 0;
  let openS = 0;
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => {
      sockets.delete(socket);
      closed.fromEngine += socket.bytesWritten;
      closed.toEngine += socket.bytesRead;
    });
    socket.setNoDelay(true);
    const asked = performance.now();
    conn.forwardOut(remoteHost, remotePort).then(
      (channel) => {
        channels++;
        openS += (performance.now() - asked) / 1000;
        socket.pipe(channel).pipe(socket);
        channel.once('close', () => socket.destroy());
        socket.once('close', () => channel.destroy());
        socket.once('error', () => channel.destroy());
      },
      () => socket.destroy(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const localPort = (server.address() as AddressInfo).port;
  return {
    localPort,
    baseUrl: `http://127.0.0.1:${localPort}`,
    cost() {
      let fromEngine = closed.fromEngine;
      let toEngine = closed.toEngine;
      for (const s of sockets) {
        fromEngine += s.bytesWritten;
        toEngine += s.bytesRead;
      }
      return { bytesFromEngine: fromEngine, bytesToEngine: toEngine, channels, openS };
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Median of `n` keep-alive GETs of `path`, in milliseconds (one warm-up request first). */
export async function keepAliveLatencyMs(baseUrl: string, path = '/health', n = 20): Promise<number | null> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.get(`${baseUrl}${path}`, { agent, timeout: 5000 }, (res) => {
        res.resume();
        res.once('end', resolve);
      });
      req.once('timeout', () => req.destroy(new Error('timeout')));
      req.once('error', reject);
    });
  try {
    await get();
    const samples: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      await get();
      samples.push(performance.now() - t0);
    }
    samples.sort((a, b) => a - b);
    return samples[Math.floor(samples.length / 2)];
  } catch {
    return null;
  } finally {
    agent.destroy();
  }
}
