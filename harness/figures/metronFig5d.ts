// Metron Fig. 5d as the paper ran it: the share of token deadlines missed, and the P99 fluidity, as
// the target TBT deadline varies, for a set of OpenAI-compatible endpoints under the same workload,
// each read at a 10% miss rate (the smallest target TBT whose miss rate is at most 10%). The paper
// measured three public endpoints (Groq, Fireworks, Anyscale); fluidcap measures whichever the user
// names. A deadline below the client's measured timing error says nothing about the endpoint, so
// such points are kept in the CSV, marked, and left off the charts. Pure: request metrics in, files out.
import type { Chart } from '../report/doc.ts';
import type { RequestMetrics } from '../metrics/request.ts';
import { atDeadline } from '../report/probeDetail.ts';
import { toCsv } from '../report/csv.ts';
import { judgeFigure, type FigurePaper } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

/** One endpoint's probe, as the figure needs it. */
export interface EndpointProbe {
  /** The endpoint's name in the endpoints file (the key of its values in claims.csv). */
  key: string;
  label: string;
  /** The model asked for (null: the endpoint's first listed model). */
  model: string | null;
  /** Where it was reached, without credentials or query. */
  url: string;
  rateQps: number;
  /** Evaluated requests (warm-up left out), judged with the run's prefill fit and TTFT slack. */
  metrics: RequestMetrics[];
  /** The client's timing error in seconds (p99 of receive − emit where the endpoint stamps its chunks, else the client's own), or null. */
  clientErrorS: number | null;
  /** Which measure clientErrorS is (stated in the notes); optional for callers that have only one. */
  clientErrorFrom?: 'receive \u2212 emit' | 'client';
}

export interface Fig5dInput {
  endpoints: EndpointProbe[];
  percentile: number;
  minFluidity: number;
  /** The paper's entries for this figure, judged against ours. */
  paper: FigurePaper;
  /** How the probes were made (workload, sizes, endpoints), for the figure's notes. */
  setup: string[];
}

/** The miss rate at which the paper reads Fig. 5(d). */
export const READ_AT_MISS_RATE = 0.1;

/** Target TBT deadlines of the curve: 1 ms to 1 s, ten per decade (the endpoints' speeds are not known in advance). */
export const TARGET_TBT_GRID_S: readonly number[] = Array.from({ length: 31 }, (_, i) => +(0.001 * 10 ** (i / 10)).toPrecision(3));

const COLORS = ['#cf222e', '#0969da', '#1a7f37', '#8250df', '#bf8700', '#57606a'];

/** Where the miss rate crosses `rate`: the smallest target TBT whose miss rate is at most it. */
export interface MissRateReading {
  /** Seconds; null when even the grid's largest deadline misses more. */
  tbtS: number | null;
  /** `within`: found between two grid deadlines; `below-grid`: at most the grid's smallest; `above-grid`: none. */
  where: 'within' | 'below-grid' | 'above-grid';
}

/**
 * Reads the requests' deadline-miss rate at `rate`: scans the grid for the first deadline whose
 * miss rate is at most `rate`, then bisects (on a log scale) between it and the one before it, to
 * 0.1% of the deadline. The miss rate falls as the deadline grows (every deadline is later and
 * slack builds faster), so the first crossing is the reading.
 */
export function tbtAtMissRate(metrics: readonly RequestMetrics[], rate: number, grid: readonly number[] = TARGET_TBT_GRID_S): MissRateReading {
  const miss = (dd: number) => atDeadline(metrics, dd, 50).missRate;
  const ok = (dd: number) => {
    const m = miss(dd);
    return Number.isFinite(m) && m <= rate;
  };
  const i = grid.findIndex(ok);
  if (i < 0) return { tbtS: null, where: 'above-grid' };
  if (i === 0) return { tbtS: grid[0], where: 'below-grid' };
  let lo = grid[i - 1];
  let hi = grid[i];
  while (hi / lo > 1.001) {
    const mid = Math.sqrt(lo * hi);
    if (ok(mid)) hi = mid;
    else lo = mid;
  }
  return { tbtS: +hi.toPrecision(4), where: 'within' };
}

