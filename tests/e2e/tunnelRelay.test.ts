// End-to-end on the real sshd: load sent by this process through an SSH tunnel (the simulated
// engine served locally, reached through sshd's direct-tcpip forward) with a receiving worker.
// Client health states what the tunnel relayed during the probe and the main thread's loop delay,
// and that delay is a term of the client error: the relay runs on the main thread whatever the
// receivers' own delays were.
import { test } from 'uvu';
import { execa } from 'execa';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eHost, e2eInventory, freePort } from './e2eEnv.ts';
import { FAST_RECIPE, fluidcap, onlyRunDir, readJson } from '../pipeline/support.ts';
import { startLocalSim } from '../../harness/provision/localProcess.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { openTunnel } from '../../harness/provision/sshTunnel.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

const env = e2eEnv('tunnel relay');

if (env) {
  test('a probe through the SSH tunnel with a receiving worker: the relay\'s bytes and main-thread delay in client health', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-tunnel-'));
    const sim = await startLocalSim(['--host', '127.0.0.1', '--port', '0', '--model', 'tiny', '--time-scale', '0.1'], { logPath: join(dir, 'server.log') });
    const conn = await connectHost(e2eHost(env));
    const tunnel = await openTunnel(conn, Number(new URL(sim.baseUrl).port));
    try {
      const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 32 }, output: { min: 8, max: 16 } }, seed: 5 });
      const plan = planProbe({ workload, rateQps: 20, requests: 40, maxContextTokens: 2048 });
      const result = await runProbe(plan, { outDir: dir, baseUrl: tunnel.baseUrl, model: 'tiny', workers: 1, requestTimeoutS: 30, stallTimeoutS: 10, metricsUrl: false, tunnelRelayCost: tunnel.cost });
      assert.is(result.workers, 1);
      assert.is(result.byStatus.ok, 40, JSON.stringify(result.byStatus));

      const h = result.clientHealth;
      const relay = h.tunnelRelay!;
      assert.ok(relay, 'client health reports the tunnel');
      // Every streamed token crossed the tunnel, each in an SSE event of many bytes.
      const tokens = plan.requests.reduce((s, r) => s + r.maxTokens, 0);
      assert.ok(relay.bytesFromEngine > 10 * tokens, `${relay.bytesFromEngine} bytes from the engine for ${tokens} tokens`);
      assert.ok(relay.bytesToEngine > 0, `${relay.bytesToEngine} bytes to the engine`);
      // The receiver's keep-alive connections were opened during the probe, each a channel.
      assert.ok(relay.channels >= 1 && relay.openS > 0, `${relay.channels} channels in ${relay.openS} s`);
      assert.is(tunnel.cost().channels, relay.channels, 'no channel was opened before the probe');
      // The main thread's delay is measured and is a term of the client error.
      assert.ok(relay.mainLoopDelayMaxS >= relay.mainLoopDelayP99S && relay.mainLoopDelayMaxS > 0, `main-thread delay max ${relay.mainLoopDelayMaxS} s`);
      assert.ok(h.clientErrorS >= relay.mainLoopDelayP99S, `client error ${h.clientErrorS} s ≥ the relay's ${relay.mainLoopDelayP99S} s`);
      assert.match(h.reason, new RegExp(`tokens relayed through the SSH tunnel: ${relay.bytesFromEngine} bytes, main-thread delay p99 [\\d.]+ ms`));
      console.log(`  tunnel during the probe: ${relay.bytesFromEngine} bytes from the engine, ${relay.channels} channels opened in ${(relay.openS * 1000).toFixed(1)} ms, main-thread delay p99 ${(relay.mainLoopDelayP99S * 1000).toFixed(2)} ms`);
    } finally {
      await tunnel.close();
      await conn.close();
      await sim.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('fluidcap run over access: ssh-tunnel with the client sending: every probe\'s summary states the tunnel\'s relay', async () => {
    const t0 = performance.now();
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-tunnel-run-'));
    try {
      const inventory = join(dir, 'inventory.yaml');
      writeFileSync(inventory, e2eInventory(env));
      const sim = `sim: { scheduler: vllm, timeScale: 1 }\n  image: ${env.image}\n  host: e2e\n  access: ssh-tunnel\n  port: ${await freePort()}\n  readyTimeout: 60s`;
      const text = readFileSync(FAST_RECIPE, 'utf8').replace('sim: { scheduler: vllm, timeScale: 1 }', sim).replace('maxProbes: 8', 'maxProbes: 2');
      assert.ok(text.includes('access: ssh-tunnel') && text.includes('maxProbes: 2'));
      const recipe = join(dir, 'tunnel-run.yaml');
      writeFileSync(recipe, `${text.replace('name: fast', 'name: tunnelrun')}load: { from: client }\n`);
      const out = join(dir, 'runs');
      const r = await fluidcap(['run', recipe, '--hosts', inventory, '--out', out], { timeoutMs: 240_000 });
      assert.is(r.code, 0, r.stderr.slice(-3000));
      const runDir = onlyRunDir(out);
      const probes = readdirSync(join(runDir, 'probes')).map((d) => join('probes', d));
      assert.ok(probes.length >= 1, readdirSync(runDir).join(' '));
      // keepCoresAwake 'auto' spins for an engine elsewhere, as one behind the tunnel is (a spinner
      // runs only under SCHED_IDLE, which needs chrt).
      const hasChrt = await execa('chrt', ['--version']).then(() => true, () => false);
      for (const p of probes) {
        const client = readJson<{ client: { tunnelRelay?: { bytesFromEngine: number; channels: number }; coresKeptAwake?: number } }>(join(runDir, p, 'summary.json')).client;
        assert.ok(client.tunnelRelay && client.tunnelRelay.bytesFromEngine > 0, `${p}: ${JSON.stringify(client.tunnelRelay)}`);
        assert.is((client.coresKeptAwake ?? 0) > 0, hasChrt, `${p}: ${client.coresKeptAwake} cores kept awake`);
      }
      console.log(`  fluidcap run through the tunnel: ${probes.length} probes, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test.run();
