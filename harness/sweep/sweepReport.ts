// The sweep report: the capacity of each configuration as a chart (with its 95% interval where the
// run has one) and a table that links each run's own report, the capacity under every SLO
// definition named by its thresholds, the best configuration under each, and the runs' bookkeeping
// (host, GPUs, bracket, GPU-seconds, cost). One document laid out as report.md and report.html by
// the run report's renderers, and report.csv with every number unrounded. Pure: rows in, text out
// (runSweep reads each run's capacity.json, decides which run reports may be linked, and writes files).
import { isAbsolute, relative, sep } from 'node:path';
import { heading, para, table, type Block, type Chart, type Inline } from '../report/doc.ts';
import { fmtNum, fmtPct, NONE } from '../report/format.ts';
import { renderPage } from '../report/html.ts';
import { renderMarkdown } from '../report/markdown.ts';
import { RUN_FILES, SWEEP_FILES } from '../runDir/layout.ts';
import { configLabels } from './expand.ts';
import type { SlurmTimes } from './journal.ts';

/** The fields of a run's capacity.json the sweep report reads. */
export interface CapacitySummary {
  capacityQps: number;
  outcome: string;
  reason: string;
  tolerance: number;
  bracket: { passQps: number | null; failQps: number | null };
  slo: Record<string, { source?: string }>;
  /** The baseline SLO definitions the probes were also judged under, each entry with its text. */
  baselines?: Record<string, Record<string, { source?: string } | undefined>>;
  baselineCapacityQps?: Record<string, number | null>;
  gpuSeconds: number;
  costUsd?: number;
  cost: { usdPerHour: number | null; qpsPerUsdPerHour: number | null; usdPerMillionOutputTokens: number | null } | null;
  probes: unknown[];
  /** The estimate and its 95% interval (capacity.json `interval`; absent in older runs). */
  interval?: { estimateQps: number | null; loQps: number | null; hiQps: number | null; open: string };
}

export interface SweepRow {
  id: string;
  values: Record<string, unknown>;
  host: string;
  gpus: number[];
  status: string;
  reason: string;
  runDir: string | null;
  capacity: CapacitySummary | null;
  /** The run's report.html relative to the sweep directory (URL-encoded), when it exists there; null otherwise. */
  reportHref?: string | null;
  /** Its Slurm job and the time it queued and held the allocation, when it ran on a Slurm entry. */
  slurm?: SlurmTimes;
}

/** The recipe's own SLO is named this in the best-of table; baseline SLOs keep their names. */
export const RECIPE_SLO = 'recipe SLO';

export interface Best {
  slo: string;
  /** How the SLO reads: its thresholds as the probes judged them (the recipe's text, or the baseline's entries). */
  definition: string;
  byCapacity: { id: string; capacityQps: number } | null;
  byQpsPerUsdPerHour: { id: string; qpsPerUsdPerHour: number } | null;
}

const converged = (r: SweepRow) => r.capacity !== null && r.capacity.outcome !== 'invalid-probes';

/** Capacity of a row under one SLO definition (the recipe's own, or a baseline's). */
export function capacityUnder(r: SweepRow, slo: string): number | null {
  if (!converged(r)) return null;
  if (slo === RECIPE_SLO) return r.capacity!.capacityQps;
  return r.capacity!.baselineCapacityQps?.[slo] ?? null;
}

/** Every SLO definition of the sweep: the recipe's, then each baseline in the order the runs name them. */
function sloNamesOf(rows: readonly SweepRow[]): string[] {
  const names = [RECIPE_SLO];
  for (const r of rows) for (const name of Object.keys(r.capacity?.baselineCapacityQps ?? {})) if (!names.includes(name)) names.push(name);
  return names;
}

// The entries' texts joined; a note every entry carries ("(default baseline)") is said once, at the end.
function sourcesOf(slo: Record<string, { source?: string } | undefined> | undefined): string {
  const parts = Object.values(slo ?? {}).map((s) => s?.source ?? '').filter(Boolean);
  const note = / \([^()]*\)$/.exec(parts[0] ?? '')?.[0];
  if (note && parts.length > 1 && parts.every((p) => p.endsWith(note))) return `${parts.map((p) => p.slice(0, -note.length)).join(' and ')}${note}`;
  return parts.join(' and ');
}

