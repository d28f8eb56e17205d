// The twin sweep's page (report.html in its directory): where every number came from, QPS per
// $/hour of each configuration by rank and capacity against the hourly price as charts, the
// ranking with configurations the twin cannot tell apart folded into one row, what was not ranked
// and why (grouped by reason), and links to the files beside it; and the console's summary of the
// same. Pure: rows in, blocks and lines out.
import { heading, para, table, type Block, type Chart, type Inline } from '../report/doc.ts';
import { fmtNum, fmtSeconds, fmtUsd } from '../report/format.ts';
import { SWEEP_FILES } from '../runDir/layout.ts';
import { differenceFrom, distinctRanked, keysTheTwinCannotSee, realSweepMeasures, TWIN_PROVENANCE, type RankedRow, type TwinSweepHeader } from './twinSweepRank.ts';

const PALETTE = ['#8250df', '#0969da', '#bf8700', '#1a7f37', '#cf222e', '#57606a', '#e16f24', '#1b7c83'];

/** What a twin sweep's page needs beside the rows. */
export interface TwinPageInput {
  header: TwinSweepHeader;
  rows: readonly RankedRow[];
  /** Files written beside the page, in the order to list them (names relative to the page). */
  files: readonly string[];
  /** The top-N file, when one was written. */
  top: { file: string; n: number } | null;
}

// One series per GPU profile × scheduler: the two choices that move a configuration most.
function seriesOf(rows: readonly RankedRow[], point: (r: RankedRow) => [number, number] | null): Chart['series'] {
  const groups = new Map<string, [number, number][]>();
  for (const r of rows) {
    const p = point(r);
    if (p === null) continue;
    const name = `${r.gpuProfile} · ${r.scheduler}`;
    groups.set(name, [...(groups.get(name) ?? []), p]);
  }
  return [...groups.entries()].map(([name, points], k) => ({ name, kind: 'points', color: PALETTE[k % PALETTE.length], points }));
}

const shortId = (id: string) => id.split('-')[0];

/**
 * The unranked rows grouped by status and kind of reason (the reason's text before its first
 * colon, e.g. "llama-2-70b does not fit"), each with its distinct details and the rows that have them.
 */
export function unrankedGroups(rows: readonly RankedRow[]): { status: string; kind: string; rows: RankedRow[]; details: { text: string; ids: string[] }[] }[] {
  const out: { status: string; kind: string; rows: RankedRow[]; details: { text: string; ids: string[] }[] }[] = [];
  for (const r of rows.filter((x) => x.rank === null)) {
    const reason = r.reason || 'no price in the GPU profile, so no QPS per $/hour';
    const colon = reason.indexOf(':');
    const kind = colon < 0 ? reason : reason.slice(0, colon);
    const text = colon < 0 ? '' : reason.slice(colon + 1).trim();
    let g = out.find((x) => x.status === r.status && x.kind === kind);
    if (!g) out.push((g = { status: r.status, kind, rows: [], details: [] }));
    g.rows.push(r);
    const d = g.details.find((x) => x.text === text);
    if (d) d.ids.push(r.id);
    else g.details.push({ text, ids: [r.id] });
  }
  return out;
}

/** The matrix values every one of `rows` shares (`tensorParallel=1`), or '' when none. */
export function sharedValues(rows: readonly RankedRow[]): string {
  if (rows.length === 0) return '';
  return Object.entries(rows[0].values)
    .filter(([k, v]) => rows.every((r) => JSON.stringify(r.values[k]) === JSON.stringify(v)))
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ');
}

