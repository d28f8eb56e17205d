// Finds what analyze reads: the probes' timelines, the prefill fit and the run's SLO, for a run
// directory or a single timelines.jsonl (whose run is two levels up: <run>/probes/<probe>/).
// A run directory may come from someone else: no file is read through a link inside it (a
// timelines.jsonl linked to a credentials file would otherwise be quoted in the problems printed).
// A timelines file named on the command line is the user's own choice and is read as named.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { UserError, describeValue } from '../util/errors.ts';
import type { PrefillFit } from '../metrics/prefill.ts';
import { DEFAULT_FLUIDITY, sloSchema, type Slo } from '../metrics/slo.ts';
import { parseDurationS } from '../util/duration.ts';
import { parseAcceptingBareSeconds } from '../util/zodKit.ts';
import { RUN_FILES, probeFilesIn, rateInName, runPaths } from '../runDir/layout.ts';
import { readJsonFile } from '../runDir/jsonFiles.ts';
import { readFit as readFitFile } from '../runDir/read.ts';
import { TOKEN_ARRIVALS, type TokenArrivals } from '../timeline/record.ts';
import { confinedPath } from '../util/confinedFs.ts';

/** `path` inside `root`, refused (UserError) when it or a directory on the way below `root` is a link. */
const inside = (root: string, path: string) => confinedPath(root, path, { includeLast: true });

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
  /** What the probe's summary.json says about whether its verdict can be used. */
  status: ProbeStatus;
  /** The rate its summary.json says the judged requests' bursts put it at (a property of the plan, not of the SLO). */
  burstQps: number | null;
}

/** Whether a probe's data is evidence at all: its client check, early stop and interruption. */
export interface ProbeStatus {
  hasSummary: boolean;
  /** false: the client's timing error (or token drift, or an engine death) made it invalid; null: not recorded. */
  valid: boolean | null;
  validity: string | null;
  earlyStop: string | null;
  interrupted: boolean;
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
  /** The search's tolerance (capacity.json, else the manifest's plan); null for a standalone probe. */
  tolerance: number | null;
  /** Whether a missing fit may fall back to D_p = TTFT slack (a run or probe directory, as the probe judged itself). */
  slackOnlyWithoutFit: boolean;
  /** The run's search.probe.tokenArrivals (manifest.json), or null when it has none. */
  runArrivals?: TokenArrivals | null;
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
function sloFrom(root: string, path: string, pick: (j: Record<string, unknown>) => unknown): Slo | null {
  if (!existsSync(inside(root, path))) return null;
  const json = readJson(path) as Record<string, unknown>;
  const raw = pick(json ?? {});
  if (raw === undefined || raw === null) return null;
  const values = Object.values(raw as Record<string, unknown>);
  const resolved = values.some((v) => typeof v === 'object' && v !== null && ('maxS' in v || 'tbtDeadlineS' in v));
  if (resolved) {
    const problem = resolvedSloProblem(raw);
    if (problem) throw new UserError(`${display(path)}: ${problem}`);
    return raw as Slo;
  }
  // A manifest's raw recipe may predate units being required: its bare numbers were seconds.
  const parsed = parseAcceptingBareSeconds(sloSchema, raw);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    throw new UserError(`${display(path)}: slo.${first.path.join('.')} ${first.message}`);
  }
  return parsed.data;
}

// A resolved SLO is our own output, but a run directory may have been edited: a TBT deadline of 0
// would divide by zero in the fluidity, so each number is checked against what the recipe allows.
const SLO_BOUNDS: Record<string, [lo: number, hi: number, loOpen: boolean, what: string]> = {
  tbtDeadlineS: [0, Infinity, true, 'seconds > 0'],
  ttftSlackS: [0, Infinity, false, 'seconds >= 0'],
  maxS: [0, Infinity, false, 'seconds >= 0'],
  minFluidity: [0, 1, false, 'a number within 0..1'],
  percentile: [0, 100, true, 'a percentile > 0 and <= 100'],
};

function resolvedSloProblem(raw: unknown): string | null {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return `slo must be an object, got ${describeValue(raw)}`;
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return `slo.${name} must be an object, got ${describeValue(entry)}`;
    for (const [field, v] of Object.entries(entry as Record<string, unknown>)) {
      const bound = SLO_BOUNDS[field];
      if (!bound) continue;
      const [lo, hi, loOpen, what] = bound;
      const ok = typeof v === 'number' && Number.isFinite(v) && (loOpen ? v > lo : v >= lo) && v <= hi;
      if (!ok) return `slo.${name}.${field} must be ${what}, got ${describeValue(v)}`;
    }
  }
  return null;
}

