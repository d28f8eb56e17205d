// What the e2e sweeps of the simulated engine share (sweep.test.ts: containers on two hosts;
// slurm.test.ts: processes and a container in Slurm allocations): the e2e sshd's key pinned under
// each name a host is reached by, and a base recipe with a short real-time workload, a small
// profile and a loose SLO, so each search ends within a few probes.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { E2eEnv } from './e2eEnv.ts';

/** Writes `dir`/known_hosts with the e2e sshd's key under each `[address]:port`; returns its path. */
export function pinHostKey(env: E2eEnv, dir: string, at: { address: string; port: number }[]): string {
  const keyLine = readFileSync(env.knownHosts, 'utf8').split('\n').find((l) => l.trim())!;
  const hostKey = keyLine.slice(keyLine.indexOf(' ') + 1);
  const file = join(dir, 'known_hosts');
  writeFileSync(file, at.map((a) => `[${a.address}]:${a.port} ${hostKey}\n`).join(''));
  return file;
}

export interface SimSweepSearch {
  maxQps: number;
  tolerance: number;
  maxProbes: number;
  /** Requests per probe, and the probe's longest duration (e.g. `15s`). */
  requests: number;
  duration: string;
}

/**
 * The simulated engine's base recipe for a sweep. `placement`: the target's fields saying where
 * and how it runs (host, image or process, GPUs), as YAML values.
 */
export function simSweepRecipe(name: string, placement: Record<string, string>, search: SimSweepSearch): string {
  const where = Object.entries(placement).map(([k, v]) => `  ${k}: ${v}\n`).join('');
  return `name: ${name}
target:
  engine: sim
${where}  model: llama-3-8b
  gpuProfile: h100-sxm-80gb
  engineArgs: { maxNumSeqs: 8, maxModelLen: 4096 }
  sim: { scheduler: vllm, timeScale: 1 }
  readyTimeout: 120s
workload:
  api: completions
  lengths:
    prompt: { dist: uniform, min: 128, max: 384 }
    output: { dist: uniform, min: 8, max: 24 }
  arrivals: { process: poisson }
  seed: 5
profile: { promptLengths: [128, 512, 1024], repeats: 2, warmup: 1, minR2: 0, maxRepeatCv: 100 }
search:
  qps: { start: 8, min: 1, max: ${search.maxQps} }
  tolerance: ${search.tolerance}
  maxProbes: ${search.maxProbes}
  kneeWarmupMax: 2s
  probe: { requests: ${search.requests}, minDuration: 2s, duration: ${search.duration}, warmup: 10%, clientTolerance: 250ms }
slo:
  fluidity: { tbtDeadline: 50ms, ttftSlack: 0.3s, minFluidity: 0.9, percentile: 99 }
`;
}
