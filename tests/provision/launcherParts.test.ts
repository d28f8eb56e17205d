// The launcher's parts without Docker: exit watch, teardown order and reconnection, GPU idle wait,
// GPU telemetry, start-up failure messages, tunnel facts, engine readiness paths. Time is a fake
// clock that advances only when something sleeps; resources are recorders of what was released.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { watchExit, type ExitSources } from '../../harness/provision/exitWatch.ts';
import { tearDown, type Acquired, type TeardownHost, type TeardownSteps } from '../../harness/provision/engineTeardown.ts';
import { waitGpusIdle } from '../../harness/provision/gpuIdle.ts';
import { sampleGpuTelemetry } from '../../harness/provision/gpuTelemetry.ts';
import { startupFailure } from '../../harness/provision/startupFailure.ts';
import { describeTunnel, openMeasuredTunnel, tunnelFacts } from '../../harness/provision/tunnelAccess.ts';
import { engineHttp } from '../../harness/provision/engineHttp.ts';
import { ensureImage, registryDigest } from '../../harness/provision/engineImage.ts';
import { realClock } from '../../harness/provision/launchDeps.ts';
import type Docker from 'dockerode';
import { secretValues } from '../../harness/provision/secretValues.ts';
import { EngineLaunchError, type EngineExit } from '../../harness/provision/launcher.ts';
import type { GpuFacts, GpuSample } from '../../harness/provision/gpuFacts.ts';

function fakeClock() {
  let t = 0;
  const slept: number[] = [];
  return {
    slept,
    nowS: () => t,
    isoNow: () => `T+${t}`,
    sleep: async (s: number) => {
      slept.push(s);
      t += s;
    },
  };
}

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

const flush = () => new Promise((r) => setImmediate(r));

function exitSources() {
  const waited = deferred<{ StatusCode?: number }>();
  const lost = deferred<Error>();
  const ended = deferred<void>();
  const src: ExitSources = {
    waited: waited.promise,
    inspect: async () => ({ State: { ExitCode: 137, OOMKilled: true } }),
    logs: { ended: ended.promise, tail: () => ['loading weights', 'CUDA out of memory'] },
    lost: lost.promise,
    containerName: 'fluidcap-r1-vllm',
    hostName: 'gpu1',
  };
  return { src, waited, lost, ended };
}

// ---- exit watch ----

test('exit watch: a container exit is reported once, with exit code, OOM flag and last log lines', async () => {
  const { src, waited, lost, ended } = exitSources();
  const watch = watchExit(src, fakeClock());
  const seen: EngineExit[] = [];
  watch.onExit((e) => seen.push(e));
  assert.is(watch.observed(), null);
  ended.resolve();
  waited.resolve({ StatusCode: 137 });
  await flush();
  assert.equal(seen, [{
    kind: 'exited', exitCode: 137, oomKilled: true, lastLogLines: ['loading weights', 'CUDA out of memory'],
    message: 'engine container fluidcap-r1-vllm on gpu1 exited with code 137 (OOM killed)',
  }]);
  lost.resolve(new Error('socket closed'));
  await flush();
  assert.is(seen.length, 1, 'a later connection loss is not a second exit');
  assert.is(watch.observed()!.kind, 'exited', 'the container account stays the observed end');
});

test('exit watch: a listener that subscribes after the exit still hears it; unsubscribed ones do not', async () => {
  const { src, waited } = exitSources();
  const watch = watchExit(src, fakeClock());
  const early: string[] = [];
  const off = watch.onExit((e) => early.push(e.message));
  off();
  waited.resolve({ StatusCode: 1 });
  await flush();
  const late: string[] = [];
  watch.onExit((e) => late.push(e.message));
  assert.equal(late, [], 'delivered asynchronously, never inside onExit');
  await flush();
  assert.equal(late, ['engine container fluidcap-r1-vllm on gpu1 exited with code 1 (OOM killed)']);
  assert.equal(early, []);
});

