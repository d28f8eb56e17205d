// End-to-end failure cases on real sshd + dockerd: each fails with a clear message and leaves no
// container with the run's label (image missing, engine exits at start, port taken, wrong key,
// unknown / changed / hashed host keys, unreachable host, sshd killed in the middle of a probe).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { e2eEnv, e2eHost, freePort } from './e2eEnv.ts';
import { targetSchema, type TargetInput } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { launchEngine, EngineLaunchError, type EngineExit } from '../../harness/provision/launcher.ts';
import { LOCAL_HOST } from '../../harness/provision/inventory.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';

const env = e2eEnv('launch failures');

async function listen(host = '0.0.0.0', port = 0): Promise<Server> {
  const s = createServer((c) => c.destroy());
  await new Promise<void>((r) => s.listen(port, host, () => r()));
  return s;
}
const portOf = (s: Server) => (s.address() as AddressInfo).port;
const close = (s: Server) => new Promise((r) => s.close(r));


function simSpec(runId: string, port: number, extra: Partial<TargetInput> = {}) {
  const target = targetSchema.parse({ engine: 'sim', image: env!.image, model: 'tiny', port, sim: { timeScale: 0.1 }, readyTimeout: '60s', ...extra });
  return renderContainerSpec(target, { runId })!;
}

