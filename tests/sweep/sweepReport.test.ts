// The sweep report: best configuration under each SLO definition (capacity and QPS per $/hour),
// unconverged runs left out of the ranking, CSV quoting, markdown rows.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bestConfigurations, sweepCsv, sweepHtml, sweepMarkdown, RECIPE_SLO, type CapacitySummary, type SweepRow } from '../../harness/sweep/sweepReport.ts';

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
  assert.match(lines[0], /^config,maxNumSeqs,note,host,gpus,status,outcome,capacity_qps,pass_qps,fail_qps,tolerance,usd_per_hour,qps_per_usd_per_hour,usd_per_million_output_tokens,gpu_seconds,run_cost_usd,probes,capacity_qps_ttft\+tbt,capacity_qps_tpot,estimate_qps,interval_lo_qps,interval_hi_qps,interval_open,run_dir$/);
  assert.is(lines[1], 'c01,8,"a,b",gpu1,0 1,completed,converged,10,10,10.5,0.05,4,2.5,1.5,100,0.1,3,12,9,,,,,/r/c01');
  assert.is(lines[4], 'c04,8,"a,b",gpu1,0 1,failed,,,,,,,,,,,,,,,,,,/r/c04');
});

test('markdown and HTML: a row per configuration and the best-of table; HTML escaped', () => {
  const md = sweepMarkdown('s', rows);
  assert.match(md, /\| c02 \| maxNumSeqs=8 note=a,b \| gpu1 \| 0,1 \| completed \| 14 \| 14 \/ 14\.7 \| - \| 5% \| 1\.75 \| 1\.5 \| 100 \| 0\.1 \|/);
  // A run with an interval shows its estimate, an open end as "open"; the CSV carries the numbers.
  const withInterval = [row('c05', { ...cap(10, 4, {}), interval: { estimateQps: 10.42, loQps: 9.81, hiQps: null, open: 'hi' } })];
  assert.match(sweepMarkdown('s', withInterval), /\| 10 \/ 10\.5 \| 10\.4 \(9\.81–open\) \| 5% \|/);
  assert.match(sweepCsv(withInterval), /,10\.42,9\.81,,hi,\/r\/c05/);
  assert.match(md, /\| c03 \| .* \| invalid probes \|/);
  assert.match(md, /\| recipe SLO \| fluidity p99 >= 0\.9 \| c02 \(14 QPS\) \| c01 \(2\.5 QPS per \$\/h\) \|/);
  assert.match(md, /## Runs without a capacity\n\n- c03: r\n- c04: why/);
  const html = sweepHtml('<s>', rows);
  assert.match(html, /<title>Sweep &lt;s&gt;<\/title>/);
  assert.match(html, /<td>fluidity p99 &gt;= 0\.9<\/td>/);
});

test.run();