/**
 * An SLO definition's thresholds as text (`ttft p90 <= 2s and tbt p99 <= 25ms`), from the first run
 * that judged it; a matrix that changes the SLO makes them differ by run, which the text then says.
 */
export function sloDefinition(rows: readonly SweepRow[], slo: string): string {
  const texts = [...new Set(rows.flatMap((r) => {
    if (!r.capacity) return [];
    const text = slo === RECIPE_SLO ? sourcesOf(r.capacity.slo) : sourcesOf(r.capacity.baselines?.[slo]);
    return text ? [text] : [];
  }))];
  if (texts.length === 0) return slo;
  return texts.length === 1 ? texts[0] : `${texts[0]} (differs by configuration: see each run's report)`;
}

/** The best configuration under each SLO definition, by capacity and by QPS per $/hour. */
export function bestConfigurations(rows: SweepRow[]): Best[] {
  return sloNamesOf(rows).map((slo) => {
    let byCapacity: Best['byCapacity'] = null;
    let byQpsPerUsdPerHour: Best['byQpsPerUsdPerHour'] = null;
    for (const r of rows) {
      const qps = capacityUnder(r, slo);
      if (qps === null || qps <= 0) continue;
      if (byCapacity === null || qps > byCapacity.capacityQps) byCapacity = { id: r.id, capacityQps: qps };
      const usdPerHour = r.capacity!.cost?.usdPerHour ?? null;
      if (usdPerHour !== null && usdPerHour > 0) {
        const perUsd = qps / usdPerHour;
        if (byQpsPerUsdPerHour === null || perUsd > byQpsPerUsdPerHour.qpsPerUsdPerHour) byQpsPerUsdPerHour = { id: r.id, qpsPerUsdPerHour: perUsd };
      }
    }
    return { slo, definition: sloDefinition(rows, slo), byCapacity, byQpsPerUsdPerHour };
  });
}

/**
 * The link from the sweep directory to a run's report.html: relative, URL-encoded, and only for a
 * run directory inside the sweep directory (a page copied with its sweep keeps working; nothing
 * outside it is linked). Null otherwise.
 */
export function runReportHref(sweepDir: string, runDir: string | null): string | null {
  if (runDir === null) return null;
  const rel = relative(sweepDir, runDir);
  if (rel === '' || isAbsolute(rel) || rel.split(sep).some((s) => s === '..' || s === '.')) return null;
  return [...rel.split(sep), RUN_FILES.reportHtml].map(encodeURIComponent).join('/');
}

const valueText = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));
const valuesText = (values: Record<string, unknown>) => Object.entries(values).map(([k, v]) => `${k}=${valueText(v)}`).join(' ') || '(base recipe)';
const shortId = (id: string) => id.split('-')[0];
const statusText = (r: SweepRow) => (r.capacity?.outcome === 'invalid-probes' ? 'invalid probes' : r.status);
// The threshold text of a baseline without the note every default baseline carries (the definitions table keeps it).
const thresholds = (definition: string) => definition.replace(/ \(default baseline\)/g, '');

// "42.1 (40.3–43.9)", an open end as "open".
function intervalCell(iv: NonNullable<CapacitySummary['interval']>): string {
  const end = (q: number | null) => (q === null ? 'open' : fmtNum(q, 3));
  return `${iv.estimateQps === null ? NONE : fmtNum(iv.estimateQps, 3)} (${end(iv.loQps)}–${end(iv.hiQps)})`;
}

const CAPACITY = '#8250df';
const INTERVAL = '#8c959f';
const PALETTE = ['#8250df', '#0969da', '#bf8700', '#1a7f37', '#cf222e', '#57606a', '#e16f24', '#1b7c83'];

