// Vidur Figs. 5 and 6 (Vidur-Search): which deployment of Llama-2-70B serves the most QPS per
// dollar under TTFT P90 < 2 s and TBT P99 < 200 ms. Fig. 5 draws QPS per $/hour of every
// configuration in rank order, one series per GPU type and scheduler; Fig. 6 draws the same QPS per
// $/hour against the TTFT P90 and the TBT P99 each configuration shows at its capacity (the plot
// Vidur's repository captions "capacity per dollar for different deployment configurations vs
// TTFT-P90 and TBT-P99 for LLaMA2-70B"). Every number comes from the twin and the files say so.
// Pure: the twin sweep's ranked rows in, files out.
import type { Chart, ChartSeries } from '../report/doc.ts';
import { toCsv } from '../report/csv.ts';
import type { RankedRow } from '../twin/twinSweepRank.ts';
import { TWIN_PROVENANCE } from '../twin/twinSweepRank.ts';
import { compareWithPaper, type PaperNumber } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

export interface VidurFigureInput {
  rows: readonly RankedRow[];
  /** The recipe's SLO bounds, for the reference lines of Fig. 6. */
  ttftP90MaxS: number;
  tbtP99MaxS: number;
  /** Wall seconds of the twin sweep (profile and search of every configuration). */
  twinWallS: number;
  paperNumbers: readonly PaperNumber[];
  paperName: string;
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

/** Our values of the keys paperNumbers.json lists for both figures. */
export function vidurOurs(rows: readonly RankedRow[], twinWallS: number): Record<string, number | null> {
  const ranked = rows.filter((r) => r.rank !== null);
  const best = ranked[0] ?? null;
  const bestOf = (pred: (r: RankedRow) => boolean) => ranked.find(pred)?.qpsPerUsdPerHour ?? null;
  // What running every evaluated configuration's search on GPUs would take: virtual seconds × GPUs.
  const gpuHours = rows.reduce((t, r) => t + (r.virtualS * r.gpuCount) / 3600, 0);
  const usd = rows.reduce((t, r) => t + (r.usdPerGpuHour === null ? 0 : (r.virtualS * r.gpuCount * r.usdPerGpuHour) / 3600), 0);
  return {
    'best.qpsPerUsdPerHour': best?.qpsPerUsdPerHour ?? null,
    'best.capacityQps': best?.capacityQps ?? null,
    'a100.best.qpsPerUsdPerHour': bestOf((r) => r.gpuProfile.startsWith('a100')),
    'h100.best.qpsPerUsdPerHour': bestOf((r) => r.gpuProfile.startsWith('h100')),
    'best.ttftP90S': best?.ttftP90S ?? null,
    'best.tbtP99S': best?.tbtP99S ?? null,
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
    'QPS per $/hour = capacity ÷ (GPUs × the GPU profile\u2019s usdPerGpuHour), GPUs = tensor parallelism (one replica); prices are gpu-profiles/*.yaml\u2019s, not Vidur\u2019s.',
  ];
}

/** Fig. 5: QPS per $/hour of every ranked configuration, in rank order. */
export function vidurFig5(input: VidurFigureInput): FigureArtifacts {
  const chart: Chart = {
    title: 'QPS per dollar by configuration (twin; Vidur Fig. 5 setting)',
    xLabel: 'configuration, by rank (1 = most QPS per $/h)',
    yLabel: 'QPS per $/hour',
    xScale: 'linear',
    series: seriesBy(input.rows, (r) => (r.rank === null || r.qpsPerUsdPerHour === null ? null : [r.rank, r.qpsPerUsdPerHour]), rankLabel(input.rows)),
    hLines: [],
    vLines: [],
    shapeTitle: 'tensor parallelism',
    description: 'Each mark is one configuration of the matrix (tensor parallelism, scheduler, batch size, chunk size, GPU type) at its capacity on the twin under TTFT P90 < 2 s and TBT P99 < 200 ms.',
    howToRead: 'Colour is the GPU type and scheduler, shape the tensor parallelism (GPUs per replica). The five best and the best of each colour are labelled with their rank; ranking.csv names every mark.',
  };
  const ours = vidurOurs(input.rows, input.twinWallS);
  const rows = compareWithPaper(input.paperNumbers, ours, input.paperName);
  const ranked = input.rows.filter((r) => r.rank !== null);
  return figureArtifacts({
    name: 'vidur-fig5',
    title: 'Vidur Fig. 5: QPS per dollar across deployment configurations (numbers from the twin)',
    charts: [{ base: 'qps-per-dollar', alt: 'QPS per dollar by configuration', chart }],
    tables: [{ file: 'ranking.csv', text: rankingCsv(input.rows) }],
    rows,
    notes: notesOf(input),
    summary: [
      'numbers from the twin (simulated engine in virtual time), not from an engine',
      ...ranked.slice(0, 3).map((r) => `#${r.rank} ${r.id}: ${+r.capacityQps!.toPrecision(4)} QPS, ${+r.qpsPerUsdPerHour!.toPrecision(4)} QPS per $/h`),
      `twin sweep wall time ${input.twinWallS.toFixed(1)} s`,
    ],
  });
}

/** Fig. 6: QPS per $/hour against the TTFT P90 and TBT P99 at capacity, with the SLO bounds. */
export function vidurFig6(input: VidurFigureInput): FigureArtifacts {
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
  const ours = vidurOurs(input.rows, input.twinWallS);
  const rows = compareWithPaper(input.paperNumbers, ours, input.paperName);
  const best = input.rows.find((r) => r.rank === 1);
  return figureArtifacts({
    name: 'vidur-fig6',
    title: 'Vidur Fig. 6: QPS per dollar against TTFT P90 and TBT P99 (numbers from the twin)',
    charts: [
      { base: 'qps-per-dollar-vs-ttft', alt: 'QPS per dollar vs TTFT P90', chart: ttft },
      { base: 'qps-per-dollar-vs-tbt', alt: 'QPS per dollar vs TBT P99', chart: tbt },
    ],
    tables: [{ file: 'ranking.csv', text: rankingCsv(input.rows) }],
    rows,
    notes: [
      ...notesOf(input),
      'What Fig. 6 shows was taken from Vidur\u2019s repository (its README captions the plot "capacity per dollar for different deployment configurations vs TTFT-P90 and TBT-P99 for LLaMA2-70B"); the paper\u2019s own page could not be read here.',
    ],
    summary: [
      'numbers from the twin (simulated engine in virtual time), not from an engine',
      best ? `best ${best.id}: TTFT P90 ${best.ttftP90S === null ? '—' : (best.ttftP90S).toFixed(3)} s, TBT P99 ${best.tbtP99S === null ? '—' : (best.tbtP99S * 1000).toFixed(1)} ms at ${+best.capacityQps!.toPrecision(4)} QPS` : 'no configuration found a capacity',
      `twin sweep wall time ${input.twinWallS.toFixed(1)} s`,
    ],
  });
}
