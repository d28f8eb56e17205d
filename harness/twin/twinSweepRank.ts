// The ranking of a sweep evaluated on the twin (`fluidcap sweep --twin`): each configuration's
// capacity turned into QPS per $/hour and $ per million tokens, ranked by QPS per $/hour, and
// written as Markdown, CSV and JSON that say every number came from the twin; plus the sweep file
// of the top N configurations that a real `fluidcap sweep` runs. This module owns those formats.
// Pure: rows in, text out.
import { toCsv } from '../report/csv.ts';
import { configLabels } from '../sweep/expand.ts';

/** What became of one configuration on the twin. */
export type TwinConfigStatus = 'ranked' | 'no-capacity' | 'infeasible' | 'failed';

/** One configuration of the matrix, as the twin found it. */
export interface TwinConfigRow {
  id: string;
  /** Matrix key (as the sweep file writes it) → value. */
  values: Record<string, unknown>;
  status: TwinConfigStatus;
  /** Why it is not ranked (infeasible: the memory that does not fit; no-capacity: the search's reason). */
  reason: string;
  model: string;
  gpuProfile: string;
  scheduler: string;
  tensorParallel: number;
  /** Pipeline stages (absent: 1, no pipeline parallelism); a swept value is also a matrix column. */
  pipelineParallel?: number;
  /** GPUs of one replica: tensor × pipeline parallelism. */
  gpuCount: number;
  usdPerGpuHour: number | null;
  capacityQps: number | null;
  bracket: { passQps: number | null; failQps: number | null } | null;
  outcome: string | null;
  probes: number;
  /** Requests per second at capacity × mean prompt+output tokens of the workload at that rate. */
  meanPromptTokens: number | null;
  meanOutputTokens: number | null;
  /** Latencies of the passing probe at capacity (null without one). */
  ttftP90S: number | null;
  tbtP99S: number | null;
  /** Virtual seconds of engine time the search stands for, and the wall seconds it took here. */
  virtualS: number;
  wallS: number;
}

/** A row with its money figures and rank (null when not ranked). */
export interface RankedRow extends TwinConfigRow {
  rank: number | null;
  /** A short name for pages and the console (`c81 h100 TP4 sarathi seqs128 chunk2048`); `id` stays the key. */
  label: string;
  /**
   * The id of the better-ranked configuration whose twin results are identical to this one's
   * (capacity, bracket, probes, latencies at capacity, price): the twin cannot tell them apart.
   * Null for the first of such a group, and for unranked rows.
   */
  identicalTo: string | null;
  usdPerHour: number | null;
  qpsPerUsdPerHour: number | null;
  /** $ per million tokens, prompt and output, served at capacity. */
  usdPerMillionTokens: number | null;
}

/** Said at the top of every file the twin sweep writes. */
export const TWIN_PROVENANCE =
  'Every number here came from fluidcap\u2019s simulated twin (the simulated engine\u2019s scheduler, KV cache and roofline iteration model run in virtual time), not from an engine: a ranking to choose which configurations to run for real.';

/** Money figures of a configuration at its capacity; null where the price or capacity is missing. */
export function moneyOf(r: TwinConfigRow): Pick<RankedRow, 'usdPerHour' | 'qpsPerUsdPerHour' | 'usdPerMillionTokens'> {
  if (r.usdPerGpuHour === null || r.capacityQps === null || r.capacityQps <= 0) {
    return { usdPerHour: r.usdPerGpuHour === null ? null : r.usdPerGpuHour * r.gpuCount, qpsPerUsdPerHour: null, usdPerMillionTokens: null };
  }
  const usdPerHour = r.usdPerGpuHour * r.gpuCount;
  const tokensPerS = r.capacityQps * ((r.meanPromptTokens ?? 0) + (r.meanOutputTokens ?? 0));
  return {
    usdPerHour,
    qpsPerUsdPerHour: usdPerHour > 0 ? r.capacityQps / usdPerHour : null,
    // $/h ÷ (tokens/s × 3600 s/h) = $/token; × 1e6 for a million.
    usdPerMillionTokens: tokensPerS > 0 ? (usdPerHour / (tokensPerS * 3600)) * 1e6 : null,
  };
}

