// Readiness decisions on an injected clock (ready, engine gone, deadline), and nvidia-smi parsing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { waitReady, type ReadinessDeps } from '../../harness/provision/readiness.ts';
import { parseNvidiaSmi, busyGpus, readGpuFacts } from '../../harness/provision/gpuFacts.ts';

function fakeDeps(script: (url: string, t: number) => { status: number; body?: string } | Error, goneAt = Infinity): ReadinessDeps & { calls: string[] } {
  let t = 0;
  const calls: string[] = [];
  return {
    calls,
    nowS: () => t,
    sleep: async (s) => void (t += s),
    gone: async () => (t >= goneAt ? 'exited with code 1' : null),
    get: async (url) => {
      calls.push(url.replace('http://h:1', ''));
      const r = script(url, t);
      if (r instanceof Error) throw r;
      return { status: r.status, body: r.body ?? '' };
    },
  };
}

// llama-server (b10573) while loading and once loaded: /health 503 then 200; /v1/models in its own shape.
const LLAMA_MODELS = '{"models":[{"name":"stories260K","model":"stories260K","capabilities":["completion"]}],"object":"list","data":[{"id":"stories260K","aliases":["stories260K"],"object":"model","owned_by":"llamacpp","meta":{"n_vocab":512,"n_ctx":1024}}]}';

test('llama.cpp: 503 "Loading model" then ready, its /v1/models read; the health path comes from the spec', async () => {
  const deps = fakeDeps((url, t) => (url.endsWith('/health') ? (t < 1 ? { status: 503, body: '{"error":{"code":503,"message":"Loading model"}}' } : { status: 200 }) : { status: 200, body: LLAMA_MODELS }));
  const r = await waitReady('http://h:1', { deadlineS: 60, pollS: 0.5, healthPath: '/health' }, deps);
  assert.equal(r, { ready: true, timeToReadyS: 1, models: ['stories260K'] });
  const other = fakeDeps((url) => (url.endsWith('/ping') ? { status: 200 } : url.endsWith('/v1/models') ? { status: 200, body: LLAMA_MODELS } : { status: 404 }));
  assert.equal(await waitReady('http://h:1', { deadlineS: 5, healthPath: '/ping' }, other), { ready: true, timeToReadyS: 0, models: ['stories260K'] });
  const timeout = await waitReady('http://h:1', { deadlineS: 2, pollS: 0.5 }, fakeDeps(() => ({ status: 503 })));
  assert.equal([timeout.ready, (timeout as { detail: string }).detail], [false, 'not ready after 2 s (last: /health answered 503)']);
});

test('ready once /health is 200 and /v1/models lists a model; time to ready from the clock', async () => {
  const deps = fakeDeps((url, t) => (t < 2 ? new Error('ECONNREFUSED') : url.endsWith('/health') ? { status: t < 3 ? 503 : 200 } : { status: 200, body: '{"data":[{"id":"m"}]}' }));
  const r = await waitReady('http://h:1', { deadlineS: 60, pollS: 0.5 }, deps);
  assert.equal(r, { ready: true, timeToReadyS: 3, models: ['m'] });
  assert.is(deps.calls.at(-2), '/health');
  assert.is(deps.calls.at(-1), '/v1/models');
});

test('an engine that dies fails at once with its reason, not at the deadline', async () => {
  const r = await waitReady('http://h:1', { deadlineS: 600, pollS: 0.5 }, fakeDeps(() => new Error('ECONNREFUSED'), 1.5));
  assert.equal(r, { ready: false, reason: 'exited', detail: 'exited with code 1', elapsedS: 1.5 });
});

test('deadline: says what was last seen', async () => {
  const r = await waitReady('http://h:1', { deadlineS: 5, pollS: 1 }, fakeDeps(() => ({ status: 503 })));
  assert.is(r.ready, false);
  if (!r.ready) {
    assert.is(r.reason, 'timeout');
    assert.is(r.detail, 'not ready after 5 s (last: /health answered 503)');
  }
});

test('a server without /health (404, as Sarathi-Serve): ready once /v1/models lists a model', async () => {
  const deps = fakeDeps((url, t) => (url.endsWith('/health') ? { status: 404, body: '{"detail":"Not Found"}' } : t < 1 ? { status: 503 } : { status: 200, body: '{"data":[{"id":"m"}]}' }));
  assert.equal(await waitReady('http://h:1', { deadlineS: 60, pollS: 0.5 }, deps), { ready: true, timeToReadyS: 1, models: ['m'] });
  const never = await waitReady('http://h:1', { deadlineS: 1, pollS: 0.5 }, fakeDeps((url) => (url.endsWith('/health') ? { status: 404 } : { status: 503 })));
  assert.equal([never.ready, (never as { detail: string }).detail], [false, 'not ready after 1 s (last: /v1/models answered 503 (and /health 404))']);
});

test('nvidia-smi CSV: numbers, [N/A] as null, busy GPUs by id', () => {
  const gpus = parseNvidiaSmi('0, NVIDIA A100-SXM4-80GB, 81920, 3, 535.104.05, 0, 61.2\n1, NVIDIA A100-SXM4-80GB, 81920, 40000, 535.104.05, 97, [N/A]\n');
  assert.equal(gpus[1], { index: 1, name: 'NVIDIA A100-SXM4-80GB', memoryTotalMiB: 81920, memoryUsedMiB: 40000, driverVersion: '535.104.05', utilizationPct: 97, powerW: null });
  assert.equal(busyGpus(gpus, [0, 1], 1024).map((g) => g.index), [1]);
  assert.equal(busyGpus(gpus, [0], 1024), []);
});

test('no nvidia-smi is a fact, not an error', async () => {
  assert.equal(await readGpuFacts(async () => ({ stdout: '', stderr: 'sh: nvidia-smi: not found', code: 127 })), { available: false, reason: 'no nvidia-smi on the host (nvidia-smi not found)' });
  const failed = await readGpuFacts(async () => ({ stdout: 'NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver', stderr: '', code: 9 }));
  assert.equal(failed, { available: false, reason: "nvidia-smi failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" });
});

test.run();
