// Decides what a capacity report says: the capacity and what it means, the SLO as
// written, every probe, capacity under each baseline SLO (Metron Fig. 6), the fluid token rate, the
// prefill fit, server metrics, GPU and host facts, cost, method and provenance. Pure: run data in,
// document blocks out; report.md and report.html are layouts of the same blocks.
import type { Block, Chart, Inline } from './doc.ts';
import { heading, para, table } from './doc.ts';
import type { ReportProbe, RunReportData } from './runData.ts';
import type { ProbeStatistics } from '../runDir/schema.ts';
import { NONE, fmtChange, fmtNum, fmtPct, fmtSci, fmtSeconds, fmtUsd } from './format.ts';
import { predictPrefillS } from '../metrics/prefill.ts';
import { passOutsideInterval } from './capacityWords.ts';
import { SLO_NAMES, type Slo } from '../metrics/slo.ts';
import { earlyStopBrief } from '../metrics/sloBrief.ts';
import { RUN_FILES } from '../runDir/layout.ts';
import { aroundCapacitySection, engineOverTimeCharts, latencySection, probeStatus, tokenAccountingSection } from './loadSections.ts';
import { CAPACITY_COLOR, PALETTE, VERDICT_COLOR } from './charts/style.ts';
import { BACKLOG_UTILIZATION } from '../metrics/virtualBacklog.ts';

const PASS = VERDICT_COLOR.pass;
const FAIL = VERDICT_COLOR.fail;
const INVALID = VERDICT_COLOR.invalid;
const LINE = PALETTE[0];

/** The whole report, in reading order. */
export function buildReport(data: RunReportData): Block[] {
  return [
    ...headline(data),
    ...sloSection(data),
    ...probeSection(data),
    ...latencySection(data),
    ...aroundCapacitySection(data),
    ...perSloSection(data),
    ...baselineSection(data),
    ...fluidRateSection(data),
    ...fitSection(data),
    ...serverMetricsSection(data),
    ...tokenAccountingSection(data),
    ...hostSection(data),
    ...costSection(data),
    ...methodSection(data),
    ...provenanceSection(data),
  ];
}

/** Name of the headline SLO value column: the fluidity percentile, else the first latency SLO's. */
export function headlineSloLabel(slo: Slo): string {
  if (slo.fluidity) return `fluidity P${slo.fluidity.percentile}`;
  for (const [name, s] of Object.entries(slo)) if (s && 'maxS' in s) return `${name} P${s.percentile}`;
  return 'SLO value';
}

// The headline value is a fluidity (a fraction) or a latency (seconds), so it is formatted as such.
function fmtSloValue(slo: Slo, v: number | null | undefined): string {
  return slo.fluidity ? fmtNum(v, 4) : fmtSeconds(v);
}

function headline(d: RunReportData): Block[] {
  const c = d.capacity;
  const m = d.manifest;
  const target = m?.target ?? null;
  const out: Block[] = [heading(1, `Capacity report: ${d.runId}`)];
  const what: Inline[] = [];
  if (target?.recipeName) what.push('Recipe ', { code: target.recipeName }, target.description ? ` (${target.description.trim().replace(/\.$/, '')})` : '', '. ');
  what.push(
    `Engine ${target?.engine ?? NONE}, model ${target?.model ?? NONE}, GPU ${c.gpuProfile ? `${c.gpuProfile}${c.gpuCount ? ` × ${c.gpuCount}` : ''}` : NONE}.`,
  );
  // The exit reason of a completed run is the search's outcome, stated below; only other endings need it here.
  if (m?.status) what.push(` Run status: ${m.status}${m.exitReason && m.exitReason !== c.reason ? ` (${m.exitReason})` : ''}.`);
  out.push(para(...what));

  const words: Inline[] = [{ strong: `Capacity: ${fmtNum(c.capacityQps)} QPS` }];
  if (c.belowMin) words.push(' (the SLO failed even at the lowest rate searched; the true capacity is below it)');
  else if (c.atLeastMax) words.push(' (the SLO held at the highest rate searched; the true capacity is at least this)');
  words.push(
    ` — the highest request rate (open-loop arrivals, requests per second) at which every configured SLO below held on a probe, with every lower probed rate passing too.`,
  );
  out.push(para(...words));
  if (c.interval) out.push(para(...intervalWords(c.interval, c.capacityQps)));

  const { passQps: pass, failQps: fail } = c.bracket;
  const tol = c.tolerance;
  let bracket = `Bracket: ${pass === null ? 'no probed rate passed' : `passed at ${fmtNum(pass)} QPS`}, ${fail === null ? 'no valid probe failed' : `failed at ${fmtNum(fail)} QPS`}`;
  if (pass !== null && fail !== null && pass > 0) {
    const gap = (fail - pass) / pass;
    bracket += `; the gap is ${fmtPct(gap)} of the passing rate`;
    if (tol !== null) bracket += gap <= tol + 1e-12 ? `, within the tolerance of ${fmtPct(tol)}` : `, wider than the tolerance of ${fmtPct(tol)}`;
  } else if (tol !== null) {
    bracket += ` (tolerance ${fmtPct(tol)} of the rate)`;
  }
  out.push(para(`${bracket}.`));
  const ends = bracketStatistics(d);
  if (ends) out.push(para(ends));
  if (c.reason || c.outcome) out.push(para('Outcome', c.outcome ? ` (${c.outcome})` : '', `: ${c.reason ?? NONE}.`));
  for (const r of c.rehearsals) out.push(para(...rehearsalWords(r)));
  const chart = capacityIntervalChart(d);
  if (chart) out.push({ kind: 'chart', chart });
  return out;
}

/**
 * What the run knows about the capacity, on one rate axis: every probe (by verdict), the bracket of
 * nearest-rank verdicts, the bracket of decided probes only, and the interval of the estimate with
 * the estimate marked (for all SLO entries together and, when there are several, each on its own).
 */
