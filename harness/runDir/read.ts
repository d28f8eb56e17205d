// Reads the files of a run directory into the shapes of schema.ts, for the report, compare, analyze
// and resume. Runs written by older versions (or by hand, as the committed examples are) carry
// less: what a reader requires is checked and named in a UserError; the rest is converted here.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { UserError, describeValue } from '../util/errors.ts';
import { formatIssues } from '../recipe/problems.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { readJsonFile, readJsonLines } from './jsonFiles.ts';
import { parseProbeDirName, probePaths, type ProbePaths } from './layout.ts';
import type { GpuTelemetrySummary, PrefillLine, ServerMetricsSummary } from './schema.ts';

/** manifest.json as any version wrote it (or a person, for the committed examples): every field may be missing. */
export interface ManifestRead {
  runId?: string;
  recipeFile?: string;
  recipeSha256?: string;
  toolVersion?: string;
  gitSha?: string | null;
  gitDirty?: boolean | null;
  node?: string;
  seed?: number;
  promptNonce?: unknown;
  /** The Slurm allocations of earlier sessions, kept as written (checked as a list where used). */
  slurm?: unknown;
  startedAt?: string;
  endedAt?: string | null;
  status?: string;
  exitReason?: string | null;
  engineUpS?: number;
  host?: Record<string, unknown> | null;
  recipe?: {
    name?: string;
    description?: string;
    target?: { engine?: string; model?: string; gpuProfile?: string; tensorParallel?: number; image?: string; host?: string };
  };
  plan?: { probe?: { clientToleranceS?: number | null; requests?: number; durationLimitS?: number }; probeSeeds?: string; load?: { from?: string }; search?: { probeLength?: unknown } };
}

/** Reads manifest.json; null when absent. */
export function readManifest(path: string): ManifestRead | null {
  if (!existsSync(path)) return null;
  const raw = readJsonFile(path);
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new UserError(`${path}: expected a JSON object, got ${describeValue(raw)}`);
  return raw as ManifestRead;
}

// SPEC §4's required fields of capacity.json; the rest is checked where it is used.
const capacityCore = z.looseObject({
  capacityQps: z.number().finite().min(0),
  slo: z.record(z.string(), z.unknown()),
  probes: z.array(z.looseObject({ qps: z.number().finite().positive() })),
});

/** Reads capacity.json and checks SPEC §4's required fields; UserError naming the file otherwise. */
export function readCapacityFile(path: string): unknown {
  const raw = readJsonFile(path);
  const parsed = capacityCore.safeParse(raw);
  if (!parsed.success) throw new UserError(formatIssues(parsed.error.issues, raw, path).join('\n'));
  return raw;
}

/** profile/fit.json validated field by field; null when absent. */
export function readFit(path: string, displayPath = path): PrefillFit | null {
  if (!existsSync(path)) return null;
  let raw: Record<string, unknown> | null;
  try {
    raw = readJsonFile(path) as Record<string, unknown> | null;
  } catch (err) {
    throw err instanceof UserError ? new UserError(err.message.replace(path, displayPath)) : err;
  }
  const problems: string[] = [];
  for (const k of ['a', 'b', 'c', 'r2', 'n'] as const) {
    if (typeof raw?.[k] !== 'number' || !Number.isFinite(raw[k])) problems.push(`${k} must be a number, got ${describeValue(raw?.[k])}`);
  }
  if (raw?.ttftSlackS !== undefined && !(typeof raw.ttftSlackS === 'number' && raw.ttftSlackS >= 0)) {
    problems.push(`ttftSlackS must be a time >= 0, got ${describeValue(raw.ttftSlackS)}`);
  }
  if (problems.length) throw new UserError(problems.map((p) => `${displayPath}: ${p}`).join('\n'));
  return raw as unknown as PrefillFit;
}

