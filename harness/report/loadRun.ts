// Reads a run directory into RunReportData: capacity.json (required, its SPEC §4 fields checked),
// then manifest.json, profile/, each probe's summary.json, server-metrics.jsonl and gpu.jsonl, and
// the GPU profile's price. A missing optional file becomes a note in the report, not an error; a
// directory that is not a finished run is a UserError that names the file.
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { UserError } from '../util/errors.ts';
import { loadGpuProfile } from '../catalog/gpus.ts';
import { RUN_FILES, runPaths } from '../runDir/layout.ts';
import { readJsonFile, readJsonLines } from '../runDir/jsonFiles.ts';
import { findProbeDir, readCapacityFile, readManifest, readPrefill, summarizeGpu, summarizeServerMetrics } from '../runDir/read.ts';
import { isTimelineRecord, probeDetail } from './probeDetail.ts';
import { probesAroundCapacity } from './loadSections.ts';
import { DEFAULT_FLUIDITY } from '../metrics/slo.ts';
import { confinedPath, refuseLinksIn } from '../util/confinedFs.ts';
import {
  toReportCapacity,
  toReportFit,
  toReportManifest,
  toReportProbe,
  toServerSamples,
  type GpuPrice,
  type ReportCapacity,
  type ReportManifest,
  type ReportProbe,
  type RunReportData,
} from './runData.ts';

/** A finished run's capacity.json and manifest.json: what `compare` needs and the report starts from. */
export interface RunCore {
  runDir: string;
  runId: string;
  capacity: ReportCapacity;
  manifest: ReportManifest | null;
  notes: string[];
}

/** Reads capacity.json and manifest.json; throws UserError naming the file when it is not a finished run. */
export function readRunCore(runDir: string): RunCore {
  return readCore(runDir).core;
}

function readCore(runDir: string): { core: RunCore; rows: unknown[] } {
  if (!existsSync(runDir)) throw new UserError(`${runDir}: no such directory`);
  if (!statSync(runDir).isDirectory()) throw new UserError(`${runDir}: not a directory (expected a run directory such as results/<runId>)`);
  // What a report reads is never read through a link (its own outputs are replaced, not read).
  const inputs = runPaths(runDir);
  for (const file of [inputs.manifest, inputs.capacity]) confinedPath(runDir, file, { includeLast: true });
  refuseLinksIn(runDir, inputs.profileDir, 1);
  refuseLinksIn(runDir, inputs.probesDir, 2);
  const paths = runPaths(runDir);
  const notes: string[] = [];
  const found = existsSync(paths.manifest) ? optional(() => readManifest(paths.manifest), notes) : null;
  if (!existsSync(paths.capacity)) {
    if (!found) throw new UserError(`${paths.capacity} does not exist: ${runDir} is not a fluidcap run directory (it has no ${RUN_FILES.manifest} either)`);
    const status = found.status ? ` (status: ${found.status}${found.exitReason ? `, ${found.exitReason}` : ''})` : '';
    const hint = found.status === 'interrupted' ? `; continue it with: fluidcap run --resume ${runDir}` : '';
    throw new UserError(`${paths.capacity} does not exist: run ${found.runId ?? basename(runDir)} has no capacity result${status}${hint}`);
  }
  const raw = readCapacityFile(paths.capacity) as { probes: unknown[] };
  if (!existsSync(paths.manifest)) notes.push(`${RUN_FILES.manifest} (host facts, tool version and git sha unknown)`);
  const manifest = found ? toReportManifest(found) : null;
  const capacity = toReportCapacity(raw, manifest?.target ?? null);
  const runId = manifest?.runId ?? capacity.runId ?? basename(resolve(runDir));
  return { core: { runDir, runId, capacity, manifest, notes }, rows: raw.probes };
}

/** Reads everything a report shows. */
export function loadRun(runDir: string): RunReportData {
  const { core, rows } = readCore(runDir);
  const { capacity, manifest, notes } = core;
  const paths = runPaths(runDir);
  const fit = existsSync(paths.fit) ? toReportFit(optional(() => readJsonFile(paths.fit), notes)) : (notes.push(RUN_FILES.fit), null);
  const probes = rows.map((row, i) => loadProbe(runDir, row as { index?: unknown; qps: number; dir?: unknown }, i + 1, notes));
  // Timelines are read only for the few probes the detail charts show, so a large run reports quickly.
  const f = capacity.slo.fluidity;
  for (const p of probesAroundCapacity(probes, capacity)) {
    const found = findProbeDir(runDir, { index: p.index, qps: p.qps });
    if (!found || !existsSync(found.timelines)) continue;
    const records = readJsonLines(found.timelines).filter(isTimelineRecord);
    if (records.length === 0) continue;
    p.detail = probeDetail(records, {
      fit,
      ttftSlackS: f?.ttftSlackS ?? fit?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS,
      tbtDeadlineS: f?.tbtDeadlineS ?? DEFAULT_FLUIDITY.tbtDeadlineS,
      percentile: f?.percentile ?? DEFAULT_FLUIDITY.percentile,
      tieRule: f?.tieRule,
      method: p.percentileMethod === 'linear' ? 'linear' : 'nearest-rank',
      dropCancelled: p.earlyStop !== null,
    });
  }
  const { price, priceNote } = priceOf(capacity.gpuProfile);
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

function loadProbe(runDir: string, row: { index?: unknown; qps: number; dir?: unknown }, position: number, notes: string[]): ReportProbe {
  const index = typeof row.index === 'number' ? row.index : undefined;
  const found = findProbeDir(runDir, { index, qps: row.qps });
  if (!found) {
    notes.push(`${RUN_FILES.summary} of the probe at ${row.qps} QPS${typeof row.dir === 'string' ? ` (${row.dir})` : ''}`);
    return toReportProbe(row, null, position, { serverMetrics: null, gpu: null });
  }
  const summary = optional(() => readJsonFile(found.summary), notes);
  return toReportProbe(row, summary, position, {
    serverMetrics: summarizeServerMetrics(found.serverMetrics),
    gpu: summarizeGpu(found.gpu),
    series: toServerSamples(readJsonLines(found.serverMetrics)),
  });
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
