// npx tsx scripts/twin-llamacpp.ts [--run <runDir>] [--recipe recipes/llamacpp-cpu.yaml | --long] [--out results/twin-llamacpp]
//                                  [--slots 4] [--ctx 8192] [--threads 1] [--client-tolerance 250ms]
// --client-tolerance replaces the recipe's search.probe.clientTolerance: on a machine shared with
// other work, 10 ms makes the probes above a few QPS invalid (the client, not the engine, is late).
// --long: prompts of 128–1024 tokens instead of the recipe's (LONG_PROMPTS below), so prefill steps
// that stall the other slots' decodes, not the client, set the capacity.
// The twin against a real engine it did not write: llama.cpp's llama-server on this CPU.
//  1. Unless --run names a finished run, starts a native llama-server (../shared/engines; -np
//     slots, -c ctx, -t threads, as the end-to-end tests do) and runs the recipe's capacity search
//     on it as `engine: endpoint` (the recipe's workload, profile, search and SLO; its seed).
//  2. Calibrates the twin to the run (twin-calibration.json: the profile's prefill terms, the
//     first probe's decode terms, and their errors).
//  3. Runs the recipe's search on the twin (llama.cpp's fixed-slot scheduler on the calibrated
//     iteration model, judged with the run's own D_p fit), and every measured probe's rate on the
//     twin with the same plan and seed.
//  4. Prints measured vs twin capacity and TTFT / TBT p50 / p90 / p99 side by side, with the
//     calibration's error. Figures depend on the machine's load: say what else was running.
import { parseArgs } from 'node:util';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runCapacity } from '../harness/capacity/runCapacity.ts';
import { loadRecipe } from '../harness/recipe/load.ts';
import { resolveRun } from '../harness/capacity/resolveRun.ts';
import { readCapacityFile, readFit, findProbeDir } from '../harness/runDir/read.ts';
import { runPaths, RUN_FILES } from '../harness/runDir/layout.ts';
import type { CapacityJson } from '../harness/runDir/schema.ts';
import { calibrateRunDir, readRecords } from '../harness/twin/calibrateRun.ts';
import { describeCalibration } from '../harness/twin/calibrate.ts';
import { llamacppEngineOf } from '../harness/twin/simTarget.ts';
import { runTwinProbe, runTwinSearch } from '../harness/twin/twinSearch.ts';
import { judgeProbe } from '../harness/twin/judge.ts';
import type { Distribution } from '../harness/metrics/summary.ts';

const { values } = parseArgs({
  options: {
    run: { type: 'string' },
    recipe: { type: 'string', default: 'recipes/llamacpp-cpu.yaml' },
    out: { type: 'string', default: 'results/twin-llamacpp' },
    slots: { type: 'string', default: '4' },
    ctx: { type: 'string', default: '8192' },
    threads: { type: 'string', default: '1' },
    long: { type: 'boolean', default: false },
    'client-tolerance': { type: 'string' },
  },
});

// The recipe's sections with long prompts: a 1024-token prompt is one llama.cpp step of ~0.1 s on
// this CPU, during which every other slot's next token waits (the fixed-slot scheduler batches
// prompt tokens with the decodes), so fluidity at a 50 ms TBT deadline falls as prompts overlap.
const LONG_PROMPTS = `name: llamacpp-cpu-long
description: llama-server on the CPU, 4 slots, prompts of 128-1024 tokens, fluidity P99 >= 0.9 at 50 ms TBT.
target:
  engine: endpoint
workload:
  api: completions
  prompts: { format: text }
  lengths:
    prompt: { dist: uniform, min: 128, max: 1024 }
    output: { dist: uniform, min: 16, max: 64 }
  arrivals: { process: poisson }
  seed: 5
profile:
  promptLengths: [128, 256, 512, 1024]
  repeats: 3
search:
  qps: { start: 1, min: 0.125, max: 16 }
  tolerance: 0.1
  maxProbes: 8
  probe: { requests: 40, minDuration: 10s, duration: 60s, warmup: 10%, clientTolerance: 50ms }
slo:
  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }
`;
const SLOTS = Number(values.slots);
const CTX = Number(values.ctx);
const log = (line: string) => process.stderr.write(`  ${line}\n`);
// ../shared/engines beside the repository, or wherever --engines (or FLUIDCAP_SHARED_ENGINES) says.
const ENGINES = resolve(process.env.FLUIDCAP_SHARED_ENGINES ?? resolve(import.meta.dirname, '..', '..', 'shared', 'engines'));

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

