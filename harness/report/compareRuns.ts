// `fluidcap compare`'s table: runs side by side (engine, model, GPU, capacity, fluid token rate,
// cost per million output tokens, git sha), each one's change against a baseline run. Whether a
// change is a regression is the gate's decision (harness/gate/decide.ts), which weighs brackets
// and noise; this table only shows the figures. Pure: run data in, rows out.
import type { RunCore } from './loadRun.ts';
import { NONE, fmtChange, fmtNum, fmtUsd } from './format.ts';

/** One run's comparable figures. */
export interface RunRow {
  runDir: string;
  runId: string;
  engine: string | null;
  model: string | null;
  gpu: string | null;
  capacityQps: number;
  fluidTokensPerS: number | null;
  usdPerMillionOutputTokens: number | null;
  gitSha: string | null;
}

/** A row with its relative changes against the baseline (null without one, or for the baseline itself). */
export interface ComparedRow extends RunRow {
  baseline: boolean;
  capacityChange: number | null;
  fluidRateChange: number | null;
  costChange: number | null;
}

/** The runs side by side, as `--json` prints them under `table`. */
export interface Comparison {
  baselineRunId: string | null;
  runs: ComparedRow[];
}

/** The comparable figures of a finished run (capacity.json first, the manifest for what it lacks). */
export function runRowOf(core: RunCore): RunRow {
  const c = core.capacity;
  const m = core.manifest;
  const gpu = m?.host?.gpu;
  const smiName = gpu?.available ? gpu.gpus[0]?.name ?? null : null;
  const gpuName = c.gpuProfile ?? smiName;
  const count = c.gpuCount;
  return {
    runDir: core.runDir,
    runId: core.runId,
    engine: m?.target.engine ?? null,
    model: m?.target.model ?? null,
    gpu: gpuName === null ? null : count && count > 0 ? `${gpuName} × ${count}` : gpuName,
    capacityQps: c.capacityQps,
    fluidTokensPerS: c.fluidRate?.tokensPerS ?? null,
    usdPerMillionOutputTokens: c.cost?.usdPerMillionOutputTokens ?? null,
    gitSha: m?.gitSha ?? null,
  };
}

const change = (v: number | null, base: number | null): number | null => (v === null || base === null || base === 0 ? null : v / base - 1);

/** Runs with their changes against an optional baseline (listed first). */
export function compareRuns(runs: RunRow[], opts: { baseline?: RunRow | null } = {}): Comparison {
  const base = opts.baseline ?? null;
  const others = base ? runs.filter((r) => r.runDir !== base.runDir) : runs;
  const rows: ComparedRow[] = [];
  if (base) rows.push({ ...base, baseline: true, capacityChange: null, fluidRateChange: null, costChange: null });
  for (const r of others) {
    rows.push({
      ...r,
      baseline: false,
      capacityChange: base ? change(r.capacityQps, base.capacityQps) : null,
      fluidRateChange: base ? change(r.fluidTokensPerS, base.fluidTokensPerS) : null,
      costChange: base ? change(r.usdPerMillionOutputTokens, base.usdPerMillionOutputTokens) : null,
    });
  }
  return { baselineRunId: base?.runId ?? null, runs: rows };
}

// Rows padded into columns: text left-aligned, figures right-aligned.
function columns(rows: string[][], numeric: boolean[]): string[] {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => [...r[i]].length)));
  return rows.map((r) => r.map((cell, i) => (numeric[i] ? cell.padStart(widths[i] + cell.length - [...cell].length) : cell.padEnd(widths[i] + cell.length - [...cell].length))).join('  ').trimEnd());
}

/** The side-by-side table, for the terminal. */
export function formatComparison(c: Comparison): string[] {
  const withBase = c.baselineRunId !== null;
  const head = ['run', 'engine', 'model', 'GPU', 'capacity QPS', ...(withBase ? ['Δ'] : []), 'fluid tok/s', ...(withBase ? ['Δ'] : []), '$/M out tok', ...(withBase ? ['Δ'] : []), 'git sha'];
  const numeric = head.map((h) => h === 'Δ' || h.includes('QPS') || h.includes('tok'));
  const body = c.runs.map((r) => [
    `${r.runId}${r.baseline ? ' (baseline)' : ''}`,
    r.engine ?? NONE,
    r.model ?? NONE,
    r.gpu ?? NONE,
    fmtNum(r.capacityQps),
    ...(withBase ? [r.baseline ? '' : fmtChange(r.capacityChange)] : []),
    fmtNum(r.fluidTokensPerS),
    ...(withBase ? [r.baseline ? '' : fmtChange(r.fluidRateChange)] : []),
    fmtUsd(r.usdPerMillionOutputTokens),
    ...(withBase ? [r.baseline ? '' : fmtChange(r.costChange)] : []),
    r.gitSha ? r.gitSha.slice(0, 10) : NONE,
  ]);
  return columns([head, ...body], numeric);
}