function capacityChart(rows: readonly SweepRow[]): Chart {
  const labels = configLabels(rows);
  const withCap = rows.filter((r) => converged(r));
  const caps = withCap.map((r) => r.capacity!.capacityQps);
  const known = withCap.flatMap((r) => [r.capacity!.interval?.loQps, r.capacity!.interval?.hiQps]).filter((q): q is number => typeof q === 'number');
  const lo = Math.min(...caps, ...known);
  const hi = Math.max(...caps, ...known);
  const fmt = (q: number | null) => (q === null ? 'open' : String(+q.toPrecision(3)));
  const categories = withCap.map((r) => labels.get(r.id) ?? r.id);
  const ranges = withCap.flatMap((r, y) => {
    const iv = r.capacity!.interval;
    // An open end is drawn to the edge of what any configuration bounds; its label says "open".
    return iv ? [{ y, from: iv.loQps ?? lo, to: iv.hiQps ?? hi, label: `${fmt(iv.loQps)}–${fmt(iv.hiQps)}` }] : [];
  });
  const series: Chart['series'] = [];
  if (ranges.length > 0) {
    series.push({ name: '95% interval', kind: 'range', color: INTERVAL, points: ranges.map((g) => [g.from, g.y]), x2: ranges.map((g) => g.to), labels: ranges.map((g) => g.label) });
  }
  series.push({ name: 'capacity (recipe SLO)', kind: 'points', color: CAPACITY, points: withCap.map((r, y) => [r.capacity!.capacityQps, y]) });
  return {
    title: 'Capacity of each configuration',
    xLabel: 'capacity (QPS)',
    yLabel: '',
    xScale: 'linear',
    yCategories: categories,
    series,
    hLines: [],
    vLines: [],
    description: 'Each configuration\u2019s capacity under the recipe SLO, with the 95% interval of its estimate.',
    howToRead:
      'One row per configuration that found a trusted capacity (its label as in the table below). The dot is the highest rate its search passed; ' +
      (ranges.length > 0 ? 'the grey bar is the 95% interval of the capacity estimated from every probe of the run (an open end runs to the chart\u2019s edge and is labelled "open"). A long bar means the capacity is known only roughly: configurations whose bars overlap may not differ. ' : '') +
      'Failed, interrupted and invalid runs have no row.',
  };
}

/**
 * Capacity against the matrix's one numeric field (batch size, chunk size, ...), one line per
 * combination of the other fields: how the knob moves capacity, scheduler by scheduler. Null when
 * the matrix has no such field, or too many lines to tell apart.
 */
export function knobChart(rows: readonly SweepRow[]): Chart | null {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const numeric = keys.filter((k) => rows.every((r) => typeof r.values[k] === 'number') && new Set(rows.map((r) => r.values[k])).size >= 2);
  if (numeric.length !== 1) return null;
  const knob = numeric[0];
  const others = keys.filter((k) => k !== knob);
  const lines = new Map<string, [number, number][]>();
  for (const r of rows) {
    const name = others.map((k) => `${k}=${valueText(r.values[k])}`).join(' ') || 'capacity';
    const q = capacityUnder(r, RECIPE_SLO);
    if (!lines.has(name)) lines.set(name, []);
    if (q !== null) lines.get(name)!.push([r.values[knob] as number, q]);
  }
  const series = [...lines.entries()].filter(([, points]) => points.length > 0);
  if (series.length === 0 || series.length > PALETTE.length) return null;
  const xs = rows.map((r) => r.values[knob] as number);
  const log = xs.every((x) => x > 0) && Math.max(...xs) / Math.min(...xs) >= 4;
  return {
    title: `Capacity by ${knob}`,
    xLabel: knob,
    yLabel: 'capacity (QPS)',
    xScale: log ? 'log' : 'linear',
    series: series.map(([name, points], k) => ({ name, kind: 'line', dots: true, color: PALETTE[k % PALETTE.length], points: points.sort((a, b) => a[0] - b[0]) })),
    hLines: [],
    vLines: [],
    description: `The capacity under the recipe SLO as ${knob} changes, one line per ${others.length ? others.join(' and ') : 'sweep'}; each dot is one configuration. A configuration without a trusted capacity is left out of its line (the table says why).`,
  };
}

