// Metric names per engine version: every name fluidcap reads for a version exists in that version's
// reference data (../shared/engines/flags, extracted from the engines' sources), and over real HTTP
// the scraper finds the prefix-cache witness in each naming the simulated engine exports (vLLM
// newest, 0.8.5 V1) and says "no witness" for 0.8.5 V0.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { METRIC_NAMES, detectNaming, prefixCacheWitness, type MetricNaming } from '../../harness/load/metricNames.ts';
import { engineGauges, parsePrometheusText } from '../../harness/load/prometheus.ts';
import { startScraper } from '../../harness/load/metricsScraper.ts';
import { summarizeServerMetricRows } from '../../harness/runDir/read.ts';
import { startSimServer } from '../../harness/sim/server.ts';
import type { MetricsNaming } from '../../harness/sim/vllmMetrics.ts';
import { streamRequest, wordsPrompt } from '../sim/streamHelper.ts';

const FLAGS_DIR = resolve(import.meta.dirname, '..', '..', '..', 'shared', 'engines', 'flags');

interface MetricEntry {
  name: string;
  exposedAs: string[];
  engines?: string[];
}

/** The sample names a version exports, for one engine generation where the file tells them apart. */
function exportedNames(file: string, engine?: 'V0' | 'V1'): Set<string> {
  const metrics = (JSON.parse(readFileSync(join(FLAGS_DIR, file), 'utf8')) as { metrics: MetricEntry[] }).metrics;
  return new Set(metrics.filter((m) => !engine || !m.engines || m.engines.includes(engine)).flatMap((m) => m.exposedAs));
}

const REFERENCE: Partial<Record<MetricNaming, [string, ('V0' | 'V1')?]>> = {
  'vllm-newest': ['vllm-newest.json'],
  'vllm-0.8.5-v1': ['vllm-0.8.5.json', 'V1'],
  'vllm-0.8.5-v0': ['vllm-0.8.5.json', 'V0'],
  sglang: ['sglang-newest.json'],
  tgi: ['tgi-newest.json'],
};

test('every metric name read for an engine version exists in that version (../shared/engines/flags)', () => {
  if (!existsSync(FLAGS_DIR)) {
    console.log(`  skipped: ${FLAGS_DIR} is absent (the engines' reference data lives beside the repository)`);
    return;
  }
  for (const [naming, [file, engine]] of Object.entries(REFERENCE) as [MetricNaming, [string, ('V0' | 'V1')?]][]) {
    const exported = exportedNames(file, engine);
    for (const [key, name] of Object.entries(METRIC_NAMES[naming])) {
      if (name === null) continue;
      assert.ok(exported.has(name), `${naming}: ${key} is read as ${name}, which ${file}${engine ? ` (${engine})` : ''} does not export`);
    }
  }
  // The names that tell versions apart really are exclusive to them.
  const v0 = exportedNames('vllm-0.8.5.json', 'V0');
  const v1 = exportedNames('vllm-0.8.5.json', 'V1');
  const newest = exportedNames('vllm-newest.json');
  assert.is(detectNaming(newest), 'vllm-newest');
  assert.is(detectNaming(v1), 'vllm-0.8.5-v1');
  assert.is(detectNaming(v0), 'vllm-0.8.5-v0');
  assert.equal(prefixCacheWitness(v1), { metric: 'vllm:gpu_prefix_cache_hits_total' });
  assert.equal(prefixCacheWitness(newest), { metric: 'vllm:prefix_cache_hits_total' });
  assert.is(prefixCacheWitness(v0).metric, null);
  assert.ok(!v0.has('vllm:prefix_cache_hits_total') && !v1.has('vllm:prefix_cache_hits_total'), 'no vLLM 0.8.5 engine exports the name read before');
});

const EXPECTED: Record<MetricsNaming, { naming: MetricNaming; witness: string | null; kvName: string }> = {
  newest: { naming: 'vllm-newest', witness: 'vllm:prefix_cache_hits_total', kvName: 'vllm:kv_cache_usage_perc' },
  '0.8.5-v1': { naming: 'vllm-0.8.5-v1', witness: 'vllm:gpu_prefix_cache_hits_total', kvName: 'vllm:gpu_cache_usage_perc' },
  '0.8.5-v0': { naming: 'vllm-0.8.5-v0', witness: null, kvName: 'vllm:gpu_cache_usage_perc' },
};

for (const [simNaming, want] of Object.entries(EXPECTED) as [MetricsNaming, (typeof EXPECTED)[MetricsNaming]][]) {
  test(`simulated engine with --metrics-naming ${simNaming}: the scraper reads its gauges and ${want.witness ? `the witness ${want.witness}` : 'says "no witness"'}`, async () => {
    const sim = await startSimServer({ port: 0, timeScale: 0.05, metricsNaming: simNaming });
    const dir = mkdtempSync(join(tmpdir(), 'fluidcap-names-'));
    try {
      const file = join(dir, 'server-metrics.jsonl');
      const scraper = startScraper({ metricsUrl: `${sim.url}/metrics`, file, intervalS: 60, startNs: process.hrtime.bigint() });
      const r = await streamRequest(`${sim.url}/v1/completions`, { model: 'tiny', prompt: wordsPrompt(40, 'n'), max_tokens: 3, ignore_eos: true, stream: true });
      assert.is(r.status, 200);
      const done = await scraper.stop();
      assert.is(done.available, true);
      const text = await (await fetch(`${sim.url}/metrics`)).text();
      const metrics = parsePrometheusText(text);
      assert.is(detectNaming(metrics), want.naming);
      assert.ok(metrics.has(want.kvName), `${want.kvName} exported`);
      const gauges = engineGauges(metrics);
      assert.is(gauges.kvUsage, 0);
      assert.is(gauges.promptTokens, 40);
      if (want.witness) {
        assert.is(gauges.cachedPromptTokens, 0, 'the simulator has no prefix cache: no hits');
        assert.is(gauges.prefixCacheQueries, 40, 'every prompt token was looked up');
      } else {
        assert.is(gauges.cachedPromptTokens, null);
        assert.is(gauges.prefixCacheQueries, null);
      }
      const rows = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const summary = summarizeServerMetricRows(rows);
      if (want.witness) {
        assert.is(summary.prefixCacheWitness, want.witness);
        assert.is(summary.cachedPromptTokens, 0);
      } else {
        assert.match(summary.prefixCacheWitness ?? '', /^no witness: vLLM 0\.8\.5 V0/);
        assert.is(summary.cachedPromptTokens, null);
      }
    } finally {
      await sim.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('sim refuses an unknown --metrics-naming, naming the flag and the choices', async () => {
  try {
    await startSimServer({ port: 0, metricsNaming: 'v0' as MetricsNaming });
    assert.unreachable('started');
  } catch (err) {
    assert.match((err as Error).message, /--metrics-naming must be one of newest, 0\.8\.5-v1, 0\.8\.5-v0, got "v0"/);
  }
});

test.run();
