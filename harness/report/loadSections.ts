// The report's sections about behaviour under load: latency against rate (the knee), the probes
// around capacity in detail (TBT CDF, TTFT against prompt length with D_p, fluidity against the
// target TBT as in Metron Fig. 5d), the engine's queues over each probe's time, and the token
// accounting that says whether the numbers mean what they claim. Pure: run data in, blocks out.
import type { Block, Chart, ChartSeries, Inline } from './doc.ts';
import { heading, para, table } from './doc.ts';
import type { ReportProbe, RunReportData } from './runData.ts';
import { NONE, fmtNum, fmtPct, fmtSeconds } from './format.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { DEFAULT_FLUIDITY } from '../metrics/slo.ts';

const PALETTE = ['#0969da', '#cf222e', '#1a7f37', '#8250df', '#bc4c00', '#1b7c83', '#bf3989', '#57606a', '#953800', '#4d2d00'];
const color = (i: number) => PALETTE[i % PALETTE.length];

/** The valid probes with a verdict, one per rate (the last one run at that rate), by rate. */
export function probesByRate(probes: readonly ReportProbe[]): ReportProbe[] {
  const byRate = new Map<number, ReportProbe>();
  for (const p of probes) if (p.valid !== false && p.passed !== null) byRate.set(p.qps, p);
  return [...byRate.values()].sort((a, b) => a.qps - b.qps);
}

/**
 * The probes the detail charts show: the highest pass (capacity), the lowest valid fail above it,
 * and the pass below capacity, so the figures show the step from holding to breaking.
 */
export function probesAroundCapacity(probes: readonly ReportProbe[], capacity: { capacityQps: number }): ReportProbe[] {
  const valid = probesByRate(probes);
  const passes = valid.filter((p) => p.passed && p.qps <= capacity.capacityQps + 1e-12);
  const at = passes.at(-1);
  const below = passes.at(-2);
  const fail = valid.find((p) => !p.passed && p.qps > (at?.qps ?? 0));
  return [below, at, fail].filter((p): p is ReportProbe => p !== undefined);
}

const label = (p: ReportProbe, capacityQps: number) =>
  `${fmtNum(p.qps)} QPS${p.passed ? (Math.abs(p.qps - capacityQps) < 1e-9 ? ' (capacity)' : ' (pass)') : ' (fail)'}`;

/** TTFT and TBT percentiles against rate: where latency leaves its floor. */
export function latencySection(d: RunReportData): Block[] {
  const out: Block[] = [heading(2, 'Latency against load')];
  const probes = probesByRate(d.probes);
  if (probes.length === 0) return [...out, para('No valid probe to plot.')];
  const xScale = probes.length > 1 && probes.at(-1)!.qps / probes[0].qps >= 8 ? 'log' : 'linear';
  const line = (name: string, c: string, pick: (p: ReportProbe) => number | null): ChartSeries => ({
    name,
    kind: 'line',
    dots: true,
    color: c,
    points: probes.flatMap((p) => {
      const v = pick(p);
      return v !== null && Number.isFinite(v) ? [[p.qps, v] as [number, number]] : [];
    }),
  });
  const cap = d.capacity.capacityQps;
  const vLines = cap > 0 ? [{ x: cap, label: `capacity ${fmtNum(cap)} QPS` }] : [];
  const charts: Chart[] = [
    {
      title: 'TTFT by request rate',
      xLabel: 'request rate (QPS)',
      yLabel: 'TTFT (s)',
      xScale,
      series: [line('TTFT p50', PALETTE[0], (p) => p.ttftP50S), line('TTFT p99', PALETTE[1], (p) => p.ttftP99S)],
      hLines: d.capacity.slo.ttft ? [{ y: d.capacity.slo.ttft.maxS, label: `TTFT SLO ${fmtSeconds(d.capacity.slo.ttft.maxS)}` }] : [],
      vLines,
      description: 'Median and 99th-percentile time to first token (from the planned arrival) of each valid probe, against its rate.',
    },
    {
      title: 'TBT by request rate',
      xLabel: 'request rate (QPS)',
      yLabel: 'time between tokens (s)',
      xScale,
      series: [line('TBT p50', PALETTE[0], (p) => p.tbtP50S), line('TBT p99', PALETTE[1], (p) => p.tbtP99S)],
      hLines: d.capacity.slo.fluidity ? [{ y: d.capacity.slo.fluidity.tbtDeadlineS, label: `TBT deadline ${fmtSeconds(d.capacity.slo.fluidity.tbtDeadlineS)}` }] : [],
      vLines,
      description: 'Median and 99th-percentile gap between consecutive tokens of each valid probe, against its rate.',
    },
  ];
  for (const chart of charts) if (chart.series.some((s) => s.points.length > 0)) out.push({ kind: 'chart', chart });
  out.push(
    table(
      ['rate (QPS)', '#', 'verdict', 'TTFT p50', 'TTFT p99', 'TBT p50', 'TBT p99', 'fluidity P99'],
      probes.map((p) => [fmtNum(p.qps), String(p.index), p.passed ? 'pass' : 'fail', fmtSeconds(p.ttftP50S), fmtSeconds(p.ttftP99S), fmtSeconds(p.tbtP50S), fmtSeconds(p.tbtP99S), fmtNum(p.fluidityP99, 3)]),
      [true, true, false, true, true, true, true, true],
      {
        name: 'latencyByRate',
        columns: ['rateQps', 'probe', 'passed', 'ttftP50S', 'ttftP99S', 'tbtP50S', 'tbtP99S', 'fluidityP99'],
        rows: probes.map((p) => [p.qps, p.index, p.passed, p.ttftP50S, p.ttftP99S, p.tbtP50S, p.tbtP99S, p.fluidityP99]),
      },
    ),
  );
  out.push(para('One point per valid probe (the last one run at a rate); invalid probes are left out. Latency percentiles cover the requests that succeeded.'));
  return out;
}