test('exit watch: log lines wait at most one (fake) second for the stream to end', async () => {
  const { src, waited } = exitSources();
  const clock = fakeClock();
  const watch = watchExit(src, clock);
  waited.resolve({});
  await flush();
  assert.equal(clock.slept, [1]);
  const e = watch.observed();
  assert.ok(e && e.kind === 'exited');
  if (e && e.kind === 'exited') assert.is(e.exitCode, 137, 'exit code from inspect when wait gives none');
});

test('exit watch: connection loss first; ends during teardown are observed but not reported', async () => {
  const a = exitSources();
  const watch = watchExit(a.src, fakeClock());
  const seen: EngineExit[] = [];
  watch.onExit((e) => seen.push(e));
  a.lost.resolve(new Error('read ECONNRESET'));
  await flush();
  assert.equal(seen, [{ kind: 'connection-lost', message: 'SSH connection to gpu1 lost: read ECONNRESET' }]);

  const b = exitSources();
  const quiet = watchExit(b.src, fakeClock());
  const none: EngineExit[] = [];
  quiet.onExit((e) => none.push(e));
  quiet.expectExit();
  b.waited.resolve({ StatusCode: 0 });
  await flush();
  assert.equal(none, []);
  assert.is(quiet.observed()!.message, 'engine container fluidcap-r1-vllm on gpu1 exited with code 0 (OOM killed)');
});

test('exit watch: Docker wait failing means the connection went, named as such', async () => {
  const { src, waited } = exitSources();
  const watch = watchExit(src, fakeClock());
  waited.reject(new Error('channel closed'));
  await flush();
  assert.equal(watch.observed(), { kind: 'connection-lost', message: 'lost the connection to gpu1 while watching fluidcap-r1-vllm: channel closed' });
});

// ---- teardown ----

interface FakeHost extends TeardownHost {
  id: string;
}

function teardownFixture(opts: { open?: boolean; reconnectFailures?: number; remaining?: string[]; removeThrows?: boolean; gpuIdle?: boolean } = {}) {
  const order: string[] = [];
  const clock = fakeClock();
  const mkHost = (id: string, open: boolean): FakeHost => ({
    id,
    connection: { isOpen: () => open },
    close: async () => void order.push(`close ${id}`),
  });
  const handle = mkHost('original', opts.open ?? true);
  let failures = opts.reconnectFailures ?? 0;
  const acquired: Acquired<FakeHost> = {
    handle,
    telemetryStops: [async () => void order.push('telemetry a'), async () => void order.push('telemetry b')],
    tunnel: { close: async () => void order.push('tunnel') },
    logs: { close: async () => void order.push('logs') },
  };
  const logged: string[] = [];
  const steps: TeardownSteps<FakeHost> = {
    hostName: 'gpu1',
    containerName: 'fluidcap-r1-vllm',
    runId: 'r1',
    reconnectTimeoutS: 10,
    reconnect: async () => {
      order.push('reconnect');
      if (failures-- > 0) throw new Error('connect ECONNREFUSED');
      return mkHost('fresh', true);
    },
    removeRunContainers: async (h) => {
      order.push(`remove on ${h.id}`);
      if (opts.removeThrows) throw new Error('daemon busy');
      return { removed: ['fluidcap-r1-vllm'], remaining: opts.remaining ?? [] };
    },
    waitGpusIdle: opts.gpuIdle === undefined ? null : async (h) => {
      order.push(`gpu idle on ${h.id}`);
      return opts.gpuIdle ? { ok: true, message: 'GPUs 0 idle after stopping' } : { ok: false, message: 'GPU 0 uses 70000 MiB' };
    },
    log: (l) => logged.push(l),
  };
  return { order, clock, acquired, steps, logged };
}

