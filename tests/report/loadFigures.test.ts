// The report's figures about behaviour under load, from a synthetic run with real timelines and
// server-metrics files: latency against rate, the probes around capacity (TBT CDF, TTFT by prompt
// length, fluidity by target TBT checked against the metrics module's own summary), the engine's
// gauges over time, token accounting, and the CSV beside every table.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSyntheticRun } from './syntheticRun.ts';
import { writeReports } from '../../harness/report/write.ts';
import { loadRun } from '../../harness/report/loadRun.ts';
import { buildReport, earlyStopShort } from '../../harness/report/buildReport.ts';
import { probesAroundCapacity } from '../../harness/report/loadSections.ts';
import { reportCsvFiles, toCsv } from '../../harness/report/csv.ts';
import type { Block, Chart } from '../../harness/report/doc.ts';
import { readJsonLines } from '../../harness/runDir/jsonFiles.ts';
import { REPORT_CSV } from '../../harness/runDir/layout.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { summarizeRequests } from '../../harness/metrics/summary.ts';
import { predictPrefillS } from '../../harness/metrics/prefill.ts';
import type { TimelineRecord } from '../../harness/timeline/record.ts';

const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-figures-'));
const dir = writeSyntheticRun(join(tmp, 'run'));
const data = loadRun(dir);
const blocks = buildReport(data);
const charts = blocks.filter((b): b is Extract<Block, { kind: 'chart' }> => b.kind === 'chart').map((b) => b.chart);
const chart = (title: string): Chart => {
  const c = charts.find((x) => x.title.startsWith(title));
  assert.ok(c, `no chart titled ${title}: ${charts.map((x) => x.title).join(', ')}`);
  return c!;
};
const FIT = { a: 0.012, b: 2.5e-5, c: 1.5e-9 };

test('early-stop reasons in a few words', () => {
  assert.is(earlyStopShort('SLO "fluidity p99 >= 0.9" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 (nearest-rank percentile)'), '9 of 864 failing > 8 allowed');
  assert.is(earlyStopShort('SLO "tbt p99 <= 50ms" can no longer pass: 120 failing token gaps already exceed the 99 allowed of 9900 (linear percentile)'), '120 of 9900 gaps failing > 99 allowed');
  assert.is(
    earlyStopShort('queueing diverges: the backlog grew from 3 to 40 requests and the median TTFT from 0.2 to 4 s over the last 4 windows of 0.5 s; if it keeps growing, 30 more requests wait longer than SLO "x" allows (2 failing + 30 projected > 8 allowed of 864)'),
    'queue diverging: 2 + 30 projected of 864 > 8 allowed',
  );
  assert.is(earlyStopShort('cancelled: interrupted by the user'), 'cancelled');
  assert.ok(earlyStopShort('x'.repeat(200)).length <= 40);
});

test('latency against rate: one point per valid probe at its p50 and p99', () => {
  const ttft = chart('TTFT by request rate');
  assert.equal(ttft.series.map((s) => [s.name, s.points]), [
    ['TTFT p50', [[2, 0.041], [3, 0.041], [4, 0.041]]],
    ['TTFT p99', [[2, 0.2], [3, 0.9], [4, 1.5]]],
  ]);
  assert.equal(ttft.hLines.map((l) => l.y), [2]);
  const tbt = chart('TBT by request rate');
  assert.equal(tbt.series[1].points, [[2, 0.0234], [3, 0.0234], [4, 0.0234]]);
  assert.equal(tbt.hLines.map((l) => l.y), [0.025]);
});

test('the probes around capacity: the pass below, the capacity, the fail above', () => {
  assert.equal(probesAroundCapacity(data.probes, data.capacity).map((p) => p.qps), [2, 3, 4]);
  // Invalid probes are never picked; the pass at the capacity is.
  const marked = data.probes.map((p) => (p.qps === 4 ? { ...p, valid: false } : p));
  assert.equal(probesAroundCapacity(marked, data.capacity).map((p) => p.qps), [2, 3]);
});

