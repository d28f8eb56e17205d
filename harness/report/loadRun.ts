// Reads a run directory into RunReportData: capacity.json (required, its SPEC §4 fields checked),
// then manifest.json, profile/, each probe's summary.json, server-metrics.jsonl and gpu.jsonl, and
// the GPU profile's price. A missing optional file becomes a note in the report, not an error; a
// directory that is not a finished run is a UserError that names the file.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, join, relative, resolve, isAbsolute } from 'node:path';
import { z } from 'zod';
import { UserError } from '../util/errors.ts';
import { formatIssues } from '../recipe/problems.ts';
import { loadGpuProfile } from '../catalog/gpus.ts';
import { probeDirName, summarizeServerMetrics, type ProbeSummary } from '../capacity/probeStep.ts';
import type {
  CapacityFile,
  DeepPartial,
  GpuPrice,
  GpuTelemetrySummary,
  ManifestFile,
  PrefillPointLine,
  ProbeData,
  RunReportData,
} from './runData.ts';

// SPEC §4's required fields; everything else passes through untouched (older runs carry less).
const capacitySchema = z.looseObject({
  capacityQps: z.number().finite().min(0),
  slo: z.record(z.string(), z.unknown()),
  probes: z.array(z.looseObject({ qps: z.number().finite().positive() })),
});

/** A finished run's capacity.json and manifest.json: what `compare` needs and the report starts from. */
export interface RunCore {
  runDir: string;
  runId: string;
  capacity: CapacityFile;
  manifest: ManifestFile | null;
  notes: string[];
}