/** Starts llama-server natively and waits for /health. */
async function startLlamaServer(port: number): Promise<ChildProcess> {
  const built = spawnSync(join(ENGINES, 'build-llama-server.sh'), { encoding: 'utf8' });
  if (built.status !== 0) throw new Error(`${join(ENGINES, 'build-llama-server.sh')} failed: ${built.error?.message ?? built.stderr.slice(-2000)}`);
  const bin = built.stdout.trim().split('\n').pop()!;
  const args = ['-m', join(ENGINES, 'stories260K.gguf'), '--host', '127.0.0.1', '--port', String(port), '--metrics', '-np', String(SLOTS), '-c', String(CTX), '-t', values.threads!];
  log(`llama-server ${args.join(' ')}`);
  const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  const t0 = performance.now();
  for (;;) {
    if (child.exitCode !== null) throw new Error(`llama-server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(1000) })).status === 200) return child;
    } catch {
      // not listening yet
    }
    if (performance.now() - t0 > 60_000) throw new Error('llama-server not healthy after 60 s');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The recipe with its target replaced by the native server as an endpoint. */
function endpointRecipe(text: string, port: number): string {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => /^target:/.test(l));
  const to = lines.findIndex((l, i) => i > from && /^[a-z]/.test(l));
  const target = [`target:`, `  engine: endpoint`, `  endpoint: { url: http://127.0.0.1:${port} }`];
  return [...lines.slice(0, from), `# llama-server -np ${SLOTS} -c ${CTX} -t ${values.threads} (native, started by scripts/twin-llamacpp.ts)`, ...target, ...lines.slice(to)].join('\n');
}

const out = resolve(values.out!);
mkdirSync(out, { recursive: true });
let runDir = values.run ? resolve(values.run) : '';
const recipeFile = join(out, 'llamacpp-endpoint.yaml');
if (!runDir) {
  const port = await freePort();
  let text = endpointRecipe(values.long ? LONG_PROMPTS : readFileSync(values.recipe!, 'utf8'), port);
  const tolerance = values['client-tolerance'];
  if (tolerance !== undefined) {
    if (!/^\d+(\.\d+)?(ms|s)$/.test(tolerance)) throw new Error(`--client-tolerance must be a duration such as 250ms, got ${JSON.stringify(tolerance)}`);
    text = text.replace(/clientTolerance: [^,}\s]+/, `clientTolerance: ${tolerance}`);
  }
  writeFileSync(recipeFile, text);
  const server = await startLlamaServer(port);
  const t0 = performance.now();
  try {
    const outcome = await runCapacity({ recipeFile, outDir: join(out, 'runs'), log });
    if (outcome.status !== 'completed') throw new Error(`the run did not complete: ${outcome.reason}`);
    runDir = outcome.runDir;
  } finally {
    server.kill('SIGTERM');
  }
  log(`real run: ${((performance.now() - t0) / 1000).toFixed(0)} s → ${runDir}`);
}

const paths = runPaths(runDir);
const capacity = readCapacityFile(paths.capacity) as CapacityJson;
const manifest = JSON.parse(readFileSync(paths.manifest, 'utf8')) as { recipeFile: string };
const recipe = await loadRecipe(existsSync(manifest.recipeFile) ? manifest.recipeFile : paths.recipeCopy);
const fit = readFit(paths.fit)!;
const calibration = (await calibrateRunDir(runDir))!;
log(describeCalibration(calibration));
for (const n of calibration.notes) log(`calibration note: ${n}`);

const plan = resolveRun(recipe, `${recipe.name}-twin`);
const engine = llamacppEngineOf({ slots: SLOTS, ctxSize: CTX }, calibration.model);
const t1 = performance.now();
const twin = runTwinSearch({ plan, workload: recipe.workload, engine, fit });
const twinWallS = (performance.now() - t1) / 1000;

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const ms = (x: number | null) => (x === null ? '-' : (x * 1e3).toFixed(1));
const rows: string[] = [];
rows.push(`| rate (QPS) | verdict real / twin | TTFT p50 real / twin (ms) | TTFT p90 | TTFT p99 | real TTFT from send p50 / p99 | TBT p50 real / twin (ms) | TBT p90 | TBT p99 |`);
rows.push(`|---|---|---|---|---|---|---|---|---|`);
const cell = (a: Distribution, b: Distribution, k: 'p50' | 'p90' | 'p99') => `${ms(a[k])} / ${ms(b[k])}`;
for (const p of [...capacity.probes].sort((x, y) => x.qps - y.qps)) {
  const dir = findProbeDir(runDir, p);
  if (!dir) continue;
  const real = judgeProbe(await readRecords(dir.timelines), plan.slo, fit, p.earlyStop);
  const t = runTwinProbe({ plan, workload: recipe.workload, engine, fit, earlyStop: false }, p.index, p.qps);
  // Early stop off on the twin, so its latencies cover the whole plan; the verdict is the real search's rule.
  const tv = runTwinProbe({ plan, workload: recipe.workload, engine, fit, earlyStop: plan.probe.earlyStop }, p.index, p.qps);
  const verdict = !p.valid ? 'INVALID' : p.passed ? 'pass' : 'fail';
  const fromSend = real.summary.ttftFromSentS;
  rows.push(`| ${p.qps} | ${verdict} / ${tv.passed ? 'pass' : 'fail'} | ${cell(real.summary.ttftS, t.ttftS, 'p50')} | ${cell(real.summary.ttftS, t.ttftS, 'p90')} | ${cell(real.summary.ttftS, t.ttftS, 'p99')} | ${ms(fromSend.p50)} / ${ms(fromSend.p99)} | ${cell(real.summary.tbtS, t.tbtS, 'p50')} | ${cell(real.summary.tbtS, t.tbtS, 'p90')} | ${cell(real.summary.tbtS, t.tbtS, 'p99')} |`);
}

const m = calibration.model;
const report = [
  `# The calibrated twin against llama-server (${recipe.name}, seed ${recipe.workload.seed})`,
  '',
  `run: ${runDir}`,
  `calibration (${RUN_FILES.calibration}): prefill ${(m.prefillBaseS * 1e3).toFixed(2)} ms + ${(m.perPromptTokenS * 1e6).toFixed(2)} µs/token + ${(m.perAttentionPairS * 1e9).toFixed(3)} ns/pair; ` +
    `decode ${(m.decodeBaseS * 1e3).toFixed(2)} ms + ${(m.perDecodeS * 1e3).toFixed(3)} ms per generating slot`,
  `calibration error: prefill mean |error| ${pct(calibration.prefill.meanAbsRelError)}, max ${pct(calibration.prefill.maxAbsRelError)} over ${calibration.prefill.points} points; ` +
    (calibration.decode
      ? `decode mean |error| ${pct(calibration.decode.meanAbsRelError)}, max ${pct(calibration.decode.maxAbsRelError)} over ${calibration.decode.rows.length} batch sizes (${calibration.decode.usedGaps} of ${calibration.decode.gaps} gaps used)`
      : 'no decode fit'),
  calibration.probePrefill
    ? `out of sample: ${calibration.probePrefill.requests} probe requests alone in the engine took ${calibration.probePrefill.medianRatio.toFixed(2)}× the fitted prefill at the median, ${calibration.probePrefill.p90Ratio.toFixed(2)}× at p90, ${calibration.probePrefill.maxRatio.toFixed(2)}× at most`
    : 'out of sample: no probe request had the engine to itself',
  ...calibration.notes.map((n) => `note: ${n}`),
  '',
  '| | measured (llama-server) | twin (calibrated) |',
  '|---|---|---|',
  `| capacity (QPS) | ${capacity.capacityQps} | ${twin.capacityQps} (${pct(capacity.capacityQps > 0 ? twin.capacityQps / capacity.capacityQps - 1 : 0)}) |`,
  `| bracket pass / fail (QPS) | ${capacity.bracket.passQps ?? '-'} / ${capacity.bracket.failQps ?? '-'} | ${twin.bracket.passQps ?? '-'} / ${twin.bracket.failQps ?? '-'} |`,
  `| probes | ${capacity.probes.length} | ${twin.probes.length} |`,
  `| search ended | ${capacity.reason} | ${twin.reason} |`,
  `| probe seconds | ${capacity.probeTimeS.toFixed(0)} | ${twin.probeTimeS.toFixed(0)} virtual, ${twinWallS.toFixed(1)} wall |`,
  '',
  'Per measured probe rate, the same plan (seed) on the twin:',
  '',
  ...rows,
  '',
  'decode calibration by batch size (median inter-token gap, ms):',
  '',
  '| generating slots | gaps | measured | fitted | error |',
  '|---|---|---|---|---|',
  ...(calibration.decode?.rows ?? []).map((r) => `| ${r.decoding} | ${r.gaps} | ${ms(r.measuredS)} | ${ms(r.fittedS)} | ${pct(r.relError)} |`),
  '',
  'prefill calibration by prompt length (median isolated prefill, ms):',
  '',
  '| prompt tokens | repeats | measured | fitted | error |',
  '|---|---|---|---|---|',
  ...calibration.prefill.rows.map((r) => `| ${r.promptTokens} | ${r.count} | ${ms(r.measuredS)} | ${ms(r.fittedS)} | ${pct(r.relError)} |`),
].join('\n');
console.log(report);
writeFileSync(join(out, 'twin-llamacpp.md'), report + '\n');
