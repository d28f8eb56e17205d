// Reads a run directory into RunReportData: capacity.json (required, its SPEC §4 fields checked),
// then manifest.json, profile/, each probe's summary.json, server-metrics.jsonl and gpu.jsonl, and
// the GPU profile's price. A missing optional file becomes a note in the report, not an error; a
// directory that is not a finished run is a UserError that names the file.
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { UserError } from '../util/errors.ts';
import { loadGpuProfile } from '../catalog/gpus.ts';
import { RUN_FILES, runPaths } from '../runDir/layout.ts';
import { readJsonFile } from '../runDir/jsonFiles.ts';
import { findProbeDir, readCapacityFile, readManifest, readPrefill, summarizeGpu, summarizeServerMetrics } from '../runDir/read.ts';
import type { ProbeSummary } from '../runDir/schema.ts';
import type { CapacityFile, DeepPartial, GpuPrice, ManifestFile, ProbeData, RunReportData } from './runData.ts';

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
  const paths = runPaths(runDir);
  const notes: string[] = [];
  const manifest = existsSync(paths.manifest) ? optional(() => readManifest(paths.manifest), notes) : null;
  if (!existsSync(paths.capacity)) {
    if (!manifest) throw new UserError(`${paths.capacity} does not exist: ${runDir} is not a fluidcap run directory (it has no ${RUN_FILES.manifest} either)`);
    const status = manifest.status ? ` (status: ${manifest.status}${manifest.exitReason ? `, ${manifest.exitReason}` : ''})` : '';
    const hint = manifest.status === 'interrupted' ? `; continue it with: fluidcap run --resume ${runDir}` : '';
    throw new UserError(`${paths.capacity} does not exist: run ${manifest.runId ?? basename(runDir)} has no capacity result${status}${hint}`);
  }
  const capacity = readCapacityFile(paths.capacity) as CapacityFile;
  if (!existsSync(paths.manifest)) notes.push(`${RUN_FILES.manifest} (host facts, tool version and git sha unknown)`);
  const runId = manifest?.runId ?? capacity.runId ?? basename(resolve(runDir));
  return { runDir, runId, capacity, manifest, notes };
}

/** Reads everything a report shows. */
export function loadRun(runDir: string): RunReportData {
  const core = readRunCore(runDir);
  const { capacity, manifest, notes } = core;
  const paths = runPaths(runDir);
  const fit = existsSync(paths.fit) ? optional(() => readJsonFile(paths.fit) as RunReportData['fit'], notes) : (notes.push(RUN_FILES.fit), null);
  const probes = capacity.probes.map((row, i) => loadProbe(runDir, row, i + 1, notes));
  const gpuProfile = capacity.gpuProfile ?? manifest?.recipe?.target?.gpuProfile ?? null;
  const { price, priceNote } = priceOf(gpuProfile);
  return {
    runId: core.runId,
    capacity,
    manifest,
    fit,
    prefill: readPrefill(paths.prefill),
    probes,
    price,
    priceNote,
    notes,
  };
}

// An optional file that does not parse is left out with a note, not a failed report.
function optional<T>(read: () => T, notes: string[]): T | null {
  try {
    return read();
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    notes.push(`${err.message}; left out`);
    return null;
  }
}

function loadProbe(runDir: string, row: CapacityFile['probes'][number], position: number, notes: string[]): ProbeData {
  const found = findProbeDir(runDir, { index: row.index, qps: row.qps });
  if (!found) {
    notes.push(`${RUN_FILES.summary} of the probe at ${row.qps} QPS${typeof row.dir === 'string' ? ` (${row.dir})` : ''}`);
    return { index: typeof row.index === 'number' ? row.index : position, row, summary: null, gpu: null };
  }
  const summary = optional(() => readJsonFile(found.summary) as DeepPartial<ProbeSummary>, notes);
  if (summary && summary.serverMetrics === undefined) {
    const scraped = summarizeServerMetrics(found.serverMetrics);
    if (scraped) summary.serverMetrics = scraped;
  }
  const index = typeof row.index === 'number' ? row.index : typeof summary?.index === 'number' ? summary.index : position;
  return { index, row, summary, gpu: summarizeGpu(found.gpu) };
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