test('teardown: releases in reverse order of acquisition and reports a clean removal', async () => {
  const f = teardownFixture({ gpuIdle: true });
  const report = await tearDown(f.acquired, f.steps, f.clock);
  assert.equal(f.order, ['telemetry a', 'telemetry b', 'tunnel', 'remove on original', 'logs', 'gpu idle on original', 'close original']);
  assert.equal(report, { removed: ['fluidcap-r1-vllm'], remaining: [], gpuIdle: { ok: true, message: 'GPUs 0 idle after stopping' }, problems: [] });
  assert.equal(f.logged, []);
});

test('teardown: a dropped connection is re-opened (retrying each fake second) before removing, then both are closed', async () => {
  const f = teardownFixture({ open: false, reconnectFailures: 2 });
  const report = await tearDown(f.acquired, f.steps, f.clock);
  assert.equal(f.order, ['telemetry a', 'telemetry b', 'tunnel', 'reconnect', 'reconnect', 'reconnect', 'remove on fresh', 'logs', 'close fresh', 'close original']);
  assert.equal(f.clock.slept, [1, 1]);
  assert.equal(report.problems, []);
  assert.equal(f.logged, ['reconnected to gpu1 for teardown']);
});

test('teardown: an unreachable host is a problem naming the container and the clean command, not a throw', async () => {
  const f = teardownFixture({ open: false, reconnectFailures: Infinity, gpuIdle: true });
  const report = await tearDown(f.acquired, f.steps, f.clock);
  assert.is(f.clock.nowS() >= 10, true, 'kept trying until the reconnect deadline');
  assert.not.ok(f.order.some((s) => s.startsWith('remove') || s.startsWith('gpu idle')), 'nothing to remove or check without a connection');
  assert.equal(report.remaining, ['fluidcap-r1-vllm']);
  assert.equal(report.problems, ['cannot reach gpu1 to remove fluidcap-r1-vllm (connect ECONNREFUSED); it may still hold GPUs: run `fluidcap clean <inventory>` once the host is reachable']);
  assert.equal(f.logged, report.problems);
  assert.is(f.order.at(-1), 'close original');
});

test('teardown: leftovers, a failing removal and busy GPUs are each reported', async () => {
  const left = await tearDown(teardownFixture({ remaining: ['fluidcap-r1-vllm'] }).acquired, teardownFixture({ remaining: ['fluidcap-r1-vllm'] }).steps, fakeClock());
  assert.equal(left.problems, ['containers still listed with r1 on gpu1: fluidcap-r1-vllm']);
  const f = teardownFixture({ removeThrows: true, gpuIdle: false });
  const failed = await tearDown(f.acquired, f.steps, f.clock);
  assert.equal(failed.remaining, ['fluidcap-r1-vllm']);
  assert.equal(failed.problems, ['removing fluidcap-r1-vllm on gpu1 failed: daemon busy', 'GPU 0 uses 70000 MiB']);
  assert.ok(f.order.includes('logs') && f.order.at(-1) === 'close original', 'the rest is still released');
});

// ---- GPU idle wait and telemetry ----

const gpu = (index: number, memoryUsedMiB: number): GpuSample => ({ index, name: 'H100', memoryTotalMiB: 81559, memoryUsedMiB, driverVersion: '550', utilizationPct: 0, powerW: 70 });

test('GPU idle: polls every 2 fake seconds until the target GPUs are idle; other GPUs do not count', async () => {
  const clock = fakeClock();
  let reads = 0;
  const read = async (): Promise<GpuFacts> => ({ available: true, gpus: [gpu(0, ++reads < 3 ? 40000 : 3), gpu(1, 70000)] });
  const r = await waitGpusIdle(read, { hostName: 'gpu1', ids: [0], maxUsedMiB: 1024, timeoutS: 60, when: 'before launch' }, clock);
  assert.equal(r, { ok: true, message: 'GPUs 0 idle before launch' });
  assert.equal(clock.slept, [2, 2]);
});

