// Vidur Figs. 5 and 6 (Vidur-Search) on fluidcap's twin: which deployment of Llama-2-70B serves
// the most QPS per dollar under TTFT P90 < 2 s and TBT P99 < 200 ms. Fig. 5 draws the QPS per
// $/hour of every configuration against the TTFT P90 and the TBT P99 it shows at its capacity (the
// paper's Fig. 5(a): LLaMA2-70B on LMSys-Chat-1M); Fig. 6 draws the QPS per $/hour of the best
// configuration for each trace (Chat-1M, Arxiv-4K, BWB-4K). Every number comes from the twin and
// the files say so. Pure: the twin sweeps' ranked rows in, files out.
import type { Chart, ChartSeries } from '../report/doc.ts';
import { toCsv } from '../report/csv.ts';
import type { RankedRow } from '../twin/twinSweepRank.ts';
import { TWIN_PROVENANCE } from '../twin/twinSweepRank.ts';
import { judgeFigure, type FigurePaper, type OurValues } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

export interface VidurFigureInput {
  rows: readonly RankedRow[];
  /** The recipe's SLO bounds, for the reference lines of Fig. 6. */
  ttftP90MaxS: number;
  tbtP99MaxS: number;
  /** Wall seconds of the twin sweep (profile and search of every configuration). */
  twinWallS: number;
  /** The paper's entries for this figure, judged against ours. */
  paper: FigurePaper;
  setup: string[];
}

const PALETTE = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bc4c00', '#57606a', '#bf3989', '#0a3069'];

/** Series key of a row: its GPU profile and scheduler (`h100-sxm-80gb sarathi`). */
export const groupOf = (r: Pick<RankedRow, 'gpuProfile' | 'scheduler'>) => `${r.gpuProfile} ${r.scheduler}`;

function groups(rows: readonly RankedRow[]): string[] {
  const keys: string[] = [];
  for (const r of rows) if (!keys.includes(groupOf(r))) keys.push(groupOf(r));
  return keys.sort();
}

// One series per GPU type × scheduler (its colour) and tensor parallelism (its shape), so the chart
// shows both which hardware and how many GPUs per replica each configuration uses.
function seriesBy(rows: readonly RankedRow[], point: (r: RankedRow) => [number, number] | null, label?: (r: RankedRow) => string): ChartSeries[] {
  const tps = [...new Set(rows.map((r) => r.tensorParallel))].sort((a, b) => a - b);
  return groups(rows).flatMap((g, i) =>
    tps.map((tp) => {
      const mine = rows.flatMap((r) => {
        const p = groupOf(r) === g && r.tensorParallel === tp ? point(r) : null;
        return p === null ? [] : [{ r, p }];
      });
      return {
        name: `${g} TP${tp}`,
        legend: g,
        shape: `TP ${tp}`,
        kind: 'points' as const,
        color: PALETTE[i % PALETTE.length],
        points: mine.map((m) => m.p),
        ...(label ? { labels: mine.map((m) => label(m.r)) } : {}),
      };
    }).filter((s) => s.points.length > 0),
  );
}

// The top five and the best of each series are labelled with their rank; ranking.csv names every mark.
function rankLabel(rows: readonly RankedRow[]): (r: RankedRow) => string {
  const best = new Set(groups(rows).flatMap((g) => rows.filter((r) => groupOf(r) === g && r.rank !== null).sort((a, b) => a.rank! - b.rank!).slice(0, 1)));
  return (r) => (r.rank !== null && (r.rank <= 5 || best.has(r)) ? `#${r.rank} TP${r.tensorParallel}` : '');
}

const valueText = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

/** The ranked configurations as the CSV behind Fig. 5, in rank order (the row order of the ranking). */
export function rankingCsv(rows: readonly RankedRow[]): string {
  const ranked = rows.filter((r) => r.rank !== null);
  return toCsv(
    ['source', 'rank', 'id', 'series', 'values', 'gpuProfile', 'gpus', 'scheduler', 'capacityQps', 'qpsPerUsdPerHour', 'usdPerMillionTokens', 'ttftP90S', 'tbtP99S'],
    ranked.map((r) => ['twin', r.rank, r.id, groupOf(r), Object.entries(r.values).map(([k, v]) => `${k}=${valueText(v)}`).join(' '), r.gpuProfile, r.gpuCount, r.scheduler, r.capacityQps, r.qpsPerUsdPerHour, r.usdPerMillionTokens, r.ttftP90S, r.tbtP99S]),
  );
}

