// Metron Fig. 3: vLLM (prefill-prioritizing) against Sarathi-Serve (chunked prefills). (a) the
// token timeline of the decode vLLM stalls most, in both systems under the same planned load, and (b) the token rate
// each system appears to have by TPOT (1 / the mean TPOT over all requests, as the paper defines
// it), by P99 TBT and by the fluid token generation rate
// (1 / the smallest TBT deadline at which P99 of requests reach fluidity 0.9). Times are in the
// paper's time (measured ÷ time scale). Pure: timeline records in, files out.
import type { Chart } from '../report/doc.ts';
import { toCsv } from '../report/csv.ts';
import { computeRequestMetrics, type RequestMetrics } from '../metrics/request.ts';
import { fluidityOfRange } from '../metrics/fluidity.ts';
import { predictPrefillS, type PrefillFit } from '../metrics/prefill.ts';
import { sortedPercentile, sortedPercentileFromTop } from '../metrics/percentile.ts';
import type { TimelineRecord } from '../timeline/record.ts';
import { judgeFigure, type FigurePaper } from './paperNumbers.ts';
import { figureArtifacts, type FigureArtifacts } from './output.ts';

export interface Fig3System {
  key: 'vllm' | 'sarathi';
  label: string;
  rateQps: number;
  records: readonly TimelineRecord[];
  fit: Pick<PrefillFit, 'a' | 'b' | 'c'> | null;
  ttftSlackS: number;
  clientErrorS: number | null;
}

export interface Fig3Input {
  systems: Fig3System[];
  timeScale: number;
  /** The paper's entries for this figure, judged against ours. */
  paper: FigurePaper;
  setup: string[];
}

const COLORS = { vllm: '#cf222e', sarathi: '#0969da' } as const;
const P = 99;
const MIN_FLUIDITY = 0.9;

/** Rates of one system, tokens per second of the paper's time. */
export interface Fig3Rates {
  /** Mean TPOT over the succeeded requests (the paper's TPOT rate is its inverse). */
  tpotMeanS: number | null;
  tbtP50S: number | null;
  tbtP85S: number | null;
  tbtP90S: number | null;
  tbtP99S: number | null;
  fluidDeadlineS: number | null;
  byTpot: number | null;
  byTbtP99: number | null;
  fluid: number | null;
}

function metricsOf(s: Fig3System): RequestMetrics[] {
  return s.records
    .filter((r) => r.warmup !== true)
    .map((r) => {
      const prefillS = s.fit ? predictPrefillS(s.fit, r.promptTokens) : 0;
      return computeRequestMetrics(r, { dpS: prefillS + s.ttftSlackS, tbtDeadlineS: 1, prefillS: s.fit ? prefillS : undefined });
    });
}

// P99 fluidity at a TBT deadline; failed requests count as 0.
function fluidityP99(ms: readonly RequestMetrics[], ddS: number): number {
  const v = new Float64Array(ms.length);
  ms.forEach((m, i) => {
    v[i] = m.succeeded && m.ttftS !== null ? fluidityOfRange(m.ttftS, m.tbtSamplesS, 0, m.tbtSamplesS.length, m.dpS, ddS).fluidity : 0;
  });
  v.sort();
  return sortedPercentileFromTop(v, P);
}

/** The smallest D_d on a 0.1 ms grid with P99 fluidity ≥ 0.9 (fluidity never falls as D_d grows), or null within 10 s. */
export function fluidDeadlineS(ms: readonly RequestMetrics[]): number | null {
  const step = 1e-4;
  let hi = Math.round(10 / step);
  if (ms.length === 0 || !(fluidityP99(ms, hi * step) >= MIN_FLUIDITY)) return null;
  let lo = 0;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (fluidityP99(ms, mid * step) >= MIN_FLUIDITY) hi = mid;
    else lo = mid;
  }
  return hi * step;
}

