// Gathers the gate's evidence from disk: each candidate run directory (through the run-directory
// readers), and the earlier nights of its configuration from the results index.
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { readRunCore } from '../report/loadRun.ts';
import { runPaths } from '../runDir/layout.ts';
import { readCapacityFile, readManifest } from '../runDir/read.ts';
import { indexEntryOf, readIndex, resolveEntryDir, runConfigKey } from '../runDir/resultsIndex.ts';
import { UserError } from '../util/errors.ts';
import { evidenceOfEntry, evidenceOfRun } from './evidence.ts';
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
    labels: { recipe: m?.recipe?.name ?? null, engine: m?.recipe?.target?.engine ?? null, model: m?.recipe?.target?.model ?? null, gpu: m?.recipe?.target?.gpuProfile ?? null, image: null },
    status,
    outcome: null,
    reason: m?.exitReason ?? null,
    capacityQps: 0,
    lowQps: 0,
    highQps: Infinity,
    tolerance: null,
    lowConfidence: null,
    highConfidence: null,
    qpsPerUsdPerHour: null,
    usdPerMillionOutputTokens: null,
    startedAt: m?.startedAt ?? null,
  };
}

/** The index's runs as evidence, each with its absolute run directory. */
export function readIndexEvidence(indexFile: string): RunEvidence[] {
  if (!existsSync(indexFile)) throw new UserError(`--index: ${indexFile} does not exist (build it with: fluidcap compare --reindex <results folder>)`);
  return readIndex(indexFile).map((e) => evidenceOfEntry(e, resolveEntryDir(indexFile, e)));
}

