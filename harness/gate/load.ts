// Gathers the gate's evidence from disk: each candidate run directory (through the run-directory
// readers), and the earlier nights of its configuration from the results index, each read from
// the run directory its line names (a line whose directory is gone or says otherwise is rejected
// with its reason, as is a line that is no entry at all).
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { readRunCore } from '../report/loadRun.ts';
import { runPaths } from '../runDir/layout.ts';
import { readCapacityFile, readManifest } from '../runDir/read.ts';
import { indexEntryOf, readIndexLines, resolveEntryDir, runConfigKey, staleEntryReason } from '../runDir/resultsIndex.ts';
import { UserError } from '../util/errors.ts';
import { evidenceOfRun } from './evidence.ts';
import type { RunEvidence } from './decide.ts';

/** A finished run's evidence; UserError naming the file when the directory is not a finished run. */
export function readEvidence(runDir: string): RunEvidence {
  // Read through the path as given, so errors name it as the user typed it; compared absolute.
  const core = readRunCore(runDir);
  const raw = readCapacityFile(runPaths(runDir).capacity);
  return evidenceOfRun({ ...core, runDir: resolve(runDir) }, raw, indexEntryOf(runDir).config);
}

/**
 * A candidate's evidence. A run directory that holds a manifest but no capacity.json (the run
 * failed or was interrupted) is evidence too, refused with the manifest's status: a nightly job
 * reports it instead of stopping on it. A path that is no run directory at all is a UserError.
 */
export function readCandidate(runDir: string): RunEvidence {
  const paths = runPaths(runDir);
  if (existsSync(paths.capacity) || !existsSync(paths.manifest)) return readEvidence(runDir);
  const m = readManifest(paths.manifest);
  const runId = m?.runId ?? basename(resolve(runDir));
  const status = m?.status && m.status !== 'completed' ? m.status : 'failed';
  return {
    runDir: resolve(runDir),
    runId,
    config: runConfigKey(runDir),
    slo: null,
    labels: { recipe: m?.recipe?.name ?? null, engine: m?.recipe?.target?.engine ?? null, model: m?.recipe?.target?.model ?? null, gpu: m?.recipe?.target?.gpuProfile ?? null, image: null },
    status,
    outcome: null,
    reason: m?.exitReason ?? null,
    capacityQps: 0,
    estimateQps: 0,
    lowQps: 0,
    highQps: Infinity,
    intervalSource: 'bracket',
    tolerance: null,
    lowConfidence: null,
    highConfidence: null,
    qpsPerUsdPerHour: null,
    usdPerMillionOutputTokens: null,
    startedAt: m?.startedAt ?? null,
  };
}

/**
 * The index's runs as evidence, each read from its own run directory (intervals and confidences
 * included), and the lines not used, each with its line number and reason.
 */
export function readIndexEvidence(indexFile: string): { runs: RunEvidence[]; rejected: string[] } {
  if (!existsSync(indexFile)) throw new UserError(`--index: ${indexFile} does not exist (build it with: fluidcap compare --reindex <results folder>)`);
  const { entries, rejected: torn } = readIndexLines(indexFile);
  const rejected = torn.map((r) => `${indexFile}:${r.line}: ${r.reason}`);
  const runs: RunEvidence[] = [];
  for (const e of entries) {
    const stale = staleEntryReason(indexFile, e);
    if (stale) {
      rejected.push(`${indexFile}: run ${e.runId} not used: ${stale}`);
      continue;
    }
    const dir = resolveEntryDir(indexFile, e);
    try {
      runs.push(readEvidence(dir));
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      rejected.push(`${indexFile}: run ${e.runId} not used: ${err.message}`);
    }
  }
  return { runs, rejected };
}


