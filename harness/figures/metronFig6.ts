// Metron Fig. 6: the capacity of vLLM and Sarathi-Serve under four SLO definitions (P99 TBT, P50
// TPOT, P99 TPOT, and P99 fluidity ≥ 0.9), each judged over the same probes on a grid of rates, and
// the distribution of per-request deadline-miss rates and the deadline-miss rate by target TBT at
// each system's fluidity capacity (Fig. 6b: Sarathi-Serve misses fewer deadlines). Each SLO
// definition's capacity comes from the per-SLO search's own rule (capacity/perSloSearch.ts) with the
// grid's probes as its evidence: the highest passing rate below the lowest failing one, the
// bracket's ends being grid rates. Pure: request metrics in, files out.
import type { Chart } from '../report/doc.ts';
import { toCsv } from '../report/csv.ts';
import type { RequestMetrics } from '../metrics/request.ts';
import type { Slo } from '../metrics/slo.ts';
import { evaluateSlo } from '../metrics/sloCheck.ts';
import { DEADLINE_GRID_FACTORS, atDeadline } from '../report/probeDetail.ts';
import { perSloResults, type PerSloProbe } from '../capacity/perSloSearch.ts';
import { judgeFigure, type FigurePaper } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

export interface Fig6Probe {
  /** Rate in the paper's time. */
  rateQps: number;
  /** Metrics of the evaluated requests, judged with the time-scaled deadlines. */
  metrics: RequestMetrics[];
}

export interface Fig6System {
  key: 'vllm' | 'sarathi';
  label: string;
  probes: Fig6Probe[];
}

export interface Fig6Input {
  systems: Fig6System[];
  timeScale: number;
  /** TBT deadline in the paper's time (every SLO below uses it). */
  tbtDeadlineS: number;
  ttftSlackS: number;
  /** The paper's entries for this figure, judged against ours. */
  paper: FigurePaper;
  setup: string[];
}

/** The four SLO definitions, keyed as paperNumbers.json keys them, with thresholds in real time. */
export function fig6Slos(tbtDeadlineS: number, ttftSlackS: number, timeScale: number): { key: string; short: string; label: string; slo: Slo }[] {
  const d = tbtDeadlineS * timeScale;
  const ms = `${+(tbtDeadlineS * 1000).toPrecision(4)} ms`;
  return [
    { key: 'tbtP99', short: 'TBT P99', label: `TBT P99 ≤ ${ms}`, slo: { tbt: { percentile: 99, maxS: d, source: `tbt p99 <= ${ms}` } } },
    { key: 'tpotP50', short: 'TPOT P50', label: `TPOT P50 ≤ ${ms}`, slo: { tpot: { percentile: 50, maxS: d, source: `tpot p50 <= ${ms}` } } },
    { key: 'tpotP99', short: 'TPOT P99', label: `TPOT P99 ≤ ${ms}`, slo: { tpot: { percentile: 99, maxS: d, source: `tpot p99 <= ${ms}` } } },
    {
      key: 'fluidity',
      short: 'fluidity P99',
      label: `fluidity P99 ≥ 0.9 @ ${ms}`,
      slo: { fluidity: { tbtDeadlineS: d, ttftSlackS: ttftSlackS * timeScale, minFluidity: 0.9, percentile: 99, source: `fluidity p99 >= 0.9 at ${ms}` } },
    },
  ];
}

/**
 * One definition's capacity on the grid, as the per-SLO search judges evidence: the highest passing
 * rate below the lowest failing one (null when none passed), that failing rate, and how the search
 * would have ended on these probes (at-least-max, below-min, or max-probes: the grid ran out).
 */
export function gridSearchResult(verdicts: readonly { rateQps: number; passed: boolean }[]): { capacityQps: number | null; failQps: number | null; outcome: string; reason: string } {
  if (verdicts.length === 0) return { capacityQps: null, failQps: null, outcome: 'no-probes', reason: 'no rate of the grid was probed' };
  const rates = verdicts.map((v) => v.rateQps);
  const probes: PerSloProbe[] = verdicts.map((v) => ({ qps: v.rateQps, verdicts: { slo: v.passed ? 'pass' : 'fail' }, untrusted: false, note: null }));
  const [r] = perSloResults(
    { qps: { startQps: Math.min(...rates), minQps: Math.min(...rates), maxQps: Math.max(...rates) }, tolerance: 0 },
    [{ name: 'slo', slo: {}, source: 'slo' }],
    probes,
  );
  return { capacityQps: r.bracket.passQps, failQps: r.bracket.failQps, outcome: r.outcome, reason: r.reason };
}