/**
 * Ranked by QPS per $/hour (then capacity, then matrix order); configurations without a capacity,
 * without a price, infeasible or failed follow unranked, in matrix order.
 */
export function rankTwinRows(rows: readonly TwinConfigRow[]): RankedRow[] {
  const labels = configLabels(rows);
  const withMoney = rows.map((r, i) => ({ ...r, ...moneyOf(r), rank: null as number | null, label: labels.get(r.id) ?? r.id, identicalTo: null as string | null, order: i }));
  const sorted = withMoney
    .filter((r) => r.status === 'ranked' && r.qpsPerUsdPerHour !== null)
    .sort((a, b) => b.qpsPerUsdPerHour! - a.qpsPerUsdPerHour! || (b.capacityQps ?? 0) - (a.capacityQps ?? 0) || a.order - b.order);
  // Identical results tie on every sort key: each group is moved together behind its first
  // configuration (only the order inside a tie changes), so a group holds consecutive ranks.
  const groups = new Map<string, typeof sorted>();
  for (const r of sorted) groups.set(twinResultKey(r), [...(groups.get(twinResultKey(r)) ?? []), r]);
  const ranked = [...groups.values()].flat().sort((a, b) => b.qpsPerUsdPerHour! - a.qpsPerUsdPerHour! || (b.capacityQps ?? 0) - (a.capacityQps ?? 0));
  ranked.forEach((r, i) => (r.rank = i + 1));
  for (const group of groups.values()) for (const r of group.slice(1)) r.identicalTo = group[0].id;
  const rest = withMoney.filter((r) => r.rank === null);
  return [...ranked, ...rest].map(({ order: _o, ...r }) => r);
}

// Everything the twin measured of a configuration and what it costs; the virtual and wall seconds
// are left out (the profile's length differs with the batch limit while every verdict stays the same).
function twinResultKey(r: TwinConfigRow & { usdPerHour: number | null }): string {
  return JSON.stringify([r.model, r.gpuProfile, r.gpuCount, r.usdPerHour, r.capacityQps, r.bracket, r.outcome, r.probes, r.meanPromptTokens, r.meanOutputTokens, r.ttftP90S, r.tbtP99S]);
}

/** The matrix keys whose values differ inside groups of identical configurations (what the twin cannot see). */
export function keysTheTwinCannotSee(rows: readonly RankedRow[]): string[] {
  const byId = new Map(rows.map((r) => [r.id, r]));
  const keys: string[] = [];
  for (const r of rows) {
    const leader = r.identicalTo === null ? undefined : byId.get(r.identicalTo);
    if (!leader) continue;
    for (const k of Object.keys(r.values)) if (JSON.stringify(r.values[k]) !== JSON.stringify(leader.values[k]) && !keys.includes(k)) keys.push(k);
  }
  return keys;
}

/** How a member of a group differs from its leader: `maxNumSeqs=256`. */
export function differenceFrom(r: RankedRow, leader: RankedRow): string {
  return Object.keys(r.values)
    .filter((k) => JSON.stringify(r.values[k]) !== JSON.stringify(leader.values[k]))
    .map((k) => `${k}=${valueText(r.values[k])}`)
    .join(' ');
}

const num = (v: number | null, digits = 4) => (v === null ? '' : String(+v.toPrecision(digits)));
const ms = (s: number | null) => (s === null ? '' : String(+(s * 1000).toPrecision(4)));
const valueText = (v: unknown) => (typeof v === 'object' ? JSON.stringify(v) : String(v));

/** The matrix keys in the order the rows first name them. */
function axesOf(rows: readonly RankedRow[]): string[] {
  const keys: string[] = [];
  for (const r of rows) for (const k of Object.keys(r.values)) if (!keys.includes(k)) keys.push(k);
  return keys;
}

export interface TwinSweepHeader {
  sweepName: string;
  sweepFile: string;
  recipeFile: string;
  /** The recipe's SLO as written (e.g. `ttft p90 <= 2s and tbt p99 <= 200ms`). */
  sloText: string;
  workloadText: string;
  /** The base recipe's engine and host: what a real sweep of the same file would run. */
  baseEngine: string;
  baseHost: string | null;
  wallS: number;
  createdAt: string;
}