/** TBT CDF, TTFT against prompt length with D_p, and fluidity against the target TBT, for the probes around capacity. */
export function aroundCapacitySection(d: RunReportData): Block[] {
  const out: Block[] = [heading(2, 'The probes around capacity')];
  const shown = probesAroundCapacity(d.probes, d.capacity).filter((p) => p.detail !== null);
  if (shown.length === 0) return [...out, para('No timelines of the probes around capacity were found, so these figures are absent.')];
  const cap = d.capacity.capacityQps;
  const f = d.capacity.slo.fluidity;
  const ddS = f?.tbtDeadlineS ?? DEFAULT_FLUIDITY.tbtDeadlineS;
  const slackS = f?.ttftSlackS ?? d.fit?.ttftSlackS ?? DEFAULT_FLUIDITY.ttftSlackS;
  const pct = f?.percentile ?? DEFAULT_FLUIDITY.percentile;
  const minF = f?.minFluidity ?? DEFAULT_FLUIDITY.minFluidity;
  const dropped = shown.filter((p) => p.detail!.cancelledLeftOut > 0);
  out.push(
    para(
      `Shown: ${shown.map((p) => `probe ${p.index} at ${label(p, cap)}`).join(', ')}; warm-up requests excluded.`,
      dropped.length
        ? ` Requests cancelled when a probe stopped early are left out of these figures (they were never answered, so they have no latency): ${dropped.map((p) => `${p.detail!.cancelledLeftOut} at ${fmtNum(p.qps)} QPS`).join(', ')}; the verdict counted them as failures.`
        : '',
    ),
  );

  // The CDF is cut where the slowest probe's 99.9th percentile lies (or at twice the deadline), so the stalls stay visible.
  const tail = Math.max(2 * ddS, ...shown.map((p) => p.detail!.tbtCdf.find(([, y]) => y >= 0.999)?.[0] ?? 0));
  out.push({
    kind: 'chart',
    chart: {
      title: 'TBT distribution (CDF)',
      xLabel: 'time between tokens (s)',
      yLabel: 'fraction of token gaps ≤ x',
      xScale: 'linear',
      series: shown.map((p, i) => ({ name: label(p, cap), kind: 'line', color: color(i), points: p.detail!.tbtCdf.filter(([x]) => x <= tail) })),
      hLines: [],
      vLines: [{ x: ddS, label: `deadline ${fmtSeconds(ddS)}` }],
      description: `Cumulative distribution of the gaps between tokens in each probe, up to ${fmtSeconds(tail)}; the vertical line is the TBT deadline.`,
    },
  });

  const maxP = Math.max(1, ...shown.flatMap((p) => p.detail!.ttftByPrompt.map(([x]) => x)));
  const curve = (g: (P: number) => number): [number, number][] => Array.from({ length: 41 }, (_, i) => [(maxP * i) / 40, g((maxP * i) / 40)]);
  const fit = d.fit;
  const ttftSeries: ChartSeries[] = shown.map((p, i) => ({ name: label(p, cap), kind: 'points', color: color(i), points: p.detail!.ttftByPrompt }));
  if (fit) {
    ttftSeries.push({ name: 'D_p(P) isolated', kind: 'line', color: '#24292f', points: curve((P) => predictPrefillS(fit, P)) });
    ttftSeries.push({ name: `D_p(P) + ${fmtSeconds(slackS)} slack`, kind: 'line', color: '#bc4c00', points: curve((P) => predictPrefillS(fit, P) + slackS) });
  }
  out.push({
    kind: 'chart',
    chart: {
      title: 'TTFT by prompt length under load',
      xLabel: 'prompt tokens',
      yLabel: 'TTFT (s)',
      xScale: 'linear',
      series: ttftSeries,
      hLines: fit ? [] : [{ y: slackS, label: `first-token deadline ${fmtSeconds(slackS)} (no prefill fit)` }],
      vLines: [],
      description: fit
        ? 'Each request’s TTFT against its prompt length; the lines are the isolated prefill time D_p(P) and the first-token deadline D_p(P) + TTFT slack of the fluidity-index.'
        : 'Each request’s TTFT against its prompt length; without a prefill fit the first-token deadline is the TTFT slack alone.',
    },
  });

  out.push({
    kind: 'chart',
    chart: {
      title: `Fluidity P${pct} by target TBT (Metron Fig. 5d)`,
      xLabel: 'target TBT deadline (s)',
      yLabel: `fluidity P${pct}`,
      xScale: 'log',
      series: shown.map((p, i) => ({
        name: label(p, cap),
        kind: 'line',
        dots: true,
        color: color(i),
        points: p.detail!.fluidityByDeadline.map((r) => [r.tbtDeadlineS, r.fluidity] as [number, number]),
      })),
      hLines: [{ y: minF, label: `SLO ≥ ${minF}` }],
      vLines: [{ x: ddS, label: `SLO deadline ${fmtSeconds(ddS)}` }],
      description: `The fluidity that ${pct}% of requests reach, re-judged at each target TBT deadline from the archived timelines (first-token deadline unchanged).`,
    },
  });
  const grid = shown[0].detail!.fluidityByDeadline.map((r) => r.tbtDeadlineS);
  out.push(
    table(
      ['target TBT', ...shown.flatMap((p) => [`fluidity P${pct} @ ${fmtNum(p.qps)} QPS`, `missed deadlines @ ${fmtNum(p.qps)} QPS`])],
      grid.map((dd, k) => [fmtSeconds(dd), ...shown.flatMap((p) => [fmtNum(p.detail!.fluidityByDeadline[k].fluidity, 3), fmtPct(p.detail!.fluidityByDeadline[k].missRate)])]),
      undefined,
      {
        name: 'fluidityByDeadline',
        columns: ['tbtDeadlineS', ...shown.flatMap((p) => [`fluidityP${pct}At${p.qps}Qps`, `missRateAt${p.qps}Qps`])],
        rows: grid.map((dd, k) => [dd, ...shown.flatMap((p) => [p.detail!.fluidityByDeadline[k].fluidity, p.detail!.fluidityByDeadline[k].missRate])]),
      },
    ),
  );
  out.push(
    para(
      `Missed deadlines: the share of all token deadlines (first token and every later one) that were missed, over the requests that succeeded; a failed request counts as fluidity 0 in the percentile. `,
      fit ? '' : 'There is no prefill fit, so every first token is due at the TTFT slack alone.',
    ),
  );
  return out;
}