/** The isolated prefills of profile/prefill.jsonl (lines without a prompt length are skipped). */
export function readPrefill(path: string): PrefillLine[] {
  return readJsonLines(path)
    .filter((l) => typeof l.promptTokens === 'number')
    .map((l, i) => ({
      seq: typeof l.seq === 'number' ? l.seq : i,
      promptTokens: l.promptTokens as number,
      warmup: l.warmup === true,
      repeat: typeof l.repeat === 'number' ? l.repeat : null,
      prefillS: typeof l.prefillS === 'number' ? l.prefillS : null,
      status: typeof l.status === 'string' ? l.status : 'ok',
      httpStatus: typeof l.httpStatus === 'number' ? l.httpStatus : null,
      error: typeof l.error === 'string' ? l.error : null,
      usagePromptTokens: typeof l.usagePromptTokens === 'number' ? l.usagePromptTokens : null,
    }));
}

/** Peaks of the engine's gauges over a probe (server-metrics.jsonl) and the growth of its counters. */
export function summarizeServerMetrics(file: string): ServerMetricsSummary | null {
  const rows = readJsonLines(file);
  return rows.length === 0 ? null : summarizeServerMetricRows(rows);
}

/** The same from rows already read: peaks of gauges; growth of counters (null when never exposed, or reset by an engine restart). */
export function summarizeServerMetricRows(rows: readonly Record<string, unknown>[]): Required<ServerMetricsSummary> {
  const values = (key: string) => rows.map((r) => r[key]).filter((v): v is number => typeof v === 'number');
  const max = (key: string) => {
    const v = values(key);
    return v.length ? Math.max(...v) : null;
  };
  const growth = (key: string) => {
    const v = values(key);
    if (v.length === 0) return null;
    return v.every((x, i) => i === 0 || x >= v[i - 1]) ? v[v.length - 1] - v[0] : null;
  };
  const named = rows.map((r) => r.prefixCacheWitness).filter((v): v is string => typeof v === 'string');
  const witness = named.length > 0 ? named[named.length - 1] : null;
  return {
    scrapes: rows.length,
    maxRunning: max('running'),
    maxWaiting: max('waiting'),
    maxKvUsage: max('kvUsage'),
    preemptions: growth('preemptions'),
    promptTokens: growth('promptTokens'),
    generationTokens: growth('generationTokens'),
    cachedPromptTokens: growth('cachedPromptTokens'),
    prefixCacheQueries: growth('prefixCacheQueries'),
    prefixCacheWitness: witness,
  };
}

/** Peaks of a probe's gpu.jsonl; null when the probe sampled no GPU (simulated engine, no nvidia-smi). */
export function summarizeGpu(path: string): GpuTelemetrySummary | null {
  const lines = readJsonLines(path);
  if (lines.length === 0) return null;
  const gpus = lines.flatMap((l) => (Array.isArray(l.gpus) ? (l.gpus as Record<string, unknown>[]) : []));
  const max = (key: string) => {
    const v = gpus.map((g) => g[key]).filter((x): x is number => typeof x === 'number' && Number.isFinite(x));
    return v.length ? Math.max(...v) : null;
  };
  return {
    samples: lines.length,
    maxMemoryUsedMiB: max('memoryUsedMiB'),
    memoryTotalMiB: max('memoryTotalMiB'),
    maxUtilizationPct: max('utilizationPct'),
    maxPowerW: max('powerW'),
  };
}

/**
 * The directory of a finished probe, derived from its index and rate; for rows of older runs that
 * lack an index, the one directory under probes/ whose name encodes that rate. Never a path read
 * from a file, so it stays inside the run. Null when no such directory holds a summary.json.
 */
export function findProbeDir(runDir: string, probe: { index?: number; qps: number }): ProbePaths | null {
  const candidates: ProbePaths[] = [];
  if (typeof probe.index === 'number' && Number.isInteger(probe.index) && probe.index >= 0) candidates.push(probePaths(runDir, probe.index, probe.qps));
  const probesDir = join(runDir, 'probes');
  if (existsSync(probesDir)) {
    const matches = readdirSync(probesDir)
      .map((name) => parseProbeDirName(name))
      .filter((p): p is { index: number; qps: number } => p !== null && Math.abs(p.qps - probe.qps) <= 1e-9 * probe.qps);
    if (matches.length === 1) candidates.push(probePaths(runDir, matches[0].index, matches[0].qps));
  }
  return candidates.find((c) => existsSync(c.summary)) ?? null;
}