/** The page as blocks (renderHtml lays them out). */
export function twinPageBlocks(input: TwinPageInput): Block[] {
  const { header: h, rows } = input;
  const ranked = rows.filter((r) => r.rank !== null);
  const distinct = ranked.filter((r) => r.identicalTo === null);
  const hidden = ranked.length - distinct.length;
  const count = (s: string) => rows.filter((r) => r.status === s).length;
  const out: Block[] = [
    heading(1, `${h.sweepName}: configurations ranked on the twin`),
    para({ strong: TWIN_PROVENANCE }),
    {
      kind: 'list',
      items: [
        ['Sweep file: ', { code: h.sweepFile }, '; base recipe: ', { code: h.recipeFile }, ` (engine: ${h.baseEngine}).`],
        ['SLO (the recipe\u2019s): ', { code: h.sloText }, `. Workload: ${h.workloadText}.`],
        [
          `${rows.length} configurations: ${count('ranked')} with a capacity${hidden > 0 ? ` (${distinct.length} the twin can tell apart)` : ''}, ${count('no-capacity')} without one, ${count('infeasible')} infeasible (the model does not fit), ${count('failed')} failed.`,
        ],
        [`The whole twin sweep took ${h.wallS.toFixed(1)} s of wall time (written ${h.createdAt}).`],
        ['QPS per $/hour = capacity ÷ (GPUs × the GPU profile\u2019s usdPerGpuHour), GPUs = tensor parallelism (one replica); $ per 1M tokens = that hourly price ÷ (prompt + output tokens per second at capacity).'],
      ],
    },
  ];

  if (ranked.length > 0) {
    out.push(heading(2, 'Which configuration gives the most QPS per $/hour'));
    out.push({
      kind: 'chart',
      chart: {
        title: 'QPS per $/hour of each configuration, by rank',
        xLabel: 'rank (1 = most QPS per $/hour)',
        yLabel: 'QPS per $/hour',
        xScale: 'linear',
        series: seriesOf(ranked, (r) => [r.rank!, r.qpsPerUsdPerHour!]),
        hLines: [],
        vLines: [],
        description:
          'Each dot is one configuration at its capacity on the twin, coloured by GPU profile and scheduler; the table below names each rank. ' +
          'A step down between neighbours is a real difference on the twin; a flat run is configurations with the same capacity at the same price (the table folds together those the twin cannot tell apart at all).',
      },
    });
    out.push({
      kind: 'chart',
      chart: {
        title: 'Capacity against the hourly price',
        xLabel: '$ per hour (GPUs × price per GPU-hour)',
        yLabel: 'capacity (QPS)',
        xScale: 'log',
        series: seriesOf(ranked, (r) => (r.usdPerHour === null ? null : [r.usdPerHour, r.capacityQps!])),
        hLines: [],
        vLines: [],
        description:
          'What each hourly price buys: dots higher up serve more at the same price. Configurations at one price are the same GPUs with other engine settings; the spread of a column is what those settings are worth.',
      },
    });

    out.push(heading(2, 'Ranking'));
    const byId = new Map(rows.map((r) => [r.id, r]));
    const members = (leader: RankedRow) => rows.filter((r) => r.identicalTo === leader.id);
    out.push(
      table(
        ['rank', 'configuration', 'capacity (QPS)', 'QPS per $/h', '$ per 1M tokens', 'TTFT P90', 'TBT P99'],
        distinct.map((r) => {
          const same = members(r);
          const cell: Inline = same.length === 0 ? r.label : `${r.label}; identical on the twin: ${same.map((x) => `${shortId(x.id)} (${differenceFrom(x, byId.get(x.identicalTo!)!)})`).join(', ')}`;
          const ranks = same.length === 0 ? String(r.rank) : `${r.rank}–${Math.max(...same.map((x) => x.rank!))}`;
          // A search that passed at its highest rate only bounds the capacity from below.
          const capacity = r.outcome === 'at-least-max' ? `≥ ${fmtNum(r.capacityQps, 4)}` : fmtNum(r.capacityQps, 4);
          return [ranks, cell, capacity, fmtNum(r.qpsPerUsdPerHour, 3), fmtUsd(r.usdPerMillionTokens), fmtSeconds(r.ttftP90S), fmtSeconds(r.tbtP99S)];
        }),
        [true, false, true, true, true, true, true],
      ),
    );
    if (hidden > 0) {
      const keys = keysTheTwinCannotSee(rows);
      out.push(
        para(
          `${hidden} configurations gave results identical to a better-ranked one (capacity, bracket, probes, latencies at capacity and price)`,
          keys.length > 0 ? `; they differ only in ${keys.join(', ')}, which the twin does not see at these loads` : '',
          '. Each such group is one row above, ranked by its first configuration',
          input.top ? `; ${input.top.file} runs one configuration of each of the best ${input.top.n} groups and names the others in a comment.` : '.',
        ),
      );
    }
  }

  const unranked = unrankedGroups(rows);
  if (unranked.length > 0) {
    out.push(heading(2, 'Not ranked'));
    out.push({
      kind: 'list',
      items: unranked.map((g): Inline[] => {
        const shared = sharedValues(g.rows);
        const details = g.details.filter((d) => d.text !== '');
        const detailText =
          details.length === 0 ? '' : details.length === 1 ? `: ${details[0].text}` : `: ${details.map((d) => `${d.text} (${d.ids.map(shortId).join(', ')})`).join('; ')}`;
        return [{ strong: `${g.rows.length} ${g.status}` }, shared ? ` (all with ${shared})` : '', `: ${g.kind}${detailText}. `, details.length > 1 ? '' : `${g.rows.map((r) => shortId(r.id)).join(', ')}.`];
      }),
    });
  }

  out.push(heading(2, 'Files'));
  const top = input.top;
  out.push({
    kind: 'list',
    items: [
      ...input.files.map((f): Inline[] => [{ link: f, href: encodeURIComponent(f) }]),
      ...(top
        ? [[`To measure the top ${top.n}: `, { code: `fluidcap sweep ${top.file}` }, ` runs ${realSweepMeasures(h.baseEngine, h.baseHost)}.`] as Inline[]]
        : []),
    ],
  });
  return out;
}

/**
 * What the console says once every configuration is evaluated: the infeasible ones in one line
 * per reason, and the configurations the twin cannot tell apart.
 */
export function twinSummaryLines(rows: readonly RankedRow[], top: { file: string; n: number } | null): string[] {
  const out: string[] = [];
  // One line per kind of reason ("llama-2-70b does not fit"), the first one's numbers as the example.
  for (const g of unrankedGroups(rows).filter((x) => x.status === 'infeasible')) {
    const shared = sharedValues(g.rows);
    const example = g.details[0].text;
    out.push(`${g.rows.length} of ${rows.length} configurations infeasible${shared ? `, all with ${shared}` : ''}: ${g.kind}${example ? ` (${g.details.length > 1 ? 'e.g. ' : ''}${example})` : ''}; each one in ${SWEEP_FILES.reportHtml}`);
  }
  const identical = rows.filter((r) => r.identicalTo !== null).length;
  if (identical > 0) {
    const keys = keysTheTwinCannotSee(rows);
    const runs = top ? Math.min(top.n, distinctRanked(rows).length) : 0;
    out.push(
      `${identical} configurations are identical on the twin to a better-ranked one${keys.length ? ` (they differ only in ${keys.join(', ')})` : ''}: the twin cannot tell them apart` +
        (top ? `; ${top.file} runs ${runs} it can, and names the identical ones in comments` : ''),
    );
  }
  return out;
}