/** Reads capacity.json and manifest.json; throws UserError naming the file when it is not a finished run. */
export function readRunCore(runDir: string): RunCore {
  if (!existsSync(runDir)) throw new UserError(`${runDir}: no such directory`);
  if (!statSync(runDir).isDirectory()) throw new UserError(`${runDir}: not a directory (expected a run directory such as results/<runId>)`);
  const notes: string[] = [];
  const manifestPath = join(runDir, 'manifest.json');
  const manifest = existsSync(manifestPath) ? readOptionalJson<ManifestFile>(manifestPath, notes) : null;
  const capPath = join(runDir, 'capacity.json');
  if (!existsSync(capPath)) {
    if (!manifest) throw new UserError(`${capPath} does not exist: ${runDir} is not a fluidcap run directory (it has no manifest.json either)`);
    const status = manifest.status ? ` (status: ${manifest.status}${manifest.exitReason ? `, ${manifest.exitReason}` : ''})` : '';
    const hint = manifest.status === 'interrupted' ? `; continue it with: fluidcap run --resume ${runDir}` : '';
    throw new UserError(`${capPath} does not exist: run ${manifest.runId ?? basename(runDir)} has no capacity result${status}${hint}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(capPath, 'utf8'));
  } catch (err) {
    throw new UserError(`${capPath}: not valid JSON (${(err as Error).message})`);
  }
  const parsed = capacitySchema.safeParse(raw);
  if (!parsed.success) throw new UserError(formatIssues(parsed.error.issues, raw, capPath).join('\n'));
  const capacity = raw as CapacityFile;
  if (!existsSync(manifestPath)) notes.push('manifest.json (host facts, tool version and git sha unknown)');
  const runId = manifest?.runId ?? capacity.runId ?? basename(resolve(runDir));
  return { runDir, runId, capacity, manifest, notes };
}

/** Reads everything a report shows. */
export function loadRun(runDir: string): RunReportData {
  const core = readRunCore(runDir);
  const { capacity, manifest, notes } = core;
  const fitPath = join(runDir, 'profile', 'fit.json');
  const fit = existsSync(fitPath) ? readOptionalJson<RunReportData['fit']>(fitPath, notes) : (notes.push('profile/fit.json'), null);
  const probes = capacity.probes.map((row, i) => loadProbe(runDir, row, i + 1, notes));
  const gpuProfile = capacity.gpuProfile ?? manifest?.recipe?.target?.gpuProfile ?? null;
  const { price, priceNote } = priceOf(gpuProfile);
  return {
    runId: core.runId,
    capacity,
    manifest,
    fit,
    prefill: readPrefill(join(runDir, 'profile', 'prefill.jsonl')),
    probes,
    price,
    priceNote,
    notes,
  };
}

function readOptionalJson<T>(path: string, notes: string[]): T | null {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as T;
  } catch (err) {
    notes.push(`${path} is not valid JSON (${(err as Error).message}); left out`);
    return null;
  }
}

// Lines of a JSONL file; a torn last line (a crash mid-write) is skipped.
function readJsonLines(path: string): Record<string, unknown>[] {
  if (!existsSync(path)) return [];
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    try {
      const v = JSON.parse(line) as unknown;
      if (v && typeof v === 'object') out.push(v as Record<string, unknown>);
    } catch {
      // torn line
    }
  }
  return out;
}

function readPrefill(path: string): PrefillPointLine[] {
  return readJsonLines(path)
    .filter((l) => typeof l.promptTokens === 'number')
    .map((l) => ({
      promptTokens: l.promptTokens as number,
      prefillS: typeof l.prefillS === 'number' ? l.prefillS : null,
      warmup: l.warmup === true,
      status: typeof l.status === 'string' ? l.status : 'ok',
    }));
}

// The probe's folder: as capacity.json names it, else the pipeline's naming; never outside the run.
function probeDir(runDir: string, row: CapacityFile['probes'][number]): string | null {
  const candidates: string[] = [];
  if (typeof row.dir === 'string') candidates.push(row.dir);
  if (typeof row.index === 'number') candidates.push(join('probes', probeDirName(row.index, row.qps)));
  const probesDir = join(runDir, 'probes');
  if (existsSync(probesDir)) {
    const suffix = `-qps-${+row.qps.toPrecision(6)}`;
    const match = readdirSync(probesDir).filter((n) => n.endsWith(suffix));
    if (match.length === 1) candidates.push(join('probes', match[0]));
  }
  for (const c of candidates) {
    const rel = relative(runDir, join(runDir, c));
    if (rel.startsWith('..') || isAbsolute(rel)) continue;
    if (existsSync(join(runDir, c, 'summary.json'))) return join(runDir, c);
  }
  return null;
}

function loadProbe(runDir: string, row: CapacityFile['probes'][number], position: number, notes: string[]): ProbeData {
  const dir = probeDir(runDir, row);
  if (!dir) {
    notes.push(`summary.json of the probe at ${row.qps} QPS${typeof row.dir === 'string' ? ` (${row.dir})` : ''}`);
    return { index: typeof row.index === 'number' ? row.index : position, row, summary: null, gpu: null };
  }
  const summary = readOptionalJson<DeepPartial<ProbeSummary>>(join(dir, 'summary.json'), notes);
  if (summary && summary.serverMetrics === undefined) {
    const scraped = summarizeServerMetrics(join(dir, 'server-metrics.jsonl'));
    if (scraped) summary.serverMetrics = scraped;
  }
  const index = typeof row.index === 'number' ? row.index : typeof summary?.index === 'number' ? summary.index : position;
  return { index, row, summary, gpu: summarizeGpu(join(dir, 'gpu.jsonl')) };
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

/** The GPU profile's price with its source and date, or why there is none. */
export function priceOf(gpuProfile: string | null): { price: GpuPrice | null; priceNote: string | null } {
  if (!gpuProfile) return { price: null, priceNote: 'the run names no GPU profile' };
  try {
    const p = loadGpuProfile(gpuProfile).price;
    if (!p) return { price: null, priceNote: `gpu-profiles/${gpuProfile}.yaml has no price` };
    return { price: { usdPerGpuHour: p.usdPerGpuHour, source: p.source, date: String(p.date) }, priceNote: null };
  } catch (err) {
    if (err instanceof UserError) return { price: null, priceNote: err.message };
    throw err;
  }
}
