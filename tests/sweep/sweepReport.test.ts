// The sweep report: best configuration under each SLO definition (capacity and QPS per $/hour),
// unconverged runs left out of the ranking, CSV quoting, markdown rows, SLO definitions named by
// their thresholds, the capacity chart with interval ends, links confined to the sweep directory.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { svgPoints } from '../support/svgMarks.ts';
import { bestConfigurations, runReportHref, sweepBlocks, sweepCsv, sweepHtml, sweepMarkdown, sweepSummaryLines, RECIPE_SLO, type CapacitySummary, type SweepRow } from '../../harness/sweep/sweepReport.ts';
import { configLabels } from '../../harness/sweep/expand.ts';

function cap(capacityQps: number, usdPerHour: number | null, baselines: Record<string, number | null>, outcome = 'converged'): CapacitySummary {
  return {
    capacityQps,
    outcome,
    reason: 'r',
    tolerance: 0.05,
    bracket: { passQps: capacityQps, failQps: capacityQps * 1.05 },
    slo: { fluidity: { source: 'fluidity p99 >= 0.9' } },
    baselineCapacityQps: baselines,
    gpuSeconds: 100,
    costUsd: 0.1,
    cost: usdPerHour === null ? null : { usdPerHour, qpsPerUsdPerHour: capacityQps / usdPerHour, usdPerMillionOutputTokens: 1.5 },
    probes: [1, 2, 3],
  };
}

const row = (id: string, capacity: CapacitySummary | null, status = 'completed'): SweepRow => ({ id, values: { maxNumSeqs: 8, note: 'a,b' }, host: 'gpu1', gpus: [0, 1], status, reason: 'why', runDir: `/r/${id}`, capacity });

const rows = [
  row('c01', cap(10, 4, { 'ttft+tbt': 12, tpot: 9 })), // 2.5 QPS per $/h
  row('c02', cap(14, 8, { 'ttft+tbt': 6, tpot: null })), // 1.75 QPS per $/h
  row('c03', cap(30, 2, { 'ttft+tbt': 40 }, 'invalid-probes')), // not converged: never best
  row('c04', null, 'failed'),
];

test('best under each SLO: by capacity and by QPS per $/hour; runs without a trusted capacity never win', () => {
  const best = bestConfigurations(rows);
  assert.equal(best.map((b) => b.slo), [RECIPE_SLO, 'ttft+tbt', 'tpot']);
  assert.equal(best[0].byCapacity, { id: 'c02', capacityQps: 14 });
  assert.equal(best[0].byQpsPerUsdPerHour, { id: 'c01', qpsPerUsdPerHour: 2.5 });
  assert.is(best[0].definition, 'fluidity p99 >= 0.9');
  assert.equal(best[1].byCapacity, { id: 'c01', capacityQps: 12 });
  assert.equal(best[2].byCapacity, { id: 'c01', capacityQps: 9 });
});

test('CSV: one row per configuration, matrix fields and baseline SLOs as columns, commas quoted', () => {
  const lines = sweepCsv(rows).trim().split('\n');
  assert.is(lines.length, 5);
  assert.match(lines[0], /^config,maxNumSeqs,note,host,gpus,status,outcome,capacity_qps,pass_qps,fail_qps,tolerance,usd_per_hour,qps_per_usd_per_hour,usd_per_million_output_tokens,gpu_seconds,run_cost_usd,probes,capacity_qps_ttft\+tbt,capacity_qps_tpot,estimate_qps,interval_lo_qps,interval_hi_qps,interval_open,slurm_job,slurm_node,slurm_queued_s,slurm_allocated_s,run_dir$/);
  assert.is(lines[1], 'c01,8,"a,b",gpu1,0 1,completed,converged,10,10,10.5,0.05,4,2.5,1.5,100,0.1,3,12,9,,,,,,,,,/r/c01');
  assert.is(lines[4], 'c04,8,"a,b",gpu1,0 1,failed,,,,,,,,,,,,,,,,,,,,,,/r/c04');
});

