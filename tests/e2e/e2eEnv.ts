// Where the end-to-end tests find the real sshd and Docker that scripts/ci/setup-e2e.sh started
// (.tmp/e2e/env, also read directly so `npm test` works after a local setup without sourcing it).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { InventoryHost } from '../../harness/provision/inventory.ts';

export interface E2eEnv {
  sshHost: string;
  sshPort: number;
  user: string;
  key: string;
  knownHosts: string;
  sshdPidFile: string;
  sshdConfig: string;
  image: string;
}

/** The KEY=VALUE lines scripts/ci/setup-e2e.sh wrote to .tmp/e2e/env ({} before it ran). */
export function e2eEnvFile(): Record<string, string> {
  const file = new URL('../../.tmp/e2e/env', import.meta.url);
  if (!existsSync(file)) return {};
  return Object.fromEntries(
    readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
}

/** The e2e environment, or null (after printing the SKIP line, or registering a failing test under FLUIDCAP_E2E=require). */
export function e2eEnv(what: string): E2eEnv | null {
  const e = { ...e2eEnvFile(), ...process.env };
  const ok = e.FLUIDCAP_E2E_SSH_PORT && e.FLUIDCAP_E2E_KEY && e.FLUIDCAP_E2E_KNOWN_HOSTS && existsSync(e.FLUIDCAP_E2E_KEY) && existsSync('/var/run/docker.sock');
  if (!ok) {
    if (process.env.FLUIDCAP_E2E === 'require') {
      test(`${what}: e2e environment present (FLUIDCAP_E2E=require)`, () => {
        assert.unreachable('no sshd/docker: run scripts/ci/setup-e2e.sh (writes .tmp/e2e/env)');
      });
    } else {
      console.log('SKIP e2e: no sshd/docker (set FLUIDCAP_E2E=require to fail instead)');
    }
    return null;
  }
  return {
    sshHost: e.FLUIDCAP_E2E_SSH_HOST ?? '127.0.0.1',
    sshPort: Number(e.FLUIDCAP_E2E_SSH_PORT),
    user: e.FLUIDCAP_E2E_SSH_USER ?? 'root',
    key: e.FLUIDCAP_E2E_KEY!,
    knownHosts: e.FLUIDCAP_E2E_KNOWN_HOSTS!,
    sshdPidFile: e.FLUIDCAP_E2E_SSHD_PID_FILE ?? '',
    sshdConfig: e.FLUIDCAP_E2E_SSHD_CONFIG ?? '',
    image: e.FLUIDCAP_E2E_IMAGE ?? 'fluidcap/sim:dev',
  };
}

/** The e2e sshd as an inventory host. */
export function e2eHost(env: E2eEnv, overrides: Partial<InventoryHost> = {}): InventoryHost {
  return {
    name: 'e2e',
    address: env.sshHost,
    port: env.sshPort,
    user: env.user,
    key: env.key,
    knownHosts: env.knownHosts,
    docker: { socket: '/var/run/docker.sock' },
    labels: {},
    nvidiaSmi: 'nvidia-smi',
    ...overrides,
  };
}
import { freePort } from '../support/ports.ts';
export { freePort };

/** An inventory with the one e2e host (the loopback sshd in front of this machine's Docker). */
export function e2eInventory(env: E2eEnv): string {
  return `hosts:\n  - name: e2e\n    address: ${env.sshHost}\n    port: ${env.sshPort}\n    user: ${env.user}\n    key: ${env.key}\n    knownHosts: ${env.knownHosts}\n`;
}

/** Starts a second sshd from the e2e one's config on another port (a second "host" in front of the same machine); returns its port and a stop function. */
export async function secondSshd(dir: string, config: string): Promise<{ port: number; stop: () => void }> {
  const port = await freePort();
  const pidFile = join(dir, 'sshd2.pid');
  const text = readFileSync(config, 'utf8').replace(/^Port \d+$/m, `Port ${port}`).replace(/^PidFile .*$/m, `PidFile ${pidFile}`);
  const cfg = join(dir, 'sshd2_config');
  writeFileSync(cfg, text);
  execFileSync('/usr/sbin/sshd', ['-f', cfg, '-E', join(dir, 'sshd2.log')]);
  const t0 = performance.now();
  while (!existsSync(pidFile) && performance.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 50));
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  return {
    port,
    stop: () => {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
    },
  };
}
