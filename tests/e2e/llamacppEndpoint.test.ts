// End-to-end on a server fluidcap neither wrote nor started: llama-server launched natively by the
// test with its defaults (prompt cache on), measured as `engine: endpoint`. The whole `fluidcap
// run`, SIGKILLed during its third probe and finished with `--resume`, then `analyze` and `report`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './e2eEnv.ts';
import {
  SHARED_RECIPE_TAIL, cachedPromptTokens, checkFinishedRun, finishedProbeDirs, fluidcap, llamaEnv, readJson, startFluidcap, startLlamaServer, untilProbeStarted,
} from './llamacppSupport.ts';
import { shown } from '../support/hooks.ts';

const llama = llamaEnv('llama.cpp as engine endpoint');

if (llama) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-llamacpp-endpoint-'));
  const outDir = join(work, 'results');
  const recipe = join(work, 'llamacpp-endpoint.yaml');
  const serverLog: string[] = [];
  let server: ChildProcess | null = null;
  let runDir = '';

  test.before(shown(async () => {
    const port = await freePort();
    server = await startLlamaServer(llama, port, serverLog);
    writeFileSync(recipe, `name: llamacpp-endpoint-e2e
target:
  engine: endpoint
  endpoint: { url: http://127.0.0.1:${port} }
${SHARED_RECIPE_TAIL}`);
  }));

  test('fluidcap run against a llama-server it did not start, SIGKILL in probe 3, --resume finishes it', async () => {
    const t0 = performance.now();
    const run = startFluidcap(['run', recipe, '--out', outDir]);
    runDir = await untilProbeStarted(outDir, 3, run.exited, run.stderr);
    await new Promise((r) => setTimeout(r, 500));
    run.child.kill('SIGKILL');
    assert.is((await run.exited).signal, 'SIGKILL');
    const resumed = await fluidcap(['run', '--resume', runDir], { timeoutMs: 300_000 });
    console.log(`  llama.cpp as endpoint: run, kill and resume took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    assert.is(resumed.code, 0, resumed.stderr.slice(-4000));
    assert.match(resumed.stderr, /reusing the prefill profile/);
    assert.is(server!.exitCode, null, `llama-server died during the run:\n${serverLog.slice(-20).join('\n')}`);
  });

  test('the run holds a profile, four or more probes, capacity.json and both reports; analyze and report work on it', async () => {
    assert.ok(runDir, 'no run directory (the run above failed)');
    const capacity = await checkFinishedRun(runDir);
    assert.is(readJson<{ status: string }>(join(runDir, 'manifest.json')).status, 'completed');
    console.log(`  llama.cpp as endpoint: capacity ${capacity.capacityQps} QPS, bracket ${JSON.stringify(capacity.bracket)}, ${capacity.probes.length} probes`);
  });

  test('with the server\'s prompt cache on, no probe was served from it (llamacpp:prompt_tokens_cached_total)', () => {
    assert.ok(runDir, 'no run directory');
    const { cached, requests } = cachedPromptTokens(runDir, finishedProbeDirs(runDir));
    assert.ok(cached !== null, 'the cache counter was never scraped twice in a probe');
    // At most the BOS token of each request may be shared; anything more is a prompt the cache served.
    assert.ok(cached! <= requests, `llama-server served ${cached} prompt tokens from its cache over ${requests} requests`);
  });

  test.after(() => {
    if (server && server.exitCode === null) server.kill('SIGTERM');
    rmSync(work, { recursive: true, force: true });
  });
}

test.run();
