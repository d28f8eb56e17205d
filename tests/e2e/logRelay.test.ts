// End-to-end on real sshd + dockerd, load through an SSH tunnel against a chatty engine (the
// simulated engine with --log-requests logs every request's whole prompt and token ids, as vLLM
// 0.8.5 does by default): the engine log is followed on an SSH connection of its own, not the one
// the tunnel's tokens ride; the probe's client health states what relaying it cost; and the
// relay's bounds hold (byte rate, server.log size) however much the engine writes, and when the
// engine stops its last lines are read past the bound for the exit's report.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eHost, freePort } from './e2eEnv.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { launchEngine, type Engine, type EngineExit, type LaunchOptions } from '../../harness/provision/launcher.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';

const env = e2eEnv('log relay');

const PROMPT_TOKENS = 1500;
const REQUESTS = 30;
const workload = workloadSchema.parse({ lengths: { prompt: { min: PROMPT_TOKENS, max: PROMPT_TOKENS }, output: { min: 4, max: 4 } }, prompts: { format: 'text' }, seed: 7 });

async function chattyEngine(runDir: string, tag: string, logBounds?: LaunchOptions['logBounds']): Promise<Engine> {
  const target = targetSchema.parse({
    // It crashes after one request more than the probe sends, so its last words can be looked for.
    engine: 'sim', image: env!.image, model: 'tiny', port: await freePort(), sim: { timeScale: 0.1, faults: { crashAfter: REQUESTS + 1 } }, readyTimeout: '60s',
    engineArgs: { extraArgs: ['--log-requests'] },
  });
  const spec = renderContainerSpec(target, { runId: `e2e-${process.pid}-${tag}` })!;
  return launchEngine(spec, e2eHost(env!), { runDir, access: 'ssh-tunnel', logBounds });
}

async function chattyProbe(engine: Engine, outDir: string) {
  const plan = planProbe({ workload, rateQps: 10, requests: REQUESTS, maxContextTokens: 2048, idPrefix: '01' });
  return runProbe(plan, { outDir, baseUrl: engine.baseUrl, model: 'tiny', workers: 1, requestTimeoutS: 30, stallTimeoutS: 10, metricsUrl: false, logRelayCost: engine.logRelayCost });
}