export function capacityIntervalChart(d: RunReportData): Chart | null {
  const c = d.capacity;
  const rows: string[] = [];
  const series: Chart['series'] = [];
  const row = (name: string) => rows.push(name) - 1;
  const valid = d.probes.filter((p) => p.qps > 0);
  if (valid.length === 0) return null;
  const rates = valid.map((p) => p.qps);
  const lo = Math.min(...rates);
  const hi = Math.max(...rates);
  // An open end is drawn to the edge of the probed range.
  const end = (v: number | null, open: number) => v ?? open;
  const range = (name: string, color: string, y: number, a: number, b: number, label: string) => series.push({ name, kind: 'range', color, points: [[a, y]], x2: [b], labels: [label] });

  const iv = c.interval;
  if (iv) {
    const y = row(`${Math.round(iv.level * 100)}% interval`);
    range(`${Math.round(iv.level * 100)}% interval of the estimate`, CAPACITY_COLOR, y, end(iv.loQps, lo), end(iv.hiQps, hi), `${iv.loQps === null ? 'open' : fmtNum(iv.loQps)}–${iv.hiQps === null ? 'open' : fmtNum(iv.hiQps)}`);
    if (iv.estimateQps !== null) series.push({ name: 'estimate', kind: 'points', color: '#24292f', points: [[iv.estimateQps, y]] });
    for (const e of iv.perSlo && iv.perSlo.length > 1 ? iv.perSlo : []) {
      const ye = row(`interval, ${e.name} alone`);
      range(`${Math.round(iv.level * 100)}% interval of the estimate`, CAPACITY_COLOR, ye, end(e.loQps, lo), end(e.hiQps, hi), `${e.loQps === null ? 'open' : fmtNum(e.loQps)}–${e.hiQps === null ? 'open' : fmtNum(e.hiQps)}`);
      if (e.estimateQps !== null) series.push({ name: 'estimate', kind: 'points', color: '#24292f', points: [[e.estimateQps, ye]] });
    }
  }
  const db = c.decidedBracket;
  if (db && (db.passQps !== null || db.failQps !== null)) {
    const y = row('decided bracket');
    range('decided bracket (decided pass – decided fail)', '#57606a', y, end(db.passQps, lo), end(db.failQps, hi), `${db.passQps === null ? 'no decided pass' : fmtNum(db.passQps)}–${db.failQps === null ? 'no decided fail' : fmtNum(db.failQps)}`);
  }
  const { passQps, failQps } = c.bracket;
  if (passQps !== null || failQps !== null) {
    const y = row('bracket');
    range('bracket (highest pass – lowest fail)', '#afb8c1', y, end(passQps, lo), end(failQps, hi), `${passQps === null ? '—' : fmtNum(passQps)}–${failQps === null ? '—' : fmtNum(failQps)}`);
  }
  const yp = row('probes');
  const byVerdict = (name: string, color: string, pick: (p: ReportProbe) => boolean): Chart['series'][number] => {
    const ps = valid.filter(pick);
    return { name, kind: 'points', color, points: ps.map((p) => [p.qps, yp] as [number, number]), status: ps.map(probeStatus) };
  };
  series.push(
    byVerdict('pass', PASS, (p) => p.valid !== false && p.passed === true),
    byVerdict('fail', FAIL, (p) => p.valid !== false && p.passed === false),
    byVerdict('invalid', INVALID, (p) => p.valid === false),
  );
  return {
    title: 'What this run knows about its capacity',
    file: 'capacity-interval',
    xLabel: 'request rate (QPS)',
    yLabel: '',
    xScale: hi / lo >= 8 ? 'log' : 'linear',
    yCategories: rows,
    series: series.filter((s) => s.points.length > 0),
    hLines: [],
    // Unlabelled: a label at the top would sit on the interval's own; the caption names the line.
    vLines: c.capacityQps > 0 ? [{ x: c.capacityQps, label: '' }] : [],
    description: 'The capacity on one rate axis: the estimate with its interval, the bracket of decided probes, the bracket of nearest-rank verdicts and every probe.',
    howToRead:
      'Read from the bottom up: the probes passed (green) or failed (red) at their rates; the bracket joins the highest pass to the lowest fail above it; the decided bracket does the same with only the probes whose verdict the statistics decided; the interval is where the capacity lies given every request of every probe, with the estimate as a black dot; the dotted line is the capacity (the highest probe that passed). A wide or open interval means the probes do not pin the capacity down: near the knee a short probe passes or fails by chance.',
  };
}

// What `run --rehearse` proposed on the twin, and how far the real search moved from it.
function rehearsalWords(r: RunReportData['capacity']['rehearsals'][number]): Inline[] {
  const iv = r.interval;
  const range = iv ? `${iv.loQps === null ? 'open' : fmtNum(iv.loQps)}–${iv.hiQps === null ? 'open' : fmtNum(iv.hiQps)} QPS` : null;
  const proposal = iv && iv.estimateQps !== null ? `an estimate of ${fmtNum(iv.estimateQps)} QPS, 95% interval ${range}` : `a capacity of ${fmtNum(r.capacityQps)} QPS`;
  const moved = r.movedBy
    ? [r.movedBy.estimate !== null ? `the run's estimate is ${fmtChange(r.movedBy.estimate)} from it` : null, r.movedBy.capacity !== null ? `its highest passing probe ${fmtChange(r.movedBy.capacity)}` : null].filter((x) => x !== null)
    : [];
  return [
    { strong: `Rehearsal (${r.twin === 'calibrated' ? 'the twin calibrated to this run' : 'the simulated twin, uncalibrated'})` },
    `: probes at ${r.probes.map((p) => `${fmtNum(p.qps)} ${p.passed ? 'pass' : 'fail'}`).join(', ')} (${r.loadSeconds.toFixed(0)} s of virtual load) proposed ${proposal}, bracket ${fmtNum(r.bracket.passQps ?? 0)}–${r.bracket.failQps === null ? 'open' : fmtNum(r.bracket.failQps)} QPS (${r.outcome}).`,
    moved.length > 0 ? ` The real search moved: ${moved.join('; ')}.` : '',
  ];
}

// The estimate from every probe's requests and its 95% interval; an open side is said in words.
function intervalWords(iv: NonNullable<RunReportData['capacity']['interval']>, capacityQps: number | null): Inline[] {
  const range = `${iv.loQps === null ? 'open' : fmtNum(iv.loQps)}–${iv.hiQps === null ? 'open' : fmtNum(iv.hiQps)} QPS`;
  const est = iv.estimateQps !== null ? `${fmtNum(iv.estimateQps)} QPS` : iv.open === 'lo' ? 'below the probed rates' : 'above the probed rates';
  const open =
    iv.open === 'none' ? ''
    : iv.open === 'hi' ? ' The interval is open above: no probe failed surely enough to cap the capacity.'
    : iv.open === 'lo' ? ' The interval is open below: no probe passed surely enough to floor the capacity.'
    : ' The interval is open both ways: the probes do not bound the capacity.';
  const outside = passOutsideInterval(capacityQps, iv);
  return [
    { strong: `Estimate: ${est}, ${Math.round(iv.level * 100)}% interval ${range}` },
    ` — from every evaluated request of ${iv.probesUsed} probes (${iv.loadSeconds.toFixed(0)} s of load), not only the bracket's two: ${iv.method}.${open}`,
    ' The capacity above is the highest probe that passed; the estimate is where the miss fraction fitted across all probes crosses the allowance.',
    ...(outside ? [` That capacity lies ${outside}.`] : []),
  ];
}

function sloSection(d: RunReportData): Block[] {
  const entries = Object.entries(d.capacity.slo).filter((e): e is [string, NonNullable<(typeof e)[1]>] => Boolean(e[1]));
  const items: Inline[][] = entries.map(([name, s]) => [{ strong: name }, ': ', { code: s.source ?? NONE }]);
  return [
    heading(2, 'SLO (as written in the recipe)'),
    items.length ? { kind: 'list', items } : para(`${RUN_FILES.capacity} records no SLO.`),
    para('A probe passes when every SLO listed holds over its evaluated requests; failed and timed-out requests count against each SLO.'),
  ];
}

