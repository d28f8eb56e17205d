// End-to-end: the simulated engine's image launched through real sshd + real dockerd (and the
// local socket), ready, a short streamed probe, teardown, and no container left with the run's label.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, writeFileSync, chmodSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eHost, freePort } from './e2eEnv.ts';
import { targetSchema, type TargetInput } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { launchEngine } from '../../harness/provision/launcher.ts';
import { LOCAL_HOST } from '../../harness/provision/inventory.ts';
import { localDocker, dockerFor } from '../../harness/provision/dockerAgent.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';

const env = e2eEnv('launch over ssh');


function simSpec(runId: string, port: number, extra: Partial<TargetInput> = {}) {
  const target = targetSchema.parse({ engine: 'sim', image: env!.image, model: 'tiny', port, sim: { timeScale: 0.1 }, readyTimeout: '60s', ...extra });
  return { target, spec: renderContainerSpec(target, { runId })! };
}

/** A few streamed completions with plain HTTP: each must stream tokens and end with [DONE]. */
async function shortProbe(baseUrl: string, n = 4) {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const res = await fetch(`${baseUrl}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'tiny', prompt: `probe ${i} ${'word '.repeat(20)}`, max_tokens: 8, stream: true, ignore_eos: true }),
      });
      const body = await res.text();
      const chunks = body.split('\n\n').filter((b) => b.startsWith('data: {'));
      return { status: res.status, chunks: chunks.length, done: body.includes('data: [DONE]') };
    }),
  );
}

if (env) {
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-'));

  test('launch over SSH: ready, short probe, server.log, teardown leaves no container with the run label', async () => {
    const runId = `e2e-${process.pid}-ssh`;
    const { spec } = simSpec(runId, await freePort());
    const host = e2eHost(env);
    const lines: string[] = [];
    const engine = await launchEngine(spec, host, { runDir, log: (l) => lines.push(l) });
    try {
      assert.is(engine.facts.host, 'e2e');
      assert.equal(engine.facts.models, ['tiny']);
      assert.ok(engine.facts.timeToReadyS! > 0, 'time to ready recorded');
      assert.match(engine.facts.imageId ?? '', /^sha256:[0-9a-f]{64}$/);
      assert.match(engine.facts.sshHostKey ?? '', /^ssh-ed25519 SHA256:/);
      assert.equal(engine.facts.gpu, { available: false, reason: 'no nvidia-smi on the host (nvidia-smi not found)' });
      const probe = await shortProbe(engine.baseUrl);
      for (const r of probe) {
        assert.is(r.status, 200);
        assert.ok(r.chunks >= 2, `streamed ${r.chunks} chunks`);
        assert.ok(r.done);
      }
      const conn = await connectHost(host);
      try {
        const listed = await listRunContainers(dockerFor(conn), runId);
        assert.is(listed.length, 1, 'exactly one container for the run while it runs');
        assert.is(listed[0].Names[0], `/fluidcap-${runId}-sim`);
        assert.is(listed[0].Labels['fluidcap.run'], runId);
      } finally {
        await conn.close();
      }
    } finally {
      const report = await engine.stop();
      assert.equal(report.remaining, []);
      assert.equal(report.removed, [`fluidcap-${runId}-sim`]);
      assert.equal(report.problems, []);
    }
    assert.equal(await listRunContainers(localDocker(), runId), [], 'no container left with the run label');
    const log = readFileSync(engine.serverLogPath, 'utf8');
    assert.match(log, /fluidcap sim: listening on http:\/\/0\.0\.0\.0:/, 'container stdout demultiplexed into server.log');
    assert.ok((await engine.stop()) === (await engine.stop()), 'stop() is idempotent (same report)');
  });

  test('launch over the local Docker socket: ready, short probe, teardown leaves nothing', async () => {
    const runId = `e2e-${process.pid}-local`;
    const { spec } = simSpec(runId, await freePort());
    const engine = await launchEngine(spec, LOCAL_HOST, { runDir: join(runDir, 'local') });
    try {
      assert.is(engine.facts.host, 'local');
      assert.is(engine.facts.sshHostKey, null);
      const probe = await shortProbe(engine.baseUrl, 3);
      assert.ok(probe.every((r) => r.status === 200 && r.done));
    } finally {
      const report = await engine.stop();
      assert.equal(report.remaining, []);
    }
    assert.equal(await listRunContainers(localDocker(), runId), []);
  });

  test('ssh-tunnel access: load through a local forward, added latency measured and shown', async () => {
    const runId = `e2e-${process.pid}-tunnel`;
    const { spec } = simSpec(runId, await freePort());
    const lines: string[] = [];
    const engine = await launchEngine(spec, e2eHost(env), { runDir: join(runDir, 'tunnel'), access: 'ssh-tunnel', log: (l) => lines.push(l) });
    try {
      assert.is(engine.facts.access, 'ssh-tunnel');
      assert.match(engine.baseUrl, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.not.equal(engine.baseUrl, `http://127.0.0.1:${spec.port}`, 'load goes to the tunnel, not the engine port');
      const t = engine.facts.tunnel!;
      assert.ok(t.tunnelMsP50! > 0 && t.directMsP50! > 0);
      console.log(`  tunnel keep-alive GET /health p50 ${t.tunnelMsP50!.toFixed(2)} ms, direct ${t.directMsP50!.toFixed(2)} ms, added ${t.addedMsP50!.toFixed(2)} ms`);
      assert.ok(lines.some((l) => l.includes('ssh tunnel') && l.includes('added')), 'added latency shown in the log');
      // What the tunnel relays is counted, for probes' client health.
      const before = engine.tunnelRelayCost!();
      assert.ok(before.channels >= 1, `the latency GETs opened ${before.channels} channels`);
      const probe = await shortProbe(engine.baseUrl, 3);
      assert.ok(probe.every((r) => r.status === 200 && r.done));
      const after = engine.tunnelRelayCost!();
      assert.ok(after.bytesFromEngine > before.bytesFromEngine && after.bytesToEngine > before.bytesToEngine, `${JSON.stringify(before)} → ${JSON.stringify(after)}`);
    } finally {
      assert.equal((await engine.stop()).remaining, []);
    }
  });

  test('GPU facts and gpu.jsonl telemetry with a FAKE nvidia-smi (no GPU can exist here)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-fake-smi-'));
    const fake = join(dir, 'nvidia-smi');
    writeFileSync(fake, '#!/bin/sh\necho "0, NVIDIA H100 80GB HBM3, 81559, 4, 550.54.15, 0, 69.85"\necho "1, NVIDIA H100 80GB HBM3, 81559, 4, 550.54.15, [N/A], [N/A]"\n');
    chmodSync(fake, 0o755);
    const runId = `e2e-${process.pid}-smi`;
    const { spec } = simSpec(runId, await freePort());
    const engine = await launchEngine(spec, e2eHost(env, { nvidiaSmi: fake }), { runDir: join(runDir, 'smi') });
    try {
      const gpu = engine.facts.gpu!;
      assert.ok(gpu.available);
      if (gpu.available) {
        assert.is(gpu.gpus.length, 2);
        assert.equal(gpu.gpus[0], { index: 0, name: 'NVIDIA H100 80GB HBM3', memoryTotalMiB: 81559, memoryUsedMiB: 4, driverVersion: '550.54.15', utilizationPct: 0, powerW: 69.85 });
        assert.is(gpu.gpus[1].powerW, null);
      }
      const file = join(runDir, 'smi', 'gpu.jsonl');
      const stopTelemetry = engine.startGpuTelemetry(file, 0.2);
      await new Promise((r) => setTimeout(r, 900));
      await stopTelemetry();
      const samples = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      assert.ok(samples.length >= 2, `${samples.length} samples`);
      assert.is(samples[0].gpus[0].name, 'NVIDIA H100 80GB HBM3');
      assert.ok(samples[1].tS > samples[0].tS);
    } finally {
      assert.equal((await engine.stop()).remaining, []);
    }
  });

  test('Docker over the one SSH connection: 50 parallel API calls, none fail (figures printed)', async () => {
    const conn = await connectHost(e2eHost(env));
    try {
      const docker = dockerFor(conn);
      const seqMs: number[] = [];
      for (let i = 0; i < 10; i++) {
        const t0 = performance.now();
        await docker.ping();
        seqMs.push(performance.now() - t0);
      }
      const t0 = performance.now();
      const results = await Promise.allSettled(Array.from({ length: 50 }, () => docker.version()));
      const wallMs = performance.now() - t0;
      const failures = results.filter((r) => r.status === 'rejected');
      seqMs.sort((a, b) => a - b);
      console.log(`  docker ping over ssh channel p50 ${seqMs[5].toFixed(1)} ms (min ${seqMs[0].toFixed(1)}, max ${seqMs[9].toFixed(1)}); 50 parallel version calls in ${wallMs.toFixed(0)} ms, ${failures.length} failed`);
      assert.is(failures.length, 0, failures.map((f) => String((f as PromiseRejectedResult).reason)).join('; '));
    } finally {
      await conn.close();
    }
  });

  test.after(() => {
    if (existsSync(runDir)) assert.ok(true);
  });
}

test.run();
