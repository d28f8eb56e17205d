// runProbe end to end over real sockets: the simulated engine (in process, port 0) with receiving
// worker threads, its fault flags (429/500, stalls, malformed SSE, a crash mid-probe), early stop,
// Ctrl-C, and a concurrency cap whose waits are recorded (against the local emitter).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer, type SimServerOptions } from '../../harness/sim/server.ts';
import { planProbe } from '../../harness/load/plan.ts';
import { runProbe, type ProbeOptions } from '../../harness/load/runProbe.ts';
import { workloadSchema } from '../../harness/load/workloadSpec.ts';
import { stationaryRule, type KneeWarmupRecord } from '../../harness/load/kneeWarmup.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';
import { startEmitter } from './support/emitter.ts';
import { realtimeAllowed } from './support/idleThread.ts';

const workload = workloadSchema.parse({ lengths: { prompt: { min: 16, max: 64 }, output: { min: 4, max: 12 } }, arrivals: { process: 'poisson' }, seed: 5 });
const readLines = (file: string) => readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as TimelineRecord);

async function withSim<T>(opts: SimServerOptions, fn: (url: string, dir: string) => Promise<T>): Promise<T> {
  const sim = await startSimServer({ model: 'tiny', port: 0, timeScale: 0.2, ...opts });
  await sim.ready;
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-probe-'));
  try {
    return await fn(sim.url, dir);
  } finally {
    await sim.close();
    rmSync(dir, { recursive: true });
  }
}

const base = (url: string, dir: string): ProbeOptions => ({ outDir: dir, baseUrl: url, model: 'tiny', workers: 1, requestTimeoutS: 10, stallTimeoutS: 0.5, scrapeIntervalS: 0.2 });