test('GPU idle: still busy after the timeout names each GPU and its memory; no nvidia-smi counts as idle', async () => {
  const clock = fakeClock();
  const busy = await waitGpusIdle(async () => ({ available: true, gpus: [gpu(0, 5000), gpu(1, 9000)] }), { hostName: 'gpu1', ids: [0, 1], maxUsedMiB: 1024, timeoutS: 5, when: 'after stopping' }, clock);
  assert.equal(busy, { ok: false, message: 'GPUs on gpu1 not idle after stopping after 5 s: GPU 0 uses 5000 MiB, GPU 1 uses 9000 MiB (over 1024 MiB; another process may hold them)' });
  assert.ok(clock.nowS() > 5 && clock.nowS() <= 8);
  const none = await waitGpusIdle(async () => ({ available: false, reason: 'no nvidia-smi on the host' }), { hostName: 'h', ids: [0], maxUsedMiB: 1, timeoutS: 1, when: 'x' }, fakeClock());
  assert.equal(none, { ok: true, message: 'no nvidia-smi on the host' });
});

test('GPU telemetry: one line per interval with the target GPUs only; a failed read skips a sample; stop waits for the loop', async () => {
  const clock = fakeClock();
  const lines: string[] = [];
  let reads = 0;
  let stop: () => Promise<void> = async () => {};
  const stopped = deferred<void>();
  stop = sampleGpuTelemetry('gpu.jsonl', { intervalS: 0.5, gpuIds: [1], halted: () => false }, {
    readFacts: async () => {
      reads++;
      if (reads === 2) throw new Error('nvidia-smi timed out');
      return { available: true, gpus: [gpu(0, 1), gpu(1, 2)] };
    },
    appendLine: async (file, line) => void lines.push(`${file} ${line}`),
    nowS: clock.nowS,
    isoNow: clock.isoNow,
    sleep: async (s) => {
      await clock.sleep(s);
      if (reads === 4) void stop().then(() => stopped.resolve());
      await flush();
    },
  });
  await stopped.promise;
  assert.is(reads, 4);
  const parsed = lines.map((l) => JSON.parse(l.slice('gpu.jsonl '.length)));
  assert.equal(parsed.map((p) => p.tS), [0, 1, 1.5], 'the failed second read left a gap');
  assert.equal(parsed[0], { tS: 0, at: 'T+0', gpus: [gpu(1, 2)] });
});

test('GPU telemetry: ends by itself once the engine is stopping', async () => {
  const clock = fakeClock();
  let halted = false;
  const lines: string[] = [];
  const stop = sampleGpuTelemetry('f', { intervalS: 1, gpuIds: [], halted: () => halted }, {
    readFacts: async () => ({ available: true, gpus: [gpu(0, 1), gpu(1, 1)] }),
    appendLine: async (_f, l) => void lines.push(l),
    nowS: clock.nowS,
    isoNow: clock.isoNow,
    sleep: async (s) => {
      await clock.sleep(s);
      if (clock.nowS() >= 3) halted = true;
    },
  });
  await stop();
  assert.is(lines.length, 1, 'stop() after the first sample ends the loop at its next check');
  halted = false;
  const lines2 = lines.length;
  const stop2 = sampleGpuTelemetry('f', { intervalS: 1, gpuIds: [], halted: () => halted }, {
    readFacts: async () => ({ available: true, gpus: [gpu(0, 1), gpu(1, 1)] }),
    appendLine: async (_f, l) => void lines.push(l),
    nowS: clock.nowS,
    isoNow: clock.isoNow,
    sleep: async (s) => {
      await clock.sleep(s);
      if (clock.nowS() >= 6) halted = true;
    },
  });
  await new Promise((r) => setTimeout(r, 10));
  await stop2();
  assert.is(lines.length - lines2, 6, 'without stop(), the loop sampled at 0..5 s and ended once halted at 6 s');
  assert.equal(JSON.parse(lines.at(-1)!).gpus.length, 2, 'no target GPUs named: every GPU');
});