/** The ranking as CSV: one row per configuration, ranked first. */
export function twinRankingCsv(rows: readonly RankedRow[]): string {
  const axes = axesOf(rows);
  // What the twin modelled, unless a matrix column of the same name already says it.
  const modelled = (['gpuProfile', 'scheduler', 'tensorParallel'] as const).filter((k) => !axes.includes(k));
  return toCsv(
    ['source', 'rank', 'id', ...axes, ...modelled, 'status', 'gpus', 'usdPerHour', 'capacityQps', 'passQps', 'failQps', 'qpsPerUsdPerHour', 'usdPerMillionTokens', 'meanPromptTokens', 'meanOutputTokens', 'ttftP90S', 'tbtP99S', 'probes', 'virtualS', 'wallS', 'reason', 'label', 'identicalTo'],
    rows.map((r) => [
      'twin', r.rank, r.id, ...axes.map((k) => (k in r.values ? valueText(r.values[k]) : '')), ...modelled.map((k) => r[k]), r.status, r.gpuCount, r.usdPerHour,
      r.capacityQps, r.bracket?.passQps ?? null, r.bracket?.failQps ?? null, r.qpsPerUsdPerHour, r.usdPerMillionTokens, r.meanPromptTokens, r.meanOutputTokens,
      r.ttftP90S, r.tbtP99S, r.probes, r.virtualS, r.wallS, r.reason, r.label, r.identicalTo,
    ]),
  );
}

/** The ranking as Markdown, with where the numbers came from above the table. */
export function twinRankingMarkdown(h: TwinSweepHeader, rows: readonly RankedRow[]): string {
  const axes = axesOf(rows);
  const counts = (s: string) => rows.filter((r) => r.status === s).length;
  const identical = rows.filter((r) => r.identicalTo !== null).length;
  const hiddenKeys = keysTheTwinCannotSee(rows);
  const lines = [
    `# ${h.sweepName}: configurations ranked on the twin`,
    '',
    `> ${TWIN_PROVENANCE}`,
    '',
    `- Sweep file: ${h.sweepFile}; base recipe: ${h.recipeFile}`,
    `- SLO (the recipe's): ${h.sloText}; workload: ${h.workloadText}`,
    `- ${rows.length} configurations: ${counts('ranked')} with a capacity, ${counts('no-capacity')} without one, ${counts('infeasible')} infeasible (the model does not fit), ${counts('failed')} failed`,
    ...(identical > 0 ? [`- ${identical} configurations are identical on the twin to a better-ranked one (note column): the twin cannot tell them apart${hiddenKeys.length ? `; they differ only in ${hiddenKeys.join(', ')}` : ''}`] : []),
    `- Wall time of the whole twin sweep: ${h.wallS.toFixed(1)} s (written ${h.createdAt})`,
    '- QPS per $/hour = capacity ÷ (GPUs × the GPU profile\u2019s usdPerGpuHour); $ per 1M tokens = that hourly price ÷ (prompt + output tokens per second at capacity); GPUs = tensor parallelism (one replica).',
    '',
    `| rank | configuration | ${axes.join(' | ')} | GPUs | capacity (QPS) | QPS per $/h | $ per 1M tokens | TTFT P90 (ms) | TBT P99 (ms) | probes | note |`,
    `|---:|---|${axes.map(() => '---').join('|')}|---:|---:|---:|---:|---:|---:|---:|---|`,
  ];
  for (const r of rows) {
    const note = r.status !== 'ranked' ? `${r.status}: ${r.reason}` : r.identicalTo !== null ? `identical on the twin to ${r.identicalTo.split('-')[0]}` : '';
    lines.push(
      `| ${r.rank ?? '—'} | ${r.label} | ${axes.map((k) => (k in r.values ? valueText(r.values[k]) : '')).join(' | ')} | ${r.gpuCount} × ${r.gpuProfile} | ${num(r.capacityQps)} | ${num(r.qpsPerUsdPerHour)} | ${num(r.usdPerMillionTokens)} | ${ms(r.ttftP90S)} | ${ms(r.tbtP99S)} | ${r.probes} | ${note.replace(/\|/g, '\\|')} |`,
    );
  }
  return lines.join('\n') + '\n';
}

