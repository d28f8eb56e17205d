// Loads GPU profiles from gpu-profiles/*.yaml: used by the simulated engine's cost model, by
// provisioning (matching nvidia-smi names to profiles) and by reports (hourly price).
import { readFileSync, readdirSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { describeValue, UserError } from '../util/errors.ts';
import { gpuProfileSchema, type GpuProfile } from './gpuProfile.ts';

export type { GpuProfile } from './gpuProfile.ts';

// The repository's gpu-profiles/ folder, found from this file so it works from any cwd and in the image.
export const DEFAULT_GPU_PROFILES_DIR = fileURLToPath(new URL('../../gpu-profiles/', import.meta.url));

// Names of the profiles available in a folder (file names without .yaml), sorted.
export function listGpuProfiles(dir: string = DEFAULT_GPU_PROFILES_DIR): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort();
}

// Reads and validates one profile; every problem names the file, the field and the value.
export function loadGpuProfile(name: string, dir: string = DEFAULT_GPU_PROFILES_DIR): GpuProfile {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new UserError(`unknown GPU profile ${describeValue(name)}; known: ${listGpuProfiles(dir).join(', ')}`);
  }
  const file = join(dir, `${name}.yaml`);
  if (!existsSync(file)) {
    throw new UserError(`unknown GPU profile ${describeValue(name)}; known: ${listGpuProfiles(dir).join(', ')}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new UserError(`${file}: not valid YAML: ${(err as Error).message}`);
  }
  const parsed = gpuProfileSchema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => {
      const path = issue.path.join('.') || '(top level)';
      return `${file}: ${path} ${issue.message}, got ${describeValue(valueAt(raw, issue.path))}`;
    });
    throw new UserError(problems.join('\n'));
  }
  if (parsed.data.name !== name) {
    throw new UserError(`${file}: name must match the file name ${JSON.stringify(name)}, got ${describeValue(parsed.data.name)}`);
  }
  return parsed.data;
}

// Every profile in a folder, loaded and validated.
export function loadAllGpuProfiles(dir: string = DEFAULT_GPU_PROFILES_DIR): GpuProfile[] {
  return listGpuProfiles(dir).map((n) => loadGpuProfile(n, dir));
}

// Maps what `nvidia-smi --query-gpu=name` prints on a host to a profile (case and spacing ignored); null when none.
export function findGpuProfileBySmiName(smiName: string, dir: string = DEFAULT_GPU_PROFILES_DIR): GpuProfile | null {
  const norm = (s: string) => s.trim().replace(/\s+/g, ' ').toLowerCase();
  const wanted = norm(smiName);
  return loadAllGpuProfiles(dir).find((p) => norm(p.nvidiaSmiName) === wanted) ?? null;
}

function valueAt(root: unknown, path: PropertyKey[]): unknown {
  let v: unknown = root;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key];
  }
  return v;
}