test('TBT tail falls from 1 on log-log axes (zero gaps left off); TTFT is binned from the evaluated requests that succeeded', () => {
  const tail = chart('TBT distribution');
  assert.is(tail.series.length, 3);
  assert.is(tail.xScale, 'log');
  assert.is(tail.yScale, 'log');
  for (const s of tail.series) {
    assert.ok(s.points.every(([x, y]) => x > 0 && y > 0 && y <= 1), `${s.name}: a point a log axis cannot place`);
    for (let i = 1; i < s.points.length; i++) assert.ok(s.points[i][0] >= s.points[i - 1][0] && s.points[i][1] <= s.points[i - 1][1], `${s.name} not monotone`);
  }
  const full = data.probes.find((p) => p.qps === 3)!.detail!;
  assert.is(full.tbtCdf.at(-1)![1], 1);
  // 20 tokens, every 7th chunk carries 2: 19 chunks after the first → 19 gaps + 2 zero gaps, × 40 requests.
  assert.is(full.tbtSamples, 40 * 21);
  const ttft = chart('TTFT by prompt length');
  // Binned (a density), one panel per probe, not one dot per request.
  const counts = Object.fromEntries(ttft.series.filter((s) => s.kind === 'density').map((s) => [s.panel, s.points.length]));
  assert.equal(counts, { '2 QPS (pass)': 40, '3 QPS (capacity)': 40, '4 QPS (fail)': 39 });
  assert.ok(ttft.series.every((s) => s.kind !== 'points'), 'a series of dots');
  assert.equal(ttft.panels?.names, ['2 QPS (pass)', '3 QPS (capacity)', '4 QPS (fail)']);
  const deadline = ttft.series.find((s) => s.name.startsWith('D_p(P) + '))!;
  const [x, y] = deadline.points.at(-1)!;
  assert.ok(Math.abs(y - (predictPrefillS(FIT, x) + 0.3)) < 1e-12);
});

test('fluidity by target TBT matches the metrics module at the SLO deadline, and never falls as the deadline grows', () => {
  const fig = chart('Fluidity P99 by target TBT');
  for (const s of fig.series) for (let i = 1; i < s.points.length; i++) assert.ok(s.points[i][1] >= s.points[i - 1][1], `${s.name} falls`);
  for (const qps of [2, 3, 4]) {
    const records = readJsonLines(join(dir, 'probes', `0${[0, 0, 1, 3, 2][qps]}-qps-${qps}`, 'timelines.jsonl')) as unknown as TimelineRecord[];
    const metrics = records
      .filter((r) => r.warmup !== true)
      .map((r) => computeRequestMetrics(r, { dpS: predictPrefillS(FIT, r.promptTokens) + 0.3, prefillS: predictPrefillS(FIT, r.promptTokens), tbtDeadlineS: 0.025 }));
    const expected = summarizeRequests(metrics, { slo: { fluidity: { tbtDeadlineS: 0.025, ttftSlackS: 0.3, minFluidity: 0.9, percentile: 99, source: 's' } } }).fluidity.p99;
    const at = data.probes.find((p) => p.qps === qps)!.detail!.fluidityByDeadline.find((r) => r.tbtDeadlineS === 0.025)!;
    assert.is(at.fluidity, expected, `${qps} QPS`);
  }
  // The slack a 0.3 s first-token allowance leaves is used up by 5 ms deadlines, never by 10 ms ones.
  const three = data.probes.find((p) => p.qps === 3)!.detail!.fluidityByDeadline;
  assert.ok(three.find((r) => r.tbtDeadlineS === 0.005)!.missRate > 0.1);
  assert.is(three.find((r) => r.tbtDeadlineS === 0.01)!.missRate, 0);
  // The timed-out request of the 4 QPS probe counts as fluidity 0, so its P99 is 0 at every deadline.
  assert.ok(data.probes.find((p) => p.qps === 4)!.detail!.fluidityByDeadline.every((r) => r.fluidity === 0));
});