/** The capacity and the failing rate above it (gridSearchResult without the outcome). */
export function gridCapacity(verdicts: readonly { rateQps: number; passed: boolean }[]): { capacityQps: number | null; failQps: number | null } {
  const { capacityQps, failQps } = gridSearchResult(verdicts);
  return { capacityQps, failQps };
}

/** Per-request share of deadlines missed, as an empirical CDF ([miss rate, fraction of requests ≤ it]); failed requests count as 1. */
export function missRateCdf(metrics: readonly RequestMetrics[]): [number, number][] {
  const rates = metrics.map((m) => (!m.succeeded ? 1 : m.deadlinesTotal > 0 ? m.deadlinesMissed / m.deadlinesTotal : 0)).sort((a, b) => a - b);
  return rates.map((r, i) => [r, (i + 1) / rates.length] as [number, number]);
}

/** What the paper set, said in every metron-fig6 README. */
export const PAPER_SLO_NOTE =
  'The paper sets 25 ms for all three SLOs (D_d of the fluidity SLO, the TPOT bound and the P99-TBT bound) and has one TPOT SLO with no percentile printed; splitting it into P50 and P99 TPOT is fluidcap\u2019s own.';

/** The median request's share of deadlines missed, from missRateCdf's points; null when empty. */
export function medianMissRate(cdf: readonly [number, number][]): number | null {
  return cdf.find(([, f]) => f >= 0.5)?.[0] ?? null;
}

const COLORS = { vllm: '#cf222e', sarathi: '#0969da' } as const;

export function metronFig6(input: Fig6Input): FigureArtifacts {
  const slos = fig6Slos(input.tbtDeadlineS, input.ttftSlackS, input.timeScale);
  const verdicts = input.systems.flatMap((s) =>
    s.probes.flatMap((p) =>
      slos.map((d) => {
        const r = evaluateSlo(p.metrics, d.slo);
        const value = r.results[0]?.value ?? null;
        return { system: s, slo: d, rateQps: p.rateQps, passed: r.passed, value };
      }),
    ),
  );
  const caps = input.systems.flatMap((s) =>
    slos.map((d) => ({ system: s, slo: d, ...gridSearchResult(verdicts.filter((v) => v.system === s && v.slo === d)) })),
  );
  const capChart = capacityChart(
    'Capacity under four SLO definitions (Metron Fig. 6)',
    input.systems,
    slos,
    (s, d) => caps.find((x) => x.system === s && x.slo === d)!.capacityQps,
    `Highest rate of the grid at which each SLO holds below the lowest rate at which it fails, per system; a missing mark means even the lowest rate failed. SLOs: ${slos.map((d, i) => `${i + 1} = ${d.label}`).join(', ')}.`,
  );
  const fluidKey = 'fluidity';
  const atCap = input.systems.map((s) => {
    const c = caps.find((x) => x.system === s && x.slo.key === fluidKey)!;
    const probe = s.probes.find((p) => p.rateQps === c.capacityQps) ?? null;
    return { s, rateQps: c.capacityQps, cdf: probe ? missRateCdf(probe.metrics) : [] };
  });
  const cdfChart = missRateChart(atCap.map(({ s, rateQps, cdf }) => ({ system: s, rateQps, cdf })));
  const atCapMetrics = atCap.map(({ s, rateQps }) => ({ system: s, rateQps, metrics: s.probes.find((p) => p.rateQps === rateQps)?.metrics ?? [] }));
  const byTbt = missByTargetTbt(atCapMetrics, input.tbtDeadlineS, input.timeScale);
  const ours: Record<string, number | null> = {};
  for (const c of caps) ours[`${c.system.key}.capacity.${c.slo.key}`] = c.capacityQps;
  for (const { s, cdf } of atCap) ours[`${s.key}.missRateP50AtFluidCapacity`] = medianMissRate(cdf);
  Object.assign(ours, byTbt.ours);
  const claims = judgeFigure(input.paper, ours);
  const grid = [...new Set(input.systems.flatMap((s) => s.probes.map((p) => p.rateQps)))].sort((a, b) => a - b);
  const notes = [
    PAPER_SLO_NOTE,
    ...input.setup,
    `Rate grid (paper time): ${grid.join(', ')} QPS; each SLO is judged over the same probes, so a capacity is only as fine as the grid.`,
    `Thresholds in the paper's time; the engine ran at time scale ${input.timeScale}, so each was measured × ${input.timeScale}.`,
    ...caps.map(
      (c) =>
        `${c.system.label}, ${c.slo.label}: ${c.capacityQps === null ? `below the grid (fails at ${c.failQps} QPS)` : c.failQps === null ? `at least ${c.capacityQps} QPS (passes at every rate)` : `${c.capacityQps} QPS (fails at ${c.failQps})`}.`,
    ),
  ];
  const verdictCsv = toCsv(
    ['system', 'slo', 'rateQps', 'passed', 'valueRealUnits'],
    verdicts.map((v) => [v.system.key, v.slo.key, v.rateQps, v.passed, v.value]),
  );
  const capCsv = toCsv(
    ['system', 'slo', 'sloText', 'capacityQps', 'failQps', 'outcome'],
    caps.map((c) => [c.system.key, c.slo.key, c.slo.label, c.capacityQps, c.failQps, c.outcome]),
  );
  return figureArtifacts({
    name: 'metron-fig6',
    title: 'Metron Fig. 6: capacity under four SLO definitions',
    charts: [{ base: 'capacity', alt: 'capacity', chart: capChart }, { base: 'miss-rate-cdf', alt: 'miss-rate distribution', chart: cdfChart }, { base: 'miss-rate-by-tbt', alt: 'miss rate by target TBT', chart: byTbt.chart }],
    tables: [{ file: 'capacity-by-slo.csv', text: capCsv }, { file: 'verdicts.csv', text: verdictCsv }],
    claims,
    notes,
    summary: input.systems.map((s) => `${s.label}: ${slos.map((d) => `${d.label} → ${caps.find((c) => c.system === s && c.slo === d)!.capacityQps ?? 'below grid'}`).join('; ')}`),
  });
}

