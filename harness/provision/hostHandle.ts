// One object per host that hides whether it is this machine or a remote one: a Docker client, a
// way to run commands (SSH exec or a local process, argv arrays only), the address load is sent
// to, and a reconnect for teardown after the network dropped.
import { homedir } from 'node:os';
import { connect as netConnect } from 'node:net';
import type Docker from 'dockerode';
import { execFile } from 'node:child_process';
import { InfraError } from '../util/errors.ts';
import type { Host, InventoryHost } from './inventory.ts';
import { connectHost, type ConnectOptions, type ExecOptions, type ExecResult, type HostConnection } from './sshConnection.ts';
import { dockerFor, localDocker } from './dockerAgent.ts';

export interface HostHandle {
  host: Host;
  /** Address the engine is reached at directly (its host network). */
  address: string;
  docker: Docker;
  /** Null for the local host. */
  connection: HostConnection | null;
  exec(command: string, args: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** Home directory of the user containers are started for (resolves `~/` in mounts). */
  home(): Promise<string>;
  /** True when something accepts TCP connections on 127.0.0.1:port of the host. */
  portTaken(port: number): Promise<boolean>;
  /** Resolves with a reason when the host becomes unreachable (never for the local host). */
  lost: Promise<Error>;
  close(): Promise<void>;
}

// node's execFile rather than execa: the test runner loads sources as CommonJS, where execa (ESM only) cannot be required.
function localExec(command: string, args: string[], opts: ExecOptions = {}): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile(command, args, { timeout: opts.timeoutS ? opts.timeoutS * 1000 : 0, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: string | number; signal?: string }) | null;
      const code = e === null ? 0 : e.code === 'ENOENT' ? 127 : typeof e.code === 'number' ? e.code : null;
      resolve({ stdout: String(stdout), stderr: String(stderr), code, signal: e?.signal ?? null });
    });
    child.stdin?.on('error', () => {});
    child.stdin?.end(opts.stdin ?? '');
  });
}

function tcpAccepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = netConnect({ host, port });
    const done = (v: boolean) => {
      s.destroy();
      resolve(v);
    };
    s.setTimeout(2000, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/** Explains a Docker socket that cannot be used over SSH: missing daemon or missing permission. */
export async function explainDockerFailure(conn: HostConnection, socket: string, err: Error): Promise<string> {
  const who = `${conn.host.user} on ${conn.host.name}`;
  const exists = await conn.exec('test', ['-S', socket]).catch(() => null);
  if (exists && exists.code !== 0) return `no Docker socket at ${socket} on ${conn.host.name} (is Docker installed and running? set docker.socket if it lives elsewhere)`;
  const writable = await conn.exec('test', ['-w', socket]).catch(() => null);
  if (writable && writable.code !== 0) {
    return `${who} has no permission to use Docker (${socket} is not writable; add the user to the docker group: sudo usermod -aG docker ${conn.host.user}, then log in again)`;
  }
  return `cannot reach Docker at ${socket} on ${conn.host.name}: ${err.message}`;
}

/** Explains a local Docker socket that cannot be used: missing permission or no daemon. */
export function explainLocalDockerFailure(socket: string, err: Error): string {
  return (err as NodeJS.ErrnoException).code === 'EACCES'
    ? `no permission to use the local Docker socket ${socket} (add this user to the docker group)`
    : `cannot reach the local Docker daemon at ${socket}: ${err.message} (is dockerd running?)`;
}

/**
 * Connects to a host (SSH + Docker for inventory hosts; the local socket for `local`) and checks
 * Docker answers; with `need.docker` false (engines run as processes) Docker is neither checked
 * nor used.
 */
export async function openHost(host: Host, opts: ConnectOptions = {}, need: { docker?: boolean } = {}): Promise<HostHandle> {
  const checkDocker = need.docker ?? true;
  if (host.local) {
    const docker = localDocker(host.docker.socket);
    if (checkDocker) {
      try {
        await docker.ping();
      } catch (err) {
        throw new InfraError(explainLocalDockerFailure(host.docker.socket, err as Error));
      }
    }
    return {
      host,
      address: '127.0.0.1',
      docker,
      connection: null,
      exec: localExec,
      home: async () => homedir(),
      portTaken: (port) => tcpAccepts('127.0.0.1', port),
      lost: new Promise<Error>(() => {}),
      close: async () => {},
    };
  }
  const conn = await connectHost(host as InventoryHost, opts);
  const docker = dockerFor(conn);
  if (checkDocker) {
    try {
      await docker.ping();
    } catch (err) {
      const message = await explainDockerFailure(conn, host.docker.socket, err as Error);
      await conn.close();
      throw new InfraError(message, { cause: err, host: host.name });
    }
  }
  let homeDir: string | undefined;
  return {
    host,
    address: (host as InventoryHost).address,
    docker,
    connection: conn,
    exec: (command, args, execOpts) => conn.exec(command, args, execOpts),
    async home() {
      if (homeDir === undefined) {
        const r = await conn.exec('printenv', ['HOME']);
        homeDir = r.code === 0 && r.stdout.trim().startsWith('/') ? r.stdout.trim() : (host as InventoryHost).user === 'root' ? '/root' : `/home/${(host as InventoryHost).user}`;
      }
      return homeDir;
    },
    async portTaken(port) {
      // A direct-tcpip channel to 127.0.0.1:port opens only when something listens there.
      try {
        const ch = await conn.forwardOut('127.0.0.1', port);
        ch.destroy();
        return true;
      } catch {
        return false;
      }
    },
    lost: conn.closed.then((reason) => reason ?? new Error('closed')),
    close: () => conn.close(),
  };
}
