// A load agent in front of llama.cpp's server, as an operator runs it: `fluidcap run` with
// `load: { from: agent }` launches llama-server from its image on the e2e host (sshd + dockerd) and
// sends every probe from an agent container beside it. What llama.cpp does unlike the simulated
// engine, on the agent's side of the wire: its prompts are text sized with its own /tokenize (the
// orchestrator calibrates, the agent builds the prompts: both must make the same text), it streams
// its own token counts (one token a chunk, `timings.predicted_n`, usage at the end), it stamps no
// emit times (client health on the agent rests on its event-loop delay and dispatch lag), and its
// /metrics exists only with --metrics (scraped by the agent on loopback). A lean search: three
// short probes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, e2eInventory, freePort } from './e2eEnv.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers, removeRunContainers } from '../../harness/provision/teardown.ts';
import { onlyRunDir } from '../pipeline/support.ts';
import { SHARED_RECIPE_TAIL, finishedProbeDirs, fluidcap, llamaDockerRecipe, llamaEnv, readJson, readJsonl, type CapacityFile } from './llamacppSupport.ts';

const what = "load agent in front of llama.cpp's image";
const env = e2eEnv(what);
const found = env ? llamaEnv(what) : null;
// The image is built by scripts/build-llama-image.mjs from ../shared: without it there is nothing to launch.
const imageMissing = found ? await localDocker().getImage(found.image).inspect().then(() => null, (err: Error) => err.message) : null;
if (imageMissing) console.log(`SKIP ${what}: no image ${found!.image} (${imageMissing.split('\n')[0]}); build it with scripts/build-llama-image.mjs`);
const llama = imageMissing ? null : found;

// The shared workload and SLO with a leaner profile and search. Three probes at most: 24 QPS passes
// and 48 QPS fails on two shared cores (4 slots, 1 thread), then one bisection.
const LEAN_SEARCH = `search:
  qps: { start: 24, min: 2, max: 192 }
  tolerance: 0.5
  maxProbes: 3
  kneeWarmupMax: 1s
  probe: { requests: 16, minDuration: 2s, duration: 10s, warmup: 10%, clientTolerance: 250ms }
slo:`;
const LEAN_TAIL = `${SHARED_RECIPE_TAIL.replace('promptLengths: [32, 96, 192, 384]\n  repeats: 2', 'promptLengths: [32, 96, 192]\n  repeats: 1').replace(/^search:\n[\s\S]*?^slo:/m, LEAN_SEARCH)}load: { from: agent }\n`;

interface Summary {
  load: { from: string; agents: { host: string; planned: number; sent: number; clientErrorS: number | null }[] };
  client: { recvMinusEmit: unknown; eventLoopDelayP99S: number | null; clientErrorS: number | null; reason: string };
  tokenDrift: { verdict: string; note: string };
}