// ---- start-up failure, tunnel, engine paths, image digest, secrets ----

test('start-up failure: an exited engine gives its code, OOM flag and log lines; otherwise what readiness last saw', () => {
  const names = { containerName: 'fluidcap-r1-sim', hostName: 'e2e' };
  const exited = startupFailure({ ready: false, reason: 'exited', detail: 'x', elapsedS: 1 },
    { kind: 'exited', exitCode: 3, oomKilled: false, lastLogLines: ['boom'], message: 'm' }, ['ignored'], names);
  assert.instance(exited, EngineLaunchError);
  assert.is(exited.message, 'engine fluidcap-r1-sim on e2e exited during start-up with code 3 (OOM killed: no); last 1 log lines:\n    boom');
  assert.equal(exited.details, { host: 'e2e', exitCode: 3, oomKilled: false, lastLogLines: ['boom'] });
  const silent = startupFailure({ ready: false, reason: 'exited', detail: 'x', elapsedS: 1 },
    { kind: 'exited', exitCode: 1, oomKilled: true, lastLogLines: [], message: 'm' }, [], names);
  assert.match(silent.message, /OOM killed: yes\); last 0 log lines:\n {4}\(no output\)$/);
  const timeout = startupFailure({ ready: false, reason: 'timeout', detail: 'not ready after 5 s (last: /health answered 503)', elapsedS: 5 }, null, ['loading'], names);
  assert.is(timeout.message, 'engine fluidcap-r1-sim on e2e did not become ready: not ready after 5 s (last: /health answered 503); last log lines:\n    loading');
  const lost = startupFailure({ ready: false, reason: 'exited', detail: 'SSH connection to e2e lost: reset', elapsedS: 1 }, { kind: 'connection-lost', message: 'SSH connection to e2e lost: reset' }, [], names);
  assert.match(lost.message, /did not become ready: SSH connection to e2e lost: reset/);
});

test('tunnel: added latency is tunnel minus direct; the log line says when the direct path was unreachable', async () => {
  const calls: string[] = [];
  const { tunnel, facts } = await openMeasuredTunnel(async () => ({ localPort: 4000, baseUrl: 'http://127.0.0.1:4000' }), 'http://10.0.0.5:8000', '/health', async (url, path) => {
    calls.push(url + path);
    return url.includes('4000') ? 1.5 : 0.5;
  });
  assert.equal(calls, ['http://127.0.0.1:4000/health', 'http://10.0.0.5:8000/health']);
  assert.equal(facts, { tunnelMsP50: 1.5, directMsP50: 0.5, addedMsP50: 1 });
  assert.is(describeTunnel(facts, { localPort: tunnel.localPort, hostName: 'gpu1', port: 8000, path: '/health' }),
    'ssh tunnel 127.0.0.1:4000 → gpu1:8000; keep-alive GET /health p50 1.50 ms vs direct 0.50 ms (added 1.00 ms)');
  const noDirect = tunnelFacts(2, null);
  assert.is(noDirect.addedMsP50, null);
  assert.match(describeTunnel(noDirect, { localPort: 1, hostName: 'h', port: 2, path: '/health' }), /p50 2\.00 ms \(direct path not reachable from here\)$/);
});

test('engine paths: every engine answers /health and /v1/models unless its spec names others', () => {
  for (const engine of ['vllm', 'sarathi', 'sim', 'llamacpp', 'some-future-engine']) {
    assert.equal(engineHttp({ engine }), { healthPath: '/health', modelsPath: '/v1/models' }, engine);
  }
  assert.equal(engineHttp({ engine: 'llamacpp', healthPath: '/ready' }), { healthPath: '/ready', modelsPath: '/v1/models' });
});