/** The ranking as JSON (what the vidur figures and scripts read). */
export function twinRankingJson(h: TwinSweepHeader, rows: readonly RankedRow[]): string {
  return JSON.stringify({ source: 'twin', provenance: TWIN_PROVENANCE, ...h, configurations: rows }, null, 2) + '\n';
}

/** Sweep-file settings carried into the top-N file. */
export interface TopSweepInput {
  sweepName: string;
  /** The base recipe's file name: the top-N file is written beside a copy of it. */
  recipe: string;
  /** The base recipe's engine and host: what a real sweep of the file runs, and where. */
  engine: string;
  host: string | null;
  gpusPerHost?: number;
  parallel?: number;
  portsBase?: number;
  createdAt: string;
}

/** What `fluidcap sweep` of the top-N file measures, in words (the base recipe's engine decides it). */
export function realSweepMeasures(engine: string, host: string | null): string {
  const where = onHost(host);
  return engine === 'sim'
    ? `the simulated engine in real time ${where} (the base recipe's engine: sim), not GPUs`
    : `${engine} ${host === null ? 'on the host --hosts names' : onHost(host)} (the base recipe's engine)`;
}

// `local` is what a recipe without a host runs on: this machine.
const onHost = (host: string | null) => (host === null || host === 'local' ? 'on this machine' : `on ${host}`);

/** The ranked configurations the twin can tell apart, best first: the ones worth a real run. */
export function distinctRanked(rows: readonly RankedRow[]): RankedRow[] {
  return rows.filter((r) => r.rank !== null && r.identicalTo === null);
}

/**
 * A sweep file of the N best configurations the twin can tell apart, each an `include` entry with
 * exactly its matrix values, so `fluidcap sweep` runs those and nothing else. A configuration
 * identical on the twin to one of them is named in a comment, not run: the twin gives no reason
 * to prefer it. The header says what the base recipe's engine makes of "running them".
 */
export function topSweepText(input: TopSweepInput, rows: readonly RankedRow[], n: number): string {
  const top = distinctRanked(rows).slice(0, n);
  if (top.length === 0) throw new Error('topSweepText: no ranked configuration to write');
  const measure =
    input.engine === 'sim'
      ? [
          `# The ranking came from the simulated twin. The base recipe ${input.recipe} runs the simulated engine`,
          `# (engine: sim) ${onHost(input.host)}, so this file measures these configurations on the simulated engine`,
          '# in real time, not on GPUs. To measure them on vLLM or Sarathi-Serve, point `recipe:` at a recipe',
          '# with that engine and the same fields (the twin evaluates such a recipe the same way).',
          `#   fluidcap sweep top-${n}.yaml`,
        ]
      : [
          `# The ranking came from the simulated twin; this file runs the same configurations for real on`,
          `# ${input.engine}, as the base recipe ${input.recipe} sets it up:`,
          `#   fluidcap sweep top-${n}.yaml [--hosts inventory.yaml]`,
        ];
  const lines = [
    `# The top ${top.length} configurations of ${input.sweepName} by QPS per $/hour on the twin (fluidcap sweep --twin, ${input.createdAt}).`,
    ...measure,
    `name: ${input.sweepName}-top${n}`,
    `recipe: ${input.recipe}`,
    'matrix: {}',
    'include:',
    ...top.flatMap((r) => {
      const same = rows.filter((x) => x.identicalTo === r.id);
      return [
        `  # rank ${r.rank}, ${r.label}: ${num(r.capacityQps)} QPS on the twin, ${num(r.qpsPerUsdPerHour)} QPS per $/h`,
        ...(same.length > 0 ? [`  #   identical on the twin, not run: ${same.map((x) => `${x.id.split('-')[0]} (${differenceFrom(x, r)})`).join(', ')}`] : []),
        `  - ${JSON.stringify(r.values)}`,
      ];
    }),
  ];
  if (input.gpusPerHost !== undefined) lines.push(`gpusPerHost: ${input.gpusPerHost}`);
  if (input.parallel !== undefined) lines.push(`parallel: ${input.parallel}`);
  if (input.portsBase !== undefined) lines.push(`ports: { base: ${input.portsBase} }`);
  return lines.join('\n') + '\n';
}
