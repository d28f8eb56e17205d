// End-to-end on a real engine fluidcap did not write: `engine: llamacpp` launched as a container
// through the loopback sshd and dockerd, the whole `fluidcap run` (profile, search, archive,
// reports), SIGKILLed during its third probe and finished with `--resume` (which replaces the
// container the killed run left behind), then `analyze` and `report` on the result.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eInventory, freePort } from './e2eEnv.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers, removeRunContainers } from '../../harness/provision/teardown.ts';
import {
  cachedPromptTokens, checkFinishedRun, finishedProbeDirs, fluidcap, llamaDockerRecipe, llamaEnv, readJson, readJsonl, startFluidcap, untilProbeStarted,
} from './llamacppSupport.ts';
import { shown } from '../support/hooks.ts';

const env = e2eEnv('llama.cpp through Docker over SSH');
const llama = env ? llamaEnv('llama.cpp through Docker over SSH') : null;

if (env && llama) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-llamacpp-docker-'));
  const outDir = join(work, 'results');
  const inventory = join(work, 'inventory.yaml');
  const recipe = join(work, 'llamacpp-docker.yaml');
  // The model path reaches the recipe through the environment, as recipes/llamacpp-cpu.yaml does it.
  const runEnv = { FLUIDCAP_LLAMA_MODEL: llama.model };
  let runDir = '';

  test.before(shown(async () => {
    writeFileSync(inventory, e2eInventory(env));
    writeFileSync(recipe, llamaDockerRecipe('llamacpp-docker-e2e', llama.image, await freePort()));
  }));

  test('fluidcap run on llama-server in Docker over SSH, SIGKILL in probe 3, --resume finishes it', async () => {
    const t0 = performance.now();
    const run = startFluidcap(['run', recipe, '--hosts', inventory, '--out', outDir], runEnv);
    runDir = await untilProbeStarted(outDir, 3, run.exited, run.stderr);
    await new Promise((r) => setTimeout(r, 500));
    run.child.kill('SIGKILL');
    assert.is((await run.exited).signal, 'SIGKILL');
    const runId = runDir.split('/').pop()!;
    // A SIGKILLed fluidcap cannot tear down; the resumed run must find and replace its container
    // (and remove the probe's load agent, when it had started one).
    assert.is((await listRunContainers(localDocker(), runId)).filter((c) => c.Labels['fluidcap.engine'] === 'llamacpp').length, 1, 'the killed run left no engine container behind');

    const resumed = await fluidcap(['run', '--resume', runDir, '--hosts', inventory], { timeoutMs: 300_000, env: runEnv });
    assert.is(resumed.code, 0, resumed.stderr.slice(-4000));
    assert.match(resumed.stderr, /reusing the prefill profile/);
    console.log(`  llama.cpp over Docker/SSH: run, kill and resume took ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    assert.equal(await listRunContainers(localDocker(), runId), [], 'the resumed run left its container');
  });

  test('the run holds a profile, four or more probes, capacity.json and both reports; analyze and report work on it', async () => {
    assert.ok(runDir, 'no run directory (the run above failed)');
    const capacity = await checkFinishedRun(runDir);
    const manifest = readJson<{ status: string }>(join(runDir, 'manifest.json'));
    assert.is(manifest.status, 'completed');
    console.log(`  llama.cpp over Docker/SSH: capacity ${capacity.capacityQps} QPS, bracket ${JSON.stringify(capacity.bracket)}, ${capacity.probes.length} probes`);
    const log = readFileSync(join(runDir, 'server.log'), 'utf8');
    assert.match(log, /llama|server is listening|model loaded/i, 'server.log holds no llama-server output');
  });

  test('llamacpp:* metrics scraped and mapped: running, token counters; the prompt cache served nothing', () => {
    assert.ok(runDir, 'no run directory');
    const dirs = finishedProbeDirs(runDir);
    assert.ok(dirs.length > 0, 'no probe finished');
    const probe = dirs[dirs.length - 1];
    const file = join(runDir, probe, 'server-metrics.jsonl');
    assert.ok(existsSync(file), `${probe}: no server-metrics.jsonl (was --metrics passed?)`);
    const rows = readJsonl(file);
    assert.ok(rows.length > 0);
    const last = rows[rows.length - 1] as Record<string, unknown> & { series: Record<string, number> };
    for (const name of ['llamacpp:requests_processing', 'llamacpp:requests_deferred', 'llamacpp:prompt_tokens_total', 'llamacpp:tokens_predicted_total', 'llamacpp:prompt_tokens_cached_total']) {
      assert.ok(name in last.series, `${name} missing from the scrape`);
    }
    assert.is(typeof last.running, 'number', 'llamacpp:requests_processing not mapped onto running');
    assert.is(typeof last.waiting, 'number', 'llamacpp:requests_deferred not mapped onto waiting');
    assert.is(last.promptTokens, last.series['llamacpp:prompt_tokens_total']);
    assert.is(last.generationTokens, last.series['llamacpp:tokens_predicted_total']);
    assert.ok((last.generationTokens as number) > 0, 'no generated tokens counted');
    assert.is(last.kvUsage, null, 'this llama.cpp build has no KV-cache usage gauge');
    // The container runs with --no-cache-prompt --cache-ram 0 (prompt cache off for capacity runs).
    const { cached, requests } = cachedPromptTokens(runDir, dirs);
    assert.ok(cached !== null, 'the cache counter was never scraped twice in a probe');
    assert.ok(cached! <= requests, `llama-server served ${cached} prompt tokens from its cache over ${requests} requests`);
  });

  test.after(async () => {
    // A failed assertion between the SIGKILL and the resume would leave the engine running.
    if (runDir) await removeRunContainers(localDocker(), runDir.split('/').pop()!, { graceS: 1 }).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
}

test.run();