test('image digest: the repository\'s own digest, else the first, else none (a local build)', () => {
  const d = (r: string) => `${r}@sha256:${'a'.repeat(64)}`;
  assert.is(registryDigest('vllm/vllm-openai:v0.8.5', [d('mirror/vllm'), d('vllm/vllm-openai')]), d('vllm/vllm-openai'));
  assert.is(registryDigest('localhost:5000/x:tag', [d('localhost:5000/x')]), d('localhost:5000/x'));
  assert.is(registryDigest('other:1', [d('mirror/vllm')]), d('mirror/vllm'));
  assert.is(registryDigest('fluidcap/sim:dev', []), null);
  assert.is(registryDigest('fluidcap/sim:dev', undefined), null);
});

// No registry can be reached here: a FAKE Docker whose pull either completes or never does.
function fakeRegistryDocker(pullCompletes: boolean) {
  let pulled = false;
  const destroyed: string[] = [];
  const docker = {
    getImage: () => ({
      inspect: async () => {
        if (!pulled) throw Object.assign(new Error('no such image'), { statusCode: 404 });
        return { Id: 'sha256:abc', RepoDigests: [`vllm/vllm-openai@sha256:${'b'.repeat(64)}`] };
      },
    }),
    pull: async () => ({ destroy: () => destroyed.push('stream') }),
    modem: {
      followProgress: (_stream: unknown, done: (e: Error | null) => void) => {
        if (pullCompletes) setImmediate(() => ((pulled = true), done(null)));
      },
    },
  };
  return { docker: docker as unknown as Docker, destroyed };
}

test('image pull (FAKE registry): a finished pull records the digest and ends its time limit; a stuck one fails naming image, host and limit', async () => {
  const signals: AbortSignal[] = [];
  const logged: string[] = [];
  const ok = fakeRegistryDocker(true);
  const image = await ensureImage(ok.docker, 'vllm/vllm-openai:v0.8.5', {
    hostName: 'gpu1', pullTimeoutS: 1800, log: (l) => logged.push(l),
    sleep: (_s, signal) => (signals.push(signal!), new Promise<void>((r) => signal!.addEventListener('abort', () => r()))),
  });
  assert.equal(image, { imageId: 'sha256:abc', imageDigest: `vllm/vllm-openai@sha256:${'b'.repeat(64)}` });
  assert.equal(logged, ['image vllm/vllm-openai:v0.8.5 not on gpu1; pulling']);
  assert.ok(signals[0].aborted, 'the 1800 s limit was released once the pull finished');

  const stuck = fakeRegistryDocker(false);
  const clock = fakeClock();
  const err = await ensureImage(stuck.docker, 'vllm/vllm-openai:v0.8.5', { hostName: 'gpu1', pullTimeoutS: 30, log: () => {}, sleep: clock.sleep }).catch((e: Error) => e);
  assert.instance(err, Error);
  assert.is((err as Error).message, 'image vllm/vllm-openai:v0.8.5 is not on host gpu1 and pulling it failed: no pull finished within 30 s');
  assert.equal(stuck.destroyed, ['stream']);
  assert.equal(clock.slept, [30]);
});

test('real clock: an aborted sleep resolves at once and leaves no timer behind', async () => {
  const ac = new AbortController();
  const t0 = performance.now();
  const slept = realClock.sleep(3600, ac.signal);
  ac.abort();
  await slept;
  assert.ok(performance.now() - t0 < 60_000, 'did not wait the hour');
  await realClock.sleep(5, AbortSignal.abort());
});

test('secrets: read by name from the environment; an unset one names the recipe field and the variable, not a value', () => {
  assert.equal(secretValues([{ name: 'HF_TOKEN', fromEnv: 'MY_HF' }], { MY_HF: 's3cret' }), { HF_TOKEN: 's3cret' });
  assert.throws(() => secretValues([{ name: 'HF_TOKEN', fromEnv: 'MY_HF' }], { MY_HF: '' }), /^target\.secrets\.HF_TOKEN names the environment variable MY_HF, which is not set$/);
});

test.run();
