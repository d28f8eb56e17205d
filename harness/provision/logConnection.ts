// The engine's log followed on an SSH connection of its own. With `access: ssh-tunnel` every SSE
// byte of the load rides the host's main connection; an engine that logs whole prompts would put
// its log on that same TCP stream, in front of the tokens, and its decryption on the same thread.
// A second connection (same host, host key verified the same way, same credentials) keeps the log
// off the tokens' stream, and its reads are timed so each probe can state what the relay cost.
import type { Socket } from 'node:net';
import type { HostHandle } from './hostHandle.ts';
import { followLogs, type LogBounds, type LogFollower } from './logStream.ts';

/** A log follower that also says which connection it reads over. */
export interface LogRelay extends LogFollower {
  /** `own SSH connection <local port> → <host>`, or `local Docker socket`. */
  via: string;
}

/** Follows container `containerId` on `handle`'s host: over `openOwn()` when the host is remote. */
export async function followLogsApart(handle: HostHandle, openOwn: () => Promise<HostHandle>, containerId: string, logPath: string, bounds: LogBounds = {}): Promise<LogRelay> {
  if (handle.connection === null) {
    const follower = await followLogs(handle.docker, handle.docker.getContainer(containerId), logPath, bounds);
    return { ...follower, via: 'local Docker socket' };
  }
  const own = await openOwn();
  try {
    const socket = transportSocket(own);
    const follower = await followLogs(own.docker, own.docker.getContainer(containerId), logPath, { ...bounds, transportBusyS: socket ? timeReads(socket) : undefined });
    return {
      ...follower,
      via: `own SSH connection ${socket?.localPort ?? '?'} → ${own.connection!.label}`,
      close: async () => {
        await follower.close();
        await own.close();
      },
    };
  } catch (err) {
    await own.close();
    throw err;
  }
}

// ssh2 keeps its TCP socket in `_sock` (it has no public accessor); it is only listened to here.
function transportSocket(h: HostHandle): Socket | null {
  return (h.connection?.client as unknown as { _sock?: Socket } | undefined)?._sock ?? null;
}

/**
 * Main-thread seconds spent in the socket's 'data' listeners: a listener first and one last bracket
 * ssh2's parsing and decryption and what runs synchronously from it (the log's handler included).
 */
function timeReads(socket: Socket): () => number {
  let busyMs = 0;
  let startMs = 0;
  socket.prependListener('data', () => {
    startMs = performance.now();
  });
  socket.on('data', () => {
    busyMs += performance.now() - startMs;
  });
  return () => busyMs / 1000;
}
