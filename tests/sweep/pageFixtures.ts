// Sweep directories for the page tests, made without engines: a real `runSweep` whose runs are
// synthetic run directories (tests/report/syntheticRun.ts, each with its own report.html), and a
// real twin sweep of a small matrix on the virtual clock (a few seconds). Each returns `root`, the
// temporary directory holding everything, for the test to remove.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runSweep, type SweepOutcome } from '../../harness/sweep/runSweep.ts';
import { runTwinSweep, type TwinSweepOutcome } from '../../harness/twin/twinSweep.ts';
import type { RunOptions, RunOutcome } from '../../harness/capacity/runCapacity.ts';
import { writeReports } from '../../harness/report/write.ts';
import { writeSyntheticRun } from '../report/syntheticRun.ts';
import { ROOT } from '../pipeline/support.ts';

// Capacity and 95% interval of each configuration by its number; c05's engine dies, c06 ends on invalid probes.
const RESULTS: Record<string, { qps: number; lo: number | null; hi: number | null } | 'failed' | 'invalid'> = {
  c01: { qps: 6, lo: 5.6, hi: 6.7 },
  c02: { qps: 8, lo: 7.1, hi: 8.9 },
  c03: { qps: 12, lo: 10.5, hi: 13.1 },
  c04: { qps: 16, lo: 15.2, hi: null },
  c05: 'failed',
  c06: 'invalid',
};

const BASELINES = {
  fluidity: { fluidity: { source: 'fluidity: { tbtDeadline: 25ms, minFluidity: 0.9 }' } },
  'ttft+tbt': { ttft: { source: 'ttft: "p90 <= 2s"' }, tbt: { source: 'tbt p99 <= 25ms (default baseline)' } },
  tpot: { tpot: { source: 'tpot p99 <= 25ms (default baseline)' } },
  schedulingDelay: { schedulingDelay: { source: 'schedulingDelay p99 <= 0.3s (default baseline)' } },
};

/** A synthetic run standing in for runCapacity: a run directory with capacity.json, its report, and a manifest naming the recipe. */
async function syntheticRunOne(opts: RunOptions): Promise<RunOutcome> {
  const id = opts.recipeFile.split('/').pop()!.replace(/\.yaml$/, '');
  const result = RESULTS[id.split('-')[0]];
  const runDir = join(opts.outDir, `synthetic-${id}`);
  if (result === 'failed') {
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'manifest.json'), JSON.stringify({ recipeFile: opts.recipeFile }));
    return { runDir, status: 'failed', reason: 'the simulated engine exited (code 1) during probe 3', capacity: null };
  }
  const qps = result === 'invalid' ? 3 : result.qps;
  writeSyntheticRun(runDir, { runId: `synthetic-${id}`, capacityQps: qps });
  const capFile = join(runDir, 'capacity.json');
  const cap = JSON.parse(readFileSync(capFile, 'utf8'));
  cap.bracket = { passQps: qps, failQps: qps * 1.1 };
  cap.baselines = BASELINES;
  cap.baselineCapacityQps = { fluidity: qps, 'ttft+tbt': qps * 0.75, tpot: qps * 0.5, schedulingDelay: null };
  cap.cost = { ...cap.cost, qpsPerUsdPerHour: qps / cap.cost.usdPerHour };
  if (result === 'invalid') {
    cap.outcome = 'invalid-probes';
    cap.reason = 'probe 2 was invalid twice: client error 6.8 ms over the 2 ms tolerance';
  } else cap.interval = { estimateQps: qps * 1.02, loQps: result.lo, hiQps: result.hi, open: result.hi === null ? 'hi' : 'none', level: 0.95 };
  writeFileSync(capFile, JSON.stringify(cap, null, 2));
  const manifest = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
  writeFileSync(join(runDir, 'manifest.json'), JSON.stringify({ ...manifest, recipeFile: opts.recipeFile }));
  await writeReports(runDir);
  return { runDir, status: 'completed', reason: cap.reason ?? 'converged', capacity: null };
}

/** A 3 × 2 sweep (batch size × scheduler) of synthetic runs, through the real sweep executor. */
export async function syntheticSweep(): Promise<SweepOutcome & { root: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-sweep-page-'));
  copyFileSync(join(ROOT, 'sweeps/sim-base.yaml'), join(dir, 'base.yaml'));
  writeFileSync(join(dir, 'sweep.yaml'), 'name: batch-by-scheduler\nrecipe: base.yaml\nmatrix:\n  maxNumSeqs: [8, 16, 32]\n  scheduler: [vllm, sarathi]\ngpusPerHost: 2\n');
  return { ...(await runSweep({ sweepFile: join(dir, 'sweep.yaml'), outDir: join(dir, 'out'), log: () => {}, runOne: syntheticRunOne })), root: dir };
}

/** The base recipe of the small twin sweeps (the simulated Llama-3-8B on an H100, a short workload). */
export const twinBaseYaml = (maxQps = 128) => `name: tw-base
target:
  engine: sim
  model: llama-3-8b
  gpuProfile: h100-sxm-80gb
  engineArgs: { maxNumSeqs: 64, maxModelLen: 4096, maxNumBatchedTokens: 4096, chunkSize: 512 }
  sim: { scheduler: vllm, timeScale: 1 }
workload:
  api: completions
  lengths:
    prompt: { dist: uniform, min: 256, max: 1024 }
    output: { dist: uniform, min: 32, max: 96 }
  arrivals: { process: poisson }
  seed: 5
profile: { promptLengths: [256, 1024, 2048], repeats: 2 }
search:
  qps: { start: 4, min: 0.5, max: ${maxQps} }
  tolerance: 0.1
  maxProbes: 8
  probe: { requests: 60, minDuration: 5s, duration: 60s, warmup: 10% }
slo:
  ttft: { percentile: 90, max: 2s }
  tbt: { percentile: 99, max: 200ms }
`;

/**
 * A twin sweep of 16 configurations (GPU × model × scheduler × batch size): the 70B model at
 * tensor parallelism 1 does not fit, and batch sizes 64 and 128 serve this short workload alike.
 */
export async function smallTwinSweep(top = 2, log: (line: string) => void = () => {}): Promise<TwinSweepOutcome & { sweepFile: string; root: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-twin-page-'));
  writeFileSync(join(dir, 'base.yaml'), twinBaseYaml());
  const sweepFile = join(dir, 'sweep.yaml');
  writeFileSync(sweepFile, 'name: tw\nrecipe: base.yaml\nmatrix:\n  gpuProfile: [a100-sxm-80gb, h100-sxm-80gb]\n  model: [llama-3-8b, llama-2-70b]\n  scheduler: [vllm, sarathi]\n  maxNumSeqs: [64, 128]\n');
  mkdirSync(join(dir, 'out'));
  return { ...(await runTwinSweep({ sweepFile, outDir: join(dir, 'out'), top, log })), sweepFile, root: dir };
}
