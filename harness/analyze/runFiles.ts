// Finds what analyze reads: the probes' timelines, the prefill fit and the run's SLO, for a run
// directory or a single timelines.jsonl (whose run is two levels up: <run>/probes/<probe>/).
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { sloSchema, type Slo } from '../metrics/slo.ts';

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

function readJson(path: string): unknown {
  const text = readFileSync(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UserError(`${display(path)}: not valid JSON (${(err as Error).message})`);
  }
}

/** profile/fit.json validated field by field. */
export function readFit(path: string): PrefillFit | null {
  if (!existsSync(path)) return null;
  const raw = readJson(path) as Record<string, unknown>;
  const problems: string[] = [];
  for (const k of ['a', 'b', 'c', 'r2', 'n'] as const) {
    if (typeof raw?.[k] !== 'number' || !Number.isFinite(raw[k])) problems.push(`${k} must be a number, got ${describeValue(raw?.[k])}`);
  }
  if (raw?.ttftSlackS !== undefined && !(typeof raw.ttftSlackS === 'number' && raw.ttftSlackS >= 0)) {
    problems.push(`ttftSlackS must be a time >= 0, got ${describeValue(raw.ttftSlackS)}`);
  }
  if (problems.length) throw new UserError(problems.map((p) => `${display(path)}: ${p}`).join('\n'));
  return raw as unknown as PrefillFit;
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
  const cap = join(runDir, 'capacity.json');
  const fromCap = sloFrom(cap, (j) => j.slo);
  if (fromCap) return { slo: fromCap, source: display(cap) };
  const man = join(runDir, 'manifest.json');
  const fromMan = sloFrom(man, (j) => (j.recipe as Record<string, unknown> | undefined)?.slo ?? j.slo);
  if (fromMan) return { slo: fromMan, source: display(man) };
  return { slo: null, source: null };
}

function probeDuration(dir: string): number | null {
  const p = join(dir, 'summary.json');
  if (!existsSync(p)) return null;
  try {
    const j = JSON.parse(readFileSync(p, 'utf8')) as Record<string, Record<string, unknown> | unknown>;
    for (const v of [j.durationS, (j.probe as Record<string, unknown>)?.durationS, (j.result as Record<string, unknown>)?.durationS]) {
      if (typeof v === 'number' && v > 0) return v;
    }
  } catch {
    // A probe summary that cannot be read only loses its duration; the timelines still count.
  }
  return null;
}

const QPS_RE = /-qps-(\d+(?:\.\d+)?)/;

function probeFile(path: string, probe: string): ProbeFile {
  const m = QPS_RE.exec(probe);
  return { probe, qps: m ? Number(m[1]) : null, path, displayPath: display(path), durationS: probeDuration(dirname(path)) };
}

/** Locates the probes, fit and SLO for a run directory or a timelines.jsonl path. */
export function locateRunFiles(target: string): RunFiles {
  let st;
  try {
    st = statSync(target);
  } catch {
    throw new UserError(`${target}: no such file or directory (give a run directory or a timelines.jsonl)`);
  }
  if (st.isDirectory()) {
    const probesDir = join(target, 'probes');
    const probes: ProbeFile[] = [];
    if (existsSync(probesDir)) {
      for (const name of readdirSync(probesDir).sort()) {
        const path = join(probesDir, name, 'timelines.jsonl');
        if (existsSync(path)) probes.push(probeFile(path, name));
      }
    } else if (existsSync(join(target, 'timelines.jsonl'))) {
      // A probe directory given directly.
      probes.push(probeFile(join(target, 'timelines.jsonl'), basename(target)));
    }
    if (probes.length === 0) throw new UserError(`${target}: no probes/*/timelines.jsonl found (is it a run directory?)`);
    const runDir = probes[0].path === join(target, 'timelines.jsonl') ? join(target, '..', '..') : target;
    const fitPath = join(runDir, 'profile', 'fit.json');
    const { slo, source } = runSloOf(runDir);
    return { kind: 'run', target, probes, fit: readFit(fitPath), fitPath: display(fitPath), runSlo: slo, runSloSource: source };
  }
  const runDir = join(dirname(target), '..', '..');
  const fitPath = join(runDir, 'profile', 'fit.json');
  const fit = readFit(fitPath);
  // Only trust the run's SLO when the file really sits in a run (its fit is there).
  const { slo, source } = fit ? runSloOf(runDir) : { slo: null, source: null };
  const probe = basename(dirname(target)) || basename(target);
  return { kind: 'file', target, probes: [probeFile(target, probe)], fit, fitPath: display(fitPath), runSlo: slo, runSloSource: source };
}
