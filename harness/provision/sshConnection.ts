// One long-lived SSH connection per GPU host (node-ssh over ssh2): the Docker API, remote commands
// and tunnels all ride on it as channels, so nothing pays a new handshake per call. Host keys are
// verified against known_hosts before any credential is sent.
//
// Interface (stable): `connectHost(host, opts) → Promise<HostConnection>`.
import { appendFile, mkdir, readFile, access, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { NodeSSH } from 'node-ssh';
import type { Client, ClientChannel } from 'ssh2';
import { InfraError, UserError } from '../util/errors.ts';
import { shellJoin, shellQuote } from '../util/shellQuote.ts';
import type { InventoryHost } from './inventory.ts';
import { fingerprintOfBlob, hostLookupName, keyTypeOfBlob, knownHostsLine, knownKeyTypes, verifyHostKey, type HostKeyVerdict } from './knownHosts.ts';

export interface ConnectOptions {
  /** Pin the key of a host missing from known_hosts (never a changed key). */
  acceptNewHostKey?: boolean;
  /** Handshake deadline; an unreachable host fails after this. */
  readyTimeoutS?: number;
  /** Keep-alive probes every this many seconds; 3 unanswered ones drop the connection. */
  keepaliveS?: number;
  /** Where passphrases and SSH_AUTH_SOCK are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}

export interface ExecOptions {
  timeoutS?: number;
  /** Written to the command's stdin, then closed (values that must not appear on a command line). */
  stdin?: string;
}

export interface ExecResult {
  stdout: string;
  stderr: string;
  code: number | null;
  signal: string | null;
}

/** A live connection to one inventory host. */
export interface HostConnection {
  host: InventoryHost;
  /** `user@address:port`, for messages. */
  label: string;
  ssh: NodeSSH;
  client: Client;
  hostKey: { type: string; fingerprint: string; verdict: HostKeyVerdict['kind'] | 'pinned' };
  /** Runs `command args...` (every word shell-quoted, never pasted); resolves with the exit code. */
  exec(command: string, args?: string[], opts?: ExecOptions): Promise<ExecResult>;
  /** A channel to a Unix socket on the host (OpenSSH streamlocal forwarding). */
  openStreamLocal(socketPath: string): Promise<ClientChannel>;
  /** A channel to host:port as seen from the host (for tunnels). */
  forwardOut(dstHost: string, dstPort: number): Promise<ClientChannel>;
  /** Resolves when the connection is gone, with the reason (null after close()). */
  readonly closed: Promise<Error | null>;
  isOpen(): boolean;
  close(): Promise<void>;
}

const SSH2_HOST_KEY_ORDER = ['ssh-ed25519', 'ecdsa-sha2-nistp256', 'ecdsa-sha2-nistp384', 'ecdsa-sha2-nistp521', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];

// Ask the server for a key type we already know first, as OpenSSH does, so a host with several
// keys is verified against the one on file instead of looking "unknown".
function hostKeyAlgorithms(knownTypes: string[]): string[] {
  const preferred = knownTypes.flatMap((t) => (t === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [t]));
  return [...new Set([...preferred.filter((a) => SSH2_HOST_KEY_ORDER.includes(a)), ...SSH2_HOST_KEY_ORDER])];
}

const UNREACHABLE_CODES = new Set(['ECONNREFUSED', 'ETIMEDOUT', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', 'ECONNRESET']);

function describeConnectError(err: Error & { code?: string; level?: string }, host: InventoryHost, label: string): string {
  const msg = err.message ?? String(err);
  if (err.code && UNREACHABLE_CODES.has(err.code)) return `host ${host.name} (${label}) is unreachable: ${err.code} ${msg.replace(/^connect \w+ /, '')}`;
  if (/Timed out while waiting for handshake|No response from server/.test(msg)) {
    return `host ${host.name} (${label}) is unreachable: no SSH handshake before the deadline`;
  }
  if (/All configured authentication methods failed/.test(msg)) {
    const cred = host.key ? `key ${host.key}` : 'the ssh-agent keys';
    return `host ${host.name} (${label}) refused authentication as ${host.user} with ${cred} (is its public key in ~${host.user}/.ssh/authorized_keys there?)`;
  }
  if (/passphrase|Encrypted private|bad decrypt/i.test(msg)) {
    return `host ${host.name}: cannot unlock key ${host.key}: ${msg} (set passphraseEnv to the name of an environment variable holding the passphrase)`;
  }
  if (/Cannot parse privateKey|Unsupported key format/i.test(msg)) return `host ${host.name}: key ${host.key} is not a usable private key: ${msg}`;
  return `host ${host.name} (${label}): SSH failed: ${msg}`;
}

function hostKeyProblem(host: InventoryHost, knownHostsFile: string, verdict: HostKeyVerdict, blob: Buffer): string {
  const name = hostLookupName(host.address, host.port);
  const fp = `${keyTypeOfBlob(blob)} ${fingerprintOfBlob(blob)}`;
  switch (verdict.kind) {
    case 'changed':
      return (
        `HOST KEY CHANGED for host ${host.name} (${name}): it presented ${fp}, but ${knownHostsFile} line ${verdict.line} ` +
        `holds a different ${verdict.keyType} key. Refusing to connect (this can be a man-in-the-middle). If the host was ` +
        `reinstalled, remove the old key with: ssh-keygen -R '${name}' -f ${knownHostsFile}`
      );
    case 'revoked':
      return `host ${host.name} (${name}) presented ${fp}, which ${knownHostsFile} line ${verdict.line} marks @revoked. Refusing to connect.`;
    default:
      return (
        `host ${host.name} (${name}) is not in ${knownHostsFile} (it presented ${fp}). Check the fingerprint ` +
        `(ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub on the host) and re-run with --accept-new-host-key to pin it`
      );
  }
}

async function readOptional(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return '';
    throw new UserError(`cannot read known_hosts file ${file}: ${(err as Error).message}`);
  }
}

/** Opens the host's one long-lived SSH connection, verifying its host key first. */
export async function connectHost(host: InventoryHost, opts: ConnectOptions = {}): Promise<HostConnection> {
  const env = opts.env ?? process.env;
  const label = `${host.user}@${hostLookupName(host.address, host.port)}`;
  const knownHostsFile = host.knownHosts;
  const knownText = await readOptional(knownHostsFile);

  let privateKey: string | undefined;
  if (host.key !== undefined) {
    let mode: number;
    let owner: number;
    try {
      await access(host.key);
      ({ mode, uid: owner } = await stat(host.key));
      privateKey = await readFile(host.key, 'utf8');
    } catch (err) {
      throw new UserError(`host ${host.name}: cannot read key ${host.key} (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
    // OpenSSH's rule (sshkey_perm_ok): a key of ours that others may read is refused, not used.
    if (process.platform !== 'win32' && owner === process.getuid?.() && (mode & 0o077) !== 0) {
      const perms = (mode & 0o777).toString(8).padStart(4, '0');
      throw new UserError(
        `host ${host.name}: key ${host.key} is readable or writable by other users (permissions ${perms}); OpenSSH refuses such keys, ` +
          `and so does fluidcap. Restrict it with: chmod 600 ${shellQuote(host.key)}`,
      );
    }
  }
  let passphrase: string | undefined;
  if (host.passphraseEnv !== undefined) {
    passphrase = env[host.passphraseEnv];
    if (passphrase === undefined) {
      throw new UserError(`host ${host.name}: passphraseEnv names ${host.passphraseEnv}, but that environment variable is not set`);
    }
  }
  let agent: string | undefined;
  if (host.agent === true) {
    agent = env.SSH_AUTH_SOCK;
    if (!agent && privateKey === undefined) throw new UserError(`host ${host.name}: agent is true, but SSH_AUTH_SOCK is not set (is ssh-agent running?)`);
  } else if (typeof host.agent === 'string') {
    agent = host.agent;
  }

  let hostKey: HostConnection['hostKey'] | undefined;
  let refusal: string | undefined;
  const hostVerifier = (blob: Buffer, verify: (ok: boolean) => void): void => {
    const verdict = verifyHostKey(knownText, host.address, host.port, blob);
    hostKey = { type: keyTypeOfBlob(blob), fingerprint: fingerprintOfBlob(blob), verdict: verdict.kind };
    if (verdict.kind === 'match') return verify(true);
    if (verdict.kind === 'unknown' && opts.acceptNewHostKey) {
      mkdir(dirname(knownHostsFile), { recursive: true, mode: 0o700 })
        .then(() => appendFile(knownHostsFile, knownHostsLine(host.address, host.port, blob), { mode: 0o600 }))
        .then(() => {
          hostKey!.verdict = 'pinned';
          opts.log?.(`pinned ${hostKey!.type} ${hostKey!.fingerprint} for ${hostLookupName(host.address, host.port)} in ${knownHostsFile}`);
          verify(true);
        })
        .catch((err: Error) => {
          refusal = `host ${host.name}: cannot pin its key in ${knownHostsFile}: ${err.message}`;
          verify(false);
        });
      return;
    }
    refusal = hostKeyProblem(host, knownHostsFile, verdict, blob);
    verify(false);
  };

  // A host behind another (a Slurm compute node behind its login host): the SSH session rides a
  // channel of the other host's connection, as `ssh -J` does; the node's own key is verified all the same.
  let jump: HostConnection | null = null;
  let sock: ClientChannel | undefined;
  if (host.jump) {
    jump = await connectHost(host.jump, opts);
    try {
      sock = await jump.forwardOut(host.address, host.port);
    } catch (err) {
      await jump.close();
      throw new InfraError(`host ${host.name} (${label}) is unreachable from ${host.jump.name}: ${(err as Error).message}`, { cause: err, host: host.name });
    }
  }

  const ssh = new NodeSSH();
  try {
    await ssh.connect({
      ...(sock ? { sock } : {}),
      host: host.address,
      port: host.port,
      username: host.user,
      privateKey,
      passphrase,
      agent,
      hostVerifier: hostVerifier as unknown as (key: Buffer) => boolean,
      algorithms: { serverHostKey: hostKeyAlgorithms(knownKeyTypes(knownText, host.address, host.port)) as never },
      readyTimeout: (opts.readyTimeoutS ?? 20) * 1000,
      keepaliveInterval: (opts.keepaliveS ?? 5) * 1000,
      keepaliveCountMax: 3,
    });
  } catch (err) {
    ssh.dispose();
    await jump?.close();
    if (refusal !== undefined) throw new UserError(refusal, { cause: err });
    throw new InfraError(describeConnectError(err as Error, host, label), { cause: err, host: host.name });
  }
  const client = ssh.connection!;
  // Small API requests and keep-alive probes must not wait for Nagle's algorithm (~40 ms stalls).
  client.setNoDelay(true);

  let open = true;
  let closedByUs = false;
  let lastError: Error | null = null;
  // Without a listener a late socket error would crash the process; it becomes `closed` instead.
  client.on('error', (err) => {
    lastError = err;
    opts.log?.(`ssh ${host.name}: ${err.message}`);
  });
  const closed = new Promise<Error | null>((resolve) => {
    client.once('close', () => {
      open = false;
      void jump?.close();
      resolve(closedByUs ? null : (lastError ?? new Error(`SSH connection to ${host.name} (${label}) closed`)));
    });
  });

  const notOpen = () => new InfraError(`SSH connection to ${host.name} (${label}) is closed${lastError ? `: ${lastError.message}` : ''}`);

  const conn: HostConnection = {
    host,
    label,
    ssh,
    client,
    hostKey: hostKey ?? { type: 'unknown', fingerprint: '', verdict: 'match' },
    closed,
    isOpen: () => open,
    async exec(command, args = [], execOpts = {}) {
      if (!open) throw notOpen();
      let channel: ClientChannel | undefined;
      let timer: NodeJS.Timeout | undefined;
      // The remote shell parses what SSH sends: the command is quoted like every argument (node-ssh
      // would quote only the arguments), so an inventory value such as nvidiaSmi stays one word.
      const run = ssh.exec(shellJoin([command, ...args]), [], { stream: 'both', stdin: execOpts.stdin, onChannel: (c) => (channel = c) }) as Promise<ExecResult>;
      const dropped = closed.then(() => {
        throw notOpen();
      });
      const timeout = execOpts.timeoutS
        ? new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              channel?.close();
              reject(new InfraError(`host ${host.name}: \`${command}\` did not finish within ${execOpts.timeoutS} s`, { host: host.name }));
            }, execOpts.timeoutS! * 1000);
          })
        : undefined;
      try {
        return await Promise.race([run, dropped, ...(timeout ? [timeout] : [])]);
      } finally {
        clearTimeout(timer);
        dropped.catch(() => {});
      }
    },
    openStreamLocal(socketPath) {
      return new Promise((resolve, reject) => {
        if (!open) return reject(notOpen());
        try {
          client.openssh_forwardOutStreamLocal(socketPath, (err, channel) => (err ? reject(err) : resolve(channel)));
        } catch (err) {
          reject(err);
        }
      });
    },
    forwardOut(dstHost, dstPort) {
      return new Promise((resolve, reject) => {
        if (!open) return reject(notOpen());
        try {
          client.forwardOut('127.0.0.1', 0, dstHost, dstPort, (err, channel) => (err ? reject(err) : resolve(channel)));
        } catch (err) {
          reject(err);
        }
      });
    },
    async close() {
      if (!open) return;
      closedByUs = true;
      client.end();
      await Promise.race([closed, new Promise((r) => setTimeout(r, 2000).unref())]);
      if (open) client.destroy();
    },
  };
  return conn;
}
