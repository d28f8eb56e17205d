// The calibration loop of `run --rehearse` on a real-time engine: the simulated engine runs an A100
// (real HTTP, real clock), while the twin was built for an H100. The run warm-starts from the H100
// twin's bracket; after the first probe the twin is calibrated to the run's profile and probe
// (twin-calibration.json, a `twin-calibrated` journal line) and the search continues from the
// calibrated twin's bracket. Bounds: the real clock adds the request's HTTP round trip to every
// measured prefill (1–3 ms here) and client and event-loop jitter to gaps (medians absorb most of
// it on a loaded 2-core machine), so decode iterations must come within 15% of the A100's roofline at
// every batch size seen and prefills of 1024 tokens and more within 15%, where the uncalibrated
// H100 twin is more than 25% off.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCapacity } from '../../harness/capacity/runCapacity.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { resolveRun } from '../../harness/capacity/resolveRun.ts';
import { rehearse, twinEngineOf } from '../../harness/twin/rehearse.ts';
import { recalibratedRehearsal } from '../../harness/twin/calibrateRun.ts';
import { modelledIterationS } from '../../harness/sim/engine.ts';
import { runPaths } from '../../harness/runDir/layout.ts';
import type { CalibrationFile } from '../../harness/runDir/schema.ts';

const recipeText = (gpu: string) => `name: calib-${gpu}
target:
  engine: sim
  model: llama-3-8b
  gpuProfile: ${gpu}
  engineArgs: { maxNumSeqs: 8, maxModelLen: 4096 }
  sim: { scheduler: vllm, timeScale: 1 }
workload:
  api: completions
  lengths:
    prompt: { dist: uniform, min: 128, max: 512 }
    output: { dist: uniform, min: 32, max: 64 }
  arrivals: { process: poisson }
  seed: 11
profile:
  promptLengths: [256, 1024, 2048]
  repeats: 3
  minR2: 0
  maxRepeatCv: 100
search:
  qps: { start: 4, min: 1, max: 128 }
  tolerance: 0.1
  maxProbes: 2
  probe: { requests: 48, minDuration: 4s, duration: 20s, warmup: 10%, clientTolerance: 250ms }
slo:
  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.1s, minFluidity: 0.9, percentile: 99 }
`;

const relErr = (x: number, truth: number) => Math.abs(x - truth) / truth;

test('run --rehearse on an A100 engine with an H100 twin: calibrated after the first probe, iteration times recovered', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-calib-'));
  try {
    writeFileSync(join(dir, 'a100.yaml'), recipeText('a100-sxm-80gb'));
    writeFileSync(join(dir, 'h100.yaml'), recipeText('h100-sxm-80gb'));
    const real = await loadRecipe(join(dir, 'a100.yaml'));
    const twinRecipe = await loadRecipe(join(dir, 'h100.yaml'));
    const plan = resolveRun(twinRecipe, 'calib-twin');
    const cold = rehearse(twinRecipe, plan);
    const logs: string[] = [];
    let calibration: CalibrationFile | null = null;
    const outcome = await runCapacity({
      recipeFile: join(dir, 'a100.yaml'),
      outDir: join(dir, 'results'),
      log: (l) => logs.push(l),
      warmStart: cold.bracket,
      recalibrate: async (runDir) => {
        const done = await recalibratedRehearsal(twinRecipe, plan, runDir, (l) => logs.push(l));
        calibration = done?.calibration ?? null;
        return done?.rehearsal.bracket ?? null;
      },
    });
    assert.is(outcome.status, 'completed', outcome.reason);
    const paths = runPaths(outcome.runDir);
    assert.ok(existsSync(paths.calibration), 'no twin-calibration.json');
    const onDisk = JSON.parse(readFileSync(paths.calibration, 'utf8')) as CalibrationFile;
    assert.equal(onDisk, JSON.parse(JSON.stringify(calibration)));
    const journal = readFileSync(paths.events, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string });
    assert.ok(journal.some((e) => e.type === 'twin-calibrated'), 'no twin-calibrated line in events.jsonl');
    assert.ok(onDisk.source.probe?.startsWith('probes/01-qps-'), JSON.stringify(onDisk.source));

    const truth = twinEngineOf(real);
    const h100 = twinEngineOf(twinRecipe);
    const calibrated = twinEngineOf(twinRecipe, onDisk);
    const lines = [...logs];
    assert.ok(onDisk.decode && onDisk.decode.rows.length >= 2, `decode fit: ${JSON.stringify(onDisk.decode)} ${onDisk.notes.join('; ')}`);
    for (const row of onDisk.decode!.rows) {
      const shape = { prefills: [], decodeKvTokens: Array.from({ length: row.decoding }, () => 400) };
      const t = modelledIterationS(truth, shape);
      const c = modelledIterationS(calibrated, shape);
      const u = modelledIterationS(h100, shape);
      lines.push(`decode ×${row.decoding} (${row.gaps} gaps): A100 ${(t * 1e3).toFixed(2)} measured ${(row.measuredS * 1e3).toFixed(2)} calibrated ${(c * 1e3).toFixed(2)} H100 ${(u * 1e3).toFixed(2)} ms`);
      if (row.gaps >= 20) assert.ok(relErr(c, t) < 0.15, lines.join('\n'));
      assert.ok(relErr(u, t) > 0.25, lines.join('\n'));
    }
    for (const p of [1024, 2048]) {
      const shape = { prefills: [{ chunkTokens: p, contextTokens: 0, completes: true }], decodeKvTokens: [] };
      const t = modelledIterationS(truth, shape);
      const c = modelledIterationS(calibrated, shape);
      const u = modelledIterationS(h100, shape);
      lines.push(`prefill ${p}: A100 ${(t * 1e3).toFixed(2)} calibrated ${(c * 1e3).toFixed(2)} H100 ${(u * 1e3).toFixed(2)} ms`);
      assert.ok(relErr(c, t) < 0.15, lines.join('\n'));
      assert.ok(relErr(u, t) > 0.25, lines.join('\n'));
    }
    console.log(lines.filter((l) => /decode|prefill|calibrated|warm/.test(l)).join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
