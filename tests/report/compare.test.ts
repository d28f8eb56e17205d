// compareRuns: relative changes against a baseline and the drop verdict at, above and below the
// allowed drop; runRowOf picks each run's figures out of capacity.json and the manifest.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compareRuns, formatComparison, runRowOf, type RunRow } from '../../harness/report/compareRuns.ts';
import type { RunCore } from '../../harness/report/loadRun.ts';
import { toReportCapacity, toReportManifest } from '../../harness/report/runData.ts';

const row = (runId: string, capacityQps: number, over: Partial<RunRow> = {}): RunRow => ({
  runDir: `/results/${runId}`,
  runId,
  engine: 'vllm',
  model: 'llama-3-8b',
  gpu: 'h100-sxm-80gb × 1',
  capacityQps,
  fluidTokensPerS: 40,
  usdPerMillionOutputTokens: 2,
  gitSha: 'abc',
  ...over,
});

test('changes relative to the baseline, baseline listed first', () => {
  const base = row('base', 10);
  const c = compareRuns([row('a', 12, { fluidTokensPerS: 30, usdPerMillionOutputTokens: 2.5 }), base], { baseline: base, maxDrop: 0.05 });
  assert.equal(c.runs.map((r) => [r.runId, r.baseline]), [['base', true], ['a', false]]);
  assert.ok(Math.abs(c.runs[1].capacityChange! - 0.2) < 1e-12);
  assert.ok(Math.abs(c.runs[1].fluidRateChange! + 0.25) < 1e-12);
  assert.ok(Math.abs(c.runs[1].costChange! - 0.25) < 1e-12);
  assert.ok(c.passed);
  assert.equal(c.drops, []);
});

test('a drop above the allowed fraction fails and is named; at or below it passes', () => {
  const base = row('base', 32);
  const c = compareRuns([row('ok', 30.4), row('bad', 28)], { baseline: base, maxDrop: 0.05 });
  assert.not.ok(c.passed);
  assert.equal(c.drops.map((d) => d.runId), ['bad']);
  assert.ok(Math.abs(c.drops[0].dropFrac - 0.125) < 1e-12);
  const { verdict } = formatComparison(c);
  assert.equal(verdict, ['capacity dropped: bad reached 28 QPS, 12.5% below baseline base at 32 QPS (allowed drop 5%)']);
  assert.ok(compareRuns([row('bad', 28)], { baseline: base, maxDrop: 0.15 }).passed);
});

test('without a baseline nothing is judged; a zero baseline cannot be dropped below', () => {
  const plain = compareRuns([row('a', 1), row('b', 100)], { maxDrop: 0 });
  assert.ok(plain.passed);
  assert.is(plain.runs[0].capacityChange, null);
  assert.equal(formatComparison(plain).verdict, []);
  const zero = compareRuns([row('a', 0)], { baseline: row('z', 0), maxDrop: 0.05 });
  assert.ok(zero.passed);
  assert.match(formatComparison(zero).verdict[0], 'has capacity 0 QPS');
});

test('the table lists every run with its figures and short git sha', () => {
  const base = row('base', 10, { gitSha: '0123456789abcdef' });
  const { table } = formatComparison(compareRuns([row('a', 9, { usdPerMillionOutputTokens: null })], { baseline: base, maxDrop: 0.05 }));
  assert.is(table.length, 3);
  assert.match(table[0], /^run\s+engine\s+model\s+GPU\s+capacity QPS\s+Δ/);
  assert.match(table[1], /^base \(baseline\)\s+vllm\s+llama-3-8b\s+h100-sxm-80gb × 1\s+10\s+40\s+\$2\.00\s+0123456789$/);
  assert.match(table[2], /^a\s+.*\s9\s+−10%\s+40\s+0%\s+—\s+—\s+abc$/);
});

test('runRowOf reads capacity.json first and the manifest for the rest', () => {
  const manifest = toReportManifest({ gitSha: 'deadbeef', recipe: { target: { engine: 'sarathi', model: 'meta-llama/Llama-2-70b-hf' } } });
  const core: RunCore = {
    runDir: '/r/x',
    runId: 'x',
    notes: [],
    capacity: toReportCapacity(
      {
        capacityQps: 5,
        slo: {},
        probes: [],
        gpuProfile: 'a100-sxm-80gb',
        gpuCount: 4,
        fluidTokenRateAtCapacity: { tokensPerS: 33 },
        cost: { usdPerMillionOutputTokens: 1.5 },
      },
      manifest.target,
    ),
    manifest,
  };
  assert.equal(runRowOf(core), {
    runDir: '/r/x',
    runId: 'x',
    engine: 'sarathi',
    model: 'meta-llama/Llama-2-70b-hf',
    gpu: 'a100-sxm-80gb × 4',
    capacityQps: 5,
    fluidTokensPerS: 33,
    usdPerMillionOutputTokens: 1.5,
    gitSha: 'deadbeef',
  });
});

test.run();
