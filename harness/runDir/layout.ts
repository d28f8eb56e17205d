// Where every file of a run directory lives (SPEC §4). The one module that names them: the
// pipeline, analyze, report, compare and the CLI ask here instead of joining literals, so the
// layout can change in one place. Probe directories are derived from probe index and rate, never
// read back from a file, so nothing a journal or summary says can point a writer outside the run.
import { basename, join } from 'node:path';

/** Files at the top of a run directory and under profile/, as absolute (or runDir-relative) paths. */
export interface RunPaths {
  runDir: string;
  manifest: string;
  events: string;
  serverLog: string;
  capacity: string;
  reportMd: string;
  reportHtml: string;
  /** The recipe as it was when the run started. */
  recipeCopy: string;
  /** Held by the one process writing the run (lock.ts). */
  lock: string;
  profileDir: string;
  prefill: string;
  fit: string;
  /** The twin's iteration model fitted to this run's measurements, with its error. */
  calibration: string;
  probesDir: string;
}

/** File names as people read them in messages and in the report ("capacity.json", "profile/fit.json"). */
export const RUN_FILES = {
  manifest: 'manifest.json',
  events: 'events.jsonl',
  serverLog: 'server.log',
  capacity: 'capacity.json',
  reportMd: 'report.md',
  reportHtml: 'report.html',
  recipeCopy: 'recipe.yaml',
  lock: 'run.lock',
  prefill: 'profile/prefill.jsonl',
  fit: 'profile/fit.json',
  calibration: 'twin-calibration.json',
  timelines: 'timelines.jsonl',
  summary: 'summary.json',
  serverMetrics: 'server-metrics.jsonl',
  probePlan: 'plan.json',
  gpu: 'gpu.jsonl',
} as const;

/** The report files, relative to the run directory. */
export const REPORT_FILES = [RUN_FILES.reportMd, RUN_FILES.reportHtml] as const;

/** Every table of the report as CSV beside it, one file per table (raw numbers, SI units). */
export const REPORT_CSV = {
  probes: 'report-probes.csv',
  probeLatency: 'report-probe-latency.csv',
  latencyByRate: 'report-latency-by-rate.csv',
  capacityBySlo: 'report-capacity-by-slo.csv',
  capacityPerSlo: 'report-capacity-per-slo-measured.csv',
  fluidityByDeadline: 'report-fluidity-by-tbt-deadline.csv',
  tokenAccounting: 'report-token-accounting.csv',
  fitCoefficients: 'report-fit.csv',
  fitLengths: 'report-fit-lengths.csv',
  serverMetrics: 'report-server-metrics.csv',
  host: 'report-host.csv',
  gpus: 'report-gpus.csv',
  gpuTelemetry: 'report-gpu-telemetry.csv',
  cost: 'report-cost.csv',
  provenance: 'report-provenance.csv',
} as const;

export type ReportCsvName = keyof typeof REPORT_CSV;

/** Each report chart's Vega-Lite spec beside the CSVs (data inline), so it can be restyled and redrawn. */
export function reportChartSpec(slug: string): string {
  return `report-chart-${slug}.vl.json`;
}

/** Whether a file name is a report chart's spec (reportChartSpec's pattern). */
export function isReportChartSpec(name: string): boolean {
  return /^report-chart-[a-z0-9-]+\.vl\.json$/.test(name);
}

/** Every top-level path of the run directory `runDir`. */
export function runPaths(runDir: string): RunPaths {
  return {
    runDir,
    manifest: join(runDir, RUN_FILES.manifest),
    events: join(runDir, RUN_FILES.events),
    serverLog: join(runDir, RUN_FILES.serverLog),
    capacity: join(runDir, RUN_FILES.capacity),
    reportMd: join(runDir, RUN_FILES.reportMd),
    reportHtml: join(runDir, RUN_FILES.reportHtml),
    recipeCopy: join(runDir, RUN_FILES.recipeCopy),
    lock: join(runDir, RUN_FILES.lock),
    profileDir: join(runDir, 'profile'),
    prefill: join(runDir, RUN_FILES.prefill),
    fit: join(runDir, RUN_FILES.fit),
    calibration: join(runDir, RUN_FILES.calibration),
    probesDir: join(runDir, 'probes'),
  };
}

