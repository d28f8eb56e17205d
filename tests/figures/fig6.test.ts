// metron-fig6: the grid capacity rule and the miss-rate distribution on hand-made requests, then
// the figure end to end on the simulated engine at a tiny size (two rates, a dozen requests of the
// full Arxiv-Summarization trace): every capacity in the table is the highest passing prefix of the
// verdicts, the chart marks each, and the paper's 0.6 QPS is judged against ours.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fig6Slos, gridCapacity, missByTargetTbt, missRateCdf } from '../../harness/figures/metronFig6.ts';
import { computeRequestMetrics } from '../../harness/metrics/request.ts';
import { DEFAULT_GRID, runFigure } from '../../harness/figures/runFigure.ts';
import { CHECK_SIZES } from '../../harness/figures/check.ts';
import { FIG6_SEARCH } from '../../harness/figures/metronFig6Search.ts';
import type { RequestMetrics } from '../../harness/metrics/request.ts';
import { svgPoints } from '../support/svgMarks.ts';
import { parse } from 'yaml';
import { findProbeDir } from '../../harness/runDir/read.ts';
import { readJsonFile } from '../../harness/runDir/jsonFiles.ts';

const csvRows = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .slice(1)
    .map((l) => [...l.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));

test('capacity is the highest rate of a passing prefix; the first failure is its bracket', () => {
  assert.equal(gridCapacity([{ rateQps: 4, passed: true }, { rateQps: 2, passed: true }, { rateQps: 6, passed: false }, { rateQps: 8, passed: true }]), { capacityQps: 4, failQps: 6 });
  assert.equal(gridCapacity([{ rateQps: 2, passed: false }, { rateQps: 4, passed: true }]), { capacityQps: null, failQps: 2 });
  assert.equal(gridCapacity([{ rateQps: 2, passed: true }, { rateQps: 4, passed: true }]), { capacityQps: 4, failQps: null });
});

test('per-request miss rates: a failed request counts as missing everything', () => {
  const m = (missed: number, total: number, succeeded = true) => ({ succeeded, deadlinesMissed: missed, deadlinesTotal: total }) as RequestMetrics;
  assert.equal(missRateCdf([m(1, 10), m(0, 5), m(0, 0, false), m(3, 4)]), [[0, 0.25], [0.1, 0.5], [0.75, 0.75], [1, 1]]);
});

// A request whose first token is due exactly when it lands, then tokens `gapS` apart with one
// `stallS` pause (a whole prefill joining vLLM's batch) after the 10th.
function streamed(id: string, gapS: number, stallS: number): RequestMetrics {
  const chunks: [number, number][] = [];
  let us = 100_000;
  for (let i = 0; i < 40; i++) {
    chunks.push([us / 1e6, 1]);
    us += Math.round((gapS + (i === 10 ? stallS : 0)) * 1e6);
  }
  return computeRequestMetrics({ id, scheduledS: 0, sentS: 0, promptTokens: 100, maxTokens: 40, outputTokens: 40, chunks, status: 'ok', httpStatus: 200, error: null }, { dpS: 0.1, tbtDeadlineS: 0.0125 });
}

test('Fig. 6(b): the miss rate by target TBT at fluidity capacity, in the paper\u2019s time; ours at 25 ms puts the stalling system above', () => {
  // Time scale 0.5: the paper's 25 ms is judged at 12.5 ms. vLLM: 5 ms gaps and a 200 ms stall; Sarathi: 8 ms gaps, no stall.
  const vllm = Array.from({ length: 4 }, (_, i) => streamed(`v${i}`, 0.005, 0.2));
  const sarathi = Array.from({ length: 4 }, (_, i) => streamed(`s${i}`, 0.008, 0));
  const { chart, ours } = missByTargetTbt([{ system: { key: 'vllm', label: 'vLLM' }, rateQps: 1, metrics: vllm }, { system: { key: 'sarathi', label: 'Sarathi-Serve' }, rateQps: 2, metrics: sarathi }], 0.025, 0.5);
  // vLLM's stalled token spans floor((205 − 12.5 − slack) / 12.5) + 1 deadlines: some missed at 25 ms (paper time); Sarathi-Serve's none.
  assert.ok(ours['vllm.missRateAt25msAtFluidCapacity']! > 0, String(ours['vllm.missRateAt25msAtFluidCapacity']));
  assert.is(ours['sarathi.missRateAt25msAtFluidCapacity'], 0);
  assert.is(chart.yScale, 'log');
  // x in the paper's time (the grid around 25 ms); a deadline nobody missed has no mark.
  assert.ok(chart.series[0].points.every(([x, y]) => x >= 0.005 && x <= 0.1 && y > 0));
  assert.ok(chart.series[0].points.some(([x]) => x === 0.025));
  assert.equal(chart.series[1].points.filter(([x]) => x >= 0.02), []);
  assert.equal(chart.vLines, [{ x: 0.025, label: '25 ms' }]);
  // No requests (no fluidity capacity): no value, so the ordering is not judged.
  assert.is(missByTargetTbt([{ system: { key: 'vllm', label: 'vLLM' }, rateQps: null, metrics: [] }], 0.025, 1).ours['vllm.missRateAt25msAtFluidCapacity'], null);
});

test('the SLO thresholds are the paper-time deadline times the time scale', () => {
  const slos = fig6Slos(0.025, 0.3, 0.5);
  assert.equal(slos.map((s) => s.key), ['tbtP99', 'tpotP50', 'tpotP99', 'fluidity']);
  assert.is(slos[0].slo.tbt!.maxS, 0.0125);
  assert.is(slos[1].slo.tpot!.percentile, 50);
  assert.equal([slos[3].slo.fluidity!.tbtDeadlineS, slos[3].slo.fluidity!.ttftSlackS], [0.0125, 0.15]);
});