interface Point {
  endpoint: EndpointProbe;
  tbtS: number;
  missRate: number;
  fluidity: number;
  trusted: boolean;
}

const ms = (s: number) => `${+(s * 1000).toPrecision(3)} ms`;

/** The figure's charts, CSVs, comparison table and notes. */
export function metronFig5d(input: Fig5dInput): FigureArtifacts {
  const pts: Point[] = input.endpoints.flatMap((e) =>
    TARGET_TBT_GRID_S.map((dd) => ({ endpoint: e, tbtS: dd, ...atDeadline(e.metrics, dd, input.percentile), trusted: e.clientErrorS === null || dd > e.clientErrorS })),
  );
  const readings = input.endpoints.map((e) => {
    const r = tbtAtMissRate(e.metrics, READ_AT_MISS_RATE);
    // A reading at or below the client's own timing error measures the client, not the endpoint.
    const trusted = r.tbtS === null || e.clientErrorS === null || r.tbtS > e.clientErrorS;
    return { endpoint: e, ...r, trusted };
  });
  const color = (e: EndpointProbe) => COLORS[input.endpoints.indexOf(e) % COLORS.length];
  const series = (y: (p: Point) => number, logY = false) =>
    input.endpoints.map((e) => ({
      name: `${e.label} @ ${+e.rateQps.toPrecision(3)} QPS`,
      kind: 'line' as const,
      dots: true,
      color: color(e),
      points: pts.filter((p) => p.endpoint === e && p.trusted && Number.isFinite(y(p)) && (!logY || y(p) > 0)).map((p) => [p.tbtS, y(p)] as [number, number]),
    }));
  const read = readings.filter((r) => r.where === 'within' && r.trusted && r.tbtS !== null);
  const miss: Chart = {
    title: 'Deadline-miss rate by target TBT (Metron Fig. 5d)',
    xLabel: 'target TBT deadline (s)',
    yLabel: 'missed deadlines (fraction, log scale)',
    xScale: 'log',
    // A miss rate of 0.1% beside 30%: on a linear axis the first sits on the floor.
    yScale: 'log',
    series: series((p) => p.missRate, true),
    hLines: [{ y: READ_AT_MISS_RATE, label: `${READ_AT_MISS_RATE * 100}% (read here)` }],
    vLines: read.map((r) => ({ x: r.tbtS!, label: `${r.endpoint.label} ${ms(r.tbtS!)}` })),
    description: `Share of all token deadlines (first token and every later one) missed by the requests that succeeded, re-judged at each target TBT deadline from the archived timelines; each endpoint is read where its curve crosses ${READ_AT_MISS_RATE * 100}%, as the paper reads its Fig. 5(d).`,
    howToRead: 'The y axis is logarithmic, so each step down is ten times fewer misses; a deadline with no miss at all has no mark (0 has no place on a log axis).',
  };
  const fluid: Chart = {
    title: `Fluidity P${input.percentile} by target TBT`,
    xLabel: 'target TBT deadline (s)',
    yLabel: `fluidity P${input.percentile}`,
    xScale: 'log',
    series: series((p) => p.fluidity),
    hLines: [{ y: input.minFluidity, label: `≥ ${input.minFluidity}` }],
    vLines: [],
    description: `The fluidity that ${input.percentile}% of requests reach at each target TBT deadline (failed requests count as 0).`,
  };
  const ours: Record<string, number | null> = {};
  for (const r of readings) ours[`${r.endpoint.key}.tbtAt10pctMissS`] = r.trusted ? r.tbtS : null;
  const claims = judgeFigure(input.paper, ours);
  const readingText = (r: (typeof readings)[number]) =>
    r.tbtS === null
      ? `misses more than ${READ_AT_MISS_RATE * 100}% of its deadlines even at ${ms(TARGET_TBT_GRID_S.at(-1)!)}`
      : !r.trusted
        ? `crosses ${READ_AT_MISS_RATE * 100}% at ${ms(r.tbtS)}, at or below the client's timing error (${ms(r.endpoint.clientErrorS!)}), so it is not read`
        : r.where === 'below-grid'
          ? `misses at most ${READ_AT_MISS_RATE * 100}% already at ${ms(r.tbtS)} (the grid's smallest deadline)`
          : `misses ${READ_AT_MISS_RATE * 100}% of its deadlines at a target TBT of ${ms(r.tbtS)}`;
  const untrusted = pts.filter((p) => !p.trusted);
  const notes = [
    `The paper\u2019s Fig. 5(d) draws this curve for three public endpoints (Groq, Fireworks, Anyscale) on Mixtral-8x7B and LLaMA3-70B and reads it at a ${READ_AT_MISS_RATE * 100}% miss rate (best first: Groq, Fireworks, Anyscale). Those readings are not comparable here (public endpoint): hosted APIs on hardware nobody outside knows, measured in 2024; this figure measures the endpoints named in its endpoints file the same way.`,
    ...input.setup,
    ...input.endpoints.map((e) => {
      const failed = e.metrics.length - e.metrics.filter((m) => m.succeeded).length;
      return `${e.label} (${e.url}${e.model ? `, model ${e.model}` : ''}): ${e.metrics.length} requests judged at ${+e.rateQps.toPrecision(3)} QPS, ${failed} failed (counted as fluidity 0, their deadlines left out of the miss rate); client timing error ${e.clientErrorS === null ? 'not measured' : `${ms(e.clientErrorS)} (${e.clientErrorFrom === 'client' ? 'the client\u2019s own: the endpoint does not stamp its chunks with their emit time' : 'p99 of receive \u2212 emit of its chunks'})`}.`;
    }),
    `Read at ${READ_AT_MISS_RATE * 100}%: the smallest target TBT whose miss rate is at most ${READ_AT_MISS_RATE * 100}%, found between two of the grid's deadlines (${ms(TARGET_TBT_GRID_S[0])} to ${ms(TARGET_TBT_GRID_S.at(-1)!)}, ten per decade) by bisection to 0.1%.`,
    untrusted.length
      ? `Left off the charts (deadline at or below the client's measured error, so it would measure the client): ${[...new Set(untrusted.map((p) => p.endpoint.label))].map((l) => `${l} up to ${ms(Math.max(...untrusted.filter((p) => p.endpoint.label === l).map((p) => p.tbtS)))}`).join(', ')}.`
      : 'Every target deadline lies above the client timing error measured in its probe (or the endpoint does not stamp its chunks).',
  ];
  const data = toCsv(
    ['endpoint', 'model', 'rateQps', 'targetTbtS', 'missRate', `fluidityP${input.percentile}`, 'aboveClientError'],
    pts.map((p) => [p.endpoint.key, p.endpoint.model, p.endpoint.rateQps, p.tbtS, p.missRate, p.fluidity, p.trusted]),
  );
  const readCsv = toCsv(
    ['endpoint', 'model', 'url', 'rateQps', 'tbtAt10pctMissS', 'where', 'aboveClientError'],
    readings.map((r) => [r.endpoint.key, r.endpoint.model, r.endpoint.url, r.endpoint.rateQps, r.tbtS, r.where, r.trusted]),
  );
  return figureArtifacts({
    name: 'metron-fig5d',
    title: 'Metron Fig. 5d: deadline-miss rate by target TBT, per endpoint',
    charts: [{ base: 'miss-rate', alt: 'miss rate', chart: miss }, { base: 'fluidity', alt: 'fluidity', chart: fluid }],
    tables: [{ file: 'by-deadline.csv', text: data }, { file: 'read-at-10pct.csv', text: readCsv }],
    claims,
    notes,
    summary: readings.map((r) => `${r.endpoint.label} @ ${+r.endpoint.rateQps.toPrecision(3)} QPS: ${readingText(r)}`),
  });
}