// A capacity in a few words: the number, or why there is none.
function shortCap(c: Fig6MeasuredCapacity | null): string {
  if (c === null) return 'not measured';
  if (c.outcome === 'below-min') return `below ${c.failQps}`;
  if (c.passQps === null) return `none (${c.outcome})`;
  return `${c.outcome === 'at-least-max' ? '≥ ' : ''}${c.capacityQps}${c.outcome === 'converged' || c.outcome === 'at-least-max' ? '' : ` (${c.outcome})`}`;
}

/** One SLO definition's capacity as a run's per-SLO search measured it, in the paper's time. */
export interface Fig6MeasuredCapacity {
  /** 0 when even the search's minimum rate failed. */
  capacityQps: number;
  passQps: number | null;
  failQps: number | null;
  outcome: string;
  reason: string;
  /** Probes that were evidence for it. */
  probesUsed: number;
  /** The run directory it was measured in (relative to the figure's directory). */
  run: string;
}

export interface Fig6MeasuredSystem {
  key: 'vllm' | 'sarathi';
  label: string;
  /** By fig6Slos key. */
  capacities: Record<string, Fig6MeasuredCapacity>;
  /** The evaluated requests of the probe at the fluidity capacity (run to its end), or none. */
  atFluidityCapacity: RequestMetrics[];
  /** Every probe's verdict for each definition it could judge (paper time): what verdicts.csv lists. */
  verdicts: { slo: string; run: string; probe: number; rateQps: number; verdict: 'pass' | 'fail' | 'no evidence'; why: string | null }[];
}

export interface Fig6MeasuredInput extends Omit<Fig6Input, 'systems'> {
  systems: Fig6MeasuredSystem[];
}

/**
 * Metron Fig. 6 from measured capacities: each SLO definition bracketed and bisected by its own
 * search (capacity.json perSlo), instead of read off a grid of rates.
 */