async function rejects(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

async function assertNoLeftover(runId: string) {
  assert.equal(await listRunContainers(localDocker(), runId), [], `no container left with fluidcap.run=${runId}`);
}

if (env) {
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-fail-'));
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-keys-'));
  const hostKeyLine = readFileSync(env.knownHosts, 'utf8').trim();

  test('image that does not exist: clear message naming image and host, nothing left', async () => {
    const runId = `e2e-${process.pid}-noimage`;
    const spec = simSpec(runId, await freePort(), { image: 'fluidcap/does-not-exist:none' });
    const err = await rejects(launchEngine(spec, e2eHost(env), { runDir }));
    assert.match(err.message, /^image fluidcap\/does-not-exist:none is not on host e2e and pulling it failed: /);
    await assertNoLeftover(runId);
  });

  test('engine that exits at start (sim --fault-exit-at-start): fails at once with exit code, OOM flag and last log lines', async () => {
    const runId = `e2e-${process.pid}-exit`;
    const spec = simSpec(runId, await freePort(), { sim: { timeScale: 0.1, faults: { exitAtStart: true } }, readyTimeout: '10m' });
    const t0 = performance.now();
    const err = await rejects(launchEngine(spec, e2eHost(env), { runDir: join(runDir, 'exit') }));
    const elapsedS = (performance.now() - t0) / 1000;
    assert.instance(err, EngineLaunchError);
    const e = err as EngineLaunchError;
    assert.match(e.message, new RegExp(`^engine fluidcap-${runId}-sim on e2e exited during start-up with code 1 \\(OOM killed: no\\); last \\d+ log lines:`));
    assert.is(e.details.exitCode, 1);
    assert.is(e.details.oomKilled, false);
    assert.ok(e.details.lastLogLines!.some((l) => /fault-exit-at-start/.test(l)), e.details.lastLogLines!.join('\n'));
    assert.ok(elapsedS < 120, `failed at once (${elapsedS.toFixed(1)} s), not after the 10 min deadline`);
    assert.match(readFileSync(join(runDir, 'exit', 'server.log'), 'utf8'), /fault-exit-at-start/);
    await assertNoLeftover(runId);
  });

  test('port already taken on the host: refused before any container is created', async () => {
    const squatter = await listen('0.0.0.0');
    try {
      for (const [host, runId] of [[e2eHost(env), `e2e-${process.pid}-port`], [LOCAL_HOST, `e2e-${process.pid}-port-local`]] as const) {
        const spec = simSpec(runId, portOf(squatter));
        const err = await rejects(launchEngine(spec, host, { runDir }));
        assert.match(err.message, new RegExp(`^port ${portOf(squatter)} on host ${host.name} is already taken`));
        await assertNoLeftover(runId);
      }
    } finally {
      await close(squatter);
    }
  });

  test('wrong key: refused authentication, named user and key', async () => {
    const wrongKey = join(tmp, 'wrong_ed25519');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', wrongKey]);
    const err = await rejects(connectHost(e2eHost(env, { key: wrongKey })));
    assert.match(err.message, new RegExp(`^host e2e \\(root@\\[127\\.0\\.0\\.1\\]:${env.sshPort}\\) refused authentication as root with key ${wrongKey}`));
  });

  test('unknown host key: refused with the fingerprint; --accept-new-host-key pins it and the next connect verifies', async () => {
    const kh = join(tmp, 'known_hosts_empty');
    writeFileSync(kh, '');
    const err = await rejects(connectHost(e2eHost(env, { knownHosts: kh })));
    assert.match(err.message, /is not in .*known_hosts_empty \(it presented ssh-ed25519 SHA256:[A-Za-z0-9+/]+\).*--accept-new-host-key/);
    const pinned = await connectHost(e2eHost(env, { knownHosts: kh }), { acceptNewHostKey: true });
    assert.is(pinned.hostKey.verdict, 'pinned');
    await pinned.close();
    assert.is(readFileSync(kh, 'utf8').trim(), hostKeyLine, 'pinned line equals the host key as ssh-keyscan would write it');
    const again = await connectHost(e2eHost(env, { knownHosts: kh }));
    assert.is(again.hostKey.verdict, 'match');
    await again.close();
  });

  test('changed host key: refused even with --accept-new-host-key, message says how to fix', async () => {
    const other = join(tmp, 'other_host_key');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const kh = join(tmp, 'known_hosts_changed');
    const otherPub = readFileSync(`${other}.pub`, 'utf8').trim().split(' ').slice(0, 2).join(' ');
    writeFileSync(kh, `# a comment\n[127.0.0.1]:${env.sshPort} ${otherPub}\n`);
    for (const acceptNewHostKey of [false, true]) {
      const err = await rejects(connectHost(e2eHost(env, { knownHosts: kh }), { acceptNewHostKey }));
      assert.match(err.message, /^HOST KEY CHANGED for host e2e \(\[127\.0\.0\.1\]:\d+\): it presented ssh-ed25519 SHA256:.* line 2 holds a different ssh-ed25519 key/);
      assert.match(err.message, /ssh-keygen -R/);
    }
    assert.is(readFileSync(kh, 'utf8').split('\n').length, 3, 'known_hosts untouched');
  });

  test('hashed known_hosts entries (ssh-keygen -H) verify', async () => {
    const kh = join(tmp, 'known_hosts_hashed');
    copyFileSync(env.knownHosts, kh);
    execFileSync('ssh-keygen', ['-q', '-H', '-f', kh], { stdio: 'pipe' });
    assert.match(readFileSync(kh, 'utf8'), /^\|1\|/);
    const conn = await connectHost(e2eHost(env, { knownHosts: kh }));
    assert.is(conn.hostKey.verdict, 'match');
    await conn.close();
  });

  test('unreachable host: clear message', async () => {
    const port = await freePort();
    const err = await rejects(connectHost(e2eHost(env, { port })));
    assert.match(err.message, new RegExp(`^host e2e \\(root@\\[127\\.0\\.0\\.1\\]:${port}\\) is unreachable: ECONNREFUSED`));
  });

  test('sshd killed in the middle of a probe: onExit reports the lost connection; teardown reconnects and removes the container', async () => {
    // A private sshd (same host key, own port and pid file), so killing it cannot disturb other tests.
    const sshdDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-sshd-'));
    const port = await freePort();
    const config = join(sshdDir, 'sshd_config');
    const pidFile = join(sshdDir, 'sshd.pid');
    writeFileSync(config, readFileSync(env.sshdConfig, 'utf8').replace(/^Port .*$/m, `Port ${port}`).replace(/^PidFile .*$/m, `PidFile ${pidFile}`));
    const knownHosts = join(sshdDir, 'known_hosts');
    writeFileSync(knownHosts, hostKeyLine.replace(/^\[127\.0\.0\.1\]:\d+/, `[127.0.0.1]:${port}`) + '\n');
    const startSshd = () => execFileSync('/usr/sbin/sshd', ['-f', config, '-E', join(sshdDir, 'sshd.log')]);
    const waitListening = async () => {
      for (let i = 0; i < 50; i++) {
        if (existsSync(pidFile)) return;
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    startSshd();
    await waitListening();
    const host = e2eHost(env, { port, knownHosts });
    const runId = `e2e-${process.pid}-sshdkill`;
    const spec = simSpec(runId, await freePort());
    const engine = await launchEngine(spec, host, { runDir: join(runDir, 'kill'), reconnectTimeoutS: 30 });
    let killed = false;
    try {
      const exits: EngineExit[] = [];
      const exited = new Promise<void>((resolve) => engine.onExit((e) => (exits.push(e), resolve())));
      // A probe in flight: streamed requests that outlive the kill.
      const probe = Array.from({ length: 3 }, (_, i) =>
        fetch(`${engine.baseUrl}/v1/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model: 'tiny', prompt: `kill ${i}`, max_tokens: 200, stream: true, ignore_eos: true }),
        }).then((r) => r.text()),
      );
      await new Promise((r) => setTimeout(r, 300));
      // The private sshd: its listener and the per-connection process it forked for us.
      const listener = Number(readFileSync(pidFile, 'utf8').trim());
      const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(listener)], { encoding: 'utf8' }).split('\n').map(Number).filter((p) => p > 0);
      process.kill(listener, 'SIGTERM');
      for (const pid of children) process.kill(pid, 'SIGKILL');
      killed = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([exited, new Promise((_, rej) => (timer = setTimeout(() => rej(new Error('no onExit within 30 s')), 30_000)))]);
      clearTimeout(timer);
      assert.is(exits[0].kind, 'connection-lost');
      assert.match(exits[0].message, /e2e/);
      await Promise.allSettled(probe);
    } finally {
      // The operator's host comes back; teardown must still find and remove the container.
      if (killed) {
        startSshd();
        await waitListening();
      }
      const report = await engine.stop();
      assert.equal(report.remaining, [], report.problems.join('; '));
      assert.equal(report.removed, [`fluidcap-${runId}-sim`]);
      if (existsSync(pidFile)) process.kill(Number(readFileSync(pidFile, 'utf8').trim()), 'SIGTERM');
    }
    await assertNoLeftover(runId);
  });
}

test.run();