/** A few words for tables: "fail 99%", "undecided, leans pass 72%". */
export function shortDecision(s: ProbeStatistics): string {
  const pct = `${Math.floor(s.confidence * 100)}%`;
  return s.decision === 'undecided' ? `undecided, leans ${s.leaning} ${pct}` : `${s.decision} ${pct}`;
}

// What the bracket's ends establish about their rates, beside their nearest-rank verdicts, and the
// bracket the decisions alone support.
function bracketStatistics(d: RunReportData): string | null {
  const { passQps, failQps } = d.capacity.bracket;
  const at = (qps: number | null) => (qps === null ? null : (d.probes.filter((p) => p.qps === qps && p.valid !== false && p.statistics).at(-1)?.statistics ?? null));
  const pass = at(passQps);
  const fail = at(failQps);
  if (!pass && !fail) return null;
  const part = (label: string, qps: number | null, s: ProbeStatistics | null) => (s ? `the ${label} at ${fmtNum(qps)} QPS is ${s.decision === 'undecided' ? shortDecision(s) : `a decided ${s.decision} (${(s.confidence * 100).toFixed(1)}% confidence)`}` : null);
  const parts = [part('pass', passQps, pass), part('fail', failQps, fail)].filter((x) => x !== null);
  const decided = [pass, fail].filter((s) => s && s.decision !== 'undecided').length;
  let text = `Statistical decision of the bracket's ends (a sequential test on the miss fraction, clustering counted): ${parts.join('; ')}.`;
  if (decided < 2) {
    text += ' A rate that is not decided could fall on the other side of the SLO in a longer probe: near the knee, misses cluster and a short probe passes or fails by chance.';
    const db = d.capacity.decidedBracket;
    if (db) {
      const end = (qps: number | null, c: number | null, word: string, none: string) => (qps === null ? none : `${word} at ${fmtNum(qps)} QPS${c === null ? '' : ` (${(c * 100).toFixed(1)}%)`}`);
      text += ` The decided probes alone bracket the capacity between ${end(db.passQps, db.passConfidence, 'a pass', 'no decided pass')} and ${end(db.failQps, db.failConfidence, 'a fail', 'no decided fail')}: that is how finely this run knows it.`;
    }
  }
  return text;
}

function verdictOf(p: ReportProbe): string {
  if (p.valid === false) return 'invalid';
  if (p.passed === null) return NONE;
  return p.passed ? 'pass' : p.earlyStop ? 'fail (stopped early)' : 'fail';
}

/**
 * An early-stop reason in a few words for the probe table ("9 of 864 failing > 8 allowed"); the
 * full reason goes in a note below the table.
 */