export function metronFig6Measured(input: Fig6MeasuredInput): FigureArtifacts {
  const slos = fig6Slos(input.tbtDeadlineS, input.ttftSlackS, input.timeScale);
  const capOf = (s: Fig6MeasuredSystem, key: string) => s.capacities[key] ?? null;
  const capChart = capacityChart(
    'Capacity under four SLO definitions (Metron Fig. 6), each searched on its own',
    input.systems,
    slos,
    (s, d) => {
      const c = capOf(s, d.key);
      return c === null || c.passQps === null ? null : c.capacityQps;
    },
    `Each SLO definition's capacity as its own bracket-and-bisect search measured it (the highest passing rate below its lowest failing one), per system; a missing mark means even the search's lowest rate failed. SLOs: ${slos.map((d, i) => `${i + 1} = ${d.label}`).join(', ')}.`,
  );
  const cdfChart = missRateChart(input.systems.map((s) => ({ system: s, rateQps: capOf(s, 'fluidity')?.capacityQps ?? null, cdf: missRateCdf(s.atFluidityCapacity) })));
  const byTbt = missByTargetTbt(input.systems.map((s) => ({ system: s, rateQps: capOf(s, 'fluidity')?.capacityQps ?? null, metrics: s.atFluidityCapacity })), input.tbtDeadlineS, input.timeScale);
  const ours: Record<string, number | null> = {};
  for (const s of input.systems) for (const d of slos) ours[`${s.key}.capacity.${d.key}`] = capOf(s, d.key)?.capacityQps ?? null;
  for (const s of input.systems) ours[`${s.key}.missRateP50AtFluidCapacity`] = s.atFluidityCapacity.length ? medianMissRate(missRateCdf(s.atFluidityCapacity)) : null;
  Object.assign(ours, byTbt.ours);
  const claims = judgeFigure(input.paper, ours);
  // The run's reason quotes its own (engine) rates; say so when they differ from the paper's.
  const why = (c: Fig6MeasuredCapacity) => (input.timeScale === 1 ? c.reason : `${c.reason} [the run's words: its rates are the engine's, × ${input.timeScale} for the paper's]`);
  const capText = (c: Fig6MeasuredCapacity | null) =>
    c === null
      ? 'not measured'
      : c.outcome === 'below-min'
        ? `below ${c.failQps} QPS (${why(c)})`
        : c.passQps === null
          ? `no capacity measured (${c.outcome}: ${why(c)})`
          : `${c.outcome === 'at-least-max' ? 'at least ' : ''}${c.capacityQps} QPS (bracket ${c.passQps}–${c.failQps ?? '—'}, ${c.outcome}, ${c.probesUsed} probes)${c.outcome === 'converged' || c.outcome === 'at-least-max' ? '' : `: ${why(c)}`}`;
  const notes = [
    PAPER_SLO_NOTE,
    ...input.setup,
    'Each SLO definition has its own bracket and bisection (the run\u2019s per-SLO search): it reuses every probe that is evidence for it (an early-stopped probe only for the definition that stopped it) and probes where it must, so each capacity is measured to the search\u2019s tolerance rather than read off a grid.',
    `Thresholds in the paper's time; the engine ran at time scale ${input.timeScale}, so each was measured × ${input.timeScale} and every rate ÷ ${input.timeScale} (rates here are in the paper's time).`,
    ...input.systems.flatMap((s) => slos.map((d) => `${s.label}, ${d.label}: ${capText(capOf(s, d.key))}.`)),
  ];
  const capCsv = toCsv(
    ['system', 'slo', 'sloText', 'capacityQps', 'failQps', 'outcome', 'passQps', 'probesUsed', 'run', 'reason'],
    input.systems.flatMap((s) =>
      slos.map((d) => {
        const c = capOf(s, d.key);
        return [s.key, d.key, d.label, c && c.passQps !== null ? c.capacityQps : null, c?.failQps ?? null, c?.outcome ?? 'not-measured', c?.passQps ?? null, c?.probesUsed ?? null, c?.run ?? null, c?.reason ?? null];
      }),
    ),
  );
  const verdictCsv = toCsv(
    ['system', 'slo', 'rateQps', 'verdict', 'run', 'probe', 'why'],
    input.systems.flatMap((s) => s.verdicts.map((v) => [s.key, v.slo, v.rateQps, v.verdict, v.run, v.probe, v.why])),
  );
  return figureArtifacts({
    name: 'metron-fig6',
    title: 'Metron Fig. 6: capacity under four SLO definitions, each measured by its own search',
    charts: [{ base: 'capacity', alt: 'capacity', chart: capChart }, { base: 'miss-rate-cdf', alt: 'miss-rate distribution', chart: cdfChart }, { base: 'miss-rate-by-tbt', alt: 'miss rate by target TBT', chart: byTbt.chart }],
    tables: [{ file: 'capacity-by-slo.csv', text: capCsv }, { file: 'verdicts.csv', text: verdictCsv }],
    claims,
    notes,
    summary: input.systems.map((s) => `${s.label}: ${slos.map((d) => `${d.short} → ${shortCap(capOf(s, d.key))}`).join('; ')}`),
  });
}

