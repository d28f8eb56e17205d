// The sweep report: one row per configuration (capacity, bracket, QPS per $/hour, $ per million
// output tokens, GPU-seconds) and the best configuration under each SLO definition, as markdown,
// HTML and CSV. Pure: rows in, text out (runSweep reads each run's capacity.json and writes files).

/** The fields of a run's capacity.json the sweep report reads. */
export interface CapacitySummary {
  capacityQps: number;
  outcome: string;
  reason: string;
  tolerance: number;
  bracket: { passQps: number | null; failQps: number | null };
  slo: Record<string, { source?: string }>;
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
}

/** The recipe's own SLO is named this in the best-of table; baseline SLOs keep their names. */
export const RECIPE_SLO = 'recipe SLO';

export interface Best {
  slo: string;
  /** How the SLO reads (the recipe's text, or the baseline's name). */
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

/** The best configuration under each SLO definition, by capacity and by QPS per $/hour. */
export function bestConfigurations(rows: SweepRow[]): Best[] {
  const sloNames = [RECIPE_SLO];
  for (const r of rows) for (const name of Object.keys(r.capacity?.baselineCapacityQps ?? {})) if (!sloNames.includes(name)) sloNames.push(name);
  const recipeDefinition = rows.find((r) => r.capacity)?.capacity?.slo;
  return sloNames.map((slo) => {
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
    const definition = slo === RECIPE_SLO
      ? Object.values(recipeDefinition ?? {}).map((s) => s.source ?? '').filter(Boolean).join('; ') || slo
      : slo;
    return { slo, definition, byCapacity, byQpsPerUsdPerHour };
  });
}

const fmt = (n: number | null | undefined, digits = 3): string => (n === null || n === undefined || !Number.isFinite(n) ? '-' : String(Number(n.toPrecision(digits))));
const valueText = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

const COLUMNS = ['config', 'values', 'host', 'gpus', 'status', 'capacity QPS', 'bracket pass/fail QPS', 'estimate (95% interval) QPS', 'tolerance', 'QPS per $/h', '$ per 1M output tokens', 'GPU-seconds', 'run cost $'];

function cells(r: SweepRow): string[] {
  const c = r.capacity;
  return [
    r.id,
    Object.entries(r.values).map(([k, v]) => `${k}=${valueText(v)}`).join(' '),
    r.host,
    r.gpus.join(','),
    c ? (c.outcome === 'invalid-probes' ? 'invalid probes' : r.status) : r.status,
    c ? fmt(c.capacityQps) : '-',
    c ? `${fmt(c.bracket.passQps)} / ${fmt(c.bracket.failQps)}` : '-',
    c?.interval ? intervalCell(c.interval) : '-',
    c ? `${fmt(c.tolerance * 100)}%` : '-',
    fmt(c?.cost?.qpsPerUsdPerHour),
    fmt(c?.cost?.usdPerMillionOutputTokens),
    c ? fmt(c.gpuSeconds, 4) : '-',
    fmt(c?.costUsd),
  ];
}

// "42.1 (40.3–43.9)", an open end as "open".
function intervalCell(iv: NonNullable<CapacitySummary['interval']>): string {
  const end = (q: number | null) => (q === null ? 'open' : fmt(q));
  return `${iv.estimateQps === null ? '-' : fmt(iv.estimateQps)} (${end(iv.loQps)}–${end(iv.hiQps)})`;
}

function bestLines(best: Best[]): string[][] {
  return best.map((b) => [
    b.slo,
    b.definition,
    b.byCapacity ? `${b.byCapacity.id} (${fmt(b.byCapacity.capacityQps)} QPS)` : '-',
    b.byQpsPerUsdPerHour ? `${b.byQpsPerUsdPerHour.id} (${fmt(b.byQpsPerUsdPerHour.qpsPerUsdPerHour)} QPS per $/h)` : '-',
  ]);
}

const BEST_COLUMNS = ['SLO', 'definition', 'highest capacity', 'most QPS per $/h'];

const mdCell = (s: string) => s.replace(/\|/g, '\\|');
const mdTable = (head: string[], rows: string[][]) =>
  [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(mdCell).join(' | ')} |`)].join('\n');

/** The markdown report. */
export function sweepMarkdown(name: string, rows: SweepRow[]): string {
  const out = [`# Sweep ${name}`, '', `${rows.length} configurations; ${rows.filter((r) => r.status === 'completed').length} completed.`, '', '## Per configuration', '', mdTable(COLUMNS, rows.map(cells))];
  out.push('', '## Best configuration under each SLO definition', '', mdTable(BEST_COLUMNS, bestLines(bestConfigurations(rows))));
  const notes = rows.filter((r) => r.status !== 'completed' || r.capacity?.outcome === 'invalid-probes');
  if (notes.length > 0) out.push('', '## Runs without a capacity', '', ...notes.map((r) => `- ${r.id}: ${r.capacity?.reason ?? r.reason}`));
  out.push('', 'Capacity columns per baseline SLO are in report.csv; each run\'s own report is in its run directory.');
  return out.join('\n') + '\n';
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
const htmlTable = (head: string[], rows: string[][]) =>
  `<table>\n<thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead>\n<tbody>\n${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('\n')}\n</tbody>\n</table>`;

/** The HTML report (self-contained, no scripts). */
export function sweepHtml(name: string, rows: SweepRow[]): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sweep ${esc(name)}</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}th{background:#f4f4f4}</style>
</head><body>
<h1>Sweep ${esc(name)}</h1>
<h2>Per configuration</h2>
${htmlTable(COLUMNS, rows.map(cells))}
<h2>Best configuration under each SLO definition</h2>
${htmlTable(BEST_COLUMNS, bestLines(bestConfigurations(rows)))}
</body></html>
`;
}

const csvCell = (v: unknown) => {
  const s = v === null || v === undefined ? '' : String(v);
  return /[",\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
};

/** The CSV report: one row per configuration, numbers unrounded, one column per matrix field and per baseline SLO. */
export function sweepCsv(rows: SweepRow[]): string {
  const fields = [...new Set(rows.flatMap((r) => Object.keys(r.values)))];
  const baselines = [...new Set(rows.flatMap((r) => Object.keys(r.capacity?.baselineCapacityQps ?? {})))];
  const head = ['config', ...fields, 'host', 'gpus', 'status', 'outcome', 'capacity_qps', 'pass_qps', 'fail_qps', 'tolerance', 'usd_per_hour', 'qps_per_usd_per_hour', 'usd_per_million_output_tokens', 'gpu_seconds', 'run_cost_usd', 'probes', ...baselines.map((b) => `capacity_qps_${b}`), 'estimate_qps', 'interval_lo_qps', 'interval_hi_qps', 'interval_open', 'run_dir'];
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
      r.runDir,
    ].map(csvCell).join(',');
  });
  return [head.map(csvCell).join(','), ...lines].join('\n') + '\n';
}