function perSloChart(rows: readonly SweepRow[], slos: readonly string[]): Chart {
  // One row per configuration with a capacity under some definition, named by its short label as
  // in capacityChart; one dot per definition on its row.
  const labels = configLabels(rows);
  const drawn = rows.filter((r) => slos.some((slo) => capacityUnder(r, slo) !== null));
  return {
    title: 'Capacity under each SLO definition',
    xLabel: 'capacity (QPS)',
    yLabel: '',
    xScale: 'linear',
    yCategories: drawn.map((r) => labels.get(r.id) ?? r.id),
    series: slos.map((slo, k) => ({
      name: slo === RECIPE_SLO ? 'recipe SLO' : slo,
      kind: 'points' as const,
      color: PALETTE[k % PALETTE.length],
      points: drawn.flatMap((r, y) => {
        const q = capacityUnder(r, slo);
        return q === null ? [] : [[q, y] as [number, number]];
      }),
    })).filter((series) => series.points.length > 0),
    hLines: [],
    vLines: [],
    description:
      'Each colour is one SLO definition (the table below gives its thresholds): the same probes of each run judged under it. ' +
      'A stricter definition sits further left; where the dots of a configuration spread far apart, the choice of SLO decides its capacity more than the configuration does. ' +
      'Two definitions with the same capacity draw one dot over the other (the table has every value); a definition no run could judge has no colour.',
    howToRead: 'One row per configuration that has a capacity under some definition (its label as in the tables); failed, interrupted and invalid runs have no row.',
  };
}

// What the whole sweep held: GPU time and, where every run has a price, its cost.
function totalsText(rows: readonly SweepRow[]): string[] {
  const caps = rows.flatMap((r) => (r.capacity ? [r.capacity] : []));
  if (caps.length === 0) return [];
  // An endpoint's GPUs are unknown (gpuSeconds null): then the total is unknown too.
  if (caps.some((c) => typeof c.gpuSeconds !== 'number')) return [];
  const gpuHours = caps.reduce((a, c) => a + c.gpuSeconds, 0) / 3600;
  const costs = caps.map((c) => c.costUsd);
  const cost = costs.every((c) => c !== undefined) ? costs.reduce((a, c) => a + c!, 0) : null;
  const who = caps.length === 1 ? 'The run that finished' : `The ${caps.length} runs that finished`;
  return [` ${who} held GPUs for ${fmtNum(gpuHours, 3)} GPU-hours${cost === null ? '' : ` ($${fmtNum(cost, 3)})`}.`];
}

