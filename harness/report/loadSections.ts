// The report's sections about behaviour under load: latency against rate (the knee), the probes
// around capacity in detail (TBT CDF, TTFT against prompt length with D_p, fluidity against the
// target TBT as in Metron Fig. 5d), the engine's queues over each probe's time, and the token
// accounting that says whether the numbers mean what they claim. Pure: run data in, blocks out.
import type { Block, Chart, ChartSeries, Inline, PointStatus } from './doc.ts';
import { heading, para, table } from './doc.ts';
import type { ReportProbe, RunReportData } from './runData.ts';
import { NONE, fmtNum, fmtPct, fmtSeconds } from './format.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { DEFAULT_FLUIDITY } from '../metrics/slo.ts';

import { PALETTE } from './charts/style.ts';

const color = (i: number) => PALETTE[i % PALETTE.length];

/** How a probe's numbers should be read in a chart: stopped early, invalid, undecided, or a measurement with a decided verdict. */
export function probeStatus(p: ReportProbe): PointStatus {
  if (p.valid === false) return 'invalid';
  if (p.earlyStop) return 'early-stopped';
  if (p.statistics?.decision === 'undecided') return 'undecided';
  return 'measured';
}

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
  // A probe stopped early keeps its point, marked: its latencies count only the requests that finished before it was cancelled.
  const line = (name: string, c: string, pick: (p: ReportProbe) => number | null): ChartSeries => {
    const ps = probes.flatMap((p) => {
      const v = pick(p);
      return v !== null && Number.isFinite(v) ? [{ p, v }] : [];
    });
    return { name, kind: 'line', dots: true, color: c, points: ps.map(({ p, v }) => [p.qps, v]), status: ps.map(({ p }) => (p.earlyStop ? 'early-stopped' : 'measured')) };
  };
  const cap = d.capacity.capacityQps;
  const vLines = cap > 0 ? [{ x: cap, label: `capacity ${fmtNum(cap)} QPS` }] : [];
  const stoppedNote = probes.some((p) => p.earlyStop)
    ? ' Hollow triangles are probes stopped early: their latencies count only the requests that finished before the probe was cancelled, so they read lower than the rate deserves; the line skips them.'
    : '';
  const f = d.capacity.slo.fluidity;
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
      howToRead: `Where the p99 line leaves its floor, requests start to queue before their prefill.${stoppedNote}`,
    },
    {
      title: 'TBT by request rate',
      xLabel: 'request rate (QPS)',
      yLabel: 'time between tokens (s)',
      xScale,
      series: [line('TBT p50', PALETTE[0], (p) => p.tbtP50S), line('TBT p99', PALETTE[1], (p) => p.tbtP99S)],
      hLines: f ? [{ y: f.tbtDeadlineS, label: `TBT deadline ${fmtSeconds(f.tbtDeadlineS)}` }] : [],
      vLines,
      description: 'Median and 99th-percentile gap between consecutive tokens of each valid probe, against its rate.',
      howToRead:
        (f
          ? `TBT p99 may sit above the ${fmtSeconds(f.tbtDeadlineS)} deadline well below capacity, and that is no contradiction: the fluidity-index gives every token a deadline and carries slack forward, so a token that arrives early banks time that a later stall may spend; a request fails only when its tokens fall behind their schedule, not when one gap is long. The SLO judges fluidity, not TBT.`
          : 'TBT percentiles over every gap between consecutive tokens of the probe\u2019s succeeded requests.') + stoppedNote,
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

  // The tail decides the SLO, so it is drawn as the share of gaps longer than x on log-log axes:
  // the last 1% of gaps spans two decades of the y axis instead of a hair at the top of a CDF.
  out.push({
    kind: 'chart',
    chart: {
      title: 'TBT distribution (tail)',
      file: 'tbt-tail',
      xLabel: 'time between tokens (s)',
      yLabel: 'share of token gaps longer than x',
      xScale: 'log',
      yScale: 'log',
      series: shown.map((p, i) => ({
        name: label(p, cap),
        kind: 'line',
        color: color(i),
        points: p.detail!.tbtCdf.flatMap(([x, y]): [number, number][] => (x > 0 && y < 1 ? [[x, 1 - y]] : [])),
      })),
      hLines: [],
      vLines: [{ x: ddS, label: `deadline ${fmtSeconds(ddS)}` }],
      description: `The share of gaps between tokens longer than each duration, in each probe shown (log–log axes).`,
      howToRead: `Each curve falls from 1 (every gap is longer than nothing) to its longest gap; further right means longer stalls. Where a curve crosses the dotted deadline is the share of gaps longer than the TBT deadline (fluidity is judged per request, with slack carried between tokens, so no single share of gaps decides the SLO). Gaps of zero (tokens that arrived in one chunk) are left off the log axis.`,
    },
  });

  // Thousands of requests would overplot as dots: each probe gets its own panel of binned counts.
  const maxP = Math.max(1, ...shown.flatMap((p) => p.detail!.ttftByPrompt.map(([x]) => x)));
  const curve = (g: (P: number) => number): [number, number][] => Array.from({ length: 41 }, (_, i) => [(maxP * i) / 40, g((maxP * i) / 40)]);
  const fit = d.fit;
  const panelOf = (p: ReportProbe) => label(p, cap);
  const ttftSeries: ChartSeries[] = shown.map((p) => ({ name: `requests ${panelOf(p)}`, legend: 'requests', kind: 'density', color: PALETTE[0], points: p.detail!.ttftByPrompt, panel: panelOf(p) }));
  if (fit) {
    ttftSeries.push({ name: 'D_p(P) isolated', kind: 'line', color: '#24292f', points: curve((P) => predictPrefillS(fit, P)) });
    ttftSeries.push({ name: `D_p(P) + ${fmtSeconds(slackS)} slack`, kind: 'line', dashed: true, color: '#bc4c00', points: curve((P) => predictPrefillS(fit, P) + slackS) });
  }
  const counted = shown.reduce((t, p) => t + p.detail!.ttftByPrompt.length, 0);
  out.push({
    kind: 'chart',
    chart: {
      title: 'TTFT by prompt length under load',
      file: 'ttft-by-prompt',
      xLabel: 'prompt tokens',
      yLabel: 'TTFT (s)',
      xScale: 'linear',
      series: ttftSeries,
      hLines: fit ? [] : [{ y: slackS, label: `first-token deadline ${fmtSeconds(slackS)}` }],
      vLines: [],
      panels: { names: shown.map(panelOf), columns: 3 },
      description: `TTFT against prompt length of ${counted} requests, one panel per probe, as counts in cells (darker: more requests).`,
      howToRead: fit
        ? 'The solid line is the isolated prefill time D_p(P); the dashed one the first-token deadline D_p(P) + TTFT slack of the fluidity-index. Cells above the dashed line are requests whose first token was late.'
        : 'Without a prefill fit the first-token deadline is the TTFT slack alone (the dashed line); cells above it are requests whose first token was late.',
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

/** Running, waiting and KV-cache usage over each probe's time, from the engine's own /metrics: one panel per probe. */
export function engineOverTimeCharts(d: RunReportData): Block[] {
  const probes = d.probes.filter((p) => p.series.length > 0);
  if (probes.length === 0) return [];
  // Panels by rate, so the step from a settling queue to a growing one reads left to right.
  const ordered = [...probes].sort((a, b) => a.qps - b.qps || a.index - b.index);
  const panelOf = (p: ReportProbe) => `${fmtNum(p.qps)} QPS (#${p.index})`;
  const line = (p: ReportProbe, name: string, c: string, pick: (s: ReportProbe['series'][number]) => number | null, scale = 1): ChartSeries => ({
    name: `${name} ${panelOf(p)}`,
    legend: name,
    kind: 'line',
    color: c,
    panel: panelOf(p),
    points: p.series.flatMap((s) => {
      const v = pick(s);
      return v === null || s.tS < 0 ? [] : [[s.tS, v * scale] as [number, number]];
    }),
  });
  const panels = { names: ordered.map(panelOf), columns: Math.min(4, ordered.length) };
  const read = 'Compare shapes across panels: a level that settles is a stable queue; one that climbs until the probe ends is a queue that would keep growing.';
  const charts: Chart[] = [
    {
      title: 'Requests running and waiting in the engine',
      file: 'engine-queue',
      xLabel: 'time from probe start (s)',
      yLabel: 'requests',
      xScale: 'linear',
      series: ordered.flatMap((p) => [line(p, 'running', PALETTE[0], (s) => s.running), line(p, 'waiting', PALETTE[1], (s) => s.waiting)]).filter((s) => s.points.length > 0),
      hLines: [],
      vLines: [],
      panels,
      description: 'Requests the engine was running (blue) and holding in its queue (red) at each scrape of /metrics, one panel per probe, by rate (probe number in brackets).',
      howToRead: read,
    },
    {
      title: 'KV-cache usage',
      file: 'kv-cache',
      xLabel: 'time from probe start (s)',
      yLabel: 'KV-cache usage (%)',
      xScale: 'linear',
      series: ordered.map((p) => line(p, 'KV-cache usage', PALETTE[3], (s) => s.kvUsage, 100)).filter((s) => s.points.length > 0),
      hLines: [],
      vLines: [],
      panels,
      description: 'The share of the KV cache in use at each scrape of /metrics, one panel per probe, by rate.',
      howToRead: `${read} Usage near 100% means requests are being preempted or held back for memory.`,
    },
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