export function earlyStopShort(reason: string): string {
  const budget = /(\d+) failing (requests|token gaps) already exceed the (\d+) allowed of (\d+)/.exec(reason);
  if (budget) return `${budget[1]} of ${budget[4]}${budget[2] === 'token gaps' ? ' gaps' : ''} failing > ${budget[3]} allowed`;
  const diverge = /^queueing diverges.*\((\d+) failing \+ (\d+) projected > (\d+) allowed of (\d+)\)/.exec(reason);
  if (diverge) return `queue diverging: ${diverge[1]} + ${diverge[2]} projected of ${diverge[4]} > ${diverge[3]} allowed`;
  const head = reason.split(/[:(]/)[0].trim();
  return head.length <= 40 ? head : `${head.slice(0, 37)}…`;
}

function probeSection(d: RunReportData): Block[] {
  const slo = d.capacity.slo;
  const label = headlineSloLabel(slo);
  const stopped = d.probes.filter((p) => p.earlyStop);
  const noteOf = (p: ReportProbe) => stopped.indexOf(p) + 1;
  const verdictCell = (p: ReportProbe) => (p.earlyStop ? `${verdictOf(p)} [${noteOf(p)}]` : verdictOf(p));
  // Two narrow tables instead of one wide one, so both fit a page 800 px wide: the verdicts first,
  // then each probe's latencies; the CSV keeps every column in one file.
  const rows: Inline[][] = d.probes.map((p) => [
    String(p.index),
    fmtNum(p.qps),
    p.statistics?.arrivalQps ? fmtNum(p.statistics.arrivalQps) : NONE,
    p.statistics?.burstQps ? fmtNum(p.statistics.burstQps) : NONE,
    verdictCell(p),
    p.statistics ? shortDecision(p.statistics) : NONE,
    p.requests === null ? NONE : `${p.requests}${p.planned ? ` / ${p.planned}` : ''}`,
    fmtSeconds(p.durationS),
    // A probe stopped early has no SLO value: what its summary holds counts the cancelled requests (fluidity 0).
    p.earlyStop ? 'stopped early' : fmtSloValue(slo, p.sloValue),
    fmtNum(p.goodputQps, 3),
  ]);
  // A Poisson probe draws its own rate and its own bursts; the estimate reads each probe at the
  // rate its bursts put it at (token-gap entries at the rate it realized).
  const columns = ['#', 'rate (QPS)', 'realized (QPS)', 'bursts (QPS)', 'verdict', 'statistical decision', 'requests (evaluated / planned)', 'duration', `SLO value (${label})`, 'goodput (QPS)'];
  const numeric = columns.map((_, i) => ![3, 4].includes(i));
  const out: Block[] = [heading(2, 'Probes')];
  if (rows.length === 0) return [...out, para('No probe finished.')];
  out.push(
    table(columns, rows, numeric, {
      name: 'probes',
      columns: ['probe', 'rateQps', 'arrivalQps', 'burstQps', 'verdict', 'decision', 'decisionConfidence', 'valid', 'requests', 'planned', 'durationS', 'earlyStop', 'sloValue', 'goodputQps', 'throughputQps', 'ttftP50S', 'ttftP99S', 'tbtP50S', 'tbtP99S', 'fluidityP99', 'fluidityP50', 'clientErrorS', 'invalidReason', 'clientErrorEffect'],
      rows: d.probes.map((p) => [p.index, p.qps, p.statistics?.arrivalQps ?? null, p.statistics?.burstQps ?? null, verdictOf(p), p.statistics?.decision ?? null, p.statistics?.confidence ?? null, p.valid, p.requests, p.planned, p.durationS, p.earlyStop, p.sloValue, p.goodputQps, p.throughputQps, p.ttftP50S, p.ttftP99S, p.tbtP50S, p.tbtP99S, p.fluidityP99, p.fluidityP50, p.clientErrorS, p.valid === false ? p.invalidReason : null, p.clientErrorNote]),
    }),
  );
  if (d.probes.some((p) => p.statistics?.burstQps)) {
    out.push(
      para(
        `Rate is the rate each probe planned; realized is the rate its arrivals drew; bursts is the rate at which an average draw of as many arrivals queues as much as this probe’s did (on a virtual server that the planned rate loads to ${fmtNum(BACKLOG_UTILIZATION * 100)}%). `,
        'The estimate reads each probe at its bursts’ rate, and token-gap SLOs at its realized rate, since what makes a request miss is how the arrivals bunch, not only how many there are.',
      ),
    );
  }
  if (stopped.length > 0) {
    out.push(para('Stopped early (the numbers in brackets refer to the table):'));
    // Each SLO by its short name, as the console says it; the full reason stays in the CSV's earlyStop column.
    const defs = SLO_NAMES.flatMap((name) => (slo[name] ? [{ name, source: slo[name].source }] : []));
    out.push({ kind: 'list', items: stopped.map((p) => [`[${noteOf(p)}] probe ${p.index} at ${fmtNum(p.qps)} QPS: ${earlyStopBrief(p.earlyStop!, defs)}`]) });
  }
  out.push(heading(3, 'Latency and timing of each probe'));
  out.push(
    table(
      ['#', 'rate (QPS)', 'TTFT p50', 'TTFT p99', 'TBT p99', 'fluidity P99', 'fluidity P50', 'throughput (QPS)', 'client error'],
      d.probes.map((p) => [String(p.index), fmtNum(p.qps), fmtSeconds(p.ttftP50S), fmtSeconds(p.ttftP99S), fmtSeconds(p.tbtP99S), fmtNum(p.fluidityP99, 3), fmtNum(p.fluidityP50, 3), fmtNum(p.throughputQps, 3), fmtSeconds(p.clientErrorS)]),
      undefined,
      {
        name: 'probeLatency',
        columns: ['probe', 'rateQps', 'ttftP50S', 'ttftP99S', 'tbtP99S', 'fluidityP99', 'fluidityP50', 'throughputQps', 'clientErrorS'],
        rows: d.probes.map((p) => [p.index, p.qps, p.ttftP50S, p.ttftP99S, p.tbtP99S, p.fluidityP99, p.fluidityP50, p.throughputQps, p.clientErrorS]),
      },
    ),
  );
  if (stopped.length > 0) out.push(para('A probe stopped early was cancelled once its fail was sure: its latencies count only the requests that finished before, and its fluidity counts the cancelled ones as 0.'));
  out.push(
    para(
      'Fluidity percentiles are counted from the top: fluidity P99 is the fluidity that 99% of requests reach or exceed (the worst 1% fall below it). ',
      'Goodput counts requests meeting every SLO per second of probe; throughput counts completed requests per second. ',
      'Client error is the load generator’s own timing error (receive − emit p99, or dispatch lag); when it exceeds its tolerance, a verdict stands only if it is the same with every deadline moved against it by that error (a pass with them tightened, a fail with them loosened), else the probe is invalid and its verdict is not used.',
    ),
  );
  const path = searchPathChart(d);
  if (path) out.push({ kind: 'chart', chart: path });
  const chart = sloChart(d, label);
  if (chart) out.push({ kind: 'chart', chart });
  for (const p of d.probes) {
    if (p.valid === false && p.invalidReason) out.push(para(`Probe ${p.index} at ${fmtNum(p.qps)} QPS is invalid: ${p.invalidReason}.`));
    else if (p.clientErrorNote) out.push(para(`Probe ${p.index} at ${fmtNum(p.qps)} QPS: its client error exceeded the tolerance, and its verdict stands: ${p.clientErrorNote}.`));
  }
  return out;
}

// SLO value against rate: pass, fail and invalid probes, the threshold, and the capacity marked. A
// probe stopped early has no full measurement (its SLO value counts the cancelled requests at their
// worst), so it is drawn on the threshold it failed, as a hollow triangle, not at its value.
export function sloChart(d: RunReportData, label: string): Chart | null {
  const slo = d.capacity.slo;
  const threshold = slo.fluidity ? slo.fluidity.minFluidity : Object.values(slo).find((s) => s && 'maxS' in s)?.maxS;
  const drawn = d.probes.flatMap((p) => {
    if (p.earlyStop && threshold !== undefined) return [{ p, value: threshold }];
    return p.sloValue !== null && Number.isFinite(p.sloValue) ? [{ p, value: p.sloValue }] : [];
  });
  if (drawn.length === 0) return null;
  const rates = drawn.map(({ p }) => p.qps);
  const group = (name: string, color: string, pick: (p: ReportProbe) => boolean): Chart['series'][number] => {
    const ps = drawn.filter(({ p }) => pick(p));
    return { name, kind: 'points', color, points: ps.map(({ p, value }) => [p.qps, value]), status: ps.map(({ p }) => probeStatus(p)), labels: ps.map(({ p }) => `#${p.index}`) };
  };
  const cap = d.capacity.capacityQps;
  return {
    title: `${label} by request rate`,
    xLabel: 'request rate (QPS)',
    yLabel: slo.fluidity ? label : `${label} (s)`,
    xScale: Math.max(...rates) / Math.min(...rates) >= 8 ? 'log' : 'linear',
    series: [
      group('pass', PASS, (p) => p.valid !== false && p.passed === true),
      group('fail', FAIL, (p) => p.valid !== false && p.passed === false),
      group('invalid', INVALID, (p) => p.valid === false),
    ].filter((s) => s.points.length > 0),
    hLines: threshold !== undefined ? [{ y: threshold, label: `SLO ${slo.fluidity ? '≥' : '≤'} ${fmtNum(threshold)}` }] : [],
    vLines: cap > 0 ? [{ x: cap, label: `capacity ${fmtNum(cap)} QPS` }] : [],
    bands: intervalBand(d, 'x'),
    description: `Each probe's ${label} against its request rate, labelled with its probe number; green passed, red failed, grey invalid.`,
    howToRead: `The dashed line is the SLO threshold and the dotted one the capacity${d.capacity.interval ? '; the shaded band is the 95% interval of the estimate' : ''}. A hollow triangle is a probe stopped early: it was cancelled once its fail was sure, so it has no full measurement and is drawn on the threshold it failed, not at its value. A hollow diamond is a verdict the statistics did not decide.`,
  };
}

/** The capacity interval as a band along `axis` (none when the run has no interval or both ends are open). */
export function intervalBand(d: RunReportData, axis: 'x' | 'y'): NonNullable<Chart['bands']> {
  const iv = d.capacity.interval;
  if (!iv || (iv.loQps === null && iv.hiQps === null)) return [];
  const rates = d.probes.map((p) => p.qps).filter((q) => q > 0);
  const from = iv.loQps ?? Math.min(...rates);
  const to = iv.hiQps ?? Math.max(...rates);
  return [{ axis, from, to, label: `${Math.round(iv.level * 100)}% interval`, color: CAPACITY_COLOR }];
}

/** The search's path: each probe's rate in the order it ran, by verdict, with the interval it narrowed down. */
export function searchPathChart(d: RunReportData): Chart | null {
  const probes = [...d.probes].sort((a, b) => a.index - b.index);
  if (probes.length < 2) return null;
  const group = (name: string, color: string, pick: (p: ReportProbe) => boolean): Chart['series'][number] => {
    const ps = probes.filter(pick);
    return { name, kind: 'points', color, points: ps.map((p) => [p.index, p.qps]), status: ps.map(probeStatus), labels: ps.map((p) => fmtNum(p.qps)) };
  };
  const iv = d.capacity.interval;
  return {
    title: 'The search, probe by probe',
    file: 'search-path',
    xLabel: 'probe (in the order run)',
    yLabel: 'request rate (QPS)',
    xScale: 'linear',
    xWhole: true,
    series: [
      { name: 'order', legend: 'order of the probes', kind: 'line' as const, color: '#afb8c1', points: probes.map((p): [number, number] => [p.index, p.qps]) },
      group('pass', PASS, (p) => p.valid !== false && p.passed === true),
      group('fail', FAIL, (p) => p.valid !== false && p.passed === false),
      group('invalid', INVALID, (p) => p.valid === false),
    ].filter((s) => s.points.length > 0),
    hLines: iv?.estimateQps != null ? [{ y: iv.estimateQps, label: `estimate ${fmtNum(iv.estimateQps)} QPS` }] : [],
    vLines: [],
    bands: intervalBand(d, 'y'),
    description: 'The rate of each probe in the order the search ran them, coloured by verdict and labelled with the rate.',
    howToRead: `The search doubles the rate until a probe fails, then probes between the highest pass and the lowest fail${iv ? ', placing probes where they narrow the shaded 95% interval most' : ''}. Hollow marks are probes whose verdict is weaker than a measurement: stopped early (triangle), invalid (cross) or undecided (diamond).`,
  };
}

// Each SLO entry's own bracket and bisection (capacity.json perSlo): measured, not read off the probes.
function perSloSection(d: RunReportData): Block[] {
  const per = d.capacity.perSlo;
  if (!per || per.length < 2) return [];
  const out: Block[] = [heading(2, 'Capacity per SLO definition, measured')];
  const capText = (p: (typeof per)[number]) =>
    p.outcome === 'at-least-max' ? `≥ ${fmtNum(p.capacityQps)}` : p.outcome === 'below-min' ? `< ${fmtNum(p.bracket.failQps ?? 0)}` : fmtNum(p.capacityQps);
  const rows: Inline[][] = per.map((p) => [
    p.name,
    { code: p.source },
    capText(p),
    `${p.bracket.passQps === null ? NONE : fmtNum(p.bracket.passQps)} – ${p.bracket.failQps === null ? NONE : fmtNum(p.bracket.failQps)}`,
    p.outcome,
    String(p.probesUsed.length),
  ]);
  out.push(
    table(['definition', 'SLO', 'capacity (QPS)', 'bracket pass – fail (QPS)', 'outcome', 'probes used'], rows, [false, false, true, true, false, true], {
      name: 'capacityPerSlo',
      columns: ['definition', 'slo', 'capacityQps', 'passQps', 'failQps', 'outcome', 'reason', 'probesUsed'],
      rows: per.map((p) => [p.name, p.source, p.capacityQps, p.bracket.passQps, p.bracket.failQps, p.outcome, p.reason, p.probesUsed.join(' ')]),
    }),
  );
  const names = per.map((p) => p.name);
  const chart: Chart = {
    title: 'Capacity per SLO definition, measured',
    file: 'capacity-per-slo-measured',
    xLabel: 'request rate (QPS)',
    yLabel: '',
    xScale: 'linear',
    yCategories: names,
    series: [
      {
        name: 'bracket (highest pass – lowest fail)',
        kind: 'range',
        color: '#afb8c1',
        points: per.flatMap((p, i) => (p.bracket.passQps !== null && p.bracket.failQps !== null ? [[p.bracket.passQps, i] as [number, number]] : [])),
        x2: per.flatMap((p) => (p.bracket.passQps !== null && p.bracket.failQps !== null ? [p.bracket.failQps] : [])),
      },
      { name: 'highest pass (capacity)', kind: 'points', color: PASS, points: per.flatMap((p, i) => (p.bracket.passQps === null ? [] : [[p.bracket.passQps, i] as [number, number]])), labels: per.flatMap((p) => (p.bracket.passQps === null ? [] : [capText(p)])) },
      { name: 'lowest fail', kind: 'points', color: FAIL, points: per.flatMap((p, i) => (p.bracket.failQps === null ? [] : [[p.bracket.failQps, i] as [number, number]])) },
    ].filter((s) => s.points.length > 0) as Chart['series'],
    hLines: [],
    vLines: d.capacity.capacityQps > 0 ? [{ x: d.capacity.capacityQps, label: `all together ${fmtNum(d.capacity.capacityQps)} QPS` }] : [],
    description: "Each SLO definition's own bracket: its highest passing rate (its capacity, green) and lowest failing rate (red).",
    howToRead: 'The dotted line is the capacity under all definitions together (the run\u2019s headline); the definition whose bracket sits lowest is the one that limits it.',
  };
  out.push({ kind: 'chart', chart });
  out.push(
    para(
      'Each definition was bracketed and bisected on its own, reusing every probe that was evidence for it: a probe stopped early counts only as a fail of the definition that stopped it, and an invalid one for none. ',
      'The run\u2019s headline capacity is the combined verdict (all definitions at once). ',
      ...per.filter((p) => p.outcome !== 'converged').map((p) => `${p.name}: ${p.reason}. `),
    ),
  );
  return out;
}

function baselineSection(d: RunReportData): Block[] {
  const caps = d.capacity.baselineCapacityQps;
  const out: Block[] = [heading(2, 'Capacity under each SLO definition (Metron Fig. 6)')];
  if (!caps || Object.keys(caps).length === 0) return [...out, para('This run recorded no baseline SLO verdicts.')];
  const recipeCap = d.capacity.capacityQps;
  const valid = d.probes.filter((p) => p.valid !== false);
  const maxRate = valid.length ? Math.max(...valid.map((p) => p.qps)) : null;
  const recipeText = Object.values(d.capacity.slo).flatMap((s) => (s ? [s.source] : [])).join('; ');
  const rows: Inline[][] = [[{ strong: 'recipe SLO' }, { code: recipeText }, fmtNum(recipeCap), '']];
  const csvRows: (string | number | null)[][] = [['recipe SLO', recipeText, recipeCap, '=', null, null]];
  for (const [name, cap] of Object.entries(caps)) {
    const definition = baselineDefinition(d, name);
    // Passing at the highest valid rate probed means the true capacity under it is at least that.
    const passedAll = cap !== null && maxRate !== null && cap >= maxRate;
    const unmeasured = cap === null ? unmeasuredNote(d, name) : null;
    let capText: string;
    if (unmeasured) capText = `not measured: ${unmeasured}`;
    else if (cap === null) capText = valid.length ? `< ${fmtNum(Math.min(...valid.map((p) => p.qps)))} (failed at every probed rate)` : NONE;
    else capText = `${passedAll ? '≥ ' : ''}${fmtNum(cap)}`;
    rows.push([name, definition ? { code: definition } : NONE, capText, cap === null || recipeCap <= 0 ? NONE : fmtChange(cap / recipeCap - 1)]);
    const minValid = valid.length ? Math.min(...valid.map((p) => p.qps)) : null;
    csvRows.push([
      name,
      definition,
      unmeasured ? null : (cap ?? minValid),
      unmeasured ? 'not measured' : cap === null ? '<' : passedAll ? '>=' : '=',
      cap === null || recipeCap <= 0 ? null : cap / recipeCap - 1,
      unmeasured,
    ]);
  }
  out.push(
    table(['definition', 'SLO (as judged)', 'capacity (QPS)', 'vs recipe SLO'], rows, [false, false, true, true], {
      name: 'capacityBySlo',
      columns: ['definition', 'slo', 'capacityQps', 'bound', 'changeVsRecipe', 'note'],
      rows: csvRows,
    }),
  );
  out.push({ kind: 'chart', chart: baselineChart(d, caps, valid) });
  out.push(
    para(
      'Each baseline capacity is the highest probed rate that passed that definition, with every lower probed rate passing too. ',
      'The probes were chosen by the search for the recipe SLO, so a baseline capacity is only as fine as the probed rates; “≥” marks a definition that still held at the highest rate probed.',
    ),
  );
  return out;
}

/** Capacity under the recipe's SLO and under each baseline definition, as bars on one rate axis. */
export function baselineChart(d: RunReportData, caps: Record<string, number | null>, valid: ReportProbe[]): Chart {
  const names = ['recipe SLO', ...Object.keys(caps)];
  const maxRate = valid.length ? Math.max(...valid.map((p) => p.qps)) : null;
  const minRate = valid.length ? Math.min(...valid.map((p) => p.qps)) : null;
  const bars: [number, number][] = [];
  const ends: number[] = [];
  const labels: string[] = [];
  const none: [number, number][] = [];
  const noneLabels: string[] = [];
  names.forEach((name, i) => {
    const cap = i === 0 ? d.capacity.capacityQps : caps[name];
    if (cap === null || cap === undefined || cap <= 0) {
      // Failed at every probed rate (or unmeasured): no bar, a word at the lowest rate.
      if (minRate !== null) {
        none.push([minRate, i]);
        noneLabels.push(unmeasuredNote(d, name) ? 'not measured' : `< ${fmtNum(minRate)}`);
      }
      return;
    }
    bars.push([0, i]);
    ends.push(cap);
    labels.push(`${maxRate !== null && cap >= maxRate ? '≥ ' : ''}${fmtNum(cap)}`);
  });
  return {
    title: 'Capacity under each SLO definition',
    file: 'capacity-by-slo',
    xLabel: 'capacity (QPS)',
    yLabel: '',
    xScale: 'linear',
    yCategories: names,
    series: [
      { name: 'capacity', kind: 'range', color: PALETTE[0], points: bars, x2: ends, labels },
      ...(none.length ? [{ name: 'failed at every probed rate, or not measured', kind: 'points' as const, color: INVALID, points: none, status: none.map(() => 'invalid' as const), labels: noneLabels }] : []),
    ],
    hLines: [],
    vLines: [],
    description: 'The capacity the same probes give under the recipe\u2019s SLO and under each baseline definition (Metron Fig. 6).',
    howToRead: '“≥” marks a definition that still held at the highest rate probed: its true capacity may be higher. The probes were placed for the recipe\u2019s SLO, so a baseline capacity is only as fine as the probed rates.',
  };
}

// The baseline's SLO text as the probes judged it (summary.json keeps each result's source).
function baselineDefinition(d: RunReportData, name: string): string | null {
  for (const p of d.probes) {
    const results = p.baselines[name] ?? [];
    if (results.length > 0) return results.map((r) => r.text ?? NONE).join('; ');
  }
  return null;
}

// When no valid probe could measure a baseline at all (every verdict has no value), its "fail" means
// "unmeasured", and the report quotes why instead of claiming a capacity below the lowest rate.
function unmeasuredNote(d: RunReportData, name: string): string | null {
  const judged = d.probes.flatMap((p) => (p.valid !== false && p.baselines[name]?.length ? [p.baselines[name]] : []));
  if (judged.length === 0) return null;
  const notes = judged.flatMap((results) => results.flatMap((r) => (r.value === null && r.note ? [r.note] : [])));
  const allUnmeasured = judged.every((results) => results.some((r) => r.value === null));
  return allUnmeasured && notes.length ? [...new Set(notes)].join('; ') : null;
}

function fluidRateSection(d: RunReportData): Block[] {
  const f = d.capacity.fluidRate;
  const out: Block[] = [heading(2, 'Fluid token generation rate at capacity')];
  if (!f) return [...out, para(d.capacity.capacityQps > 0 ? `Not recorded in ${RUN_FILES.capacity}.` : 'No capacity, so no probe to measure it on.')];
  if (f.tokensPerS === null) {
    return [...out, para(`Not measurable at ${fmtNum(d.capacity.capacityQps)} QPS${f.note ? `: ${f.note}` : ''}.`)];
  }
  out.push(
    para(
      { strong: `${fmtNum(f.tokensPerS)} tokens/s per request` },
      ` at ${fmtNum(d.capacity.capacityQps)} QPS: the smallest TBT deadline at which P${f.percentile} of requests reach fluidity ≥ ${f.minFluidity} is ${fmtSeconds(f.tbtDeadlineS)}`,
      f.resolutionS ? ` (searched by ${f.search ?? 'bisection'} on a ${fmtSeconds(f.resolutionS)} grid)` : '',
      '; the rate is its reciprocal.',
    ),
  );
  return out;
}

function fitSection(d: RunReportData): Block[] {
  const f = d.fit;
  const out: Block[] = [heading(2, 'Prefill fit')];
  if (!f) return [...out, para(`${RUN_FILES.fit} is absent: this run has no prefill fit.`)];
  const fit = f;
  out.push(para('D_p(P) = a + b·P + c·P² seconds for a prompt of P tokens, fitted by least squares with a, b, c ≥ 0 to the median isolated prefill time at each prompt length (one request at a time, max_tokens 1), so one hiccup among the repeats does not move the curve; R² is that of the fit to the medians.'));
  const rows: Inline[][] = [
    ['a (s)', fmtSci(fit.a)],
    ['b (s per token)', fmtSci(fit.b)],
    ['c (s per token²)', fmtSci(fit.c)],
    ['R²', fmtNum(f.r2, 4)],
    ['points', String(f.n ?? NONE)],
  ];
  if (f.rmseS !== null) rows.push(['RMS residual', fmtSeconds(f.rmseS)]);
  if (f.maxRepeatCv !== null) rows.push(['largest repeat CV', fmtPct(f.maxRepeatCv)]);
  if (f.ttftSlackS !== null) rows.push(['TTFT slack added to D_p', fmtSeconds(f.ttftSlackS)]);
  out.push(table(['coefficient', 'value'], rows, undefined, { name: 'fitCoefficients', columns: ['coefficient', 'value'], rows: [['a', fit.a], ['b', fit.b], ['c', fit.c], ['r2', f.r2], ['n', f.n], ['rmseS', f.rmseS], ['maxRepeatCv', f.maxRepeatCv], ['ttftSlackS', f.ttftSlackS]] }));
  const lengths = f.lengths;
  if (lengths.length > 0) {
    out.push(
      table(
        ['prompt tokens', 'repeats', 'measured mean', 'sd', 'fitted D_p'],
        lengths.map((l) => [String(l.promptTokens), String(l.count ?? NONE), fmtSeconds(l.meanS), fmtSeconds(l.sdS), fmtSeconds(predictPrefillS(fit, l.promptTokens))]),
        undefined,
        {
          name: 'fitLengths',
          columns: ['promptTokens', 'repeats', 'meanS', 'sdS', 'fittedDpS'],
          rows: lengths.map((l) => [l.promptTokens, l.count, l.meanS, l.sdS, predictPrefillS(fit, l.promptTokens)]),
        },
      ),
    );
  }
  const points = d.prefill.flatMap((p) => (!p.warmup && p.status === 'ok' && p.prefillS !== null ? [{ promptTokens: p.promptTokens, prefillS: p.prefillS }] : []));
  if (points.length > 0) {
    const maxP = Math.max(...points.map((p) => p.promptTokens));
    const curve: [number, number][] = [];
    for (let i = 0; i <= 40; i++) curve.push([(maxP * i) / 40, predictPrefillS(fit, (maxP * i) / 40)]);
    out.push({
      kind: 'chart',
      chart: {
        title: 'Isolated prefill time by prompt length',
        xLabel: 'prompt tokens',
        yLabel: 'prefill time (s)',
        xScale: 'linear',
        series: [
          { name: 'fitted D_p', kind: 'line', color: LINE, points: curve },
          { name: 'measured', kind: 'points', color: '#24292f', points: points.map((p) => [p.promptTokens, p.prefillS]) },
        ],
        hLines: [],
        vLines: [],
        description: `${points.length} measured isolated prefills (dots) and the fitted curve D_p(P) (line).`,
      },
    });
  }
  return out;
}

function serverMetricsSection(d: RunReportData): Block[] {
  const out: Block[] = [heading(2, 'Server metrics')];
  const withMetrics = d.probes.flatMap((p) => (p.serverMetrics ? [{ p, s: p.serverMetrics }] : []));
  if (withMetrics.length === 0) return [...out, para('No probe recorded server metrics (the engine has no /metrics endpoint, or the run did not scrape it).')];
  const rows: Inline[][] = withMetrics.map(({ p, s }) => [String(p.index), fmtNum(p.qps), String(s.scrapes ?? NONE), fmtNum(s.maxRunning), fmtNum(s.maxWaiting), fmtPct(s.maxKvUsage), fmtNum(s.preemptions)]);
  const peak = (key: 'maxRunning' | 'maxWaiting' | 'maxKvUsage') => {
    const v = withMetrics.map(({ s }) => s[key]).filter((x): x is number => typeof x === 'number');
    return v.length ? Math.max(...v) : null;
  };
  const pre = withMetrics.map(({ s }) => s.preemptions).filter((x): x is number => typeof x === 'number');
  out.push(
    para(
      `Peaks over all probes: ${fmtNum(peak('maxRunning'))} requests running, ${fmtNum(peak('maxWaiting'))} waiting, KV-cache usage ${fmtPct(peak('maxKvUsage'))}; `,
      `${pre.length ? fmtNum(pre.reduce((a, b) => a + b, 0)) : NONE} preemptions in total.`,
    ),
  );
  out.push(
    table(['#', 'rate (QPS)', 'scrapes', 'peak running', 'peak waiting', 'peak KV usage', 'preemptions'], rows, undefined, {
      name: 'serverMetrics',
      columns: ['probe', 'rateQps', 'scrapes', 'maxRunning', 'maxWaiting', 'maxKvUsage', 'preemptions', 'promptTokens', 'generationTokens', 'cachedPromptTokens'],
      rows: withMetrics.map(({ p, s }) => [p.index, p.qps, s.scrapes, s.maxRunning, s.maxWaiting, s.maxKvUsage, s.preemptions, s.promptTokens ?? null, s.generationTokens ?? null, s.cachedPromptTokens ?? null]),
    }),
  );
  out.push(...engineOverTimeCharts(d));
  return out;
}

function hostSection(d: RunReportData): Block[] {
  const out: Block[] = [heading(2, 'GPU and host')];
  const h = d.manifest?.host;
  const rows: Inline[][] = [];
  const add = (k: string, v: unknown) => {
    if (v !== undefined && v !== null && v !== '') rows.push([k, String(v)]);
  };
  add('GPU profile', d.capacity.gpuProfile);
  add('GPUs used', d.capacity.gpuCount);
  if (h) {
    add('engine', h.engine);
    add('launch', h.launch);
    add('host', h.host);
    add('access', h.access);
    add('load sent from', h.loadFrom);
    add('image', h.image);
    add('image digest', h.imageDigest);
    add('engine runs', h.engineRuns ?? undefined);
    add('Docker version', h.dockerVersion);
    add('time to ready', h.timeToReadyS !== null ? fmtSeconds(h.timeToReadyS) : undefined);
    if (h.tunnelAddedMsP50 !== null) add('SSH tunnel added latency p50', `${fmtNum(h.tunnelAddedMsP50, 3)} ms`);
  }
  out.push(rows.length ? table(['fact', 'value'], rows, [false, false], { name: 'host' }) : para(`${RUN_FILES.manifest} records no host facts.`));
  const gpu = h?.gpu ?? null;
  if (gpu?.available && gpu.gpus.length) {
    out.push(
      table(
        ['GPU', 'name', 'memory (MiB)', 'driver'],
        gpu.gpus.map((g) => [String(g.index ?? NONE), g.name ?? NONE, fmtNum(g.memoryTotalMiB, 6), g.driverVersion ?? NONE]),
        [true, false, true, false],
        { name: 'gpus' },
      ),
    );
  } else if (gpu && !gpu.available) {
    out.push(para(`No GPU facts: ${gpu.reason ?? 'not available'}.`));
  }
  const telemetry = d.probes.flatMap((p) => (p.gpu && p.gpu.samples > 0 ? [{ p, g: p.gpu }] : []));
  if (telemetry.length > 0) {
    out.push(
      table(
        ['#', 'rate (QPS)', 'samples', 'peak memory used (MiB)', 'peak utilization', 'peak power (W)'],
        telemetry.map(({ p, g }) => [
          String(p.index),
          fmtNum(p.qps),
          String(g.samples),
          `${fmtNum(g.maxMemoryUsedMiB, 6)}${g.memoryTotalMiB ? ` / ${fmtNum(g.memoryTotalMiB, 6)}` : ''}`,
          g.maxUtilizationPct === null ? NONE : `${fmtNum(g.maxUtilizationPct, 3)}%`,
          fmtNum(g.maxPowerW, 4),
        ]),
        undefined,
        {
          name: 'gpuTelemetry',
          columns: ['probe', 'rateQps', 'samples', 'maxMemoryUsedMiB', 'memoryTotalMiB', 'maxUtilizationPct', 'maxPowerW'],
          rows: telemetry.map(({ p, g }) => [p.index, p.qps, g.samples, g.maxMemoryUsedMiB, g.memoryTotalMiB, g.maxUtilizationPct, g.maxPowerW]),
        },
      ),
    );
  }
  return out;
}

function costSection(d: RunReportData): Block[] {
  const c = d.capacity;
  const cost = c.cost;
  const out: Block[] = [heading(2, 'Cost')];
  const rows: Inline[][] = [];
  if (d.price) rows.push(['price per GPU-hour', `${fmtUsd(d.price.usdPerGpuHour)} (${d.price.source}; ${d.price.date})`]);
  if (cost) {
    rows.push(['deployment price per hour', cost.usdPerHour === null ? NONE : fmtUsd(cost.usdPerHour)]);
    rows.push(['QPS per $/h', fmtNum(cost.qpsPerUsdPerHour)]);
    rows.push(['output tokens/s at capacity', fmtNum(cost.outputTokensPerS)]);
    rows.push(['$ per million output tokens', fmtUsd(cost.usdPerMillionOutputTokens)]);
  }
  rows.push(['GPU-seconds of this run', fmtNum(c.gpuSeconds, 5)]);
  rows.push(['cost of this run', c.costUsd !== null ? fmtUsd(c.costUsd) : NONE]);
  out.push(table(['figure', 'value'], rows, [false, true], { name: 'cost' }));
  if (c.costNote) out.push(para(`No cost: ${c.costNote}.`));
  else if (!d.price) out.push(para(`No price: ${d.priceNote ?? 'the GPU profile has none'}; money figures are left out.`));
  // capacity.json was priced when the run ended; a profile edited since then must not pass silently.
  const gpus = c.gpuCount;
  if (d.price && cost && cost.usdPerHour !== null && gpus !== null && gpus > 0) {
    const runPrice = cost.usdPerHour / gpus;
    if (Math.abs(runPrice - d.price.usdPerGpuHour) > 1e-9 * d.price.usdPerGpuHour) {
      out.push(para(`The run was priced at ${fmtUsd(runPrice)} per GPU-hour; the GPU profile now says ${fmtUsd(d.price.usdPerGpuHour)}. The figures above are the run’s.`));
    }
  }
  if (!cost) out.push(para('No cost at capacity: capacity is 0 or was not recorded.'));
  out.push(para('GPU-seconds count the time the engine held its GPUs (launch to release) times the number of GPUs.'));
  return out;
}

function methodSection(d: RunReportData): Block[] {
  const c = d.capacity;
  const methods = [...new Set(d.probes.flatMap((p) => (p.percentileMethod ? [p.percentileMethod] : [])))];
  const warm = d.probes.flatMap((p) => (p.warmupRequests !== null ? [p.warmupRequests] : []));
  const items: Inline[][] = [];
  items.push(
    c.warmupFraction === null
      ? [`Warm-up: the fraction excluded from evaluation is not recorded in ${RUN_FILES.capacity}.`]
      : [
          `Warm-up: the first ${fmtPct(c.warmupFraction)} of each probe’s planned requests`,
          warm.length ? ` (${[...new Set(warm)].join(', ')} requests)` : '',
          ' are sent but excluded from every metric and verdict.',
          ...(c.warmupFraction !== null && d.probes.some((p) => p.planned !== null && p.warmupRequests !== null && p.warmupRequests > Math.floor(c.warmupFraction! * p.planned))
            ? [' Probes near the knee (after the search’s first fail) also begin with arrivals at their rate that are not judged, until the engine’s queue is stationary or a bound is reached (each probe’s summary says which, and when), so a queue has built before the measured requests; their counts include those.']
            : []),
        ],
  );
  items.push([
    'Percentiles: exact over every evaluated request (',
    methods.length ? methods.join(', ') : 'method not recorded',
    '), not sampled; latency percentiles count failed and timed-out requests as infinitely late.',
  ]);
  items.push(['TTFT is measured from each request’s planned arrival time, so client lag is never hidden.']);
  items.push([tokenArrivalsText(d.manifest)]);
  items.push(['Fluidity-index (Metron): first token due at D_p(P) + TTFT slack, later tokens every TBT deadline, with slack carried forward.']);
  if (c.probeTimeS !== null) items.push([`Probe time in total: ${fmtSeconds(c.probeTimeS)} over ${c.probeCount} probe(s).`]);
  return [heading(2, 'Method'), { kind: 'list', items }];
}

/** Which arrival of a token TTFT, TBT, fluidity and the profile measured. */
function tokenArrivalsText(m: RunReportData['manifest']): string {
  const counts = m?.continuousUsage === true ? '; the running token count was asked for on every chunk' : m?.continuousUsage === false ? '; no running token count was asked for, so tokens without text arrive only where the server counts them' : '';
  if (m?.tokenArrivals === 'visible') return `Token arrivals: visible (search.probe.tokenArrivals): a token counts when its text reaches the reader; tokens streamed without text count with the next text${counts}.`;
  if (m?.tokenArrivals === 'engine') return `Token arrivals: engine (search.probe.tokenArrivals): a token counts when the engine emitted it, with or without text${counts}.`;
  return 'Token arrivals: not recorded (a run from before engine arrivals: its chunks are those that carried text).';
}

function provenanceSection(d: RunReportData): Block[] {
  const m = d.manifest;
  const rows: Inline[][] = [['run id', d.runId]];
  const add = (k: string, v: Inline | undefined | null) => {
    if (v !== undefined && v !== null && v !== '') rows.push([k, v]);
  };
  add('tool version', m?.toolVersion);
  add('git sha', m?.gitSha ? { code: `${m.gitSha}${m.gitDirty ? ' (uncommitted changes)' : ''}` } : m ? 'not in a git checkout' : undefined);
  add('Node.js', m?.node);
  add('seed', m?.seed === null || m?.seed === undefined ? undefined : String(m.seed));
  add('recipe file', m?.recipeFile ? { code: m.recipeFile } : undefined);
  add('recipe sha256', m?.recipeSha256 ? { code: m.recipeSha256 } : undefined);
  add('started', m?.startedAt);
  add('ended', m?.endedAt);
  const out: Block[] = [heading(2, 'Provenance'), table(['field', 'value'], rows, [false, false], { name: 'provenance' })];
  if (d.notes.length) out.push(para('Missing from the run directory: '), { kind: 'list', items: d.notes.map((n) => [n]) });
  return out;
}
