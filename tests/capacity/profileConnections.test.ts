// The prefill profile writes each request on a connection confirmed open just before, so its TTFT
// holds no connection set-up: through a proxy that holds every new connection 300 ms before
// relaying (what opening an SSH channel through a tunnel does, magnified), against the simulated
// engine whose prefills take a few ms, the whole profile uses one connection, the 300 ms shows up
// once in the set-up recorded apart, and in no TTFT; a request sent the old way (a fresh
// connection per request) carries it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import net from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSimServer } from '../../harness/sim/server.ts';
import { planProfile } from '../../harness/capacity/profilePlan.ts';
import { runProfile } from '../../harness/capacity/profiler.ts';
import { sendOne } from '../../harness/load/sendOne.ts';
import { StreamClient } from '../../harness/load/streamClient.ts';
import type { PrefillLine } from '../../harness/runDir/schema.ts';

const HOLD_MS = 300;

/** A TCP proxy to `port` that relays nothing on a new connection for HOLD_MS; counts connections. */
async function holdingProxy(port: number) {
  let accepted = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    accepted++;
    sockets.add(client);
    client.pause();
    setTimeout(() => {
      const up = net.connect(port, '127.0.0.1');
      sockets.add(up);
      client.pipe(up).pipe(client);
      client.resume();
      up.on('error', () => client.destroy());
      client.on('error', () => up.destroy());
      client.on('close', () => up.destroy());
    }, HOLD_MS);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    accepted: () => accepted,
    close: () => new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    }),
  };
}

test(`profile through a proxy holding new connections ${HOLD_MS} ms: one connection, the hold in its set-up, none in any TTFT`, async () => {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05 });
  await sim.ready;
  const proxy = await holdingProxy(Number(new URL(sim.url).port));
  const runDir = mkdtempSync(join(tmpdir(), 'fluidcap-profile-conn-'));
  try {
    const plan = planProfile({ promptLengths: [64, 128, 256], repeats: 2, warmup: 1 }, { maxContextTokens: 2048 });
    const target = { baseUrl: proxy.url, model: 'tiny', api: 'completions' as const, format: 'token-ids' as const, seed: 1, requestTimeoutS: 30 };
    await runProfile(plan, target, { runDir, ttftSlackS: 0.3, fitBounds: { minR2: 0, maxRepeatCv: 100, noiseFloorS: 1 }, log: () => {} }).catch((err: Error) =>
      assert.match(err.message, /prefill profile refused/),
    );
    const lines = readFileSync(join(runDir, 'profile', 'prefill.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as PrefillLine);
    assert.is(lines.length, plan.requests.length);
    assert.is(proxy.accepted(), 1, 'every profile request went over the one kept-alive connection');
    assert.is(lines[0].connectionReused, false);
    assert.ok(lines[0].confirmS! >= HOLD_MS / 1000, `the hold is recorded apart, in the first connection's confirmation: ${lines[0].confirmS}`);
    for (const l of lines.slice(1)) {
      assert.is(l.connectionReused, true, `request ${l.seq} reused the open connection`);
      assert.is(l.connectS, null);
    }
    for (const l of lines) assert.ok(l.status === 'ok' && l.prefillS! < HOLD_MS / 1000 / 2, `request ${l.seq}: TTFT ${l.prefillS} s holds no connection set-up`);
    const fit = JSON.parse(readFileSync(join(runDir, 'profile', 'fit.json'), 'utf8')) as { a: number };
    assert.ok(fit.a < HOLD_MS / 1000 / 2, `D_p's intercept ${fit.a} s holds no connection set-up`);

    // The old way, a fresh connection per request: its TTFT carries the hold.
    const old = await sendOne({ promptTokens: 64, maxTokens: 1, index: 99 }, { ...target, stallTimeoutS: 30 });
    assert.ok(old.ttftS! >= HOLD_MS / 1000, `a request on a fresh connection waits out the hold: ${old.ttftS}`);
  } finally {
    await proxy.close();
    await sim.close();
    rmSync(runDir, { recursive: true, force: true });
  }
});

test('warm(): a pooled connection idle longer than maxIdleS is replaced, a recent one is reused', async () => {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.05 });
  await sim.ready;
  const proxy = await holdingProxy(Number(new URL(sim.url).port));
  const client = new StreamClient({ baseUrl: proxy.url, requestTimeoutS: 10, stallTimeoutS: 10, startNs: process.hrtime.bigint() });
  try {
    const first = await client.warm('/v1/models', 1);
    assert.equal([first.reused, first.error], [false, null]);
    assert.ok(first.connectS !== null && first.confirmS! >= HOLD_MS / 1000);
    const again = await client.warm('/v1/models', 1);
    assert.equal([again.reused, again.connectS, again.error], [true, null, null]);
    await sleep(150);
    const stale = await client.warm('/v1/models', 0.1);
    assert.equal([stale.reused, stale.error], [false, null], 'idle 150 ms > maxIdleS 0.1 s: a new connection');
    assert.is(proxy.accepted(), 2);
  } finally {
    client.close();
    await proxy.close();
    await sim.close();
  }
});

test('warm() against a port nobody listens on says so and never rejects', async () => {
  const probe = net.createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const port = (probe.address() as net.AddressInfo).port;
  await new Promise<void>((r) => probe.close(() => r()));
  const client = new StreamClient({ baseUrl: `http://127.0.0.1:${port}`, requestTimeoutS: 5, stallTimeoutS: 5, startNs: process.hrtime.bigint() });
  try {
    const w = await client.warm('/v1/models', 4);
    assert.is(w.reused, false);
    assert.match(w.error ?? '', /cannot connect/);
  } finally {
    client.close();
  }
});

test.run();
