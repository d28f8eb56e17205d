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
  close(): Promise<void>;
}

/** Listens on 127.0.0.1:0 and forwards every connection to remoteHost:remotePort as the host sees it (default: the host itself). */
export async function openTunnel(conn: HostConnection, remotePort: number, remoteHost = '127.0.0.1'): Promise<SshTunnel> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.setNoDelay(true);
    conn.forwardOut(remoteHost, remotePort).then(
      (channel) => {
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