test('sim + 1 worker: every request ok, timelines complete, usage matches the plan, client health and /metrics recorded', async () => {
  await withSim({}, async (url, dir) => {
    const plan = planProbe({ workload, rateQps: 40, requests: 30, maxContextTokens: 2048, idPrefix: '03' });
    const result = await runProbe(plan, { ...base(url, dir), warmupFraction: 0.1 });
    assert.is(result.byStatus.ok, 30, JSON.stringify(result.byStatus));
    assert.is(result.sent, 30);
    assert.is(result.notSent, 0);
    assert.is(result.workers, 1);
    const lines = readLines(join(dir, 'timelines.jsonl'));
    assert.is(lines.length, 30);
    assert.equal(new Set(lines.map((l) => l.id)).size, 30);
    assert.ok(lines.every((l) => l.id.startsWith('03-')));
    assert.is(lines.filter((l) => l.warmup === true).length, 3);
    for (const l of lines) {
      const p = plan.requests.find((r) => r.id === l.id)!;
      assert.is(l.scheduledS, Math.round(p.scheduledS * 1e6) / 1e6);
      assert.ok(l.sentS >= l.scheduledS - 1e-6, `${l.id} sent before its time`);
      assert.is(l.outputTokens, p.maxTokens);
      assert.is(l.usagePromptTokens, p.promptTokens);
      assert.ok(l.chunks[0][0] > l.sentS);
    }
    assert.is(result.tokenDrift.verdict, 'ok', result.tokenDrift.note);
    assert.ok(result.clientHealth.recvMinusEmit !== null && result.clientHealth.recvMinusEmit.samples === lines.reduce((s, l) => s + l.chunks.length, 0));
    assert.ok(result.clientHealth.dispatchLagP99S !== null && result.clientHealth.dispatchLagP99S >= 0);
    assert.ok(['valid', 'invalid'].includes(result.clientHealth.verdict));
    assert.ok(result.serverMetrics.available, String(result.serverMetrics.note));
    const scrapes = readFileSync(join(dir, 'server-metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(scrapes.length >= 1 && typeof scrapes[0].running === 'number' && typeof scrapes[0].kvUsage === 'number');
  });
});

test('sim faults (429, 500, stalls, malformed SSE): every request ends with the right status, on time', async () => {
  await withSim({ faultHttp429Fraction: 0.15, faultHttp500Fraction: 0.15, faultStallFraction: 0.2, faultStallFor: 30, faultMalformedSseFraction: 0.15, faultSeed: 3 }, async (url, dir) => {
    const plan = planProbe({ workload, rateQps: 50, requests: 60, maxContextTokens: 2048 });
    const t0 = performance.now();
    const result = await runProbe(plan, base(url, dir));
    const tookS = (performance.now() - t0) / 1000;
    const lines = readLines(join(dir, 'timelines.jsonl'));
    assert.is(lines.length, 60);
    const by = result.byStatus;
    assert.is(by.ok + by.error + by.timeout + by.cancelled, 60);
    assert.ok(lines.some((l) => l.httpStatus === 429 && l.status === 'error'));
    assert.ok(lines.some((l) => l.httpStatus === 500 && l.status === 'error'));
    assert.ok(lines.some((l) => l.status === 'timeout' && /stalled/.test(String(l.error))));
    assert.ok(lines.some((l) => l.status === 'error' && /malformed|not a JSON/.test(String(l.error))));
    assert.ok(by.ok > 0);
    assert.ok(tookS < 8, `probe took ${tookS}s despite 30 s stalls`);
  });
});

test('engine dies mid-probe: the rest end as errors, timelines complete, the probe finishes', async () => {
  await withSim({ faultCrashAfter: 8 }, async (url, dir) => {
    const plan = planProbe({ workload, rateQps: 40, requests: 30, maxContextTokens: 2048 });
    const result = await runProbe(plan, base(url, dir));
    const lines = readLines(join(dir, 'timelines.jsonl'));
    assert.is(lines.length, 30);
    assert.ok(result.byStatus.error >= 15, JSON.stringify(result.byStatus));
    assert.ok(lines.some((l) => /ECONNREFUSED|ECONNRESET|closed|socket hang up/.test(String(l.error))));
  });
});

test('early stop: the hook reason ends the probe, in flight cancelled, unsent counted', async () => {
  await withSim({}, async (url, dir) => {
    const plan = planProbe({ workload, rateQps: 20, requests: 200, maxContextTokens: 2048 });
    let calls = 0;
    const result = await runProbe(plan, {
      ...base(url, dir),
      shouldStop: (p) => {
        calls++;
        assert.ok(p.sent >= p.ended && p.scheduled >= p.sent - 1 && p.planned === 200);
        return p.ended >= 5 ? 'ttft p90 already above 2s' : null;
      },
    });
    assert.is(result.earlyStop, 'ttft p90 already above 2s');
    assert.ok(calls >= 5);
    assert.ok(result.notSent > 150, `notSent ${result.notSent}`);
    const lines = readLines(join(dir, 'timelines.jsonl'));
    assert.is(lines.length, result.sent);
    assert.is(result.durationS < 3, true, `took ${result.durationS}`);
  });
});

test('abort signal (Ctrl-C): stops sending, in flight become cancelled with what was received', async () => {
  const em = await startEmitter({ tokenIntervalMs: 40 });
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-probe-'));
  try {
    const w = workloadSchema.parse({ lengths: { prompt: 8, output: 50 }, arrivals: { process: 'constant' } });
    const plan = planProbe({ workload: w, rateQps: 20, requests: 100, maxContextTokens: 2048 });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 400).unref();
    const result = await runProbe(plan, { ...base(em.url, dir), model: 'm', workers: 0, signal: ac.signal, metricsUrl: false });
    assert.is(result.cancelled, true);
    assert.ok(result.byStatus.cancelled >= 3, JSON.stringify(result.byStatus));
    const lines = readLines(join(dir, 'timelines.jsonl'));
    assert.ok(lines.filter((l) => l.status === 'cancelled').every((l) => l.chunks.length < 50));
    assert.ok(lines.some((l) => l.status === 'cancelled' && l.chunks.length > 0));
    assert.ok(result.notSent > 80);
  } finally {
    await em.close();
    rmSync(dir, { recursive: true });
  }
});

test('concurrency cap: at most N in flight, waits recorded as slotWaitS and kept in sentS − scheduledS', async () => {
  const em = await startEmitter({ tokenIntervalMs: 10 });
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-probe-'));
  try {
    const w = workloadSchema.parse({ lengths: { prompt: 8, output: 10 }, arrivals: { process: 'constant' } });
    const plan = planProbe({ workload: w, rateQps: 100, requests: 12, maxContextTokens: 2048 });
    const result = await runProbe(plan, { ...base(em.url, dir), model: 'm', workers: 2, concurrency: 2, metricsUrl: false });
    assert.is(result.byStatus.ok, 12);
    const lines = readLines(join(dir, 'timelines.jsonl'));
    const waited = lines.filter((l) => (l.slotWaitS ?? 0) > 0);
    assert.ok(waited.length >= 6, `${waited.length} waited`);
    for (const l of waited) assert.ok(l.sentS - l.scheduledS >= l.slotWaitS! - 1e-6);
    // Interval overlap: never more than 2 requests between send and last chunk.
    const edges = lines.flatMap((l) => [[l.sentS, 1], [l.chunks[l.chunks.length - 1][0], -1]] as [number, number][]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let open = 0;
    let most = 0;
    for (const [, d] of edges) most = Math.max(most, (open += d));
    assert.ok(most <= 2, `${most} in flight`);
    assert.is(existsSync(join(dir, 'server-metrics.jsonl')), false);
  } finally {
    await em.close();
    rmSync(dir, { recursive: true });
  }
});

// Where the kernel lets this process raise a thread to SCHED_FIFO (tried first on a throwaway thread),
// the receiver runs real-time. The engine is on this machine, so by default no spinner runs; asked
// for, one does where chrt can set SCHED_IDLE. Turned off, neither happens.
test('client health says how the receivers were scheduled: real-time where allowed, a spinner only for a remote engine or when asked', async () => {
  const rt = await realtimeAllowed();
  const hasChrt = await import('execa').then(({ execa }) => execa('chrt', ['--version']).then(() => true, () => false));
  await withSim({}, async (url, dir) => {
    const plan = planProbe({ workload, rateQps: 40, requests: 8, maxContextTokens: 2048 });
    const byDefault = await runProbe(plan, base(url, dir));
    assert.is(byDefault.byStatus.ok, 8);
    assert.is(byDefault.clientHealth.realtimeReceivers, rt ? 1 : 0);
    assert.is(byDefault.clientHealth.coresKeptAwake, 0);
    const awake = await runProbe(plan, { ...base(url, dir), keepCoresAwake: true });
    // A spinner runs only under SCHED_IDLE, which needs chrt.
    assert.is(awake.clientHealth.coresKeptAwake, hasChrt ? 1 : 0);
    const neither = await runProbe(plan, { ...base(url, dir), keepCoresAwake: false, realtimeReceivers: false });
    assert.is(neither.clientHealth.realtimeReceivers, 0);
    assert.is(neither.clientHealth.coresKeptAwake, 0);
    assert.is(neither.byStatus.ok, 8);
  });
});

for (const workers of [0, 1]) {
  test(`knee warm-up (${workers} receiving workers): ends when the backlog is stationary, the measured count follows it, the unsent tail is dropped`, async () => {
    await withSim({}, async (url, dir) => {
      // Room for 10 s of warm-up at 40 QPS, then 40 measured requests.
      const plan = planProbe({ workload, rateQps: 40, requests: 440, maxContextTokens: 2048 });
      const knee = { maxS: 10, maxRequests: 400, measured: 40, warmupFraction: 0.1, rule: stationaryRule() };
      let told: KneeWarmupRecord | null = null;
      let stopAsked = 0;
      const result = await runProbe(plan, {
        ...base(url, dir),
        workers,
        kneeWarmup: knee,
        onKneeWarmupEnd: (k) => (told = k),
        // The early-stop hook is not asked during the warm-up.
        shouldStop: () => {
          assert.ok(told !== null, 'asked before the warm-up ended');
          stopAsked++;
          return null;
        },
      });
      const k = result.kneeWarmup!;
      assert.equal(told, k);
      // The tiny engine answers in milliseconds: its backlog is flat long before the bound.
      assert.is(k.reason, 'stationary');
      assert.ok(k.endS < 10 && k.requests < 400, JSON.stringify(k));
      assert.is(k.planned, k.requests + 40);
      assert.is(result.planned, k.planned);
      assert.is(result.warmupRequests, k.requests + 4);
      assert.ok(stopAsked > 0);
      const lines = readLines(join(dir, 'timelines.jsonl'));
      const indexOf = new Map(plan.requests.map((r) => [r.id, r.index]));
      // Nothing past the cut was sent; everything before it was.
      assert.is(result.sent, k.planned);
      assert.is(lines.length, k.planned);
      assert.ok(lines.every((l) => indexOf.get(l.id)! < k.planned));
      assert.is(lines.filter((l) => l.warmup === true).length, k.warmupRequests);
      // The measured requests are the ones due after the warm-up ended (open loop: planned times kept).
      for (const l of lines) if (indexOf.get(l.id)! >= k.requests) assert.ok(l.scheduledS > k.endS - 1e-6, `${l.id} due at ${l.scheduledS}, before the end ${k.endS}`);
    });
  });
}

test.run();