if (env && llama) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-agent-llamacpp-'));
  const outDir = join(work, 'results');
  const inventory = join(work, 'inventory.yaml');
  const recipe = join(work, 'agent-llamacpp.yaml');
  const runEnv = { FLUIDCAP_LLAMA_MODEL: llama.model };
  let runDir = '';

  test('fluidcap run with load.from agent against llama-server in Docker over SSH completes with a capacity; nothing left', async () => {
    const t0 = performance.now();
    writeFileSync(inventory, e2eInventory(env));
    const text = llamaDockerRecipe('agent-llamacpp', llama.image, await freePort()).replace(SHARED_RECIPE_TAIL, LEAN_TAIL);
    assert.ok(text.includes('load: { from: agent }') && text.includes('repeats: 1') && text.includes('maxProbes: 3'), 'the recipe tail was not replaced');
    writeFileSync(recipe, text);
    const run = await fluidcap(['run', recipe, '--hosts', inventory, '--out', outDir], { timeoutMs: 300_000, env: runEnv });
    const tail = run.stderr.slice(-4000);
    runDir = existsSync(outDir) ? onlyRunDir(outDir) : '';
    assert.is(run.code, 0, tail);
    assert.match(run.stderr, /probes are sent by 1 load agent beside the engine on e2e/, tail);
    const capacity = readJson<CapacityFile>(join(runDir, 'capacity.json'));
    assert.ok(capacity.capacityQps > 0, `capacity ${capacity.capacityQps}`);
    assert.ok(capacity.bracket.passQps !== null, 'no probe passed');
    assert.equal(await listRunContainers(localDocker(), runDir.split('/').pop()!), [], 'a container (engine or agent) is left with the run label');
    console.log(`  agent + llama.cpp: capacity ${capacity.capacityQps} QPS, bracket ${JSON.stringify(capacity.bracket)}, ${capacity.probes.length} probes, ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  });

  test('the manifest, every summary and the report say the load came from the agent; every record names it', () => {
    assert.ok(runDir, 'no run directory (the run above failed)');
    const manifest = readJson<{ status: string; plan: { load: unknown }; host: { loadFrom: string } }>(join(runDir, 'manifest.json'));
    assert.is(manifest.status, 'completed');
    assert.equal(manifest.plan.load, { from: 'agent', chosenBy: 'recipe', agents: 1, hosts: null });
    assert.match(manifest.host.loadFrom, /^1 load agent beside the engine on e2e \(version /);
    assert.match(readFileSync(join(runDir, 'report.md'), 'utf8'), /load sent from.*1 load agent beside the engine on e2e/);
    const dirs = finishedProbeDirs(runDir);
    assert.ok(dirs.length >= 2, `${dirs.length} probes finished`);
    for (const dir of dirs) {
      const s = readJson<Summary>(join(runDir, dir, 'summary.json'));
      assert.is(s.load.from, 'agent', dir);
      assert.equal(s.load.agents.map((a) => a.host), ['e2e'], dir);
      const records = readJsonl(join(runDir, dir, 'timelines.jsonl'));
      assert.ok(records.length > 0, `${dir}: no records`);
      assert.ok(records.every((r) => r.agent === 0), `${dir}: a record without its agent`);
    }
  });

  test("client health measured on the agent: llama.cpp stamps no emit times, so the agent's event-loop delay stands for it", () => {
    assert.ok(runDir, 'no run directory');
    for (const dir of finishedProbeDirs(runDir)) {
      const s = readJson<Summary>(join(runDir, dir, 'summary.json'));
      const [agent] = s.load.agents;
      assert.is(typeof agent.clientErrorS, 'number', `${dir}: the agent reported no client error`);
      assert.is(s.client.clientErrorS, agent.clientErrorS, `${dir}: client health is not the agent's`);
      assert.is(typeof s.client.eventLoopDelayP99S, 'number', `${dir}: no event-loop delay measured`);
      assert.is(s.client.recvMinusEmit, null, `${dir}: receive − emit from an engine that sends no emit times`);
      assert.match(s.client.reason, /engine sends no emit times/, dir);
    }
  });

  test("tokens as llama.cpp streams them: the agent's text prompts are the calibrated sizes, the stream's count is the engine's usage", () => {
    assert.ok(runDir, 'no run directory');
    let ok = 0;
    for (const dir of finishedProbeDirs(runDir)) {
      const s = readJson<Summary>(join(runDir, dir, 'summary.json'));
      assert.is(s.tokenDrift.verdict, 'ok', `${dir}: ${s.tokenDrift.note}`);
      for (const r of readJsonl(join(runDir, dir, 'timelines.jsonl'))) {
        if (r.status !== 'ok') continue;
        ok++;
        const chunks = r.chunks as [number, number][];
        // Text built on the agent from the orchestrator's /tokenize calibration: llama.cpp counts exactly the planned prompt.
        assert.is(r.usagePromptTokens, r.promptTokens, `${dir} ${r.id}: prompt planned ${r.promptTokens}, llama.cpp counted ${r.usagePromptTokens}`);
        assert.ok(chunks.length > 0 && chunks.every((c) => c[1] >= 1), `${dir} ${r.id}: a chunk without tokens`);
        assert.is(chunks.reduce((sum, c) => sum + c[1], 0), r.outputTokens, `${dir} ${r.id}`);
        assert.is(r.usageOutputTokens, r.outputTokens, `${dir} ${r.id}: streamed ${r.outputTokens} tokens, usage says ${r.usageOutputTokens}`);
        // min_tokens and ignore_eos reach llama.cpp from the agent: every request generates what it planned.
        assert.is(r.outputTokens, r.maxTokens, `${dir} ${r.id}`);
      }
    }
    assert.ok(ok > 0, 'no request succeeded');
  });

  test("llama.cpp's /metrics (--metrics) scraped by the agent on loopback: its counters grow during each probe", () => {
    assert.ok(runDir, 'no run directory');
    for (const dir of finishedProbeDirs(runDir)) {
      const file = join(runDir, dir, 'server-metrics.jsonl');
      assert.ok(existsSync(file), `${dir}: no server-metrics.jsonl`);
      const rows = readJsonl(file) as { generationTokens: number | null; series: Record<string, number> }[];
      assert.ok(rows.length >= 2, `${dir}: ${rows.length} scrapes`);
      assert.ok('llamacpp:requests_processing' in rows[0].series, `${dir}: not llama.cpp's metrics`);
      assert.ok(rows[rows.length - 1].generationTokens! > rows[0].generationTokens!, `${dir}: no tokens generated between the first and last scrape`);
    }
  });

  test.after(async () => {
    if (runDir) await removeRunContainers(localDocker(), runDir.split('/').pop()!, { graceS: 1 }).catch(() => {});
    rmSync(work, { recursive: true, force: true });
  });
}

test.run();