// Capacity by SLO definition, one series of points per system (a null capacity draws no mark).
function capacityChart<S extends { label: string; key: string }, D extends { short: string }>(
  title: string,
  systems: readonly S[],
  slos: readonly D[],
  capacityOf: (s: S, d: D) => number | null,
  description: string,
): Chart {
  return {
    title,
    // The thresholds are in the description, the README and capacity-by-slo.csv; the axis only names the SLOs.
    xLabel: `SLO (${slos.map((d, i) => `${i + 1} ${d.short}`).join(', ')})`,
    yLabel: 'capacity (QPS)',
    xScale: 'linear',
    xWhole: true,
    series: systems.map((s) => ({
      name: s.label,
      kind: 'points' as const,
      color: COLORS[s.key as keyof typeof COLORS],
      points: slos.flatMap((d, i) => {
        const c = capacityOf(s, d);
        return c === null ? [] : [[i + 1, c] as [number, number]];
      }),
    })),
    hLines: [],
    vLines: [],
    description,
  };
}

// The CDF of each request's share of deadlines missed, at each system's fluidity capacity.
function missRateChart(series: readonly { system: { label: string; key: string }; rateQps: number | null; cdf: [number, number][] }[]): Chart {
  return {
    title: 'Per-request deadline-miss rate at fluidity capacity',
    xLabel: 'share of the request\u2019s deadlines missed',
    yLabel: 'fraction of requests ≤ x',
    xScale: 'linear',
    series: series.map(({ system, rateQps, cdf }) => ({ name: `${system.label} @ ${rateQps ?? '—'} QPS`, kind: 'line' as const, color: COLORS[system.key as keyof typeof COLORS], points: cdf })),
    hLines: [{ y: 0.99, label: 'P99' }],
    vLines: [{ x: 0.1, label: 'fluidity 0.9' }],
    description: 'Empirical CDF over the requests of the probe at each system\u2019s fluidity capacity of the share of its token deadlines missed (a failed request counts as 1).',
  };
}

/**
 * Fig. 6(b)'s comparison as a curve: the share of all token deadlines missed (by the requests that
 * succeeded) at each target TBT, on each system's probe at its fluidity capacity, deadlines in the
 * paper's time (each judged × the time scale); ours is each system's rate at the paper's D_d.
 */
export function missByTargetTbt(
  series: readonly { system: { label: string; key: string }; rateQps: number | null; metrics: readonly RequestMetrics[] }[],
  tbtDeadlineS: number,
  timeScale: number,
): { chart: Chart; ours: Record<string, number | null> } {
  const grid = DEADLINE_GRID_FACTORS.map((k) => +(k * tbtDeadlineS).toPrecision(6));
  const ours: Record<string, number | null> = {};
  const drawn = series.map(({ system, rateQps, metrics }) => {
    const at = (dd: number) => (metrics.length ? atDeadline(metrics, dd * timeScale, 99).missRate : NaN);
    const paperRate = at(tbtDeadlineS);
    ours[`${system.key}.missRateAt25msAtFluidCapacity`] = Number.isFinite(paperRate) ? paperRate : null;
    return {
      name: `${system.label} @ ${rateQps ?? '\u2014'} QPS`,
      kind: 'line' as const,
      dots: true,
      color: COLORS[system.key as keyof typeof COLORS],
      // A log axis has no place for 0: a deadline no request missed has no mark.
      points: grid.map((dd) => [dd, at(dd)] as [number, number]).filter(([, y]) => Number.isFinite(y) && y > 0),
    };
  });
  const ms = `${+(tbtDeadlineS * 1000).toPrecision(4)} ms`;
  return {
    ours,
    chart: {
      title: 'Deadline-miss rate by target TBT at fluidity capacity (Metron Fig. 6b)',
      xLabel: 'target TBT deadline (s)',
      yLabel: 'missed deadlines (fraction, log scale)',
      xScale: 'log',
      yScale: 'log',
      series: drawn,
      hLines: [],
      vLines: [{ x: tbtDeadlineS, label: ms }],
      description: `Share of all token deadlines (first token and every later one) missed by the requests that succeeded, re-judged at each target TBT deadline on the probe at each system\u2019s fluidity capacity; the paper\u2019s Fig. 6(b) finds Sarathi-Serve missing fewer (vLLM misses whenever a whole prefill enters the batch). Read at ${ms}, the paper\u2019s D_d.`,
      howToRead: 'The y axis is logarithmic, so each step down is ten times fewer misses; a deadline no request missed has no mark.',
    },
  };
}