/** A ranked configuration's GPU type as the paper names it: a100 or h100 (the profile's prefix). */
const gpuOf = (r: Pick<RankedRow, 'gpuProfile'>) => r.gpuProfile.split('-')[0];
const valueOf = (r: RankedRow, k: string) => (typeof r.values[k] === 'number' ? (r.values[k] as number) : null);

/** The best QPS per $/hour among ranked rows that pass `pred`, or null. */
function bestQpsPerUsd(ranked: readonly RankedRow[], pred: (r: RankedRow) => boolean): number | null {
  return ranked.find(pred)?.qpsPerUsdPerHour ?? null;
}

/** Our values of the keys of vidur-fig5's entries: the best configuration, the Pareto points, the search's cost. */
export function vidurOurs(rows: readonly RankedRow[], twinWallS: number): OurValues {
  const ranked = rows.filter((r) => r.rank !== null);
  const best = ranked[0] ?? null;
  // What running every evaluated configuration's search on GPUs would take: virtual seconds × GPUs.
  const gpuHours = rows.reduce((t, r) => t + (r.virtualS * r.gpuCount) / 3600, 0);
  const usd = rows.reduce((t, r) => t + (r.usdPerGpuHour === null ? 0 : (r.virtualS * r.gpuCount * r.usdPerGpuHour) / 3600), 0);
  return {
    'best.qpsPerUsdPerHour': best?.qpsPerUsdPerHour ?? null,
    'best.capacityQps': best?.capacityQps ?? null,
    'best.scheduler': best?.scheduler ?? null,
    'best.gpu': best ? gpuOf(best) : null,
    'best.tensorParallel': best?.tensorParallel ?? null,
    // A matrix without pipelineParallel runs every configuration as one stage.
    'best.pipelineParallel': best ? (valueOf(best, 'pipelineParallel') ?? 1) : null,
    'best.batchSize': best ? valueOf(best, 'maxNumSeqs') : null,
    'best.chunkSize': best && best.scheduler === 'sarathi' ? valueOf(best, 'chunkSize') : null,
    'a100.best.qpsPerUsdPerHour': bestQpsPerUsd(ranked, (r) => gpuOf(r) === 'a100'),
    'h100.best.qpsPerUsdPerHour': bestQpsPerUsd(ranked, (r) => gpuOf(r) === 'h100'),
    'best.ttftP90S': best?.ttftP90S ?? null,
    'best.tbtP99S': best?.tbtP99S ?? null,
    // The Pareto curve's point at a TBT P99 bound: the best configuration whose TBT P99 at its capacity is within it.
    'pareto.tbtP99_120ms.qpsPerUsdPerHour': bestQpsPerUsd(ranked, (r) => r.tbtP99S !== null && r.tbtP99S <= 0.12),
    'pareto.tbtP99_140ms.qpsPerUsdPerHour': bestQpsPerUsd(ranked, (r) => r.tbtP99S !== null && r.tbtP99S <= 0.14),
    'search.wallHours': twinWallS / 3600,
    'search.deploymentGpuHours': gpuHours,
    'search.deploymentUsd': usd,
  };
}

function notesOf(input: VidurFigureInput): string[] {
  const count = (s: string) => input.rows.filter((r) => r.status === s).length;
  return [
    TWIN_PROVENANCE,
    ...input.setup,
    `${input.rows.length} configurations: ${count('ranked')} ranked, ${count('no-capacity')} without a capacity, ${count('infeasible')} infeasible (${[...new Set(input.rows.filter((r) => r.status === 'infeasible').map((r) => r.reason.split(':')[0]))].join('; ') || 'none'}), ${count('failed')} failed.`,
    `Twin sweep wall time here: ${input.twinWallS.toFixed(1)} s.`,
    'QPS per $/hour = capacity ÷ (GPUs × the GPU profile\u2019s usdPerGpuHour), GPUs = tensor × pipeline parallelism (one replica); prices are gpu-profiles/*.yaml\u2019s, not Vidur\u2019s.',
  ];
}