/** Running, waiting and KV-cache usage over each probe's time, from the engine's own /metrics. */
export function engineOverTimeCharts(d: RunReportData): Block[] {
  const probes = d.probes.filter((p) => p.series.length > 0);
  if (probes.length === 0) return [];
  const gauge = (title: string, yLabel: string, pick: (s: ReportProbe['series'][number]) => number | null, scale = 1): Chart => ({
    title,
    xLabel: 'time from probe start (s)',
    yLabel,
    xScale: 'linear',
    series: probes.map((p, i) => ({
      name: `#${p.index} ${fmtNum(p.qps)} QPS`,
      kind: 'line' as const,
      color: color(i),
      points: p.series.flatMap((s) => {
        const v = pick(s);
        return v === null || s.tS < 0 ? [] : [[s.tS, v * scale] as [number, number]];
      }),
    })).filter((s) => s.points.length > 0),
    hLines: [],
    vLines: [],
    description: `${title} as the engine reported it at each scrape of /metrics, one line per probe.`,
  });
  const charts = [
    gauge('Requests running in the engine', 'requests running', (s) => s.running),
    gauge('Requests waiting in the engine', 'requests waiting', (s) => s.waiting),
    gauge('KV-cache usage', 'KV-cache usage (%)', (s) => s.kvUsage, 100),
  ];
  return charts.filter((c) => c.series.length > 0).map((chart) => ({ kind: 'chart', chart }));
}