/** TPOT, P99 TBT and fluid rate of one system, in the paper's time. */
export function fig3Rates(s: Fig3System, timeScale: number): Fig3Rates {
  const ms = metricsOf(s);
  const ok = ms.filter((m) => m.succeeded);
  const tpots = Float64Array.from(ok.flatMap((m) => (m.tpotS === null ? [] : [m.tpotS / timeScale]))).sort();
  const tbts = Float64Array.from(ok.flatMap((m) => m.tbtSamplesS.map((g) => g / timeScale))).sort();
  const tpotMeanS = tpots.length ? tpots.reduce((t, x) => t + x, 0) / tpots.length : null;
  const tbtAt = (p: number) => (tbts.length ? sortedPercentile(tbts, p) : null);
  const tbtP99S = tbtAt(P);
  const dd = fluidDeadlineS(ms);
  const fluidD = dd === null ? null : dd / timeScale;
  const inv = (x: number | null) => (x !== null && x > 0 ? 1 / x : null);
  return { tpotMeanS, tbtP50S: tbtAt(50), tbtP85S: tbtAt(85), tbtP90S: tbtAt(90), tbtP99S, fluidDeadlineS: fluidD, byTpot: inv(tpotMeanS), byTbtP99: inv(tbtP99S), fluid: inv(fluidD) };
}

/** The id of the succeeded request with the longest gap between two tokens, or null. */
export function mostStalledId(records: readonly TimelineRecord[]): string | null {
  let best: string | null = null;
  let bestGap = -1;
  for (const r of records) {
    if (r.warmup === true || r.status !== 'ok' || r.chunks.length < 2) continue;
    for (let i = 1; i < r.chunks.length; i++) {
      const g = r.chunks[i][0] - r.chunks[i - 1][0];
      if (g > bestGap) [bestGap, best] = [g, r.id];
    }
  }
  return best;
}

/** The longest gap between two tokens of any succeeded request, in the paper's time, or null. */
export function longestStallS(records: readonly TimelineRecord[], timeScale: number): number | null {
  const id = mostStalledId(records);
  return id === null ? null : (requestTimeline(records, id, timeScale)?.stallS ?? null);
}

/** One request's tokens over time, [s since its first token, tokens so far], and its longest gap. */
export function requestTimeline(records: readonly TimelineRecord[], id: string, timeScale: number): { id: string; stallS: number; points: [number, number][] } | null {
  const r = records.find((x) => x.id === id && x.status === 'ok' && x.chunks.length > 0);
  if (!r) return null;
  const t0 = r.chunks[0][0];
  let n = 0;
  let stall = 0;
  const points = r.chunks.map(([t, k], i) => {
    n += k;
    if (i > 0) stall = Math.max(stall, t - r.chunks[i - 1][0]);
    return [+((t - t0) / timeScale).toFixed(6), n] as [number, number];
  });
  return { id, stallS: stall / timeScale, points };
}