/** The sweep report as a document (rendered as report.md and report.html). */
export function sweepBlocks(name: string, rows: SweepRow[]): Block[] {
  const labels = configLabels(rows);
  const completed = rows.filter((r) => r.status === 'completed').length;
  const slos = sloNamesOf(rows);
  const definitions = new Map(slos.map((s) => [s, sloDefinition(rows, s)]));
  const out: Block[] = [heading(1, `Sweep ${name}`)];
  const notCompleted = rows.length - completed;
  out.push(
    para(
      `${rows.length} configurations; ${completed} completed${notCompleted > 0 ? `, ${notCompleted} without a capacity (listed at the end)` : ''}. `,
      'Recipe SLO: ',
      { code: definitions.get(RECIPE_SLO)! },
      '. Each configuration links its run\u2019s own report (probes, latencies, server metrics).',
      ...totalsText(rows),
    ),
  );

  out.push(heading(2, 'Configurations'));
  if (rows.some(converged)) {
    out.push({ kind: 'chart', chart: capacityChart(rows) });
    const byKnob = knobChart(rows);
    if (byKnob) out.push({ kind: 'chart', chart: byKnob });
  }
  const runCell = (r: SweepRow): Inline => (r.reportHref ? { link: 'report', href: r.reportHref } : r.status === 'completed' ? NONE : statusText(r));
  out.push(
    table(
      ['config', 'values', 'capacity (QPS)', 'estimate (95% interval)', 'QPS per $/h', '$ per 1M output tokens', 'run'],
      rows.map((r) => {
        const c = converged(r) ? r.capacity : null;
        return [
          shortId(r.id),
          valuesText(r.values),
          c ? fmtNum(c.capacityQps, 3) : r.capacity ? statusText(r) : NONE,
          c?.interval ? intervalCell(c.interval) : NONE,
          fmtNum(c?.cost?.qpsPerUsdPerHour, 3),
          fmtNum(c?.cost?.usdPerMillionOutputTokens, 3),
          runCell(r),
        ];
      }),
      [false, false, true, true, true, true, false],
    ),
  );

  out.push(heading(2, 'Best configuration under each SLO definition'));
  const best = bestConfigurations(rows);
  const bestCell = (id: string | undefined, figure: string): Inline => (id === undefined ? NONE : `${labels.get(id) ?? id} (${figure})`);
  out.push(
    table(
      ['SLO definition', 'thresholds', 'highest capacity', 'most QPS per $/h'],
      best.map((b) => [
        b.slo,
        { code: b.definition },
        bestCell(b.byCapacity?.id, `${fmtNum(b.byCapacity?.capacityQps, 3)} QPS`),
        bestCell(b.byQpsPerUsdPerHour?.id, `${fmtNum(b.byQpsPerUsdPerHour?.qpsPerUsdPerHour, 3)} QPS per $/h`),
      ]),
      [false, false, false, false],
    ),
  );
  if (slos.length > 1) {
    out.push(heading(2, 'SLO definitions compared'));
    if (rows.some(converged)) out.push({ kind: 'chart', chart: perSloChart(rows, slos) });
    out.push(
      table(
        ['config', ...slos.map((s) => (s === RECIPE_SLO ? `recipe SLO: ${definitions.get(s)}` : thresholds(definitions.get(s)!)))],
        rows.map((r) => [shortId(r.id), ...slos.map((s) => fmtNum(capacityUnder(r, s), 3))]),
      ),
    );
    out.push(
      para(
        'Every run judged its probes under each definition; a baseline capacity is the highest probed rate that passed it with every lower probed rate passing too, so it is only as fine as the rates the recipe SLO\u2019s search chose. ',
        'Definitions marked "(default baseline)" above were not in the recipe: they follow from its fluidity SLO.',
      ),
    );
  }

  out.push(heading(2, 'Runs'));
  out.push(
    table(
      ['config', 'host', 'GPUs', 'status', 'bracket pass / fail (QPS)', 'tolerance', 'GPU-seconds', 'run cost'],
      rows.map((r) => {
        const c = r.capacity;
        return [
          shortId(r.id),
          r.host,
          r.gpus.join(',') || NONE,
          statusText(r),
          c ? `${fmtNum(c.bracket.passQps, 3)} / ${fmtNum(c.bracket.failQps, 3)}` : NONE,
          c ? fmtPct(c.tolerance) : NONE,
          c ? fmtNum(c.gpuSeconds, 4) : NONE,
          c?.costUsd === undefined ? NONE : `$${fmtNum(c.costUsd, 3)}`,
        ];
      }),
      [false, false, false, false, true, true, true, true],
    ),
  );
  if (rows.some((r) => r.slurm)) {
    // The queue is the cluster's, not the configuration's: it goes beside the run time, never into it.
    out.push(
      table(
        ['config', 'Slurm job', 'node', 'queued (s)', 'allocated (s)'],
        rows.map((r) => (r.slurm ? [shortId(r.id), `${r.slurm.jobId}${r.slurm.jobs > 1 ? ` (${r.slurm.jobs} jobs)` : ''}`, r.slurm.node, fmtNum(r.slurm.queuedS, 3), fmtNum(r.slurm.heldS, 3)] : [shortId(r.id), NONE, NONE, NONE, NONE])),
        [false, false, false, true, true],
      ),
    );
  }
  const notes = rows.filter((r) => r.status !== 'completed' || r.capacity?.outcome === 'invalid-probes');
  if (notes.length > 0) {
    out.push(heading(2, 'Runs without a capacity'));
    out.push({ kind: 'list', items: notes.map((r) => [{ strong: labels.get(r.id) ?? r.id }, `: ${r.capacity?.reason ?? r.reason}`]) });
  }
  out.push(
    para(
      'Every number unrounded, with each configuration\u2019s full id, run directory and one column per SLO definition: ',
      { link: SWEEP_FILES.reportCsv, href: SWEEP_FILES.reportCsv },
      '.',
    ),
  );
  return out;
}