test("engine gauges over each probe's time: small multiples, one panel per probe by rate", () => {
  const queue = chart('Requests running and waiting');
  assert.equal(queue.panels?.names, ['2 QPS (#1)', '3 QPS (#3)', '4 QPS (#2)']);
  const running = queue.series.filter((s) => s.legend === 'running');
  assert.equal(running.map((s) => [s.panel, s.points.length]), [['2 QPS (#1)', 11], ['3 QPS (#3)', 13], ['4 QPS (#2)', 12]]);
  assert.equal(running[1].points.slice(0, 3), [[0, 0], [2, 3], [4, 6]]);
  assert.equal(queue.series.filter((s) => s.legend === 'waiting').length, 3);
  const kv = chart('KV-cache usage');
  assert.ok(Math.abs(Math.max(...kv.series[1].points.map((p) => p[1])) - 30) < 1e-9, 'KV usage is shown in percent');
});

test('token accounting: drift, multi-token chunks, retries, receive − emit against the deadline, cached prompt tokens, prompt notes', async () => {
  await writeReports(dir);
  const md = readFileSync(join(dir, 'report.md'), 'utf8');
  assert.match(md, '| 2 | 4 | drift | 10 | 0 | 0.2 ms | 0.7 ms | 2.8% | 1.1 ms | 4.4% | 0 |');
  assert.match(md, '| 3 | 3 | ok | 15 | 2 | 0.2 ms | 0.7 ms | 2.8% | 1.1 ms | 4.4% | 0 |');
  assert.match(md, 'Probe 2 at 4 QPS, token counts drift: 3 prompts of 90 drift beyond 5% \\<x>.');
  assert.match(md, 'Prompts: token-ids, engine prompt cache off.');
  assert.match(md, '- token-id prompts: the server adds 0 tokens to each');
});

test('every table has its CSV beside the report, with raw numbers', async () => {
  await writeReports(dir);
  const tables = blocks.filter((b) => b.kind === 'table');
  const files = reportCsvFiles(blocks);
  assert.is(files.length, tables.length, 'a table has no CSV');
  for (const f of files) assert.ok(existsSync(join(dir, f.file)), `${f.file} not written`);
  const probes = readFileSync(join(dir, REPORT_CSV.probes), 'utf8').trimEnd().split('\n');
  assert.is(probes[0], 'probe,rateQps,arrivalQps,burstQps,verdict,decision,decisionConfidence,valid,requests,planned,durationS,earlyStop,sloValue,goodputQps,throughputQps,ttftP50S,ttftP99S,tbtP50S,tbtP99S,fluidityP99,fluidityP50,clientErrorS,invalidReason,clientErrorEffect');
  // Probe 1 carries the rate it realized and the one its bursts put it at; probe 2 neither.
  assert.match(probes[1], /^1,2,2.0412,2.1377,pass,/);
  assert.match(probes[2], /^2,4,,,fail \(stopped early\),undecided,0.724,true,90,100,25,"SLO ""fluidity: { tbtDeadline: 25ms, minFluidity: 0.9 }"" can no longer pass: 9 failing requests already exceed the 8 allowed of 864 \(nearest-rank percentile\)",0.61,1.2,3.6,0.041,1.5,0.012,0.0234,0.61,0.999,0.0007,,$/);
  const bySlo = readFileSync(join(dir, REPORT_CSV.capacityBySlo), 'utf8');
  assert.match(bySlo, '\nttft+tbt,"ttft: ""p90 <= 2s""; tbt p99 <= 25ms (default baseline)",2,=,');
  assert.match(bySlo, '\nschedulingDelay,schedulingDelay p99 <= 0.3s (default baseline),,not measured,,');
  assert.is(toCsv(['a', 'b'], [[1.5, 'x,"y"'], [Infinity, null]]), 'a,b\n1.5,"x,""y"""\ninf,\n');
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