export function metronFig3(input: Fig3Input): FigureArtifacts {
  // The same request (the plans share a seed) in every system: the one the first system (vLLM) stalls most.
  const stalledId = input.systems.length ? mostStalledId(input.systems[0].records) : null;
  const rates = input.systems.map((s) => ({ s, r: fig3Rates(s, input.timeScale), stall: stalledId ? requestTimeline(s.records, stalledId, input.timeScale) : null }));
  const timeline: Chart = {
    title: 'A decode stalled by prefills, in both systems (Metron Fig. 3a)',
    xLabel: 'time since the first token (s)',
    yLabel: 'tokens received',
    xScale: 'linear',
    series: rates.flatMap(({ s, stall }) =>
      stall ? [{ name: `${s.label} (${stall.id}, stall ${+(stall.stallS * 1000).toPrecision(3)} ms)`, kind: 'line' as const, color: COLORS[s.key], points: stall.points }] : [],
    ),
    hLines: [],
    vLines: [],
    description: `Tokens received over time by request ${stalledId ?? '(none)'}, the one with the longest gap between two tokens under ${input.systems[0]?.label ?? ''}, in every system (the same planned request); a flat step is a decode paused by other requests\u2019 prefills.`,
  };
  const metric = (name: string, color: string, pick: (r: Fig3Rates) => number | null) => ({
    name,
    kind: 'points' as const,
    color,
    points: rates.flatMap(({ r }, i) => (pick(r) === null ? [] : [[i + 1, pick(r)!] as [number, number]])),
  });
  const bars: Chart = {
    title: 'Token rate by TPOT, by P99 TBT and fluid (Metron Fig. 3b)',
    xLabel: `system (${input.systems.map((s, i) => `${i + 1} = ${s.label}`).join(', ')})`,
    yLabel: 'tokens per second',
    xScale: 'linear',
    xWhole: true,
    series: [metric('1 / mean TPOT', '#1a7f37', (r) => r.byTpot), metric('1 / TBT p99', '#bc4c00', (r) => r.byTbtP99), metric('fluid token rate (P99 ≥ 0.9)', '#8250df', (r) => r.fluid)],
    hLines: [],
    vLines: [],
    description: 'For each system, the token rate the mean TPOT suggests, the rate the P99 TBT suggests, and the fluid token generation rate.',
  };
  const ours: Record<string, number | null> = {};
  for (const { s, r } of rates) {
    ours[`${s.key}.tokensPerSByTpot`] = r.byTpot;
    ours[`${s.key}.tokensPerSByTbtP99`] = r.byTbtP99;
    ours[`${s.key}.fluidTokensPerS`] = r.fluid;
    ours[`${s.key}.tbtP50S`] = r.tbtP50S;
    ours[`${s.key}.tbtP85S`] = r.tbtP85S;
    ours[`${s.key}.tbtP90S`] = r.tbtP90S;
    ours[`${s.key}.tbtP99S`] = r.tbtP99S;
    ours[`${s.key}.tbtTailS`] = r.tbtP99S;
    ours[`${s.key}.longestStallS`] = longestStallS(s.records, input.timeScale);
  }
  const claims = judgeFigure(input.paper, ours);
  const notes = [
    ...input.setup,
    `Times are in the paper's time: the engine ran at time scale ${input.timeScale}.`,
    ...rates.map(
      ({ s, r }) =>
        `${s.label} @ ${+s.rateQps.toPrecision(3)} QPS: mean TPOT ${fmtMs(r.tpotMeanS)}, TBT p50 ${fmtMs(r.tbtP50S)}, p85 ${fmtMs(r.tbtP85S)}, p90 ${fmtMs(r.tbtP90S)}, p99 ${fmtMs(r.tbtP99S)}, fluid deadline ${fmtMs(r.fluidDeadlineS)}; client timing error p99 ${s.clientErrorS === null ? 'not measured' : `${fmtMs(s.clientErrorS)} real`}.`,
    ),
  ];
  const ratesCsv = toCsv(
    ['system', 'rateQps', 'tpotMeanS', 'tbtP50S', 'tbtP85S', 'tbtP90S', 'tbtP99S', 'fluidTbtDeadlineS', 'tokensPerSByTpot', 'tokensPerSByTbtP99', 'fluidTokensPerS', 'clientErrorRealS'],
    rates.map(({ s, r }) => [s.key, s.rateQps, r.tpotMeanS, r.tbtP50S, r.tbtP85S, r.tbtP90S, r.tbtP99S, r.fluidDeadlineS, r.byTpot, r.byTbtP99, r.fluid, s.clientErrorS]),
  );
  return figureArtifacts({
    name: 'metron-fig3',
    title: 'Metron Fig. 3: vLLM against Sarathi-Serve',
    charts: [{ base: 'timeline', alt: 'stalled decode', chart: timeline }, { base: 'token-rates', alt: 'token rates', chart: bars }],
    tables: [{ file: 'rates.csv', text: ratesCsv }],
    claims,
    notes,
    summary: rates.map(({ s, r }) => `${s.label}: ${fmtRate(r.byTpot)} by mean TPOT, ${fmtRate(r.byTbtP99)} by TBT p99, ${fmtRate(r.fluid)} fluid`),
  });
}

const fmtMs = (s: number | null) => (s === null ? 'none' : `${+(s * 1000).toPrecision(3)} ms`);
const fmtRate = (v: number | null) => (v === null ? 'no rate' : `${+v.toPrecision(3)} tok/s`);