function runSloOf(runDir: string): { slo: Slo | null; source: string | null } {
  const { capacity: cap, manifest: man } = runPaths(runDir);
  const fromCap = sloFrom(runDir, cap, (j) => j.slo);
  if (fromCap) return { slo: fromCap, source: display(cap) };
  const fromMan = sloFrom(runDir, man, (j) => (j.recipe as Record<string, unknown> | undefined)?.slo ?? j.slo);
  if (fromMan) return { slo: fromMan, source: display(man) };
  return { slo: null, source: null };
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function readSummary(dir: string): Json | null {
  const p = probeFilesIn(dir).summary;
  if (!existsSync(inside(dir, p))) return null;
  try {
    return obj(readJsonFile(p));
  } catch {
    // A probe summary that cannot be read only loses its duration and status; the timelines still count.
    return null;
  }
}

function probeDuration(j: Json | null): number | null {
  if (!j) return null;
  for (const v of [j.durationS, obj(j.probe).durationS, obj(j.result).durationS]) {
    if (typeof v === 'number' && v > 0) return v;
  }
  return null;
}

// A run's summary.json says `valid`; a standalone probe's carries the client check and token drift as measured.
function probeStatus(j: Json | null, dirName: string): ProbeStatus {
  const interrupted = dirName.endsWith('.interrupted') || j?.interrupted === true;
  if (!j) return { hasSummary: false, valid: null, validity: null, earlyStop: null, interrupted };
  const client = obj(j.clientHealth ?? j.client);
  const drift = obj(j.tokenDrift);
  let valid: boolean | null = typeof j.valid === 'boolean' ? j.valid : null;
  let validity = str(j.validity) ?? str(client.reason);
  if (valid === null && typeof client.verdict === 'string') valid = client.verdict !== 'invalid';
  if (drift.verdict === 'drift' && typeof j.valid !== 'boolean') {
    valid = false;
    validity = `token counts drift: ${str(drift.note) ?? ''}`;
  }
  if (typeof j.engineDied === 'string' && j.engineDied) {
    valid = false;
    validity = `the engine died: ${j.engineDied}`;
  }
  return { hasSummary: true, valid, validity, earlyStop: str(j.earlyStop), interrupted };
}

function probeFile(path: string, probe: string): ProbeFile {
  const summary = readSummary(dirname(path));
  const bursts = obj(summary?.statistics).burstQps;
  return { probe, qps: rateInName(probe), path, displayPath: display(path), durationS: probeDuration(summary), status: probeStatus(summary, probe), burstQps: typeof bursts === 'number' && bursts > 0 ? bursts : null };
}

// A standalone probe's summary.json judged its probe under the recipe's SLO: that SLO, as written
// there (`recipeSlo`), else rebuilt from the verdicts it lists (thresholds, percentiles, and the
// fluidity deadlines quoted in the SLO text).
function sloFromProbeSummaries(probes: ProbeFile[]): { slo: Slo; source: string } | null {
  for (const p of probes) {
    const j = readSummary(dirname(p.path));
    if (!j) continue;
    const written = obj(j.recipeSlo);
    if (Object.keys(written).length > 0) return { slo: written as Slo, source: `${display(probeFilesIn(dirname(p.path)).summary)} (the recipe's SLO)` };
    const results = (obj(j.metrics).slo as Json | undefined)?.results;
    if (!Array.isArray(results) || results.length === 0) continue;
    const slo: Record<string, unknown> = {};
    const assumed: string[] = [];
    for (const r of results.map(obj)) {
      const name = str(r.name);
      const source = str(r.source) ?? String(name);
      if (typeof r.percentile !== 'number' || typeof r.threshold !== 'number' || !name) continue;
      if (name === 'fluidity') {
        const dd = /tbt ?deadline:?\s*([\d.]+\s*(?:ms|s|m)?)/i.exec(source);
        const slack = /ttft ?slack:?\s*([\d.]+\s*(?:ms|s|m)?)/i.exec(source);
        if (!dd) assumed.push(`TBT deadline not in its text: ${DEFAULT_FLUIDITY.tbtDeadlineS * 1000} ms assumed`);
        if (!slack) assumed.push(`TTFT slack not in its text: ${DEFAULT_FLUIDITY.ttftSlackS} s assumed`);
        slo.fluidity = {
          percentile: r.percentile,
          minFluidity: r.threshold,
          tbtDeadlineS: (dd && parseDurationS(dd[1].replace(/\s+/g, ''), { bareSeconds: true })) || DEFAULT_FLUIDITY.tbtDeadlineS,
          ttftSlackS: (slack && parseDurationS(slack[1].replace(/\s+/g, ''), { bareSeconds: true })) ?? DEFAULT_FLUIDITY.ttftSlackS,
          // fluiditySource spells out only the rule that is not the default.
          tieRule: /a token on its deadline missed/.test(source) ? 'missed' : 'met',
          source,
        };
      } else slo[name] = { percentile: r.percentile, maxS: r.threshold, source };
    }
    const how = ['the SLO its probe was judged by', ...assumed].join('; ');
    if (Object.keys(slo).length > 0) return { slo: slo as Slo, source: `${display(probeFilesIn(dirname(p.path)).summary)} (${how})` };
  }
  return null;
}

/** The token arrivals the run measured (its manifest's plan), or null when it does not say. */
function arrivalsOf(runDir: string): TokenArrivals | null {
  const { manifest } = runPaths(runDir);
  if (!existsSync(manifest)) return null;
  try {
    const v = obj(obj(obj(readJsonFile(manifest)).plan).probe).tokenArrivals;
    return (TOKEN_ARRIVALS as readonly unknown[]).includes(v) ? (v as TokenArrivals) : null;
  } catch {
    return null;
  }
}

function toleranceOf(runDir: string): number | null {
  const { capacity, manifest } = runPaths(runDir);
  for (const [path, pick] of [
    [capacity, (j: Json) => j.tolerance],
    [manifest, (j: Json) => obj(obj(j.plan).search).tolerance],
  ] as const) {
    if (!existsSync(inside(runDir, path))) continue;
    try {
      const v = pick(obj(readJsonFile(path)));
      if (typeof v === 'number' && v > 0) return v;
    } catch {
      // unreadable: the SLO reader names it
    }
  }
  return null;
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
    if (existsSync(inside(target, probesDir))) {
      for (const name of readdirSync(probesDir).sort()) {
        const path = probeFilesIn(join(probesDir, name)).timelines;
        if (existsSync(inside(target, path))) probes.push(probeFile(path, name));
      }
    } else if (existsSync(inside(target, asProbe))) {
      // A probe directory given directly.
      probes.push(probeFile(asProbe, basename(target)));
    }
    if (probes.length === 0) throw new UserError(`${target}: no ${relative(target, probeFilesIn(join(probesDir, '*')).timelines)} found (is it a run directory?)`);
    const runDir = probes[0].path === asProbe ? join(target, '..', '..') : target;
    const fitPath = runPaths(runDir).fit;
    inside(runDir, fitPath);
    let { slo, source } = runSloOf(runDir);
    if (!slo) ({ slo, source } = sloFromProbeSummaries(probes) ?? { slo: null, source: null });
    return { kind: 'run', target, probes, fit: readFit(fitPath), fitPath: display(fitPath), runSlo: slo, runSloSource: source, tolerance: toleranceOf(runDir), slackOnlyWithoutFit: true, runArrivals: arrivalsOf(runDir) };
  }
  const runDir = join(dirname(target), '..', '..');
  const fitPath = runPaths(runDir).fit;
  inside(runDir, fitPath);
  const fit = readFit(fitPath);
  const probe = basename(dirname(target)) || basename(target);
  const file = probeFile(target, probe);
  // Only trust the run's SLO when the file really sits in a run (its fit is there) or in a probe's directory.
  let { slo, source } = fit ? runSloOf(runDir) : { slo: null, source: null };
  if (!slo && file.status.hasSummary) ({ slo, source } = sloFromProbeSummaries([file]) ?? { slo: null, source: null });
  return { kind: 'file', target, probes: [file], fit, fitPath: display(fitPath), runSlo: slo, runSloSource: source, tolerance: null, slackOnlyWithoutFit: file.status.hasSummary, runArrivals: fit ? arrivalsOf(runDir) : null };
}
