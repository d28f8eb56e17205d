// Finds what analyze reads: the probes' timelines, the prefill fit and the run's SLO, for a run
// directory or a single timelines.jsonl (whose run is two levels up: <run>/probes/<probe>/).
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { UserError } from '../util/errors.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { sloSchema, type Slo } from '../metrics/slo.ts';
import { RUN_FILES, probeFilesIn, rateInName, runPaths } from '../runDir/layout.ts';
import { readJsonFile } from '../runDir/jsonFiles.ts';
import { readFit as readFitFile } from '../runDir/read.ts';

/** One probe's timelines file. */
export interface ProbeFile {
  /** Probe directory name, e.g. `01-qps-2` (or the file name for a loose file). */
  probe: string;
  /** Rate parsed from the directory name, when it follows `<nn>-qps-<rate>`. */
  qps: number | null;
  path: string;
  /** How messages name the file (relative to the current directory). */
  displayPath: string;
  /** Probe duration from its summary.json, when present. */
  durationS: number | null;
}

/** Everything analyze needs from disk. */
export interface RunFiles {
  kind: 'run' | 'file';
  target: string;
  probes: ProbeFile[];
  fit: PrefillFit | null;
  fitPath: string;
  runSlo: Slo | null;
  runSloSource: string | null;
}

// Paths in messages: relative to the current directory when inside it, else absolute.
const display = (p: string) => {
  const r = relative(process.cwd(), p);
  return r === '' ? '.' : r.startsWith('..') ? resolve(p) : r;
};

/** profile/fit.json validated field by field (messages name it relative to the current directory). */
export function readFit(path: string): PrefillFit | null {
  return readFitFile(path, display(path));
}

// A file that is not JSON is named as the user would type it.
function readJson(path: string): unknown {
  try {
    return readJsonFile(path);
  } catch (err) {
    throw err instanceof UserError ? new UserError(err.message.replace(path, display(path))) : err;
  }
}

// capacity.json keeps the resolved slo; manifest.json the recipe (raw or resolved).
function sloFrom(path: string, pick: (j: Record<string, unknown>) => unknown): Slo | null {
  if (!existsSync(path)) return null;
  const json = readJson(path) as Record<string, unknown>;
  const raw = pick(json ?? {});
  if (raw === undefined || raw === null) return null;
  const values = Object.values(raw as Record<string, unknown>);
  const resolved = values.some((v) => typeof v === 'object' && v !== null && ('maxS' in v || 'tbtDeadlineS' in v));
  if (resolved) return raw as Slo;
  const parsed = sloSchema.safeParse(raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new UserError(`${display(path)}: slo.${first.path.join('.')} ${first.message}`);
  }
  return parsed.data;
}

function runSloOf(runDir: string): { slo: Slo | null; source: string | null } {
  const { capacity: cap, manifest: man } = runPaths(runDir);
  const fromCap = sloFrom(cap, (j) => j.slo);
  if (fromCap) return { slo: fromCap, source: display(cap) };
  const fromMan = sloFrom(man, (j) => (j.recipe as Record<string, unknown> | undefined)?.slo ?? j.slo);
  if (fromMan) return { slo: fromMan, source: display(man) };
  return { slo: null, source: null };
}

function probeDuration(dir: string): number | null {
  const p = probeFilesIn(dir).summary;
  if (!existsSync(p)) return null;
  try {
    const j = readJsonFile(p) as Record<string, Record<string, unknown> | unknown>;
    for (const v of [j.durationS, (j.probe as Record<string, unknown>)?.durationS, (j.result as Record<string, unknown>)?.durationS]) {
      if (typeof v === 'number' && v > 0) return v;
    }
  } catch {
    // A probe summary that cannot be read only loses its duration; the timelines still count.
  }
  return null;
}

function probeFile(path: string, probe: string): ProbeFile {
  return { probe, qps: rateInName(probe), path, displayPath: display(path), durationS: probeDuration(dirname(path)) };
}

/** Locates the probes, fit and SLO for a run directory or a timelines.jsonl path. */
export function locateRunFiles(target: string): RunFiles {
  let st;
  try {
    st = statSync(target);
  } catch {
    throw new UserError(`${target}: no such file or directory (give a run directory or a ${RUN_FILES.timelines})`);
  }
  if (st.isDirectory()) {
    const { probesDir } = runPaths(target);
    const asProbe = probeFilesIn(target).timelines;
    const probes: ProbeFile[] = [];
    if (existsSync(probesDir)) {
      for (const name of readdirSync(probesDir).sort()) {
        const path = probeFilesIn(join(probesDir, name)).timelines;
        if (existsSync(path)) probes.push(probeFile(path, name));
      }
    } else if (existsSync(asProbe)) {
      // A probe directory given directly.
      probes.push(probeFile(asProbe, basename(target)));
    }
    if (probes.length === 0) throw new UserError(`${target}: no ${relative(target, probeFilesIn(join(probesDir, '*')).timelines)} found (is it a run directory?)`);
    const runDir = probes[0].path === asProbe ? join(target, '..', '..') : target;
    const fitPath = runPaths(runDir).fit;
    const { slo, source } = runSloOf(runDir);
    return { kind: 'run', target, probes, fit: readFit(fitPath), fitPath: display(fitPath), runSlo: slo, runSloSource: source };
  }
  const runDir = join(dirname(target), '..', '..');
  const fitPath = runPaths(runDir).fit;
  const fit = readFit(fitPath);
  // Only trust the run's SLO when the file really sits in a run (its fit is there).
  const { slo, source } = fit ? runSloOf(runDir) : { slo: null, source: null };
  const probe = basename(dirname(target)) || basename(target);
  return { kind: 'file', target, probes: [probeFile(target, probe)], fit, fitPath: display(fitPath), runSlo: slo, runSloSource: source };
}