/** Whether the tokens counted are the tokens sent, whether the client kept up, and whether the prompt cache stayed cold. */
export function tokenAccountingSection(d: RunReportData): Block[] {
  const out: Block[] = [heading(2, 'Token accounting and client timing')];
  const probes = d.probes.filter((p) => p.tokenCounts || p.recvMinusEmit || p.retried !== null || p.serverMetrics?.cachedPromptTokens !== undefined);
  const prompts = d.manifest?.prompts ?? null;
  if (prompts) {
    out.push(para(`Prompts: ${prompts.format ?? NONE}${prompts.cache ? `, engine prompt cache ${prompts.cache}` : ''}.`));
    if (prompts.notes.length) out.push({ kind: 'list', items: prompts.notes.map((n) => [n]) });
  }
  if (probes.length === 0) return [...out, para('The probe summaries of this run record no token accounting (written by an older version).')];
  const ddS = d.capacity.slo.fluidity?.tbtDeadlineS ?? null;
  out.push(
    table(
      ['#', 'rate (QPS)', 'token counts', 'multi-token chunks', 'retried', 'receive − emit p50', 'receive − emit p99', 'p99 / TBT deadline', 'receive − emit max', 'max / TBT deadline', 'cached prompt tokens'],
      probes.map((p) => [
        String(p.index),
        fmtNum(p.qps),
        p.tokenCounts?.verdict ?? NONE,
        fmtNum(p.tokenCounts?.multiTokenChunks),
        fmtNum(p.retried),
        fmtSeconds(p.recvMinusEmit?.p50S),
        fmtSeconds(p.recvMinusEmit?.p99S),
        fmtPct(p.recvMinusEmit?.p99OfTbtDeadline ?? (p.recvMinusEmit?.p99S != null && ddS ? p.recvMinusEmit.p99S / ddS : null)),
        fmtSeconds(p.recvMinusEmit?.maxS),
        fmtPct(p.recvMinusEmit?.maxOfTbtDeadline ?? (p.recvMinusEmit?.maxS != null && ddS ? p.recvMinusEmit.maxS / ddS : null)),
        p.serverMetrics?.cachedPromptTokens == null && p.serverMetrics?.prefixCacheWitness?.startsWith('no witness') ? 'no witness' : fmtNum(p.serverMetrics?.cachedPromptTokens ?? null),
      ]),
      [true, true, false, true, true, true, true, true, true, true, true],
      {
        name: 'tokenAccounting',
        columns: ['probe', 'rateQps', 'tokenCounts', 'multiTokenChunks', 'retried', 'recvMinusEmitP50S', 'recvMinusEmitP99S', 'recvMinusEmitP99OfTbtDeadline', 'recvMinusEmitMaxS', 'recvMinusEmitMaxOfTbtDeadline', 'cachedPromptTokens', 'tokenCountsNote'],
        rows: probes.map((p) => [
          p.index,
          p.qps,
          p.tokenCounts?.verdict ?? null,
          p.tokenCounts?.multiTokenChunks ?? null,
          p.retried,
          p.recvMinusEmit?.p50S ?? null,
          p.recvMinusEmit?.p99S ?? null,
          p.recvMinusEmit?.p99OfTbtDeadline ?? null,
          p.recvMinusEmit?.maxS ?? null,
          p.recvMinusEmit?.maxOfTbtDeadline ?? null,
          p.serverMetrics?.cachedPromptTokens ?? null,
          p.tokenCounts?.note ?? null,
        ]),
      },
    ),
  );
  const items: Inline[][] = [
    ['Token counts: the engine’s reported usage against the planned prompt and output lengths (', { code: 'ok' }, ', ', { code: 'drift' }, ' makes a probe invalid, ', { code: 'unmeasured' }, ' when the engine reports no usage).'],
    ['Multi-token chunks: streamed chunks that carried more than one token; each adds zero-length gaps to the TBT samples.'],
    ['Retried: requests sent again on a fresh connection because their reused connection closed unread.'],
    ['Receive − emit: the time from the engine stamping a chunk to the client reading it, the client’s own delay; its p99 and max as shares of the TBT deadline say how much of a deadline it could eat.'],
    ['Cached prompt tokens: growth of the engine’s prompt-cache hit counter during the probe; 0 witnesses that no prompt was served from cache, “no witness” that this engine version exports no such counter (vLLM 0.8.5’s V0 engine), “—” that it was not read.'],
  ];
  out.push({ kind: 'list', items });
  const drifted = probes.filter((p) => p.tokenCounts?.note && p.tokenCounts.verdict !== 'ok');
  for (const p of drifted) out.push(para(`Probe ${p.index} at ${fmtNum(p.qps)} QPS, token counts ${p.tokenCounts!.verdict}: ${p.tokenCounts!.note}.`));
  return out;
}
