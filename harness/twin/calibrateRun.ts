// Reads what a run measured (profile/fit.json, profile/prefill.jsonl, the first finished probe's
// timelines), calibrates the twin to it (calibrate.ts) and records the result in the run directory
// (twin-calibration.json). The I/O half of the calibration; the fit itself is pure.
import { existsSync, readdirSync } from 'node:fs';
import { relative } from 'node:path';
import { parseProbeDirName, probePaths, runPaths } from '../runDir/layout.ts';
import { readFit, readPrefill } from '../runDir/read.ts';
import { writeJsonFile } from '../runDir/jsonFiles.ts';
import { readTimelines } from '../timeline/reader.ts';
import type { TimelineRecord } from '../timeline/record.ts';
import type { CalibrationFile } from '../runDir/schema.ts';
import { modelledIterationS, type EngineConfig } from '../sim/engine.ts';
import { calibrate, describeCalibration } from './calibrate.ts';
import { rehearse, twinEngineOf, UncalibratedTwin, type Rehearsal } from './rehearse.ts';
import type { Recipe } from '../recipe/parse.ts';
import type { RunPlan } from '../capacity/runPlan.ts';

export { calibratedEngine } from './calibrate.ts';

/** The lowest-numbered probe of the run that finished (has its summary.json), or null. */
export function firstFinishedProbe(runDir: string): { timelines: string; rel: string } | null {
  const dir = runPaths(runDir).probesDir;
  if (!existsSync(dir)) return null;
  const probes = readdirSync(dir)
    .map((name) => parseProbeDirName(name))
    .filter((p): p is { index: number; qps: number } => p !== null)
    .sort((x, y) => x.index - y.index)
    .map((p) => probePaths(runDir, p.index, p.qps));
  const done = probes.find((p) => existsSync(p.summary) && existsSync(p.timelines));
  return done ? { timelines: done.timelines, rel: relative(runDir, done.timelines) } : null;
}

/** Valid records of a timelines file (a corrupt line is skipped: the rest still calibrates). */
export async function readRecords(path: string): Promise<TimelineRecord[]> {
  const out: TimelineRecord[] = [];
  for await (const line of readTimelines(path)) if (line.record) out.push(line.record);
  return out;
}

export interface CalibrateRunOptions {
  /** The twin before calibration, to record how far off it was. */
  uncalibrated?: EngineConfig;
  /** Write twin-calibration.json (default true). */
  write?: boolean;
}

/** Calibrates the twin to the run in `runDir`; null when it has no prefill profile yet. */
export async function calibrateRunDir(runDir: string, opts: CalibrateRunOptions = {}): Promise<CalibrationFile | null> {
  const paths = runPaths(runDir);
  const fit = readFit(paths.fit);
  if (!fit) return null;
  const prefills = existsSync(paths.prefill)
    ? readPrefill(paths.prefill)
        .filter((p) => !p.warmup && p.status === 'ok' && p.prefillS !== null)
        .map((p) => ({ promptTokens: p.promptTokens, prefillS: p.prefillS! }))
    : [];
  const probe = firstFinishedProbe(runDir);
  const records = probe ? await readRecords(probe.timelines) : null;
  const ok = records?.filter((r) => r.status === 'ok') ?? [];
  const meanKvTokens = ok.length ? ok.reduce((s, r) => s + r.promptTokens + r.outputTokens / 2, 0) / ok.length : undefined;
  const engine = opts.uncalibrated;
  const calibration = calibrate({
    fit,
    prefills,
    records,
    source: { fit: relative(runDir, paths.fit), prefill: relative(runDir, paths.prefill), probe: probe?.rel ?? null },
    uncalibrated: engine ? (shape) => modelledIterationS(engine, shape) : undefined,
    meanKvTokens,
  });
  if (opts.write !== false) writeJsonFile(runDir, paths.calibration, calibration);
  return calibration;
}

/**
 * `run --rehearse` once a probe has been measured: calibrates the recipe's twin to the run in
 * `runDir`, logs the calibration, reruns the twin's search on the calibrated model (judged with
 * the run's own D_p fit) and returns that search. Null when the run has no profile yet.
 */
export async function recalibratedRehearsal(recipe: Recipe, plan: RunPlan, runDir: string, log: (line: string) => void): Promise<{ calibration: CalibrationFile; rehearsal: Rehearsal } | null> {
  let uncalibrated: EngineConfig | undefined;
  try {
    uncalibrated = twinEngineOf(recipe);
  } catch (err) {
    if (!(err instanceof UncalibratedTwin)) throw err;
  }
  const calibration = await calibrateRunDir(runDir, { uncalibrated });
  if (!calibration) return null;
  log(describeCalibration(calibration));
  const rehearsal = rehearse(recipe, plan, { calibration, fit: readFit(runPaths(runDir).fit) ?? undefined });
  return { calibration, rehearsal };
}
