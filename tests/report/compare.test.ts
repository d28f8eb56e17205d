// compareRuns: relative changes against a baseline, the side-by-side table; runRowOf picks each
// run's figures out of capacity.json and the manifest. (Whether a drop is a regression is the
// gate's decision: tests/gate/.)
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
  const c = compareRuns([row('a', 12, { fluidTokensPerS: 30, usdPerMillionOutputTokens: 2.5 }), base], { baseline: base });
  assert.equal(c.runs.map((r) => [r.runId, r.baseline]), [['base', true], ['a', false]]);
  assert.ok(Math.abs(c.runs[1].capacityChange! - 0.2) < 1e-12);
  assert.ok(Math.abs(c.runs[1].fluidRateChange! + 0.25) < 1e-12);
  assert.ok(Math.abs(c.runs[1].costChange! - 0.25) < 1e-12);
});

test('without a baseline no change is computed; a zero baseline gives no change', () => {
  const plain = compareRuns([row('a', 1), row('b', 100)]);
  assert.is(plain.baselineRunId, null);
  assert.is(plain.runs[0].capacityChange, null);
  assert.not.match(formatComparison(plain)[0], 'Δ');
  const zero = compareRuns([row('a', 0)], { baseline: row('z', 0) });
  assert.is(zero.runs[1].capacityChange, null);
});

test('the table lists every run with its figures and short git sha', () => {
  const base = row('base', 10, { gitSha: '0123456789abcdef' });
  const table = formatComparison(compareRuns([row('a', 9, { usdPerMillionOutputTokens: null })], { baseline: base }));
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