/** Fig. 5: QPS per $/hour against the TTFT P90 and TBT P99 at capacity, with the SLO bounds. */
export function vidurFig5(input: VidurFigureInput): FigureArtifacts {
  const ttft: Chart = {
    title: 'QPS per dollar vs TTFT P90 at capacity (twin)',
    xLabel: 'TTFT P90 at capacity (s)',
    yLabel: 'QPS per $/hour',
    xScale: 'linear',
    series: seriesBy(input.rows, (r) => (r.rank === null || r.ttftP90S === null ? null : [r.ttftP90S, r.qpsPerUsdPerHour!])),
    hLines: [],
    vLines: [{ x: input.ttftP90MaxS, label: `SLO ${input.ttftP90MaxS} s` }],
    shapeTitle: 'tensor parallelism',
    description: 'Each mark is one ranked configuration: its QPS per $/hour against the TTFT P90 of its passing probe at capacity on the twin.',
  };
  const tbt: Chart = {
    title: 'QPS per dollar vs TBT P99 at capacity (twin)',
    xLabel: 'TBT P99 at capacity (ms)',
    yLabel: 'QPS per $/hour',
    xScale: 'linear',
    series: seriesBy(input.rows, (r) => (r.rank === null || r.tbtP99S === null ? null : [r.tbtP99S * 1000, r.qpsPerUsdPerHour!])),
    hLines: [],
    vLines: [{ x: input.tbtP99MaxS * 1000, label: `SLO ${input.tbtP99MaxS * 1000} ms` }],
    shapeTitle: 'tensor parallelism',
    description: 'Each mark is one ranked configuration: its QPS per $/hour against the TBT P99 of its passing probe at capacity on the twin.',
  };
  const claims = judgeFigure(input.paper, vidurOurs(input.rows, input.twinWallS));
  const best = input.rows.find((r) => r.rank === 1);
  return figureArtifacts({
    name: 'vidur-fig5',
    title: 'Vidur Fig. 5: QPS per dollar against TTFT P90 and TBT P99 (numbers from the twin)',
    charts: [
      { base: 'qps-per-dollar-vs-ttft', alt: 'QPS per dollar vs TTFT P90', chart: ttft },
      { base: 'qps-per-dollar-vs-tbt', alt: 'QPS per dollar vs TBT P99', chart: tbt },
    ],
    tables: [{ file: 'ranking.csv', text: rankingCsv(input.rows) }],
    claims,
    notes: [
      ...notesOf(input),
      'Pareto points (pareto.* in claims.csv): the best QPS per $/hour among configurations whose TBT P99 at capacity (under the 200 ms SLO) is within 120 ms or 140 ms; Vidur instead reruns the search with the tighter SLO, under which a configuration\u2019s capacity may be lower.',
    ],
    summary: [
      'numbers from the twin (simulated engine in virtual time), not from an engine',
      best ? `best ${best.id}: TTFT P90 ${best.ttftP90S === null ? '—' : (best.ttftP90S).toFixed(3)} s, TBT P99 ${best.tbtP99S === null ? '—' : (best.tbtP99S * 1000).toFixed(1)} ms at ${+best.capacityQps!.toPrecision(4)} QPS` : 'no configuration found a capacity',
      `twin sweep wall time ${input.twinWallS.toFixed(1)} s`,
    ],
  });
}

/** One trace's twin sweep, for Fig. 6. */
export interface VidurTraceSweep {
  /** The workload preset (chat-1m, arxiv-4k, bwb-4k). */
  trace: string;
  rows: readonly RankedRow[];
  twinWallS: number;
}

export interface VidurFig6Input {
  traces: readonly VidurTraceSweep[];
  paper: FigurePaper;
  setup: string[];
}

/** Our values of vidur-fig6's keys, per trace: `<trace>.best.qpsPerUsdPerHour`, `<trace>.best.batchSize`, `<trace>.a100.best...`. */
export function vidurFig6Ours(traces: readonly VidurTraceSweep[]): OurValues {
  const ours: Record<string, number | string | null> = {};
  for (const t of traces) {
    const ranked = t.rows.filter((r) => r.rank !== null);
    const best = ranked[0] ?? null;
    ours[`${t.trace}.best.qpsPerUsdPerHour`] = best?.qpsPerUsdPerHour ?? null;
    ours[`${t.trace}.best.batchSize`] = best ? valueOf(best, 'maxNumSeqs') : null;
    ours[`${t.trace}.best.id`] = best?.id ?? null;
    for (const gpu of ['a100', 'h100']) ours[`${t.trace}.${gpu}.best.qpsPerUsdPerHour`] = bestQpsPerUsd(ranked, (r) => gpuOf(r) === gpu);
  }
  return ours;
}