/** The markdown report. */
export function sweepMarkdown(name: string, rows: SweepRow[]): string {
  return renderMarkdown(sweepBlocks(name, rows));
}

/** The HTML report (self-contained, no scripts; links only to the runs' reports inside the sweep directory). */
export async function sweepHtml(name: string, rows: SweepRow[]): Promise<string> {
  // No spec files beside a sweep's page: its charts are small and its CSV holds their numbers.
  return (await renderPage(sweepBlocks(name, rows), `Sweep ${name}`, null)).html;
}

/** What the console prints when a sweep ends: one line per configuration and the best under the recipe SLO. */
export function sweepSummaryLines(rows: SweepRow[]): string[] {
  const labels = configLabels(rows);
  const lines = rows.map((r) => {
    const c = converged(r) ? r.capacity! : null;
    const what = c
      ? `${fmtNum(c.capacityQps, 3)} QPS${c.interval ? ` (95% interval ${intervalCell(c.interval).replace(/^\S+ \(|\)$/g, '')})` : ''}${c.cost?.qpsPerUsdPerHour ? `, ${fmtNum(c.cost.qpsPerUsdPerHour, 3)} QPS per $/h` : ''}`
      : `${statusText(r)}: ${r.capacity?.reason ?? r.reason}`;
    return `  ${labels.get(r.id)}: ${what}`;
  });
  const b = bestConfigurations(rows)[0];
  if (b.byCapacity) lines.push(`best under the recipe SLO: ${labels.get(b.byCapacity.id)} (${fmtNum(b.byCapacity.capacityQps, 3)} QPS)${b.byQpsPerUsdPerHour ? `; most QPS per $/h: ${labels.get(b.byQpsPerUsdPerHour.id)}` : ''}`);
  return lines;
}

const csvCell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The CSV report: one row per configuration, numbers unrounded, one column per matrix field and per baseline SLO. */
export function sweepCsv(rows: SweepRow[]): string {
  const fields = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const baselines = [...new Set(rows.flatMap((r) => Object.keys(r.capacity?.baselineCapacityQps ?? {})))];
  const head = ['config', ...fields, 'host', 'gpus', 'status', 'outcome', 'capacity_qps', 'pass_qps', 'fail_qps', 'tolerance', 'usd_per_hour', 'qps_per_usd_per_hour', 'usd_per_million_output_tokens', 'gpu_seconds', 'run_cost_usd', 'probes', ...baselines.map((b) => `capacity_qps_${b}`), 'estimate_qps', 'interval_lo_qps', 'interval_hi_qps', 'interval_open', 'slurm_job', 'slurm_node', 'slurm_queued_s', 'slurm_allocated_s', 'run_dir'];
  const lines = rows.map((r) => {
    const c = r.capacity;
    return [
      r.id,
      ...fields.map((f) => (f in r.values ? valueText(r.values[f]) : '')),
      r.host,
      r.gpus.join(' '),
      r.status,
      c?.outcome,
      c?.capacityQps,
      c?.bracket.passQps,
      c?.bracket.failQps,
      c?.tolerance,
      c?.cost?.usdPerHour,
      c?.cost?.qpsPerUsdPerHour,
      c?.cost?.usdPerMillionOutputTokens,
      c?.gpuSeconds,
      c?.costUsd,
      c?.probes.length,
      ...baselines.map((b) => c?.baselineCapacityQps?.[b]),
      c?.interval?.estimateQps,
      c?.interval?.loQps,
      c?.interval?.hiQps,
      c?.interval?.open,
      r.slurm?.jobId,
      r.slurm?.node,
      r.slurm?.queuedS,
      r.slurm?.heldS,
      r.runDir,
    ].map(csvCell).join(',');
  });
  return [head.map(csvCell).join(','), ...lines].join('\n') + '\n';
}