test("the rates reach the paper's 0.6 QPS: --check's grid and the default grid hold it between two others, the search's bounds and first rate too", () => {
  for (const grid of [CHECK_SIZES['metron-fig6'].grid!, DEFAULT_GRID]) {
    assert.ok(grid.includes(0.6) && Math.min(...grid) < 0.6 && Math.max(...grid) > 0.6, grid.join(','));
  }
  assert.is(CHECK_SIZES['metron-fig6'].rateQps, 0.6);
  assert.ok(FIG6_SEARCH.minQps < 0.6 / 2 && FIG6_SEARCH.maxQps > 0.6 * 2, JSON.stringify(FIG6_SEARCH));
});

test('end to end at two rates on the full Arxiv trace: the table follows from the verdicts, the chart marks each capacity, 0.6 QPS is judged', async () => {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-fig6-'));
  try {
    const o = await runFigure({ name: 'metron-fig6', outDir: tmp, timeScale: 0.5, rateQps: 1, grid: [1.2, 0.6], requests: 12, log: () => {} });
    const read = (f: string) => readFileSync(join(o.dir, f), 'utf8');
    const verdicts = csvRows(read('verdicts.csv'));
    assert.is(verdicts.length, 2 * 2 * 4);
    const caps = csvRows(read('capacity-by-slo.csv'));
    assert.is(caps.length, 8);
    for (const [system, slo, , cap, fail] of caps) {
      const v = verdicts.filter((r) => r[0] === system && r[1] === slo).map((r) => ({ rateQps: Number(r[2]), passed: r[3] === 'true' }));
      const want = gridCapacity(v);
      assert.equal([cap === '' ? null : Number(cap), fail === '' ? null : Number(fail)], [want.capacityQps, want.failQps], `${system} ${slo}`);
    }
    const svg = read('capacity.svg');
    [['vllm', 'vLLM'], ['sarathi', 'Sarathi-Serve']].forEach(([system, label]) => {
      const marks = svgPoints(svg, label).length;
      assert.is(marks, caps.filter((r) => r[0] === system && r[3] !== '').length, `${system} marks`);
    });
    assert.match(read('README.md'), /Rate grid \(paper time\): 0\.6, 1\.2 QPS/);
    // Each run is the full Arxiv-Summarization recipe: the engine told of the rope-scaled context,
    // prompts past 8192 tokens sent whole.
    const recipe = parse(read(join('recipes', 'vllm-at-0.6.yaml')));
    assert.equal(recipe.workload.lengths, { preset: 'arxiv-summarization' });
    assert.equal([recipe.target.engineArgs.maxModelLen, recipe.target.engineArgs.ropeScaling], [65536, { type: 'dynamic', factor: 8 }]);
    const plan = readJsonFile(findProbeDir(join(o.dir, JSON.parse(read('figure.json')).runs['vllm@0.6']), { index: 1, qps: 1.2 })!.plan) as { requests: { promptTokens: number; maxTokens: number }[] };
    assert.ok(plan.requests.some((r) => r.promptTokens > 8192), 'prompts past 8192 tokens are sent');
    assert.ok(plan.requests.every((r) => r.promptTokens + r.maxTokens <= 65536));
    assert.match(read('README.md'), /full Arxiv-Summarization trace\u2019s lengths/);
    assert.match(read('README.md'), /models an H100 SXM 80 GB by a roofline/);
    // claims.csv: the paper's capacity ratios from capacity-by-slo.csv's own numbers, the absolute
    // 0.6 QPS judged on this trace, and the paper's 25 ms for every SLO beside ours.
    const claims = csvRows(read('claims.csv'));
    const capOf = (system: string, slo: string) => caps.find((r) => r[0] === system && r[1] === slo)![3];
    for (const [id, slo] of [['M-03', 'fluidity'], ['M-04', 'tbtP99']]) {
      const row = claims.find((r) => r[0] === id)!;
      const [v, s] = [capOf('vllm', slo), capOf('sarathi', slo)];
      if (v === '' || s === '') assert.is(row[8], 'not comparable here', row.join(','));
      else assert.ok(Math.abs(Number(row[6]) - Number(v) / Number(s)) < 1e-9 && ['holds', 'does not hold'].includes(row[8]), row.join(','));
    }
    for (const [id, system] of [['M-01', 'vllm'], ['M-02', 'sarathi']]) {
      const row = claims.find((r) => r[0] === id)!;
      const cap = capOf(system, 'fluidity');
      assert.is(row[4], '0.6 QPS');
      if (cap === '') assert.is(row[9], 'not measured: this run has no value for it', row.join(','));
      else {
        const within = Number(cap) / 0.6 >= 0.8 && Number(cap) / 0.6 <= 1.25;
        assert.equal([row[8], row[9]], [within ? 'holds' : 'does not hold', `ours ÷ paper = ${+(Number(cap) / 0.6).toPrecision(4)}, ${within ? '' : 'not '}within [0.8, 1.25]`], row.join(','));
      }
    }
    assert.ok(claims.some((r) => r[0] === 'M-S5' && r[2] === 'baselineThresholdMs' && r[8] === 'setup' && r[6] === '25'), 'the paper\u2019s 25 ms baseline threshold beside ours');
    assert.match(read('README.md'), /The paper sets 25 ms for all three SLOs/);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