/** This process's established TCP connections to the sshd: local port → bytes received on it; null without `ss`. */
function connectionsToSshd(sshPort: number): Map<number, number> | null {
  let out: string;
  try {
    out = execFileSync('ss', ['-tnip', 'state', 'established', `( dport = :${sshPort} )`], { encoding: 'utf8' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const conns = new Map<number, number>();
  let port: number | null = null;
  for (const line of out.split('\n')) {
    const sock = /^\s*\d+\s+\d+\s+\S+:(\d+)\s+\S+:\d+\s+.*pid=(\d+),/.exec(line);
    if (sock) {
      port = Number(sock[2]) === process.pid ? Number(sock[1]) : null;
      continue;
    }
    const received = /bytes_received:(\d+)/.exec(line);
    if (port !== null && received) {
      conns.set(port, Number(received[1]));
      port = null;
    } else if (port !== null && line.trim() !== '' && !/^\s/.test(line)) port = null;
  }
  return conns;
}

if (env) {
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-logs-'));

  // One launch for both properties (a launch costs ~20 s on a loaded machine): the engine writes
  // ~18 KB a request at 10 QPS, more than the bound lets through, yet far more than the tunnel's
  // SSE, so the connections' byte counts say which one carried the log.
  test('the engine log rides its own SSH connection, not the tunnel\'s; client health states its cost; its bounds hold', async () => {
    const bounds = { maxBytes: 100_000, maxBytesPerS: 40_000, maxBurstBytes: 65_536 };
    const engine = await chattyEngine(runDir, 'logs', bounds);
    try {
      const via = /^own SSH connection (\d+) → /.exec(engine.facts.logFollowedVia ?? '');
      assert.ok(via, `followed via ${engine.facts.logFollowedVia}`);
      const before = engine.logRelayCost!();
      const t0 = performance.now();
      const result = await chattyProbe(engine, join(runDir, 'probe'));
      const probeS = (performance.now() - t0) / 1000;
      const after = engine.logRelayCost!();
      assert.is(result.byStatus.ok, REQUESTS, JSON.stringify(result.byStatus));

      // Client health states the relay's share of the probe.
      const relay = result.clientHealth.logRelay!;
      assert.ok(relay, 'client health reports the log relay');
      assert.ok(relay.lines >= 1 && relay.bytes >= bounds.maxBurstBytes, `${relay.bytes} bytes, ${relay.lines} lines relayed during the probe`);
      assert.ok(relay.busyS > 0 && relay.busyShare > 0, `main-thread time ${relay.busyS} s`);
      assert.ok(relay.pausedS > 0, 'the rate bound held reading back');
      assert.match(result.clientHealth.reason, /engine log relayed \d+ bytes, \d+ lines, [\d.]+ ms of main-thread time \([\d.]+%\), held back [\d.]+ s by its rate bound/);
      console.log(`  log relay during the probe: ${relay.bytes} bytes, ${relay.lines} lines, ${(relay.busyS * 1000).toFixed(2)} ms main thread (${(relay.busyShare * 100).toFixed(3)}% of ${result.durationS.toFixed(2)} s), held back ${relay.pausedS.toFixed(2)} s`);

      // The byte-rate bound: the bucket lets through its burst, its rate over the time, and the one read that overdrew it (≤ 64 KiB).
      const relayed = after.bytes - before.bytes;
      const allowed = bounds.maxBurstBytes + bounds.maxBytesPerS * probeS + 65_536;
      assert.ok(relayed <= allowed, `${relayed} bytes relayed in ${probeS.toFixed(2)} s, more than the bound's ${Math.round(allowed)}`);

      // The connections: the log's received at least every byte relayed; the tunnel's far fewer.
      const total = after.bytes;
      const logPort = Number(via![1]);
      const conns = connectionsToSshd(env.sshPort);
      if (conns === null) console.log('  connections not checked: no `ss` (iproute2) here');
      else {
        assert.ok(conns.size >= 2, `two connections to sshd (main + log), saw ${JSON.stringify([...conns])}`);
        assert.ok(conns.has(logPort), `the log connection ${logPort} is one of them: ${JSON.stringify([...conns])}`);
        assert.ok(conns.get(logPort)! >= total, `the log connection received ${conns.get(logPort)} bytes ≥ the ${total} relayed`);
        for (const [port, received] of conns) {
          if (port !== logPort) assert.ok(received < total / 2, `connection ${port} (the tunnel's) received ${received} bytes: not the log's ${total}`);
        }
        console.log(`  bytes received from sshd: log connection ${conns.get(logPort)}, others ${JSON.stringify([...conns].filter(([p]) => p !== logPort).map(([, b]) => b))}`);
      }

      // The relay lags the engine by hundreds of KB; once the engine stops, its last words are
      // still read in time for the exit's report.
      const exited = new Promise<EngineExit>((resolve) => engine.onExit(resolve));
      await fetch(`${engine.baseUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'tiny', prompt: 'last', max_tokens: 1 }) })
        .then((r) => r.text())
        .catch(() => '');
      const exit = await exited;
      assert.is(exit.kind, 'exited');
      if (exit.kind === 'exited') assert.ok(exit.lastLogLines.some((l) => l.includes('simulated crash')), `the crash line among the last lines: ${exit.lastLogLines.slice(-3).join(' | ').slice(-300)}`);
    } finally {
      assert.equal((await engine.stop()).remaining, []);
    }
    // server.log's cap: its first bytes, a note, the last lines (bounded as much) at the end.
    const log = readFileSync(engine.serverLogPath, 'utf8');
    assert.match(log, /# fluidcap: this log reached its cap of 100000 bytes/);
    assert.match(log, /# fluidcap: \d+ bytes of the engine's output were not kept; its last \d+ bytes:\n/);
    assert.match(log.slice(-bounds.maxBytes), /Received request/, 'the last lines are kept');
    const size = statSync(engine.serverLogPath).size;
    assert.ok(size <= 2 * bounds.maxBytes + 2048, `server.log is ${size} bytes: its cap, the last lines and two notes`);
  });
}

test.run();