/** Fig. 6: the QPS per $/hour of the best configuration for each trace, overall and per GPU type. */
export function vidurFig6(input: VidurFig6Input): FigureArtifacts {
  const ours = vidurFig6Ours(input.traces);
  const n = (k: string) => (typeof ours[k] === 'number' ? (ours[k] as number) : null);
  const series = (name: string, color: string, key: (trace: string) => string): ChartSeries => ({
    name,
    kind: 'points',
    color,
    points: input.traces.flatMap((t, i) => {
      const y = n(key(t.trace));
      return y === null ? [] : [[i + 1, y] as [number, number]];
    }),
  });
  const chart: Chart = {
    title: 'QPS per dollar of the best configuration, by trace (twin; Vidur Fig. 6 setting)',
    xLabel: `trace (${input.traces.map((t, i) => `${i + 1} = ${t.trace}`).join(', ')})`,
    yLabel: 'QPS per $/hour',
    xScale: 'linear',
    xWhole: true,
    series: [series('best', PALETTE[0], (t) => `${t}.best.qpsPerUsdPerHour`), series('best on A100', PALETTE[1], (t) => `${t}.a100.best.qpsPerUsdPerHour`), series('best on H100', PALETTE[2], (t) => `${t}.h100.best.qpsPerUsdPerHour`)],
    hLines: [],
    vLines: [],
    description: 'For each trace, the QPS per $/hour of the configuration that serves the most per dollar under TTFT P90 < 2 s and TBT P99 < 200 ms on the twin, and the best on each GPU type.',
  };
  const claims = judgeFigure(input.paper, ours);
  const csv = toCsv(
    ['source', 'trace', 'bestId', 'bestQpsPerUsdPerHour', 'bestBatchSize', 'a100BestQpsPerUsdPerHour', 'h100BestQpsPerUsdPerHour', 'configurations', 'ranked', 'twinWallS'],
    input.traces.map((t) => ['twin', t.trace, ours[`${t.trace}.best.id`] ?? null, n(`${t.trace}.best.qpsPerUsdPerHour`), n(`${t.trace}.best.batchSize`), n(`${t.trace}.a100.best.qpsPerUsdPerHour`), n(`${t.trace}.h100.best.qpsPerUsdPerHour`), t.rows.length, t.rows.filter((r) => r.rank !== null).length, t.twinWallS]),
  );
  return figureArtifacts({
    name: 'vidur-fig6',
    title: 'Vidur Fig. 6: QPS per dollar of the best configuration for each trace (numbers from the twin)',
    charts: [{ base: 'best-by-trace', alt: 'best QPS per dollar by trace', chart }],
    tables: [{ file: 'best-by-trace.csv', text: csv }, ...input.traces.map((t) => ({ file: `ranking-${t.trace}.csv`, text: rankingCsv(t.rows) }))],
    claims,
    notes: [
      TWIN_PROVENANCE,
      ...input.setup,
      `Twin sweep wall time here: ${input.traces.map((t) => `${t.trace} ${t.twinWallS.toFixed(1)} s`).join(', ')}.`,
      'QPS per $/hour = capacity ÷ (GPUs × the GPU profile\u2019s usdPerGpuHour), GPUs = tensor × pipeline parallelism (one replica); prices are gpu-profiles/*.yaml\u2019s, not Vidur\u2019s.',
    ],
    summary: [
      'numbers from the twin (simulated engine in virtual time), not from an engine',
      ...input.traces.map((t) => `${t.trace}: best ${ours[`${t.trace}.best.id`] ?? 'none'}${n(`${t.trace}.best.qpsPerUsdPerHour`) === null ? '' : `, ${+n(`${t.trace}.best.qpsPerUsdPerHour`)!.toPrecision(4)} QPS per $/h`}`),
    ],
  });
}
