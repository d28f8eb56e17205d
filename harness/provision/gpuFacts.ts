// GPU facts from nvidia-smi's CSV query: what is recorded before launch, sampled into gpu.jsonl
// during probes, and polled until memory is back near idle. Parsing is pure; running it is the
// caller's `exec` (SSH or local).
import { printable, truncate } from '../util/errors.ts';

/** The exact query; `index` first so samples can be matched to the target's GPU ids. */
export const NVIDIA_SMI_ARGS = [
  '--query-gpu=index,name,memory.total,memory.used,driver_version,utilization.gpu,power.draw',
  '--format=csv,noheader,nounits',
];

export interface GpuSample {
  index: number;
  name: string;
  memoryTotalMiB: number;
  memoryUsedMiB: number;
  driverVersion: string;
  utilizationPct: number | null;
  powerW: number | null;
}

export type GpuFacts = { available: true; gpus: GpuSample[] } | { available: false; reason: string };

const numOrNull = (s: string | undefined): number | null => {
  const n = Number(s?.trim());
  return s === undefined || s.trim() === '' || !Number.isFinite(n) ? null : n;
};

/** Parses `nvidia-smi --query-gpu=... --format=csv,noheader,nounits` output; `[N/A]` becomes null. */
export function parseNvidiaSmi(csv: string): GpuSample[] {
  return csv
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .map((line) => {
      const [index, name, total, used, driver, util, power] = line.split(',').map((f) => f.trim());
      return {
        index: Number(index),
        name,
        memoryTotalMiB: numOrNull(total) ?? 0,
        memoryUsedMiB: numOrNull(used) ?? 0,
        driverVersion: driver,
        utilizationPct: numOrNull(util),
        powerW: numOrNull(power),
      };
    })
    .filter((g) => Number.isInteger(g.index));
}

/**
 * What `nvidiaSmi` may be: a program on the PATH or an absolute path, nothing a shell would read
 * as syntax. The value becomes the first word of a command on the GPU host.
 */
export const NVIDIA_SMI_RE = /^(?:[A-Za-z0-9._+-]+|(?:\/[A-Za-z0-9._+-]+)+)$/;

export interface ExecLike {
  (command: string, args: string[]): Promise<{ stdout: string; stderr: string; code: number | null }>;
}

/** Queries nvidia-smi; a host without one (or a failing driver) is a fact, not an error. */
export async function readGpuFacts(exec: ExecLike, nvidiaSmi = 'nvidia-smi'): Promise<GpuFacts> {
  // The inventory refuses such values already; a host built another way is refused here too.
  if (!NVIDIA_SMI_RE.test(nvidiaSmi)) return { available: false, reason: `nvidiaSmi ${JSON.stringify(nvidiaSmi)} is not a program name or an absolute path; not run` };
  const r = await exec(nvidiaSmi, NVIDIA_SMI_ARGS);
  if (r.code === 127) return { available: false, reason: `no nvidia-smi on the host (${nvidiaSmi} not found)` };
  if (r.code !== 0) {
    // The host's own words, cut and made terminal-safe: they are printed as they came.
    const said = printable(truncate((r.stderr || r.stdout).trim().split('\n')[0] ?? '', 200));
    return { available: false, reason: `nvidia-smi failed (exit ${r.code}): ${said}` };
  }
  const gpus = parseNvidiaSmi(r.stdout);
  if (gpus.length === 0) return { available: false, reason: 'nvidia-smi listed no GPUs' };
  return { available: true, gpus };
}

/** GPUs (of `ids`) whose used memory is above the idle threshold. */
export function busyGpus(gpus: GpuSample[], ids: number[], maxUsedMiB: number): GpuSample[] {
  return gpus.filter((g) => ids.includes(g.index) && g.memoryUsedMiB > maxUsedMiB);
}
