// End-to-end through the real CLI and real signals: `fluidcap hosts check`, `fluidcap clean`
// removing a labelled leftover, and SIGINT/SIGTERM tearing a launched engine down.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { e2eEnv, freePort } from './e2eEnv.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';

const env = e2eEnv('cli and signals');
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = join(root, 'bin/fluidcap.js');

function cli(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const { FORCE_COLOR: _drop, ...childEnv } = process.env;
    execFile(process.execPath, [bin, ...args], { cwd: root, timeout: 120_000, env: childEnv }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}


if (env) {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-cli-'));
  const inventory = join(dir, 'inventory.yaml');
  writeFileSync(inventory, `hosts:\n  - name: e2e\n    address: ${env.sshHost}\n    port: ${env.sshPort}\n    user: ${env.user}\n    key: ${env.key}\n    knownHosts: ${env.knownHosts}\n`);

  test('fluidcap hosts check: SSH, Docker and GPU facts per host, exit 0', async () => {
    const r = await cli(['hosts', 'check', inventory, '--json']);
    assert.is(r.code, 0, r.stderr);
    const [check] = JSON.parse(r.stdout);
    assert.is(check.host, 'e2e');
    assert.is(check.ok, true, check.problems.join('; '));
    assert.match(check.ssh.hostKey, /^ssh-ed25519 SHA256:\S+ \(match\)$/);
    assert.match(check.docker.version, /^\d+\.\d+/);
    assert.equal(check.gpu, { available: false, reason: 'no nvidia-smi on the host (nvidia-smi not found)' });
  });

  test('fluidcap hosts check with an unknown host key: the problem printed, exit 3', async () => {
    const inv2 = join(dir, 'inventory-unknown.yaml');
    writeFileSync(join(dir, 'empty_known_hosts'), '');
    writeFileSync(inv2, `hosts:\n  - name: e2e\n    address: ${env.sshHost}\n    port: ${env.sshPort}\n    user: root\n    key: ${env.key}\n    knownHosts: ${join(dir, 'empty_known_hosts')}\n`);
    const r = await cli(['hosts', 'check', inv2]);
    assert.is(r.code, 3);
    assert.match(r.stdout, /e2e: PROBLEMS\n  problem: host e2e \(\[127\.0\.0\.1\]:\d+\) is not in .* --accept-new-host-key/);
  });

  test('fluidcap hosts check of a host without Docker: its SSH facts and the Docker problem, exit 3; with --runtime process it is ready, exit 0', async () => {
    const inv3 = join(dir, 'inventory-nodocker.yaml');
    writeFileSync(inv3, `hosts:\n  - name: e2e\n    address: ${env.sshHost}\n    port: ${env.sshPort}\n    user: ${env.user}\n    key: ${env.key}\n    knownHosts: ${env.knownHosts}\n    docker: { socket: /run/fluidcap-no-docker.sock }\n`);
    const r = await cli(['hosts', 'check', inv3]);
    assert.is(r.code, 3, r.stdout + r.stderr);
    assert.match(r.stdout, /^e2e: PROBLEMS\n  ssh     host key ssh-ed25519 /m);
    assert.match(r.stdout, /problem: no Docker socket at \/run\/fluidcap-no-docker\.sock on e2e .*engines in containers and load agents need Docker .*--runtime process/);
    const p = await cli(['hosts', 'check', inv3, '--runtime', 'process']);
    assert.is(p.code, 0, p.stdout + p.stderr);
    assert.match(p.stdout, /^e2e: ok\n  ssh     host key ssh-ed25519 .*\n  docker  not checked \(engines run as processes\)\n  gpu     no nvidia-smi/m);
    const bad = await cli(['hosts', 'check', inv3, '--runtime', 'vm']);
    assert.is(bad.code, 2);
    assert.match(bad.stderr, /runtime/);
  });

  test('fluidcap clean removes a labelled leftover and proves it gone; a bad inventory exits 2 with one message', async () => {
    const docker = localDocker();
    const runId = `e2e-${process.pid}-leftover`;
    await docker.createContainer({ name: `fluidcap-${runId}-sim`, Image: env.image, Cmd: ['--port', '1'], Labels: { 'fluidcap.run': runId }, HostConfig: { NetworkMode: 'host' } });
    assert.is((await listRunContainers(docker, runId)).length, 1);
    const r = await cli(['clean', inventory, '--run', runId]);
    assert.is(r.code, 0, r.stderr);
    assert.is(r.stdout.trim(), `e2e: removed fluidcap-${runId}-sim`);
    assert.equal(await listRunContainers(docker, runId), []);
    const bad = join(dir, 'bad.yaml');
    writeFileSync(bad, 'hosts: []\n');
    const b = await cli(['clean', bad]);
    assert.is(b.code, 2);
    assert.match(b.stderr, /^fluidcap: .*bad\.yaml has 1 problem:\n {2}.*bad\.yaml: hosts must list at least 1 item, got \[\]/m);
    assert.not.match(b.stderr, /at .*\.ts:\d+/, 'no stack trace');
  });

  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    test(`${signal} while an engine runs: the signal handler tears it down, nothing left with the run label`, async () => {
      const runId = `e2e-${process.pid}-${signal.toLowerCase()}`;
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', join(root, 'tests/e2e/fixtures/launchAndWait.ts'), runId, String(await freePort()), env.sshHost, String(env.sshPort), env.key, env.knownHosts, join(dir, runId)],
        { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (b) => (out += b));
      child.stderr.on('data', (b) => (err += b));
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, sig) => r({ code, signal: sig })));
      const deadline = performance.now() + 90_000;
      while (!out.includes('READY') && performance.now() < deadline && child.exitCode === null) await new Promise((r) => setTimeout(r, 100));
      assert.ok(out.includes(`READY fluidcap-${runId}-sim`), `child never got ready: ${err}`);
      assert.is((await listRunContainers(localDocker(), runId)).length, 1);
      child.kill(signal);
      const result = await exited;
      assert.is(result.signal, signal, 'the process still ends by the signal after teardown');
      assert.match(err, new RegExp(`${signal}: tearing down 1 engine`));
      assert.equal(await listRunContainers(localDocker(), runId), []);
    });
  }
}

test.run();