test('markdown: a row per configuration (short id, values, capacity, interval, money, run link) and the best-of table', () => {
  const md = sweepMarkdown('s', rows);
  assert.match(md, /\| c02 \| maxNumSeqs=8 note=a,b \| 14 \| — \| 1\.75 \| 1\.5 \| — \|/);
  // A run with an interval shows its estimate, an open end as "open"; the CSV carries the numbers.
  const withInterval = [row('c05', { ...cap(10, 4, {}), interval: { estimateQps: 10.42, loQps: 9.81, hiQps: null, open: 'hi' } })];
  assert.match(sweepMarkdown('s', withInterval), /\| c05 \| maxNumSeqs=8 note=a,b \| 10 \| 10\.4 \(9\.81–open\) \|/);
  assert.match(sweepCsv(withInterval), /,10\.42,9\.81,,hi,,,,,\/r\/c05/);
  assert.match(md, /\| c03 \| maxNumSeqs=8 note=a,b \| invalid probes \|/);
  assert.match(md, /\| recipe SLO \| `fluidity p99 >= 0\.9` \| c02 seqs8 note=a,b \(14 QPS\) \| c01 seqs8 note=a,b \(2\.5 QPS per \$\/h\) \|/);
  assert.match(md, /## Runs without a capacity\n\n- \*\*c03 seqs8 note=a,b\*\*: r\n- \*\*c04 seqs8 note=a,b\*\*: why/);
  assert.match(md, /\| c01 \| gpu1 \| 0,1 \| completed \| 10 \/ 10\.5 \| 5% \| 100 \| \$0\.1 \|/);
});

test('each SLO definition is named by its thresholds, not by its key (ttft+tbt)', async () => {
  const baselines = {
    'ttft+tbt': { ttft: { source: 'ttft p99 <= 2s (default baseline)' }, tbt: { source: 'tbt p99 <= 25ms (default baseline)' } },
    tpot: { tpot: { source: 'tpot p99 <= 25ms (default baseline)' } },
  };
  const named = rows.map((r) => (r.capacity ? { ...r, capacity: { ...r.capacity, baselines } } : r));
  const best = bestConfigurations(named);
  assert.is(best[1].definition, 'ttft p99 <= 2s and tbt p99 <= 25ms (default baseline)');
  const md = sweepMarkdown('s', named);
  assert.match(md, /\| ttft\+tbt \| `ttft p99 <= 2s and tbt p99 <= 25ms \(default baseline\)` \| c01 /);
  // The per-configuration capacity table is headed by the thresholds.
  assert.match(md, /\| config \| recipe SLO: fluidity p99 >= 0\.9 \| ttft p99 \\<= 2s and tbt p99 \\<= 25ms \| tpot p99 \\<= 25ms \|\n/);
  assert.match(md, /\| c01 \| 10 \| 12 \| 9 \|/);
  const html = await sweepHtml('s', named);
  assert.match(html, /<th>ttft p99 &lt;= 2s and tbt p99 &lt;= 25ms<\/th>/);
  assert.not.match(html, /<th>ttft\+tbt<\/th>/);
});

test('HTML: a capacity chart with a mark per converged configuration and its interval as a bar; escaped; links only into the sweep', async () => {
  const withLinks: SweepRow[] = [
    { ...row('c01-a', { ...cap(10, 4, {}), interval: { estimateQps: 10.2, loQps: 9.5, hiQps: 11, open: 'none' } }), reportHref: runReportHref('/s', '/s/runs/r 1') },
    { ...row('c02-b', { ...cap(14, 4, {}), interval: { estimateQps: 14, loQps: 12, hiQps: null, open: 'hi' } }), reportHref: runReportHref('/s', '/elsewhere/r2') },
    { ...row('c03-c', null, 'failed'), reportHref: runReportHref('/s', '/s/runs/../../x') },
  ];
  const html = await sweepHtml('<s>', withLinks);
  assert.match(html, /<title>Sweep &lt;s&gt;<\/title>/);
  const svg = html.slice(html.indexOf('<svg'), html.indexOf('</svg>'));
  assert.match(svg, /aria-label="Capacity of each configuration"/);
  // Two capacity dots, one per converged configuration, on rows named by their labels.
  assert.is(svgPoints(svg, 'capacity (recipe SLO)').length, 2);
  assert.match(svg, />c01 seqs8 note=a,b<\/text>/);
  // Each interval is a bar labelled with its ends; an open end says so.
  assert.match(svg, />9\.5–11<\/text>/);
  assert.match(svg, />12–open<\/text>/);
  assert.equal([...html.matchAll(/<a href="([^"]*)"/g)].map((m) => m[1]), ['runs/r%201/report.html', 'report.csv']);
  assert.is(runReportHref('/s', '/s'), null);
  assert.is(runReportHref('/s', null), null);
  assert.is(runReportHref('/s', '/s/runs/a'), 'runs/a/report.html');
});

test('short labels: cNN and the values, unique, field names only where a value needs one', () => {
  const labels = configLabels([
    { id: 'c01-gpuProfileh100_sxm_80gb-tensorParallel4-maxNumSeqs128-schedulersarathi', values: { gpuProfile: 'h100-sxm-80gb', tensorParallel: 4, maxNumSeqs: 128, scheduler: 'sarathi' } },
    { id: 'c02-gpuProfilea100_sxm_80gb-tensorParallel4-maxNumSeqs128-schedulersarathi', values: { gpuProfile: 'a100-sxm-80gb', tensorParallel: 4, maxNumSeqs: 128, scheduler: 'sarathi' } },
  ]);
  assert.equal([...labels.values()], ['c01 h100 TP4 seqs128 sarathi', 'c02 a100 TP4 seqs128 sarathi']);
  // Two profiles with the same first word keep their full names.
  const same = configLabels([{ id: 'c01', values: { gpuProfile: 'a100-sxm-80gb', 'workload.seed': 3 } }, { id: 'c02', values: { gpuProfile: 'a100-pcie-40gb', 'workload.seed': 3 } }]);
  assert.equal([...same.values()], ['c01 a100-sxm-80gb seed=3', 'c02 a100-pcie-40gb seed=3']);
});

test('console summary: one line per configuration by its label, its interval, and the best under the recipe SLO', () => {
  const lines = sweepSummaryLines([row('c05-x', { ...cap(10, 4, {}), interval: { estimateQps: 10.4, loQps: 9.81, hiQps: null, open: 'hi' } }), ...rows]);
  assert.equal(lines, [
    '  c05 seqs8 note=a,b: 10 QPS (95% interval 9.81–open), 2.5 QPS per $/h',
    '  c01 seqs8 note=a,b: 10 QPS, 2.5 QPS per $/h',
    '  c02 seqs8 note=a,b: 14 QPS, 1.75 QPS per $/h',
    '  c03 seqs8 note=a,b: invalid probes: r',
    '  c04 seqs8 note=a,b: failed: why',
    'best under the recipe SLO: c02 seqs8 note=a,b (14 QPS); most QPS per $/h: c05 seqs8 note=a,b',
  ]);
});

test('no section heading repeats a chart title; capacity under each SLO definition has a row per configuration by its label', () => {
  const blocks = sweepBlocks('s', rows);
  const headings = blocks.flatMap((b) => (b.kind === 'heading' ? [b.text] : []));
  const charts = blocks.flatMap((b) => (b.kind === 'chart' ? [b.chart] : []));
  assert.equal(charts.map((c) => c.title), ['Capacity of each configuration', 'Capacity under each SLO definition']);
  for (const c of charts) assert.not.ok(headings.includes(c.title), `heading repeats the chart title "${c.title}"`);
  const perSlo = charts[1];
  // Configurations are categories (their short labels), not numbers on a linear axis; capacity is the x axis.
  assert.equal(perSlo.yCategories, ['c01 seqs8 note=a,b', 'c02 seqs8 note=a,b']);
  assert.is(perSlo.xLabel, 'capacity (QPS)');
  // One colour per definition, one dot per configuration it could judge: [capacity, row].
  assert.equal(perSlo.series.map((x) => [x.name, x.points]), [
    ['recipe SLO', [[10, 0], [14, 1]]],
    ['ttft+tbt', [[12, 0], [6, 1]]],
    ['tpot', [[9, 0]]],
  ]);
  assert.is(new Set(perSlo.series.map((x) => x.color)).size, 3);
});

test('runs on Slurm: their job, node, queue wait and hold in a table of their own and in the CSV; none without Slurm', () => {
  const onSlurm = [{ ...row('c01', cap(10, 4, {})), slurm: { jobId: '42', node: 'n2', queuedS: 16.5, heldS: 50, jobs: 2 } }, row('c02', cap(14, 8, {}))];
  const md = sweepMarkdown('s', onSlurm);
  assert.match(md, /\| config \| Slurm job \| node \| queued \(s\) \| allocated \(s\) \|/);
  assert.match(md, /\| c01 \| 42 \(2 jobs\) \| n2 \| 16\.5 \| 50 \|/);
  assert.match(md, /\| c02 \| — \| — \| — \| — \|/);
  assert.match(sweepCsv(onSlurm).split('\n')[1], /,42,n2,16\.5,50,\/r\/c01$/);
  assert.not.match(sweepMarkdown('s', rows), /Slurm job/);
});

test.run();