/** A sweep directory: its journal, one run directory per configuration under runs/, and its report. */
export const SWEEP_FILES = {
  journal: 'sweep.jsonl',
  runsDir: 'runs',
  reportMd: 'report.md',
  reportHtml: 'report.html',
  reportCsv: 'report.csv',
} as const;

export type SweepPaths = { [K in keyof typeof SWEEP_FILES]: string };

/** Every path of the sweep directory `sweepDir`. */
export function sweepPaths(sweepDir: string): SweepPaths {
  return Object.fromEntries(Object.entries(SWEEP_FILES).map(([k, name]) => [k, join(sweepDir, name)])) as SweepPaths;
}

const QPS_INFIX = '-qps-';

/** Rates to 6 significant digits: readable names (`03-qps-12.5`) that do not drift. */
const rateText = (qps: number) => String(+qps.toPrecision(6));

/** A probe's directory name, `<nn>-qps-<rate>` (SPEC §4). */
export function probeDirName(index: number, qps: number): string {
  if (!Number.isInteger(index) || index < 0) throw new RangeError(`probeDirName: index must be a whole number >= 0, got ${index}`);
  if (!(Number.isFinite(qps) && qps > 0)) throw new RangeError(`probeDirName: qps must be a rate > 0, got ${qps}`);
  return `${String(index).padStart(2, '0')}${QPS_INFIX}${rateText(qps)}`;
}

/** Index and rate a probe directory name encodes, or null for any other name. */
export function parseProbeDirName(name: string): { index: number; qps: number } | null {
  const m = /^(\d+)-qps-(\d+(?:\.\d+)?(?:e[+-]?\d+)?)$/.exec(name);
  if (!m) return null;
  const qps = Number(m[2]);
  return qps > 0 && Number.isFinite(qps) ? { index: Number(m[1]), qps } : null;
}

/** Rate encoded anywhere in a directory name (`01-qps-2`, `01-qps-2.interrupted`), for loose files. */
export function rateInName(name: string): number | null {
  // The whole number, exponent included: `1e999` is no rate, not 1 QPS.
  const m = /-qps-(\d+(?:\.\d+)?(?:e[+-]?\d+)?)(?![\w])/i.exec(name);
  const qps = m ? Number(m[1]) : NaN;
  return qps > 0 && Number.isFinite(qps) ? qps : null;
}

/** The files of one probe directory. */
export interface ProbePaths {
  /** Relative to the run directory: `probes/<nn>-qps-<rate>`. */
  rel: string;
  dir: string;
  timelines: string;
  summary: string;
  serverMetrics: string;
  plan: string;
  gpu: string;
  /** Where the data of a probe that did not finish is moved aside. */
  interruptedRel: string;
  interruptedDir: string;
}

/** Paths of probe `index` at `qps` inside `runDir`, derived from the two numbers alone. */
export function probePaths(runDir: string, index: number, qps: number): ProbePaths {
  const rel = join('probes', probeDirName(index, qps));
  return { ...probeFilesIn(join(runDir, rel)), rel, interruptedRel: `${rel}.interrupted`, interruptedDir: join(runDir, `${rel}.interrupted`) };
}

/** The files inside a probe directory found on disk (analyze, probes of older runs). */
export function probeFilesIn(dir: string): Pick<ProbePaths, 'dir' | 'timelines' | 'summary' | 'serverMetrics' | 'plan' | 'gpu'> {
  return {
    dir,
    timelines: join(dir, RUN_FILES.timelines),
    summary: join(dir, RUN_FILES.summary),
    serverMetrics: join(dir, RUN_FILES.serverMetrics),
    plan: join(dir, RUN_FILES.probePlan),
    gpu: join(dir, RUN_FILES.gpu),
  };
}

/** Whether `path` names a timelines file (analyze accepts one directly). */
export const isTimelinesFile = (path: string) => basename(path) === RUN_FILES.timelines;
